import { ServerResponse, type IncomingMessage } from 'node:http';
import Router from '@koa/router';
import Koa, { type Context, type Middleware } from 'koa';
import { createProofIngest } from '../activities/proof/proof-ingest.js';
import { createSyncQuota, createWriterRoles, DEFAULT_SYNC_BOUNDS } from '../activities/proof/sync-writers.js';
import { jobStellarTx } from '../activities/settlement/settlement-service.js';
import type { AppDeps } from './app-deps.js';
import { gateChain, gateLimits, routeGates, type GateLimits } from './gates.js';
import { errorMiddleware, jsonAllowedMethods, type ErrorStyle } from './http-errors.js';
import { OPENEO_BASE, WELL_KNOWN, openEoHttp, openEoRoutes } from './openeo/index.js';
import { readJsonBody } from './json-body.js';
import { createMetrics } from './metrics.js';
import { createRequestRateLimits, requestBounds } from './rate-limit.js';
import { proxyTrustOf, trustedProxy } from './proxy-trust.js';
import { requestContext } from './request-context.js';
import { routeDispatch, type RouteMatch } from './route-dispatch.js';
import { chatLane } from './chat-lane.js';
import { tileHits } from './tile-hits.js';
import type { RouteSpec } from './route-spec.js';
import { CHAT_ROUTE, chatRoutes } from './routes/chat.js';
import { computeRoutes } from './routes/compute.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { ledgerRoutes, statusEarnings } from './routes/ledger.js';
import { imageryRoutes } from './routes/imagery.js';
import { createImageryBound, DEFAULT_IMAGERY_BOUNDS } from './imagery-bound.js';
import { metricsRoutes } from './routes/metrics.js';
import { modelRoutes } from './routes/models.js';
import { openApiRoutes } from './routes/openapi.js';
import { receiptRoutes } from './routes/receipt.js';
import { storeRoutes } from './routes/store.js';
import { blobRoutes } from './routes/store-blobs.js';
import { svcRoutes } from './routes/svc.js';
import { workerRoutes } from './routes/svc-workers.js';
import { telemetryRoutes } from './routes/telemetry.js';
import { TILE_ROUTE, tileRoutes } from './routes/tiles.js';
import { toolRoutes } from './routes/tools.js';

/**
 * The gateway as a Koa app: client address and origin (api/proxy-trust.ts) → request context (id, log line, metrics, drain) → errors
 * → per-address rate and query size → routing (api/route-dispatch.ts) → (per route) body → gate 1 → gate 2 → gate 3
 * → gate 4 → handler. Tile cache hits are answered before all of it, with the same steps (api/tile-hits.ts). It
 * never listens; `bin/` and tests do. Whole chat completions likewise (api/chat-lane.ts).
 */
