import type { IncomingHttpHeaders } from 'node:http';
import type { Context, Middleware } from 'koa';
import { forwardedClient, isSaneHost, type ForwardingHeaders, type ProxyTrust } from '../core/forwarded.js';
import type { HttpLimits } from './http-limits.js';

/** The proxy trust of a server's limits (TRUST_PROXY, TRUST_PROXY_HOPS, TRUST_PROXY_HEADER); undefined: none. */
export function proxyTrustOf(limits: HttpLimits | undefined): ProxyTrust | undefined {
  if (!limits?.trustProxy) return undefined;
  return { hops: limits.trustProxyHops ?? 1, header: limits.trustProxyHeader ?? 'x-forwarded-for' };
}

/**
 * First middleware of the gateway and of both MCP servers: settles who the client is and which origin it
 * reached, once, so the rate limit, logs and absolute URLs agree. Koa's own `app.proxy` stays off (it would
 * take the leftmost X-Forwarded-For entry, which the client writes). With `trust`, `ctx.ip` becomes the
 * address the outermost trusted proxy saw (core/forwarded.ts); without, the socket's peer. The origin is
 * PUBLIC_URL when set, else the trusted forwarded scheme and host, else the socket's scheme and Host header.
 */
export function trustedProxy(options: { trust: ProxyTrust | undefined; publicUrl?: string | undefined }): Middleware {
  const { trust, publicUrl } = options;
  if (!trust) {
    // The socket's scheme and Host: serviceOrigin works them out when asked, not on every request.
    if (publicUrl === undefined) return (_ctx, next) => next();
    return (ctx, next) => {
      ctx.state.serviceOrigin = publicUrl;
      return next();
    };
  }
  return (ctx, next) => {
    let proto = ctx.protocol;
    let host = ctx.host;
    const seen = forwardedClient(forwardingHeaders(ctx.req.headers), trust);
    if (seen.address !== undefined) ctx.request.ip = seen.address;
    if (seen.host !== undefined) host = seen.host;
    if (seen.proto !== undefined) proto = seen.proto;
    ctx.state.serviceOrigin = publicUrl ?? (isSaneHost(host) ? `${proto}://${host}` : '');
    return next();
  };
}

/**
 * The client's address as trustedProxy settles `ctx.ip` for a request with these headers from `peer` (the
 * socket's remote address), for a path that answers without Koa (api/tile-hits.ts).
 */
export function clientAddressOf(
  trust: ProxyTrust | undefined,
  headers: IncomingHttpHeaders,
  peer: string | undefined,
): string {
  return (trust && forwardedClient(forwardingHeaders(headers), trust).address) ?? peer ?? '';
}

const forwardingHeaders = (headers: IncomingHttpHeaders): ForwardingHeaders => ({
  forwarded: single(headers.forwarded),
  xForwardedFor: single(headers['x-forwarded-for']),
  xForwardedHost: single(headers['x-forwarded-host']),
  xForwardedProto: single(headers['x-forwarded-proto']),
});

const single = (value: string | string[] | undefined): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/**
 * This service's origin as the client reached it (see trustedProxy); '' without a usable Host, so URLs stay
 * relative. Koa 3's `ctx.origin` is the Origin request header, hence this.
 */
export function serviceOrigin(ctx: Context): string {
  const resolved = ctx.state.serviceOrigin as string | undefined;
  if (resolved !== undefined) return resolved;
  return isSaneHost(ctx.host) ? `${ctx.protocol}://${ctx.host}` : '';
}
