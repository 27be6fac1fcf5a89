import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { TileActivities, TileRequest } from '../activities/tiles/index.js';
import type { ProxyTrust } from '../core/forwarded.js';
import type { RateLimiter } from '../core/rate-limiter.js';
import { passGatesAtOnce, type Gate, type GateContext, type GateName } from './gates.js';
import { clientAddressOf } from './proxy-trust.js';
import { enforceAddressRate } from './rate-limit.js';
import { requestIdOf, settleRequest, type RequestContextDeps } from './request-context.js';
import { TILE_ROUTE, tileAnswer } from './routes/tiles.js';

const PREFIX = '/v1/tiles/';

export interface TileHitDeps extends RequestContextDeps {
  tiles: TileActivities;
  /** The tile route's gates (api/gates.ts routeGates) and CORS headers, as its Koa layer runs and sets them. */
  gates: readonly [GateName, Gate][];
  cors: Record<string, string> | undefined;
  /** The per-address request limit (api/rate-limit.ts requestBounds); the client address as proxy trust settles it. */
  addressRate: RateLimiter | undefined;
  trust: ProxyTrust | undefined;
  clock: () => number;
}

/**
 * Tile cache hits answered straight on Node's response, before Koa makes its context: the busiest route of a
 * map client, and one whose answer is ready in memory. It does what the Koa path does for such a request, with
 * the same functions: request id, the route's gates, the per-address limit and its headers, the tile's headers
 * and proof record (routes/tiles.ts tileAnswer), metrics and the log line (request-context.ts settleRequest).
 *
 * Anything else returns false untouched, and Koa serves it: other methods and paths, a query string or escapes
 * in the path, a body, the headers gates 2 and 3 read, a draining server, a gate that refuses or would wait, a
 * tile not in the cache, a refused rate limit. The checks that change nothing come first and the address's rate
 * take last, so a request handed to Koa is counted there once. Requests answered here are never in flight when
 * the gauge is read, so they do not move it.
 */
export function tileHits(deps: TileHitDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { tiles, gates } = deps;
  const cors = deps.cors ? Object.entries(deps.cors).flat() : [];
  return (req, res) => {
    const method = req.method;
    const url = req.url;
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || !url.startsWith(PREFIX)) return false;
    const params = tileParams(url);
    if (params === undefined || !plainRequest(req) || deps.draining?.()) return false;
    const started = performance.now();
    try {
      const gated = new HitRequest(req, params);
      if (!passGatesAtOnce(gates, gated)) return false;
      const request = gated.state.input as TileRequest;
      const found = tiles.peekTile(request);
      if (found === undefined) return false;
      if (deps.addressRate) {
        const address = clientAddressOf(deps.trust, req.headers, req.socket.remoteAddress);
        enforceAddressRate(gated, deps.addressRate, address, deps.clock());
      }
      const requestId = requestIdOf(header(req, 'x-request-id'));
      const answer = tileAnswer(request, found, tiles, header(req, 'if-none-match'), requestId);
      const headers = gated.headers(requestId, cors, answer.headers);
      if (answer.bytes) headers.push('content-length', String(answer.bytes.length));
      res.writeHead(answer.status, headers);
      res.end(method === 'GET' ? answer.bytes : undefined);
      settleRequest(deps, {
        method,
        route: TILE_ROUTE,
        path: url,
        status: answer.status,
        ms: performance.now() - started,
        requestId,
      });
      return true;
    } catch (error) {
      // A refused rate take changed nothing: Koa takes it again and answers the 429 with its headers.
      if (!res.headersSent) return false;
      deps.logger.error({ err: error }, 'tile hit failed after its headers were sent');
      res.destroy();
      return true;
    }
  };
}

/** `h3_cell`, `zoom` and `file` of `/v1/tiles/<cell>/<zoom>/<file>`, or undefined for any other shape. */
function tileParams(url: string): Record<string, string> | undefined {
  const zoomAt = url.indexOf('/', PREFIX.length) + 1;
  const fileAt = zoomAt === 0 ? 0 : url.indexOf('/', zoomAt) + 1;
  if (fileAt === 0 || fileAt === url.length || url.indexOf('/', fileAt) >= 0) return undefined;
  // Escapes and query strings go through Koa, which decodes and bounds them.
  if (url.includes('%', PREFIX.length) || url.includes('?', PREFIX.length)) return undefined;
  return {
    h3_cell: url.slice(PREFIX.length, zoomAt - 1),
    zoom: url.slice(zoomAt, fileAt - 1),
    file: url.slice(fileAt),
  };
}

/** No body, and none of the headers gates 2 and 3 read: the gates can then only pass or refuse the path. */
function plainRequest(req: IncomingMessage): boolean {
  const h = req.headers;
  return (
    h['content-length'] === undefined &&
    h['transfer-encoding'] === undefined &&
    h['x-svc-jurisdiction'] === undefined &&
    h['x-svc-min-tier'] === undefined &&
    h['x-svc-delegation-cert'] === undefined
  );
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}

const NO_QUERY: Record<string, string | string[] | undefined> = Object.freeze({});

/**
 * The request as the gates read it (Koa's `ctx.get` answers '' for a missing header), and the headers they set;
 * the chat lane's too (api/chat-lane.ts).
 */
export class HitRequest implements GateContext {
  readonly state: Record<string, unknown> = {};
  readonly query = NO_QUERY;
  readonly response = { get: (field: string): unknown => this.set_?.get(field.toLowerCase()) };
  /** Made only when a gate or the rate limit sets a header. */
  private set_: Map<string, string> | undefined;

  constructor(
    private readonly req: IncomingMessage,
    readonly params: Record<string, string>,
  ) {}

  get(field: string): string {
    const value = this.req.headers[field.toLowerCase()];
    return typeof value === 'string' ? value : '';
  }

  set(headers: Record<string, string>): void {
    this.set_ ??= new Map();
    for (const [name, value] of Object.entries(headers)) this.set_.set(name.toLowerCase(), value);
  }

  /** What the gates and rate limits set so far, by name. */
  setHeaders(): Record<string, string> {
    return this.set_ ? Object.fromEntries(this.set_) : {};
  }

  /**
   * The answer's headers as [name, value, …] in the order the Koa path sets them: the request id, what the
   * rate limit set, the route's CORS headers, the tile's.
   */
  headers(requestId: string, cors: readonly string[], tile: readonly string[]): string[] {
    const out = ['x-request-id', requestId];
    if (this.set_) for (const [name, value] of this.set_) out.push(name, value);
    for (const value of cors) out.push(value);
    for (const value of tile) out.push(value);
    return out;
  }
}
