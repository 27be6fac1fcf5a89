/**
 * The HTTP shell both MCP servers (perception, governance) share: JSON errors, DNS-rebinding protection
 * (Origin on every route, Host while bound to loopback or when allowed hosts are configured; origin.ts), 405s as JSON, and listen/close with
 * bounded request reading. Routes stay the caller's: no global body parsing, so the MCP SDK reads the raw
 * stream.
 */
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import type Router from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { HttpLimits } from '../../api/http-limits.js';
import { asServiceError, jsonAllowedMethods } from '../../api/http-errors.js';
import { listenHttp } from '../../api/http-server.js';
import { proxyTrustOf, trustedProxy } from '../../api/proxy-trust.js';
import { createRequestRateLimits, enforcePrincipalRate, requestBounds } from '../../api/rate-limit.js';
import { ServiceError } from '../../core/errors.js';
import { hostAllowed, isLoopbackAddress, originAllowed } from './origin.js';

export interface McpHttpLogger {
  info(object: object, message: string): void;
  error(object: object, message: string): void;
}

export const silentLogger: McpHttpLogger = { info: () => undefined, error: () => undefined };

/** Request headers an MCP client (browser or not) sends: the CORS allow-list of the MCP routes. */
export const MCP_REQUEST_HEADERS =
  'content-type, accept, authorization, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id';

/** The routes MCP clients speak JSON-RPC on. */
const MCP_ROUTES = new Set(['/mcp', '/sse', '/message']);
/**
 * The JSON-RPC error code of a refusal before the MCP layer (authorization, origin): -32000, the
 * implementation-defined code the SDK's own transports answer HTTP-level refusals with.
 */
export const MCP_HTTP_ERROR_CODE = -32000;

/**
 * Errors leave as `{ error, detail? }` (core/errors.ts), except a 401 or 403 on an MCP route: there an SDK
 * surfaces only a JSON-RPC error, so the body is `{jsonrpc, id: null, error: {code: -32000, message, data:
 * {reason, detail}}}` (reason = the error code), beside the WWW-Authenticate challenge; mapped as the gateway maps them (api/http-errors.ts: a
 * full or unreachable store is 507/503); anything else is logged and becomes internal_error.
 */
function errorMiddleware(logger: McpHttpLogger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined && ctx.respond !== false) {
        throw new ServiceError('not_found', `no route for ${ctx.method} ${ctx.path}`);
      }
    } catch (error) {
      const failure = asServiceError(error);
      if (!(error instanceof ServiceError)) logger.error({ err: error, path: ctx.path }, 'unhandled error');
      if (ctx.respond === false || ctx.res.headersSent) {
        // The MCP transport owned the response; end it if it is still open.
        if (!ctx.res.writableEnded) ctx.res.end();
        return;
      }
      ctx.status = failure.status;
      ctx.set(failure.headers);
      ctx.body =
        MCP_ROUTES.has(ctx.path) && (failure.status === 401 || failure.status === 403)
          ? {
              jsonrpc: '2.0',
              id: null,
              error: {
                code: MCP_HTTP_ERROR_CODE,
                message: failure.detail ?? failure.code,
                data: { reason: failure.code, ...(failure.detail === undefined ? {} : { detail: failure.detail }) },
              },
            }
          : failure.toBody();
    }
  };
}

/** DNS-rebinding protection and CORS for one route: a browser Origin must be loopback or in `allowed`. */
export function originGate(allowed: readonly string[], allowHeaders = MCP_REQUEST_HEADERS): Middleware {
  return async (ctx, next) => {
    const origin = ctx.get('origin') || undefined;
    if (!originAllowed(origin, allowed)) {
      throw new ServiceError('origin_not_allowed', `origin ${origin} may not use ${ctx.path}`);
    }
    if (origin !== undefined) {
      ctx.set('access-control-allow-origin', origin);
      ctx.set('vary', 'origin');
      ctx.set('access-control-expose-headers', 'mcp-session-id, mcp-protocol-version, www-authenticate');
    }
    if (ctx.method === 'OPTIONS') {
      ctx.set('access-control-allow-methods', 'GET, POST, DELETE');
      ctx.set('access-control-allow-headers', allowHeaders);
      ctx.status = 204;
      return;
    }
    await next();
  };
}