export function createApp(deps: AppDeps): Koa {
  const app = new GatewayApp();
  // Koa's own proxy support takes the client-written leftmost X-Forwarded-For entry: trustedProxy decides instead.
  app.proxy = false;
  const rates = createRequestRateLimits(deps.config.httpLimits);
  app.silent = true; // errors are logged by errorMiddleware, once, with the request id
  const metrics = deps.metrics ?? createMetrics({ processMetrics: false });
  metrics.watchTileCache(() => deps.tiles.cacheSize());
  const router = new Router();
  const routes = [
    ...healthRoutes(),
    ...metricsRoutes({ metrics, token: deps.config.metricsToken }),
    ...computeRoutes({
      jobs: deps.jobs,
      runner: deps.jobRunner,
      clock: deps.clock,
      epochGenesisMs: deps.config.epochGenesisMs,
      epochMs: deps.config.epochMs,
      publicUrl: deps.config.publicUrl,
      stellarTx: async (jobId) => (await jobStellarTx(deps.ledger, jobId))?.tx_hash ?? null,
      operatorToken: deps.config.operatorToken,
    }),
    ...receiptRoutes({
      jobs: deps.jobs,
      proofs: deps.proofs,
      ledger: deps.ledger,
      networkPassphrase: deps.networkPassphrase,
      headSigner: deps.headSigner,
    }),
    ...modelRoutes(deps.swarm),
    ...tileRoutes(deps.tiles),
    ...imageryRoutes(deps.imagery, createImageryBound(deps.config.imageryBounds ?? DEFAULT_IMAGERY_BOUNDS, deps.clock)),
    ...telemetryRoutes(deps.telemetry),
    ...workerRoutes({
      workers: deps.workers,
      clock: deps.clock,
      rateLimits: deps.rateLimits,
      limits: deps.config.registrationLimits,
    }),
    ...blobRoutes({
      blobs: deps.blobs,
      workers: deps.workers,
      jobs: deps.jobs,
      rateLimits: deps.rateLimits,
      clock: deps.clock,
      limits: deps.config.blobUploads,
    }),
    ...ledgerRoutes({ ledger: deps.ledger, clock: deps.clock }),
    ...toolRoutes(),
    ...chatRoutes(deps.swarm),
    ...svcRoutes(deps.swarm, {
      earnings: () => statusEarnings(deps.ledger, deps.clock()),
      operatorToken: deps.config.operatorToken,
    }),
    ...storeRoutes({
      proofs: deps.proofs,
      ingest: createProofIngest({
        store: deps.proofs,
        // This node's key and the configured ones write as nodes; registered workers as workers.
        roleOf: createWriterRoles({
          nodeKeys: [deps.nodePk, ...(deps.config.proofSync?.nodeKeys ?? [])],
          workers: deps.workers,
        }),
        clock: deps.clock,
        genesisMs: deps.config.epochGenesisMs,
        epochMs: deps.config.epochMs,
        maxBackfillEpochs: deps.config.proofSync?.maxBackfillEpochs,
        quota: createSyncQuota(deps.config.proofSync?.bounds ?? DEFAULT_SYNC_BOUNDS, deps.clock),
      }),
      ledger: deps.ledger,
      platformPk: deps.nodePk,
      networkPassphrase: deps.networkPassphrase,
      headSigner: deps.headSigner,
    }),
    ...dashboardRoutes({ perceptionUrl: deps.config.perceptionUrl }),
    ...openEoRoutes(deps),
  ];
  // The reference documents every route, itself included: it reads the list when first asked.
  routes.push(...openApiRoutes({ routes: () => routes, publicUrl: deps.config.publicUrl }));
  const limits = gateLimits(rates.principal);
  for (const spec of routes) registerRoute(router, deps, spec, limits);
  const tileRoute = routes.find((spec) => spec.path === TILE_ROUTE && spec.method === 'GET')!;

  const trust = proxyTrustOf(deps.config.httpLimits);
  // Without a proxy to trust or a PUBLIC_URL there is nothing to settle up front (serviceOrigin reads the socket).
  if (trust || deps.config.publicUrl !== undefined) app.use(trustedProxy({ trust, publicUrl: deps.config.publicUrl }));
  app.use(requestContext({ logger: deps.logger, metrics, draining: deps.draining }));
  const dispatch = routeDispatch(router);
  app.use(errorMiddleware(deps.logger, errorStyleOf(dispatch.match, routes)));
  app.use(openEoHttp(dispatch.match));
  app.use(requestBounds(rates.ip, deps.clock, rates.ipBytes));
  app.use(dispatch.middleware);
  app.use(jsonAllowedMethods(router));
  const chatRoute = routes.find((spec) => spec.path === CHAT_ROUTE && spec.method === 'POST')!;
  const chat = chatLane({
    logger: deps.logger,
    metrics,
    draining: deps.draining,
    swarm: deps.swarm,
    gates: routeGates(deps, chatRoute, limits),
    config: deps.config,
    apiKeyStore: deps.apiKeyStore,
    bodyLimitBytes: chatRoute.bodyLimitBytes ?? deps.config.bodyLimitBytes,
    timeoutMs: deps.config.httpLimits?.requestTimeoutMs,
    addressRate: rates.ip,
    addressBytes: rates.ipBytes,
    principalRate: rates.principal,
    trust,
    clock: deps.clock,
  });
  const tiles = tileHits({
    logger: deps.logger,
    metrics,
    draining: deps.draining,
    tiles: deps.tiles,
    gates: routeGates(deps, tileRoute, limits),
    cors: corsHeaders(tileRoute),
    addressRate: rates.ip,
    trust,
    clock: deps.clock,
  });
  app.lane = (req, res, koa) => tiles(req, res) || chat(req, res, koa);
  return app;
}

