/**
 * One JSON POST to an OpenAI-compatible upstream, for the non-streaming completion: the hot path of every chat
 * completion. The `openai` client's fetch, web streams, header objects and logging made that call about
 * 0.5 ms slower than the upstream's own answer (docs/benchmarks.md, chat); this is node:http(s) over a
 * keep-alive agent per upstream, so consecutive requests reuse one connection, as fetch's pool did.
 *
 * It keeps the client's contract: failures are the `openai` error classes with the messages the client gives
 * them (so upstreamError maps them as before), the body is parsed as the client parses it, and redirects follow
 * activities/safe-fetch.ts's rules (same origin only, at most DEFAULT_MAX_REDIRECTS, 303 and a POST's 301/302
 * continue as a GET without the body).
 */
import {
  Agent as HttpAgent,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type RequestOptions,
} from 'node:http';
import { urlToHttpOptions } from 'node:url';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { VERSION } from 'openai/version';
import { DEFAULT_MAX_REDIRECTS, originOf, UpstreamRefused } from '../safe-fetch.js';

/** An idle kept-alive connection is closed after this long (undici's default, which fetch used before). */
export const IDLE_SOCKET_MS = 4000;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

export interface JsonPoster {
  /**
   * POSTs `body` to `path` under the base URL; the parsed answer of a 2xx (as the `openai` client parses it:
   * JSON by content type, else text; null for a 204). Throws APIError (an error status), APIConnectionError,
   * APIConnectionTimeoutError (no whole answer within `timeoutMs`), APIUserAbortError (`signal`).
   */
  post(path: string, body: unknown, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;
}

interface Answer {
  status: number;
  /** As received (res.rawHeaders): node builds `res.headers` on first use, a cost on every call. */
  rawHeaders: string[];
  text: string;
}

/** Where a POST goes first: built once per path (node:http's URL handling is a measurable share). */
interface Hop {
  url: URL;
  target: RequestOptions;
  /** The base URL's own origin, decided once. */
  sameOrigin: boolean;
}

/** What every call of one poster shares. */
interface Poster {
  origin: string | null;
  agents: { 'http:': HttpAgent; 'https:': HttpsAgent };
  accept: string[];
}

export function createJsonPoster(baseURL: string, apiKey: string): JsonPoster {
  const origin = originOf(baseURL);
  const agentOptions = { keepAlive: true, timeout: IDLE_SOCKET_MS };
  const poster: Poster = {
    origin,
    agents: { 'http:': new HttpAgent(agentOptions), 'https:': new HttpsAgent(agentOptions) },
    accept: ['accept', 'application/json', 'user-agent', `OpenAI/JS ${VERSION}`, 'authorization', `Bearer ${apiKey}`],
  };
  const firstHops = new Map<string, Hop>();
  const firstHopOf = (path: string) => {
    let hop = firstHops.get(path);
    if (!hop) {
      const url = new URL(baseURL + (baseURL.endsWith('/') && path.startsWith('/') ? path.slice(1) : path));
      hop = { url, target: targetOf(poster, url), sameOrigin: originOf(url) === origin };
      firstHops.set(path, hop);
    }
    return hop;
  };

  return {
    async post(path, body, timeoutMs, signal) {
      if (signal?.aborted) throw new APIUserAbortError();
      const answer = await new Promise<Answer>((resolve, reject) => {
        const call = new Call(poster, resolve, reject, timeoutMs, signal);
        const first = firstHopOf(path);
        call.hop(first.url, first.target, first.sameOrigin, 'POST', Buffer.from(JSON.stringify(body)), 0);
      });
      if (answer.status < 200 || answer.status > 299) {
        const json = safeJson(answer.text) as object | undefined;
        throw APIError.generate(answer.status, json, json ? undefined : answer.text, headersOf(answer));
      }
      if (answer.status === 204) return null;
      const mediaType = header(answer.rawHeaders, 'content-type')?.split(';')[0]?.trim();
      if (mediaType?.includes('application/json') || mediaType?.endsWith('+json')) {
        if (header(answer.rawHeaders, 'content-length') === '0') return undefined;
        return JSON.parse(answer.text);
      }
      return answer.text;
    },
  };
}

/**
 * Only what node:http reads of a URL's options, and the agent: fewer fields for ClientRequest and the agent to
 * copy on every request.
 */
function targetOf(poster: Poster, url: URL): RequestOptions {
  const { protocol, hostname, port, path, auth } = urlToHttpOptions(url);
  const agent = poster.agents[url.protocol as 'http:'];
  return auth === undefined
    ? { protocol, hostname, port, path, agent }
    : { protocol, hostname, port, path, auth, agent };
}

// Raw header arrays skip node:http's per-header bookkeeping; with one, Host is ours to send.
const requestHeaders = (poster: Poster, url: URL, body: Buffer | null): string[] =>
  body === null
    ? ['host', url.host, ...poster.accept]
    : ['host', url.host, ...poster.accept, 'content-type', 'application/json', 'content-length', String(body.length)];

/** The call a request, its response and its abort signal belong to (their listeners are shared functions). */
const CALL = Symbol('runtime-http call');
type Tagged<T> = T & { [CALL]?: Call };

/**
 * One POST and its redirects until it settles once: answered, failed, timed out or aborted. Its state lives
 * here and its listeners are module functions, so a call makes no closures: this runs on every completion.
 */
class Call {
  private current: ClientRequest | undefined;
  private settled = false;
  private readonly timer: NodeJS.Timeout;
  /** The final response's body so far. */
  chunks: Buffer[] = [];
  /** Of the request being answered: a redirect's target keeps what the first hop sent. */
  private url!: URL;
  private method = 'POST';
  private body: Buffer | null = null;
  private hops = 0;

