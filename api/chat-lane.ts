import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Swarm } from '../activities/inference/index.js';
import { InferenceAborted } from '../activities/inference/runtime-client.js';
import { ServiceError } from '../core/errors.js';
import { openAiError } from '../core/openai-errors.js';
import { addressKey, type RateLimiter } from '../core/rate-limiter.js';
import type { ProxyTrust } from '../core/forwarded.js';
import type { ApiKeyRecord } from '../store/api-key-store.js';
import type { AppDeps } from './app-deps.js';
import { findApiKeyNow, type Gate, type GateName } from './gates.js';
import { asServiceError } from './http-errors.js';
import { handOver, parseJsonBody, readRawBody, type PreRead } from './json-body.js';
import { clientAddressOf } from './proxy-trust.js';
import { enforceAddressRate, enforcePrincipalRate, takeBodyBytes } from './rate-limit.js';
import { requestIdOf, settleRequest, type RequestContextDeps } from './request-context.js';
import { CHAT_ROUTE, chatJob, JSON_TYPE, refund, type ChatInput } from './routes/chat.js';
import { completionBody } from './routes/chat-response.js';
import { reserveChatMessage, type ChatCharge } from './chat-quota.js';
import type { GateState } from './route-spec.js';
import { HitRequest } from './tile-hits.js';

export interface ChatLaneDeps extends RequestContextDeps {
  swarm: Swarm;
  /** The chat route's gates (api/gates.ts routeGates), the first (its API key) answered here instead. */
  gates: readonly [GateName, Gate][];
  config: AppDeps['config'];
  apiKeyStore: AppDeps['apiKeyStore'];
  bodyLimitBytes: number;
  timeoutMs: number | undefined;
  /** api/rate-limit.ts: per address, body bytes per address, per principal; each may be off. */
  addressRate: RateLimiter | undefined;
  addressBytes: RateLimiter | undefined;
  principalRate: RateLimiter | undefined;
  trust: ProxyTrust | undefined;
  clock: () => number;
}

/** Koa's handling of a request, for one the lane does not answer. */
export type Koa = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * Whole (not streamed) chat completions answered straight on Node's response, before Koa makes its context, as
 * tile hits are (api/tile-hits.ts): the gateway's hottest OpenAI-compatible route, where Koa's context, its
 * middleware hops and the gates' promise hops were most of what the gateway added to a completion
 * (docs/benchmarks.md, chat). It runs the Koa path's functions in its order: the address's rate and body-byte
 * budget, the body read and parsed within the same limits, the API key (looked up without a promise hop where the
 * store allows, gates.ts findApiKeyNow), gates 2 to 5, the key's rate, the free tier's quota, the completion
 * (routes/chat.ts chatJob, the same swarm call), its JSON, metrics and the log line.
 *
 * What it does not handle goes to Koa: untouched when it is not a plain JSON POST of the path (a query string,
 * a chunked body, the headers gates 2 and 3 read, a draining server, HTTP/2), and once its body is read with the
 * body and what the lane counted handed over (`toKoa`), so Koa counts nothing twice and answers exactly as it
 * would have: a body it refuses, a key it refuses, a gate's refusal, `stream: true`, a refused rate take (which
 * takes nothing). Past the key's rate take the lane answers itself, errors in OpenAI's shape as the route's
 * `errorStyle` writes them (api/http-errors.ts).
 */