/**
 * The error style of the route whose path a request names, whatever its method, so refusals made before the
 * route runs (a 405, the per-address rate limit) are written as that route's clients expect.
 */
function errorStyleOf(
  match: (path: string, method: string) => RouteMatch,
  routes: readonly RouteSpec<unknown>[],
): (ctx: Context) => ErrorStyle {
  const styles = new Map(routes.filter((r) => r.errorStyle).map((r) => [r.path, r.errorStyle!]));
  return (ctx) => {
    // Every path of the openEO API, routed or not (a 404 under it is openEO's NotFound).
    if (ctx.path === WELL_KNOWN || ctx.path === OPENEO_BASE || ctx.path.startsWith(`${OPENEO_BASE}/`)) return 'openeo';
    if (styles.size === 0) return 'svc';
    for (const layer of match(ctx.path, ctx.method).path) {
      const style = typeof layer.path === 'string' ? styles.get(layer.path) : undefined;
      if (style) return style;
    }
    return 'svc';
  };
}

/** The one way to add a route: it always gets body parsing (if declared) and all four gates. */
function registerRoute(router: Router, deps: AppDeps, spec: RouteSpec<unknown>, limits: GateLimits): void {
  // Built once per route, not per request: the CORS headers and the gates' chain.
  const cors = corsHeaders(spec);
  const gates = gateChain(deps, spec, limits);
  const timeoutMs = deps.config.httpLimits?.requestTimeoutMs;
  const bodyLimit = spec.bodyLimitBytes ?? deps.config.bodyLimitBytes;
  // The gates in order, then the handler.
  const run = (ctx: Context, i: number): Promise<void> => {
    const gate = gates[i];
    if (gate === undefined) return spec.handler(ctx, ctx.state.input, ctx.state.gates);
    return Promise.resolve(gate(ctx, () => run(ctx, i + 1)));
  };
  // One router layer: each Koa layer is a promise hop on every request. A route without a body reads none,
  // and awaits nothing before its gates.
  const layer: Middleware = spec.jsonBody
    ? async (ctx) => {
        if (cors) ctx.set(cors);
        ctx.state.body = await readJsonBody(ctx, bodyLimit, timeoutMs);
        await run(ctx, 0);
      }
    : (ctx) => {
        if (cors) ctx.set(cors);
        return run(ctx, 0);
      };
  router.register(spec.path, [spec.method], [layer]);
}

/** A route's CORS headers (docs/protocol.md §2.4), or undefined for a route browsers do not call cross-origin. */
function corsHeaders(spec: RouteSpec<unknown>): Record<string, string> | undefined {
  if (spec.cors === undefined) return undefined;
  return {
    'access-control-allow-origin': '*',
    ...(spec.cors.expose.length > 0 ? { 'access-control-expose-headers': spec.cors.expose.join(', ') } : {}),
  };
}

/**
 * Koa, with tile cache hits answered before it makes a context (api/tile-hits.ts): every server made from
 * `callback()` (bin/start.ts, the tests) gets them.
 */
class GatewayApp extends Koa {
  /** True when it answers the request (or hands it to `koa` itself, api/chat-lane.ts). */
  lane:
    | ((req: IncomingMessage, res: ServerResponse, koa: (req: IncomingMessage, res: ServerResponse) => void) => boolean)
    | undefined;

  override callback(): ReturnType<Koa['callback']> {
    const koa = super.callback();
    const lane = this.lane;
    if (lane === undefined) return koa;
    const toKoa = (req: IncomingMessage, res: ServerResponse) => void koa(req, res);
    // HTTP/1 only: an HTTP/2 compatibility response goes to Koa.
    return (req, res) =>
      res instanceof ServerResponse && lane(req as IncomingMessage, res, toKoa) ? DONE : koa(req, res);
  }
}
const DONE = Promise.resolve();
