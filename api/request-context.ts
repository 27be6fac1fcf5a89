import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import { ServiceError } from '../core/errors.js';
import type { GateRejection } from './gates.js';
import type { GatewayMetrics } from './metrics.js';

/** The route label of a request no route matched (never the raw path: label values must stay few). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Longest raw path written to a log line. */
const MAX_LOGGED_PATH = 256;

/**
 * Routes machines poll (load balancers, Prometheus): their successful answers log at debug, so a scrape every
 * 15 s does not bury the requests people make.
 */
const QUIET_ROUTES = new Set(['/health', '/metrics']);

export interface RequestContextDeps {
  logger: Logger;
  metrics: GatewayMetrics;
  /** True once shutdown began: a new request gets 503 shutting_down, every response `Connection: close`. */
  draining?: (() => boolean) | undefined;
}

/**
 * A caller's X-Request-Id when it is a sane token (1–128 of letters, digits, `.`, `_`, `-`, `:`), else a fresh
 * UUID: it lands in logs and headers, so nothing else (spaces, quotes, control characters) is taken as given.
 */
export function requestIdOf(given: string | undefined): string {
  return given !== undefined && REQUEST_ID.test(given) ? given : randomUUID();
}
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The request's pino child logger (bound to its `request_id`, made on first use and kept in `ctx.state.log`);
 * `fallback` outside a request context.
 */
export function requestLog(ctx: Context, fallback: Logger): Logger {
  const state = ctx.state as { log?: Logger; requestId?: string; [LOGGER]?: Logger };
  if (state.log !== undefined) return state.log;
  const base = state[LOGGER];
  if (base === undefined || state.requestId === undefined) return fallback;
  return (state.log = base.child({ request_id: state.requestId }));
}
const LOGGER = Symbol('request logger');

/** What the response's `close` listener needs, kept on the response: no closure per request. */
const CONTEXT = Symbol('request context');
const STARTED = Symbol('request started');
type TrackedResponse = ServerResponse & { [CONTEXT]?: Context; [STARTED]?: number };

/**
 * Outermost middleware: gives every request an id (echoed in X-Request-Id) and a child logger (requestLog,
 * made on first use), and when its response closes (sent, or the connection gone) counts it by route pattern
 * and status, counts a gate's refusal, and logs one line: method, route, path, status, duration_ms,
 * request_id, and the error code (plus the gate) of a refusal. During shutdown it refuses new requests and
 * asks every client to close its connection, so the server can drain (bin/start.ts).
 */
export function requestContext(deps: RequestContextDeps): Middleware {
  const { logger, metrics } = deps;
  // One listener for every response (a response closes once): the request is found on the response itself.
  function onClose(this: TrackedResponse): void {
    const ctx = this[CONTEXT];
    if (ctx === undefined) return;
    this[CONTEXT] = undefined;
    metrics.inFlight(-1);
    finish(ctx, deps, ctx.state.requestId as string, performance.now() - this[STARTED]!);
  }
  return async (ctx, next) => {
    const res = ctx.res as TrackedResponse;
    res[STARTED] = performance.now();
    const id = requestIdOf(ctx.get('x-request-id') || undefined);
    ctx.state.requestId = id;
    (ctx.state as { [LOGGER]?: Logger })[LOGGER] = logger;
    res.setHeader('x-request-id', id);
    metrics.inFlight(1);
    res[CONTEXT] = ctx;
    res.on('close', onClose);
    if (deps.draining?.()) {
      // Only a kept-alive connection gets here once the listener closed: send the client to a new one.
      const refusal = new ServiceError('shutting_down', 'the server is shutting down; retry on a new connection');
      ctx.state.errorCode = refusal.code;
      ctx.status = refusal.status;
      ctx.set({ connection: 'close', 'retry-after': '1' });
      ctx.body = refusal.toBody();
      return;
    }
    await next();
    // Koa ignores this once a streamed response sent its headers; those connections close when drained.
    if (deps.draining?.()) ctx.set('connection', 'close');
  };
}

function finish(ctx: Context, deps: RequestContextDeps, id: string, ms: number): void {
  const res = ctx.res;
  settleRequest(deps, {
    method: ctx.method,
    route: routePattern(ctx),
    path: ctx.path,
    // A response that did not finish was abandoned (client gone, or drain timeout): nginx's 499.
    status: res.writableFinished ? res.statusCode : 499,
    ms,
    requestId: id,
    errorCode: ctx.state.errorCode as string | undefined,
    rejection: ctx.state.gateRejection as GateRejection | undefined,
  });
}

/** One answered request as its metrics and log line see it. */
export interface SettledRequest {
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
  requestId: string;
  errorCode?: string | undefined;
  rejection?: GateRejection | undefined;
}

/**
 * Counts an answered request by route pattern and status (and a gate's refusal), and logs its one line. Koa's
 * requests settle here when their response closes; tile hits answered before Koa (api/tile-hits.ts) at once.
 */
export function settleRequest(deps: RequestContextDeps, done: SettledRequest): void {
  const { route, status, rejection, errorCode } = done;
  deps.metrics.request(done.method, route, status, done.ms / 1000);
  if (rejection) deps.metrics.gateRejected(rejection.gate, rejection.code);

  const level = status >= 500 ? 'warn' : status < 400 && QUIET_ROUTES.has(route) ? 'debug' : 'info';
  if (!deps.logger.isLevelEnabled(level)) return;
  deps.logger[level](
    {
      request_id: done.requestId,
      method: done.method,
      route,
      path: done.path.length > MAX_LOGGED_PATH ? `${done.path.slice(0, MAX_LOGGED_PATH)}…` : done.path,
      status,
      duration_ms: Math.round(done.ms * 10) / 10,
      ...(errorCode === undefined ? {} : { error: errorCode }),
      ...(rejection ? { gate: rejection.gate } : {}),
    },
    'request',
  );
}

interface RouterState {
  _matchedRoute?: string | RegExp;
  /** Layers whose path matched, whatever their method (@koa/router). */
  matched?: { path: string | RegExp; methods: string[] }[];
}

/** The matched route's pattern (`/v1/compute/:jobId`); for a 405 the pattern of the path; else `unmatched`. */
function routePattern(ctx: Context): string {
  const state = ctx as unknown as RouterState;
  if (typeof state._matchedRoute === 'string') return state._matchedRoute;
  const layer = state.matched?.find((l) => l.methods.length > 0 && typeof l.path === 'string');
  return typeof layer?.path === 'string' ? layer.path : UNMATCHED_ROUTE;
}
