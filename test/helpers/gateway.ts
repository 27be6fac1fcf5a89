import { once } from 'node:events';
import type { Server } from 'node:http';
import type { JobAnswers } from '../../api/job-answers.js';
import type Koa from 'koa';
import { pino, type Logger } from 'pino';
import { createApp } from '../../api/app.js';
import { createEmbeddedJobRunner, type JobRunner } from '../../api/job-runner.js';
import { createComputeActivities, type ComputeActivities } from '../../activities/compute/index.js';
import { DEFAULT_QUEUE_NAMING, type QueueNaming } from '../../core/task-queues.js';
import type { JobStore } from '../../store/job-store.js';
import type { BlobStore } from '../../store/blob-store.js';
import { createSqliteBlobStore } from '../../store/sqlite/blob-store.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { listenHttp } from '../../api/http-server.js';
import type { AppDeps, GatewayConfig } from '../../api/app-deps.js';
import type { GatewayMetrics } from '../../api/metrics.js';
import { createImageryActivities, type ImageryConfig } from '../../activities/imagery/index.js';
import { createSwarm, type SwarmConfig } from '../../activities/inference/index.js';
import type { ToolExecutor } from '../../activities/tools/execute-tool.js';
import { createSqliteApiKeyStore } from '../../store/sqlite/api-key-store.js';
import { createOutcomeBatch, type OutcomeBatch, type OutcomeBatchOptions } from '../../store/outcome-batch.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import type { ApiKeyStore } from '../../store/api-key-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { createRecordBatcher, type ProofWriter } from '../../activities/proof/record-batcher.js';
import { createTileActivities, type TileConfig } from '../../activities/tiles/index.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { createTelemetryActivities } from '../../activities/telemetry/index.js';
import { fusionWriters as trustedFusionWriters } from '../../core/telemetry.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { createOpenEoBatchActivities } from '../../activities/imagery/openeo-batch.js';
import { createEmbeddedOpenEoRunner, type OpenEoBatchRunner } from '../../api/openeo/batch-runner.js';
import { encodePng } from '../../api/openeo/png.js';
import { REGISTRY } from '../../api/openeo/result.js';
import type { OpenEoJobStore } from '../../store/openeo-job-store.js';
import { createSqliteOpenEoJobStore } from '../../store/sqlite/openeo-job-store.js';

export interface TestResponse {
  status: number;
  headers: Headers;
  body: unknown;
  text: string;
}

export interface TestGateway {
  url: string;
  /** The listening server, for a test that watches its requests (`request` events). */
  server: Server;
  /** The URLs of the requests Koa's middleware saw, in order: the rest were answered before it (api/tile-hits.ts). */
  koaRequests: string[];
  request(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; headers?: Record<string, string> },
  ): Promise<TestResponse>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<TestResponse>;
  get(path: string, headers?: Record<string, string>): Promise<TestResponse>;
  close(): Promise<void>;
}