export interface McpHttpApp {
  app: Koa;
  /** Binds; a loopback address also turns the Host check on. Answers the URL a client on this machine uses. */
  listen(port: number, host: string): Promise<{ url: string; server: Server }>;
  /** Runs `beforeClose` (closing MCP sessions), then closes the listener and its connections. */
  close(): Promise<void>;
}

export function createMcpHttpApp(options: {
  router: Router;
  logger: McpHttpLogger;
  allowedOrigins: readonly string[];
  /**
   * Host names besides loopback ones the server answers; the hosts of allowedOrigins pass too. Checked while
   * bound to loopback, and on any address once this list is non-empty.
   */
  allowedHosts: readonly string[];
  beforeClose: () => Promise<void>;
  /** Rate limits, trusted proxy and receive timeouts; unset: no rate limits, default timeouts. */
  limits?: HttpLimits | undefined;
}): McpHttpApp {
  const { router, limits } = options;
  const app = new Koa();
  app.proxy = false; // trustedProxy settles the client address, as on the gateway
  app.silent = true;
  const rates = createRequestRateLimits(limits);
  app.use(trustedProxy({ trust: proxyTrustOf(limits) }));
  app.use(errorMiddleware(options.logger));
  app.use(requestBounds(rates.ip, Date.now, rates.ipBytes));
  // The principal of an MCP request is its bearer token (a governance-issued agent token), when it has one. It is
  // counted before the route verifies it: only someone holding the token can spend its budget, and made-up
  // tokens each get a bucket of their own, under the same per-address limit.
  const principalRate = rates.principal;
  if (principalRate) {
    app.use(async (ctx, next) => {
      const authorization = ctx.get('authorization');
      if (authorization !== '') {
        const principal = `bearer:${createHash('sha256').update(authorization).digest('hex').slice(0, 32)}`;
        enforcePrincipalRate(ctx, principalRate, principal, Date.now());
      }
      await next();
    });
  }
  // Origin on every route, not only the MCP ones: a browser page on a foreign origin (or a rebound one) may not
  // POST /epoch/roll as text/plain or read /compliance either. Routes with CORS add their headers (originGate).
  app.use(async (ctx, next) => {
    const origin = ctx.get('origin') || undefined;
    if (!originAllowed(origin, options.allowedOrigins)) {
      throw new ServiceError('origin_not_allowed', `origin ${origin} may not use ${ctx.path}`);
    }
    await next();
  });
  // Host: always while bound to loopback; on another address only once allowedHosts names the served hosts.
  let checkHost = false;
  const hosts = [
    ...options.allowedHosts,
    ...options.allowedOrigins.flatMap((origin) => {
      try {
        return [new URL(origin).hostname];
      } catch {
        return [];
      }
    }),
  ];
  app.use(async (ctx, next) => {
    if (checkHost && !hostAllowed(ctx.get('host') || undefined, hosts)) {
      throw new ServiceError('host_not_allowed', `host ${ctx.get('host')} is not served here`);
    }
    await next();
  });
  app.use(router.routes());
  app.use(jsonAllowedMethods(router));

  let http: Server | undefined;
  return {
    app,
    async listen(port, host) {
      checkHost = isLoopbackAddress(host) || options.allowedHosts.length > 0;
      // Bounds on receiving a request; responses (SSE streams) may stay open.
      const listening = await listenHttp(app.callback(), port, host, limits);
      http = listening.server;
      const bound = listening.port;
      return { url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`, server: http };
    },
    async close() {
      await options.beforeClose();
      if (http === undefined) return;
      const server = http;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
