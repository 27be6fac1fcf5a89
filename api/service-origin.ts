import type { Context } from 'koa';

// A host name or IP literal with an optional port; anything else in a Host header is not echoed.
const SANE_HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * This service's origin as the client reached it. Koa 3's `ctx.origin` is the Origin request header, so
 * it is built from protocol and Host. Without a usable Host the result is '' and URLs stay relative.
 */
export function serviceOrigin(ctx: Context): string {
  return SANE_HOST.test(ctx.host) ? `${ctx.protocol}://${ctx.host}` : '';
}