/** A gateway on an ephemeral loopback port with an in-memory store; the clock can be overridden. */
export async function startGateway(
  options: {
    config?: Partial<GatewayConfig>;
    clock?: () => number;
    rateLimits?: AppDeps['rateLimits'];
    proofs?: ProofStore;
    /** Tile upstreams default to a closed port: a test that serves tiles starts its own XYZ server. */
    tiles?: Partial<TileConfig>;
    /** Accepted telemetry readings per device and hour (default core/telemetry.ts MAX_READINGS_PER_DEVICE_HOUR). */
    telemetryReadingsPerHour?: number;
    /** The STAC catalog defaults to a closed port likewise. */
    imagery?: Partial<ImageryConfig>;
    /** No local runtime and no backbone unless a test starts fake ones. */
    swarm?: Partial<SwarmConfig>;
    workers?: WorkerRegistry;
    /** How counted completions are batched to the registry (store/outcome-batch.ts); default its defaults. */
    outcomeBatch?: OutcomeBatchOptions;
    apiKeyStore?: ApiKeyStore;
    /** Server-side tool execution for chat (a fake executor in tests). */
    swarmTools?: ToolExecutor;
    jobs?: JobStore;
    /** Large step outputs; default: SQLite in the gateway's in-memory database. */
    blobs?: BlobStore;
    /** Task queue names (Temporal runs): the gateway's routing must name the queues its workers poll. */
    naming?: QueueNaming;
    /** Another JobRunner (Temporal) built from the gateway's activities and job store; default: embedded. */
    jobRunner?: (compute: ComputeActivities, jobs: JobStore) => JobRunner;
    /** How long POST /v1/compute waits before job_timeout (embedded default 10 s). */
    jobWaitMs?: number;
    /** The embedded runner's lease (api/job-runner.ts JOB_LEASE_MS). */
    jobLeaseMs?: number;
    /** The credit ledger; default: SQLite in the gateway's in-memory database. */
    ledger?: LedgerStore;
    /** The relay's share of a routed step (RELAY_FEE_PERCENT / 100); default core/pricing.ts RELAY_FEE_SHARE. */
    relayFeeShare?: number;
    /** Who polls a task queue (routing under Temporal); default nobody. */
    pollers?: (queue: string) => Promise<ReadonlySet<string>>;
    /** Called once a finished job's ledger entries are posted (a settlement service's settleJob). */
    onJobPosted?: (jobId: string) => void;
    /** Where finishJob hands each finished job's answer (a Temporal runner that starts runs eagerly). */
    answers?: JobAnswers;
    /** The gateway's node key (a test that settles on a fake Horizon funds its account first). */
    node?: KeyPair;
    /** Shown with anchors (LEDGER=stellar). */
    networkPassphrase?: string;
    /** Prometheus metrics, wired to the tile and job hooks as bin/start.ts does; default: the app's own. */
    metrics?: GatewayMetrics;
    /** Default: pino at TEST_LOG (silent). */
    logger?: Logger;
    /** The app's shutdown flag (bin/start.ts). */
    draining?: () => boolean;
    /** openEO batch jobs; default: SQLite in the gateway's in-memory database. */
    openEoJobs?: OpenEoJobStore;
    /** Another openEO batch runner built from the run activity; default: embedded. */
    openEoRunner?: (activities: ReturnType<typeof createOpenEoBatchActivities>) => OpenEoBatchRunner;
  } = {},
): Promise<
  TestGateway & {
    proofs: ProofStore;
    writer: ProofWriter;
    node: KeyPair;
    workers: OutcomeBatch;
    apiKeyStore: ApiKeyStore;
    swarm: ReturnType<typeof createSwarm>;
    jobs: JobStore;
    blobs: BlobStore;
    compute: ComputeActivities;
    ledger: LedgerStore;
    /** The Koa app itself (its router lists the routes). */
    app: Koa;
    openEoJobs: OpenEoJobStore;
    openEoRunner: OpenEoBatchRunner;
  }
