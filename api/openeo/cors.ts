/**
 * CORS and methods on every openEO path (docs/protocol.md §16.1), as the openEO API asks of a back-end that
 * browser clients (the Web Editor) use: every answer, errors included, carries `Access-Control-Allow-Origin: *`
 * and exposes the headers openEO names (Location, OpenEO-Identifier, OpenEO-Costs, Link) and ours; `OPTIONS`
 * answers 204 with the path's methods and the request headers allowed (Authorization among them). `*` with an
 * authenticated route is safe here: the credential is a bearer header the page's script sends on purpose, never a
 * cookie a browser adds by itself. A method the path is not routed for is FeatureUnsupported (501), as the API
 * answers an endpoint it specifies and a back-end does not build (PUT on a path the API gives only GET and POST,
 * say); a method the API never uses (PROPFIND, TRACE …) is 405, as on every route.
 */
import type { Middleware } from 'koa';
import { OpenEoError } from '../../core/openeo/errors.js';
import type { RouteMatch } from '../route-dispatch.js';
import { OPENEO_BASE, WELL_KNOWN } from './discovery.js';

const EXPOSE = [
  'Link',
  'Location',
  'OpenEO-Costs',
  'OpenEO-Identifier',
  'ETag',
  'X-Request-Id',
  'X-Svc-Record',
  'X-Svc-Proof',
  'X-Svc-Cell',
  'X-Svc-Epoch',
  'X-Svc-Cost',
  'X-Svc-Cache',
].join(', ');
/** The methods the openEO API uses; another (PROPFIND, TRACE …) is no openEO request and gets the router's 405. */
const API_METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
const ALLOW_HEADERS = 'Authorization, Content-Type, If-None-Match, X-Idn-Signature, X-Idn-Pk';

export const isOpenEoPath = (path: string) =>
  path === WELL_KNOWN || path === OPENEO_BASE || path.startsWith(`${OPENEO_BASE}/`);

export function openEoHttp(match: (path: string, method: string) => RouteMatch): Middleware {
  return (ctx, next) => {
    if (!isOpenEoPath(ctx.path)) return next();
    ctx.set({ 'access-control-allow-origin': '*', 'access-control-expose-headers': EXPOSE });
    const found = match(ctx.path, ctx.method);
    if (ctx.method === 'OPTIONS') {
      const methods = new Set(found.path.flatMap((layer) => layer.methods));
      methods.delete('HEAD');
      ctx.set({
        'access-control-allow-methods': ['OPTIONS', ...[...methods].sort()].join(', '),
        'access-control-allow-headers': ALLOW_HEADERS,
        'access-control-max-age': '600',
        'content-type': 'application/json',
      });
      ctx.status = 204;
      return Promise.resolve();
    }
    if (!found.route && found.path.length > 0 && API_METHODS.has(ctx.method)) {
      throw new OpenEoError('FeatureUnsupported', `${ctx.method} ${ctx.path} is not supported here.`);
    }
    return next();
  };
}