export function chatLane(deps: ChatLaneDeps): (req: IncomingMessage, res: ServerResponse, koa: Koa) => boolean {
  const checks = deps.gates.slice(1);
  return (req, res, koa) => {
    /** Koa answers it, with the body and the takes the lane made (api/json-body.ts PreRead). */
    const toKoa = (pre: PreRead): void => {
      handOver(req, pre);
      koa(req, res);
    };
    if (req.method !== 'POST' || req.url !== CHAT_ROUTE || !plainJsonPost(req, deps.bodyLimitBytes)) return false;
    if (deps.draining?.()) return false;
    const started = performance.now();
    const gated = new HitRequest(req, {});
    const pre: PreRead = {};
    // The Koa path's bounds, before the body is read (api/rate-limit.ts requestBounds); a refusal takes nothing,
    // so Koa takes again and answers it.
    const address =
      deps.addressRate || deps.addressBytes ? clientAddressOf(deps.trust, req.headers, req.socket.remoteAddress) : '';
    try {
      if (deps.addressRate) {
        enforceAddressRate(gated, deps.addressRate, address, deps.clock());
        pre.addressCounted = true;
      }
      if (deps.addressBytes) {
        takeBodyBytes(deps.addressBytes, addressKey(address), deps.clock(), Number(req.headers['content-length']));
        pre.bytesCounted = true;
      }
    } catch {
      pre.rateHeaders = gated.setHeaders();
      toKoa(pre);
      return true;
    }
    pre.rateHeaders = gated.setHeaders();
    readRawBody(req, deps.bodyLimitBytes, deps.timeoutMs).then(
      (body) => {
        pre.body = body;
        void answer(req, res, gated, pre, started, toKoa);
      },
      (error: unknown) => {
        pre.bodyError = error;
        toKoa(pre);
      },
    );
    return true;
  };

  async function answer(
    req: IncomingMessage,
    res: ServerResponse,
    gated: HitRequest,
    pre: PreRead,
    started: number,
    toKoa: (pre: PreRead) => void,
  ): Promise<void> {
    let key: ApiKeyRecord | null | Promise<ApiKeyRecord | null>;
    try {
      const text = pre.body!.toString('utf8');
      if (/^\s*$/.test(text)) return toKoa(pre);
      gated.state.body = parseJsonBody(text);
      const token = /^Bearer\s+(\S+)$/i.exec(gated.get('authorization'))?.[1];
      key = token === undefined ? null : findApiKeyNow(token, deps);
    } catch {
      return toKoa(pre);
    }
    if (key !== null && 'then' in key) key = await key.catch(() => null);
    if (key === null) return toKoa(pre);
    const state: GateState = { requester: undefined, place: null, authority: { kind: 'anonymous' }, apiKey: key };
    gated.state.gates = state;
    try {
      for (const [, gate] of checks) if (gate(gated) !== undefined) return toKoa(pre);
    } catch {
      return toKoa(pre);
    }
    const input = gated.state.input as ChatInput;
    if (input.request.stream) return toKoa(pre);
    try {
      enforcePrincipalRate(gated, deps.principalRate, `key:${key.id}`, deps.clock());
    } catch {
      return toKoa(pre);
    }
    // Answered here from now on: the request is counted against its address, its key and (below) its quota.
    const requestId = requestIdOf(gated.get('x-request-id') || undefined);
    deps.metrics.inFlight(1);
    let status = 200;
    let errorCode: string | undefined;
    const { swarm } = deps;
    let charge: ChatCharge | undefined;
    try {
      // A refused reservation gave itself back (api/chat-quota.ts).
      if (key.tier === 'free') charge = await reserveChatMessage(swarm.quota, key, swarm.freeMessagesPerDay);
      const job = chatJob(input, state);
      const result = await swarm.chat(job, goneSignal(req.socket));
      const withLocations = input.request.svc?.locations === true;
      const json = JSON.stringify(completionBody(result, Math.floor(swarm.now() / 1000), withLocations));
      write(res, 200, gated.headers(requestId, ['content-type', JSON_TYPE], closing()), json);
    } catch (error) {
      await refund(charge);
      if (error instanceof InferenceAborted || res.destroyed) {
        // The client went away and the upstream call was stopped: there is nobody to answer.
        status = 499;
        res.destroy();
      } else if (res.headersSent) {
        deps.logger.error({ err: error, request_id: requestId }, 'chat completion failed after its headers were sent');
        res.destroy();
      } else {
        const failure = asServiceError(error);
        if (!(error instanceof ServiceError)) {
          deps.logger.error({ err: error, request_id: requestId }, 'unhandled error');
        }
        errorCode = failure.code;
        const { status: code, body } = openAiError(failure);
        status = code;
        const headers = [...Object.entries(failure.headers).flat(), 'content-type', JSON_TYPE, ...closing()];
        write(res, code, gated.headers(requestId, headers, []), JSON.stringify(body));
      }
    } finally {
      deps.metrics.inFlight(-1);
      settleRequest(deps, {
        method: 'POST',
        route: CHAT_ROUTE,
        path: CHAT_ROUTE,
        status,
        ms: performance.now() - started,
        requestId,
        errorCode,
      });
    }
  }

  /** During shutdown every answer asks its client to close the connection (api/request-context.ts). */
  function closing(): string[] {
    return deps.draining?.() ? ['connection', 'close'] : [];
  }
}

const GONE = Symbol('geofabric.chatLane.gone');
type Watched = Socket & { [GONE]?: AbortSignal };

/**
 * Aborts when the client's connection closes: the upstream call of the completion in flight on it stops. One per
 * connection, not per request (an AbortSignal is made on first use, a cost on every completion): HTTP/1.1 answers
 * a connection's requests one at a time, so at most one completion listens to it, and one that closes after its
 * answer aborts nothing that is still running.
 */
function goneSignal(socket: Socket): AbortSignal {
  const watched = socket as Watched;
  if (watched[GONE] === undefined) {
    const gone = new AbortController();
    socket.once('close', () => gone.abort());
    watched[GONE] = gone.signal;
  }
  return watched[GONE];
}

function write(res: ServerResponse, status: number, headers: string[], json: string): void {
  headers.push('content-length', String(Buffer.byteLength(json)));
  res.writeHead(status, headers);
  res.end(json);
}

/**
 * A POST with a JSON body of declared length within the limit, no query string and none of the headers gates 2
 * and 3 read: what the lane can take up. Anything else Koa reads and refuses or serves as before.
 */
function plainJsonPost(req: IncomingMessage, limitBytes: number): boolean {
  const h = req.headers;
  const length = Number(h['content-length']);
  const type = h['content-type'];
  return (
    req.httpVersionMajor === 1 &&
    length > 0 &&
    length <= limitBytes &&
    h['transfer-encoding'] === undefined &&
    (type === undefined || /^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) &&
    h['x-svc-jurisdiction'] === undefined &&
    h['x-svc-min-tier'] === undefined &&
    h['x-svc-delegation-cert'] === undefined
  );
}