  constructor(
    private readonly poster: Poster,
    private readonly resolve: (answer: Answer) => void,
    private readonly reject: (error: Error) => void,
    timeoutMs: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.timer = setTimeout(onTimeout, timeoutMs, this);
    if (signal) follow(signal, this);
  }

  settle(error: unknown, answer?: Answer): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    if (this.signal) inFlight.get(this.signal)?.delete(this);
    if (answer) this.resolve(answer);
    else this.reject(error instanceof Error ? error : new Error(String(error)));
  }

  stop(error: Error): void {
    this.settle(error);
    this.current?.destroy();
  }

  hop(url: URL, target: RequestOptions, sameOrigin: boolean, method: string, body: Buffer | null, hops: number): void {
    // The client saw a refused fetch as a connection error with its default message.
    if (!sameOrigin) return this.settle(new APIConnectionError({ cause: new UpstreamRefused('origin', url.href) }));
    this.url = url;
    this.method = method;
    this.body = body;
    this.hops = hops;
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req: Tagged<ClientRequest> = request({ ...target, method, headers: requestHeaders(this.poster, url, body) });
    req[CALL] = this;
    this.current = req;
    req.on('response', onResponse);
    req.on('error', onRequestError);
    req.end(body ?? undefined);
  }

  respond(res: Tagged<IncomingMessage>): void {
    const status = res.statusCode ?? 0;
    const location = header(res.rawHeaders, 'location');
    if (REDIRECTS.has(status) && location !== undefined) {
      res.resume(); // drained, so the connection is reused
      const { url, method, body, hops } = this;
      if (hops >= DEFAULT_MAX_REDIRECTS) {
        return this.settle(new APIConnectionError({ cause: new UpstreamRefused('redirects', url.href) }));
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        return this.settle(new APIConnectionError({ cause: new UpstreamRefused('origin', location.slice(0, 200)) }));
      }
      const asGet = status === 303 || ((status === 301 || status === 302) && method === 'POST');
      const sameOrigin = originOf(next) === this.poster.origin;
      return this.hop(
        next,
        targetOf(this.poster, next),
        sameOrigin,
        asGet ? 'GET' : method,
        asGet ? null : body,
        hops + 1,
      );
    }
    // The body as text (UTF-8, a BOM dropped as fetch does); a connection cut mid-body is fetch's `terminated`.
    res[CALL] = this;
    res.on('data', onData);
    res.on('end', onEnd);
    res.on('close', onClose);
    res.on('error', ignore); // reported by `close`
  }
}

/**
 * The calls in flight per caller signal, and one abort listener per signal however many calls it outlives: the
 * chat lane gives every completion on a connection that connection's signal (api/chat-lane.ts), and adding and
 * removing an EventTarget listener on every call was a measurable share of a completion.
 */
const inFlight = new WeakMap<AbortSignal, Set<Call>>();

function follow(signal: AbortSignal, call: Call): void {
  let calls = inFlight.get(signal);
  if (calls === undefined) {
    calls = new Set();
    inFlight.set(signal, calls);
    signal.addEventListener('abort', onCallerAbort, { once: true });
  }
  calls.add(call);
}

function onCallerAbort(this: AbortSignal): void {
  for (const call of inFlight.get(this) ?? []) call.stop(new APIUserAbortError());
}

function onTimeout(call: Call): void {
  call.stop(new APIConnectionTimeoutError());
}

function onResponse(this: Tagged<ClientRequest>, res: IncomingMessage): void {
  this[CALL]!.respond(res);
}

function onRequestError(this: Tagged<ClientRequest>, error: Error): void {
  this[CALL]!.settle(connectionError(error));
}

function onData(this: Tagged<IncomingMessage>, chunk: Buffer): void {
  this[CALL]!.chunks.push(chunk);
}

function onEnd(this: Tagged<IncomingMessage>): void {
  const { chunks } = this[CALL]!;
  const text = (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8');
  this[CALL]!.settle(null, {
    status: this.statusCode ?? 0,
    rawHeaders: this.rawHeaders,
    text: text.charCodeAt(0) === 0xfeff ? text.slice(1) : text,
  });
}

function onClose(this: Tagged<IncomingMessage>): void {
  if (!this.complete) this[CALL]!.settle(new TypeError('terminated'));
}

function ignore(): void {}

/** As the `openai` client classifies a failed fetch. */
function connectionError(error: Error): Error {
  const described = String(error) + ('cause' in error ? String(error.cause) : '');
  if (/timed? ?out/i.test(described)) return new APIConnectionTimeoutError();
  return new APIConnectionError({ cause: error });
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function headersOf(answer: Answer): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2)
    headers.append(answer.rawHeaders[i]!, answer.rawHeaders[i + 1]!);
  return headers;
}

/** The first value of header `name` (lower case) in raw name/value pairs, as `res.headers` would give it. */
function header(raw: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const key = raw[i]!;
    if (key.length === name.length && key.toLowerCase() === name) return raw[i + 1];
  }
  return undefined;
}