> {
  const db = openSqlite(':memory:');
  const proofs = options.proofs ?? createSqliteProofStore(db);
  const clock = options.clock ?? Date.now;
  const config: GatewayConfig = {
    requireDelegation: false,
    bodyLimitBytes: 1024 * 1024,
    epochGenesisMs: DEFAULT_EPOCH_GENESIS_MS,
    apiKeys: [],
    ...options.config,
  };
  const node = options.node ?? generateKeyPair();
  const ledger = options.ledger ?? createSqliteLedgerStore(db);
  const writer = createRecordBatcher({ store: proofs, signer: node, clock, genesisMs: config.epochGenesisMs });
  const logger = options.logger ?? pino({ level: process.env.TEST_LOG ?? 'silent' });
  // Completions counted in memory and written in batches, as bin/stores.ts opens the registry.
  const workers = createOutcomeBatch(options.workers ?? createSqliteWorkerRegistry(db), options.outcomeBatch);
  const apiKeyStore = options.apiKeyStore ?? createSqliteApiKeyStore(db);
  const rateLimits = options.rateLimits ?? createSqliteRateLimitStore(db);
  const swarm = createSwarm({
    config: {
      workerRuntimeUrl: undefined,
      workerModels: [],
      prewarmModels: [],
      backboneUrl: undefined,
      backboneApiKey: undefined,
      timeoutMs: 5000,
      freeMessagesPerDay: 50,
      ...options.swarm,
    },
    workers,
    proofs: writer,
    clock,
    nodePk: node.publicKey,
    logger,
    rateLimits,
    ...(options.swarmTools ? { tools: options.swarmTools } : {}),
    // The embedded worker's take-up check reads the same policy as gate 5, as bin/start.ts wires it.
    toolPolicy: config.toolPolicy,
  });
  await swarm.start(); // registers the local worker when a test gives a runtime URL
  const closedPort = 'http://127.0.0.1:9';
  const tiles = createTileActivities({
    config: {
      templates: Object.fromEntries(
        TILE_STYLES.map((s) => [s, `${closedPort}/${s}/{z}/{x}/{y}`]),
      ) as TileConfig['templates'],
      timeoutMs: 2000,
      cacheBytes: 16 * 1024 * 1024,
      userAgent: 'geofabric-test',
      ...options.tiles,
    },
    proofs: writer,
    clock,
    logger,
    ...(options.metrics ? { onServeEvent: options.metrics.tileEvent } : {}),
  });
  const imagery = createImageryActivities({
    config: {
      stacUrl: closedPort,
      collection: 'sentinel-2-l2a',
      timeoutMs: 2000,
      userAgent: 'geofabric-test',
      ...options.imagery,
    },
    proofs: writer,
    clock,
    logger,
  });
  // As bin/start.ts: fusion trusts this node's telemetry and its peers' (SYNC_NODE_KEYS, docs/protocol.md §2.10).
  const fusionWriters = trustedFusionWriters([node.publicKey, ...(config.proofSync?.nodeKeys ?? [])]);
  const telemetry = createTelemetryActivities({
    store: proofs,
    signer: node,
    fusionWriters,
    clock,
    genesisMs: config.epochGenesisMs,
    epochMs: config.epochMs ?? EPOCH_MS,
    rateLimits,
    ...(options.telemetryReadingsPerHour === undefined ? {} : { readingsPerHour: options.telemetryReadingsPerHour }),
  });
  const jobs = options.jobs ?? createSqliteJobStore(db);
  const blobs = options.blobs ?? createSqliteBlobStore(db);
  const compute = createComputeActivities({
    jobs,
    blobs,
    // The embedded runner routes no step to a worker queue; a Temporal test passes its own.
    pollers: options.pollers ?? (async () => new Set()),
    proofs: writer,
    workers,
    swarm,
    tiles,
    imagery,
    fusion: {
      source: telemetry.source,
      genesisMs: config.epochGenesisMs,
      epochMs: config.epochMs ?? EPOCH_MS,
      trustedWriters: fusionWriters,
    },
    nodePk: node.publicKey,
    naming: options.naming ?? DEFAULT_QUEUE_NAMING,
    backbone: options.swarm?.backboneUrl !== undefined,
    clock,
    ledger,
    ...(options.relayFeeShare === undefined ? {} : { relayFeeShare: options.relayFeeShare }),
    ...(options.onJobPosted === undefined ? {} : { onJobPosted: options.onJobPosted }),
    ...(options.metrics ? { onJobFinished: options.metrics.jobFinished } : {}),
    ...(options.answers ? { onAnswer: options.answers.deliver } : {}),
  });
  const jobRunner =
    options.jobRunner?.(compute, jobs) ??
    createEmbeddedJobRunner({
      steps: compute.steps,
      jobs: compute.jobs,
      store: jobs,
      waitMs: options.jobWaitMs ?? 10_000,
      retryDelayMs: 10,
      leases: rateLimits,
      clock,
      ...(options.jobLeaseMs === undefined ? {} : { leaseMs: options.jobLeaseMs }),
    });
  const openEoJobs = options.openEoJobs ?? createSqliteOpenEoJobStore(db);
  const openEoActivities = createOpenEoBatchActivities({
    imagery,
    jobs: openEoJobs,
    registry: REGISTRY,
    encodePng,
    clock,
  });
  const openEoRunner = options.openEoRunner?.(openEoActivities) ?? createEmbeddedOpenEoRunner(openEoActivities, logger);
  const app = createApp({
    config,
    clock,
    logger,
    rateLimits,
    proofs,
    tiles,
    imagery,
    telemetry,
    workers,
    apiKeyStore,
    swarm,
    jobs,
    blobs,
    jobRunner,
    ledger,
    nodePk: node.publicKey,
    headSigner: node,
    networkPassphrase: options.networkPassphrase,
    metrics: options.metrics,
    draining: options.draining,
    openEo: { jobs: openEoJobs, runner: openEoRunner },
  });
  const koaRequests: string[] = [];
  // First in Koa's chain (its middleware list is read when callback() composes it).
  app.middleware.unshift((ctx, next) => {
    koaRequests.push(ctx.url);
    return next();
  });
  const { server, port } = await listenHttp(app.callback(), 0, '127.0.0.1', config.httpLimits);
  const url = `http://127.0.0.1:${port}`;

  const request: TestGateway['request'] = async (method, path, { body, raw, headers = {} } = {}) => {
    const payload = raw ?? (body === undefined ? undefined : JSON.stringify(body));
    const res = await fetch(url + path, {
      method,
      headers: payload === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: the assertion on `text` or `body` will say so
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };

  return {
    url,
    server,
    koaRequests,
    proofs,
    writer,
    node,
    workers,
    apiKeyStore,
    swarm,
    jobs,
    blobs,
    compute,
    ledger,
    app,
    openEoJobs,
    openEoRunner,
    request,
    post: (path, body, headers) => request('POST', path, { body, ...(headers ? { headers } : {}) }),
    get: (path, headers) => request('GET', path, headers ? { headers } : {}),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
      swarm.stop();
      await jobRunner.close();
      await openEoRunner.close();
      await writer.close();
      await workers.flush(); // the graceful shutdown's write of the counted completions (bin/stores.ts close)
      db.close();
    },
  };
}
