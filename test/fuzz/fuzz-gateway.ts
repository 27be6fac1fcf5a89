/**
 * The gateway the HTTP fuzz suite drives: test/helpers/gateway.ts with healthy fake upstreams (an XYZ tile
 * server, a STAC catalog, an OpenAI-compatible worker runtime and backbone, a perception server for the
 * dashboard's compliance proxy) and an API key, plus the list of
 * routes read from the app's own router, so a route added to api/app.ts is fuzzed without touching the suite.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { generateKeyPair } from '../../core/identity.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { startFakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { S3_ASSETS, SHARES, TEST_NOW } from '../helpers/imagery-fixtures.js';
import { sentinelItem, startStacServer } from '../helpers/stac-server.js';
import { startXyzServer } from '../helpers/xyz-server.js';

export interface FuzzRoute {
  method: string;
  /** The router's pattern, e.g. `/v1/tiles/:h3_cell/:zoom/:file`. */
  path: string;
  /** Path parameter names in order (`*path` wildcards included). */
  params: string[];
}

export const FUZZ_API_KEY = 'sk-fuzz-0123456789';

/** Every (method, pattern) the app's router serves, HEAD aside (it mirrors GET). */
export function routesOf(app: Koa): FuzzRoute[] {
  const dispatch = app.middleware.find((m) => 'router' in m) as unknown as { router: Router } | undefined;
  if (dispatch === undefined) throw new Error('no @koa/router dispatch middleware on the app');
  return dispatch.router.stack.flatMap((layer) =>
    typeof layer.path !== 'string'
      ? []
      : layer.methods
          .filter((method) => method !== 'HEAD')
          .map((method) => ({
            method,
            path: layer.path as string,
            params: layer.paramNames.map((k) => String(k.name)),
          })),
  );
}

/** A route's family for the summary: `/v1/<resource>` or the first segment (`/store`, `/svc`, `/health` …). */
export function familyOf(path: string): string {
  const segments = path.split('/').filter(Boolean);
  return `/${segments.slice(0, segments[0] === 'v1' ? 2 : 1).join('/')}`;
}

/** A perception server for the dashboard's compliance proxy: its upstream must be healthy too. */
async function startPerception() {
  const db = openSqlite(':memory:');
  const store = createSqliteAuditStore(db);
  const agent = generateKeyPair();
  const human = generateKeyPair();
  const cert = issueCertificate(human.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [DEFAULT_PERCEPTION_CELL],
    facets: ['perception', 'compliance'],
    not_before: '2026-01-01T00:00:00Z',
    not_after: '2027-01-01T00:00:00Z',
    max_depth: 0,
  });
  const server = createPerceptionServer({
    store,
    agent,
    chain: [cert],
    principalLocal: false,
    clock: () => TEST_NOW,
    tools: [createEmbedTool()],
  });
  const { url } = await server.listen(0, '127.0.0.1');
  return {
    url,
    async close() {
      await server.close();
      await store.close();
      db.close();
    },
  };
}

export async function startFuzzGateway() {
  const [xyz, stac, worker, backbone, perception] = await Promise.all([
    startXyzServer(),
    startStacServer(),
    startFakeRuntime('worker'),
    startFakeRuntime('backbone'),
    startPerception(),
  ]);
  // Scenes over Rome with S3 assets: NDVI answers from metadata, no pixel reads.
  stac.items = [5, 12, 20].map((day) =>
    sentinelItem(`S2A_${day}`, `2026-02-${String(day).padStart(2, '0')}T10:00:00Z`, {
      assets: S3_ASSETS,
      properties: { ...SHARES, 'eo:cloud_cover': day },
    }),
  );
  // Workers the fuzzer registers are phantoms that never poll a queue: the registry keeps them (the routes are
  // fuzzed) but routing sees only the gateway's own local worker, so a valid job is never sent to a phantom.
  const node = generateKeyPair();
  const registry = createSqliteWorkerRegistry(openSqlite(':memory:'));
  const workers: WorkerRegistry = {
    register: (registration, nowMs) => registry.register(registration, nowMs),
    heartbeat: (pk, seq, nowMs) => registry.heartbeat(pk, seq, nowMs),
    leave: (pk, seq, nowMs) => registry.leave(pk, seq, nowMs),
    get: (pk) => registry.get(pk),
    list: async () => (await registry.list()).filter((w) => w.pk === node.publicKey),
    recordOutcome: (pk, outcome, jobId) => registry.recordOutcome(pk, outcome, jobId),
    close: () => registry.close(),
  };
  const templates = Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template(s === 'dark' ? 'webp' : 'png')]));
  const gw = await startGateway({
    clock: () => TEST_NOW,
    node,
    workers,
    config: { apiKeys: [FUZZ_API_KEY], perceptionUrl: perception.url },
    tiles: { templates: templates as never, timeoutMs: 3000 },
    imagery: { stacUrl: stac.url, timeoutMs: 3000 },
    swarm: {
      workerRuntimeUrl: worker.url,
      workerModels: ['tinyllama', 'lfm2.5-1.2b-instruct'],
      prewarmModels: [],
      backboneUrl: backbone.url,
      backboneApiKey: 'sk-backbone',
      timeoutMs: 3000,
    },
    jobWaitMs: 5000,
  });
  return {
    gw,
    routes: routesOf(gw.app),
    /** The signer of the fuzz suite's signed requests. */
    key: generateKeyPair(),
    async close() {
      await gw.close();
      await registry.close();
      await Promise.all([xyz.close(), stac.close(), worker.close(), backbone.close(), perception.close()]);
    },
  };
}
