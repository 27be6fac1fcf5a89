import type Router from '@koa/router';
import type { Context, Middleware } from 'koa';

type RouteLayer = Router['stack'][number];

/** What @koa/router's `match` answers: layers matching the path, those also matching the method, and whether one is a route. */
export interface RouteMatch {
  path: RouteLayer[];
  pathAndMethod: RouteLayer[];
  route: boolean;
}

/** What @koa/router leaves on the context of a matched request (read by allowedMethods and the request context). */
interface RoutedContext {
  matched?: RouteLayer[];
  router?: Router;
  routeMatched?: boolean;
  _matchedRoute?: string | RegExp;
  _matchedRouteName?: string;
  captures?: string[];
  params: Record<string, string>;
  request: { params?: Record<string, string> };
  routerPath?: string | RegExp;
  routerName?: string | undefined;
}

/** A path segment that path-to-regexp reads as itself (no parameter, wildcard, group or escape). */
const LITERAL_SEGMENT = /^[A-Za-z0-9._~-]*$/;

/**
 * The bucket of a request path: its first two segments, lower case (`v1/tiles`; `health/` for `/health`
 * and `/health/`). Layers are matched case-insensitively, so lower case on both sides.
 */
function pathKey(path: string): string {
  const second = path.indexOf('/', 1);
  if (second < 0) return `${path.slice(1)}/`.toLowerCase();
  const third = path.indexOf('/', second + 1);
  return (third < 0 ? path.slice(1) : path.slice(1, third)).toLowerCase();
}

/**
 * The bucket a layer can only ever match paths of, or undefined when it may match paths of any bucket (a
 * parameter or wildcard in its first two segments, a RegExp path, a prefix layer).
 */
function layerKey(layer: RouteLayer): string | undefined {
  const { path } = layer;
  if (typeof path !== 'string' || !path.startsWith('/') || layer.opts.end === false || layer.opts.prefix) {
    return undefined;
  }
  const segments = path.slice(1).split('/');
  const head = segments.slice(0, 2);
  if (!head.every((s) => LITERAL_SEGMENT.test(s))) return undefined;
  return segments.length === 1 ? `${head[0]!}/`.toLowerCase() : head.join('/').toLowerCase();
}

/**
 * @koa/router's matching and dispatch for one router whose routes are all registered, without its
 * per-request work that the gateway does not need: `match` tests only the layers that can match the path's
 * first two segments (the rest cannot: their literal segments differ), in registration order, so it answers
 * exactly what `router.match` answers. `middleware` runs a request's single matching route as the router's
 * own dispatch would (the same `ctx.matched`, `ctx.params`, `ctx._matchedRoute`, …) without composing a
 * chain per request; anything else (no route, several layers, a host-bound router) goes to the router's own
 * middleware unchanged.
 */
export function routeDispatch(router: Router): {
  match: (path: string, method: string) => RouteMatch;
  middleware: Middleware;
} {
  const stack = router.stack;
  const keys = stack.map(layerKey);
  const anywhere = stack.filter((_, i) => keys[i] === undefined);
  const buckets = new Map<string, RouteLayer[]>();
  for (const key of new Set(keys)) {
    if (key !== undefined)
      buckets.set(
        key,
        stack.filter((_, i) => keys[i] === key || keys[i] === undefined),
      );
  }

  function match(path: string, method: string): RouteMatch {
    const result: RouteMatch = { path: [], pathAndMethod: [], route: false };
    const upper = method.toUpperCase();
    for (const layer of buckets.get(pathKey(path)) ?? anywhere) {
      if (!layer.regexp.test(path)) continue;
      result.path.push(layer);
      const isMiddleware = layer.methods.length === 0;
      if (isMiddleware || layer.methods.includes(upper)) {
        result.pathAndMethod.push(layer);
        if (!isMiddleware) result.route = true;
      }
    }
    return result;
  }

  const fallback = router.routes() as unknown as Middleware;
  const plain = !router.host && !router.opts.routerPath && !router.exclusive;
  const middleware: Middleware = (ctx, next) => {
    const routed = ctx as unknown as Context & RoutedContext & { newRouterPath?: string };
    if (!plain || routed.newRouterPath) return fallback(ctx, next);
    const path = ctx.path || routed.routerPath || '';
    if (typeof path !== 'string') return fallback(ctx, next);
    const found = match(path, ctx.method);
    const layer = found.pathAndMethod.length === 1 ? found.pathAndMethod[0]! : undefined;
    if (!found.route || layer === undefined || layer.stack.length !== 1) return fallback(ctx, next);
    if (routed.matched) routed.matched.push(...found.path);
    else routed.matched = found.path;
    routed.router = router;
    routed.routeMatched = true;
    // As the router's per-layer step sets them before the layer's own middleware.
    routed.captures = layer.captures(path);
    routed.request.params = layer.params(path, routed.captures, routed.params);
    routed.params = routed.request.params;
    routed.routerPath = layer.path;
    routed.routerName = layer.name || undefined;
    routed._matchedRoute = layer.path;
    if (layer.name) routed._matchedRouteName = layer.name;
    return (layer.stack[0] as Middleware)(ctx, next);
  };
  // As on the router's own middleware: tools find the routes of an app through it.
  return { match, middleware: Object.assign(middleware, { router }) };
}
