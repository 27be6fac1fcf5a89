/**
 * `geofabric worker` (docs/protocol.md §1.4–1.6, 2.6): a swarm worker process. It registers with its gateway
 * (GATEWAY_URL) and heartbeats every 10 s, polls the one Temporal task queue of its cell and tool set
 * (core/task-queues.ts `workerQueue`) with the step activities, writes the proof records of the steps it runs
 * to its own local SQLite store (never MONGODB_URI: the central store is the gateway's), seals its own epochs,
 * and pushes records and seals to the central store every SYNC_INTERVAL_SECONDS (CENTRAL_STORE_URL, default
 * the gateway). A step's output fields over 16 KiB go to the gateway first (`PUT /store/blobs/{sha256}`), so its
 * activity result carries references and stays far below Temporal's payload limit. Its state lives in `DATA_DIR/worker/` (node key, `worker.db`), so a worker sharing a DATA_DIR
 * with a gateway still has a key of its own.
 *
 * Inference runs only on this worker's own runtime (WORKER_RUNTIME_URL): its swarm has no backbone and a
 * registry holding only itself. Without a runtime it serves no models and advertises no tools (tools are
 * called by models), so it takes only tile and imagery steps from its cell's tool-less queue.
 *
 * Relay workers (WORKER_RELAY=true) register with `relay: true` and poll no compute queues: relays route jobs
 * to compute workers, they do not run steps. The relay fee and its accounting are settlement's.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { createProcessLogger } from './log-output.js';
import { withHeartbeats } from '../activities/compute/heartbeat.js';
import { createStepActivities } from '../activities/compute/step-activities.js';
import { EPOCH_MS } from '../core/epoch.js';
import { httpTelemetrySource } from '../activities/telemetry/http-source.js';
import { guardSteps, type WorkerSelf } from '../activities/compute/worker-guard.js';
import { createImageryActivities } from '../activities/imagery/index.js';
import { createSwarm } from '../activities/inference/index.js';
import { localHardware } from '../activities/inference/local-worker.js';
import { lastDueEpoch, sealDueEpochs, startAutoSealer } from '../activities/proof/epoch-sealer.js';
import {
  createRecordBatcher,
  type ProofWriter,
  type RecordEntry,
  type RecordStamp,
} from '../activities/proof/record-batcher.js';
import { createSyncAgent } from '../activities/proof/sync-agent.js';
import { startRepeatingTask } from '../activities/repeating-task.js';
import {
  createGatewayClient,
  GatewayError,
  type GatewayClient,
  type WorkerDeclaration,
} from '../activities/swarm-client/gateway-client.js';
import { createGatewayBlobStore } from '../activities/swarm-client/gateway-blob-store.js';
import { createTileActivities } from '../activities/tiles/index.js';
import { createToolExecutor } from '../activities/tools/execute-tool.js';
import { createWebSearch } from '../activities/tools/web-search.js';
import { SERVICE_VERSION } from '../api/version.js';
import { supportedHardwareTier, type HardwareTier } from '../core/hardware-tier.js';
import { routingCell, workerQueue } from '../core/task-queues.js';
import type { KeyPair } from '../core/identity.js';
import { HEARTBEAT_INTERVAL_MS } from '../core/worker-selection.js';
import { workerIdentity } from '../core/worker-identity.js';
import type { WorkerTier } from '../core/tiers.js';
import { isToolId, TOOL_IDS } from '../core/tool-registry.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore, type SqliteProofStore } from '../store/sqlite/proof-store.js';
import { writerScopedId } from '../store/record-append.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';
import { createSqliteWorkerRegistry } from '../store/sqlite/worker-registry.js';
import type { WorkerHardware, WorkerRecord, WorkerRegistry } from '../store/worker-registry.js';
import { ConfigError, type Config } from './config.js';
import { loadNodeKey } from './node-key.js';
import { gatewayRegistrationError } from './startup-errors.js';
import { startTemporalWorkers, type TemporalWorkers } from './temporal-workers.js';

/** The registry's heartbeat interval (core/worker-selection.ts: offline after three missed beats, 30 s). */
export const WORKER_HEARTBEAT_MS = HEARTBEAT_INTERVAL_MS;
/** How long the leave announcement may take on stop: a gateway that does not answer is not waited for. */
export const WORKER_LEAVE_TIMEOUT_MS = 3_000;
/** After the drain: the writer's flush, the final sync; past this the CLI exits 1 anyway. */
const AFTER_DRAIN_MS = 5_000;
/** Activities heartbeat to Temporal this often (the workflow's heartbeat timeout is 20 s). */
const ACTIVITY_HEARTBEAT_MS = 5_000;
/** The store's retention runs at start and then hourly, as the other prunes (docs/operations.md "Retention"). */
const STORE_PRUNE_INTERVAL_MS = 3_600_000;
/** Records deleted per write transaction: the write lock is held briefly, the event loop runs between batches. */
const STORE_PRUNE_BATCH = 10_000;

export interface WorkerOptions {
  logger?: Logger;
  /** The gateway client's fetch (tests). */
  fetch?: typeof fetch;
  clock?: () => number;
  /** Declared hardware instead of detecting it. */
  hardware?: WorkerHardware;
  heartbeatMs?: number;
  /** Default WORKER_DRAIN_SECONDS. */
  drainMs?: number;
  /** How long the first registration retries while the gateway is unreachable or failing (5xx). */
  registerWaitMs?: number;
  gatewayTimeoutMs?: number;
}

/**
 * The worker's record writer takes each record under its writer-scoped id (store/record-append.ts). A step that
 * fails after its record is written (a blob upload to a gateway that is down, a kill before the result reaches
 * Temporal) runs again on another worker or a gateway, which writes the same derived step id under its own key;
 * the central store keeps the first of the two and refuses the other as `record_conflict` for good, so this
 * worker's record, and with it the seal of its epoch, would never reach the central store. The scoped id is a
 * function of the id and this worker's key: a retried activity here still finds its own record.
 */
export function writerScopedIds<W extends ProofWriter>(writer: W, signer: KeyPair): W {
  const scoped = (entry: RecordEntry): RecordEntry => ({ ...entry, id: writerScopedId(signer, entry.id) });
  return {
    ...writer,
    record: (entry: RecordEntry, at?: RecordStamp) => writer.record(scoped(entry), at),
    aggregate: (key: string, open: () => RecordEntry, serve: Record<string, unknown>) =>
      writer.aggregate(key, () => scoped(open()), serve),
    write: (entry: RecordEntry) => writer.write(scoped(entry)),
  };
}

/** What this worker is and would poll: `geofabric worker --check` prints it. */
export interface WorkerPlan {
  h3_cell: string;
  routing_cell: string;
  relay: boolean;
  hardware: WorkerHardware;
  hardware_tier: HardwareTier;
  models: string[];
  tools: string[];
  queues: string[];
  gateway_url: string;
  central_store_url: string;
  temporal: { address: string; namespace: string };
}

/** `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`: the GPU with most VRAM. */
export function parseNvidiaSmi(output: string): { gpu: string; vram_gb: number } | null {
  let best: { gpu: string; vram_gb: number } | null = null;
  for (const line of output.split('\n')) {
    const cut = line.lastIndexOf(',');
    if (cut < 0) continue;
    const gpu = line.slice(0, cut).trim();
    const mib = Number(line.slice(cut + 1).trim());
    if (!gpu || !Number.isFinite(mib) || mib < 0) continue;
    const vram = Math.round((mib / 1024) * 10) / 10;
    if (!best || vram > best.vram_gb) best = { gpu: gpu.slice(0, 128), vram_gb: vram };
  }
  return best;
}

/**
 * This machine: node:os (local-worker.ts `localHardware`), plus an NVIDIA GPU when `nvidia-smi` answers.
 * Other GPUs are not detected, so such a machine declares tier 1 (the gateway re-checks the declared tier
 * against the declared hardware, core/hardware-tier.ts).
 */
export async function detectHardware(): Promise<WorkerHardware> {
  const base = localHardware();
  try {
    const { stdout } = await promisify(execFile)(
      'nvidia-smi',
      ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'],
      { timeout: 5_000 },
    );
    const gpu = parseNvidiaSmi(stdout);
    return gpu ? { ...base, ...gpu } : base;
  } catch {
    return base; // no nvidia-smi, or no NVIDIA driver
  }
}

export function workerPlan(config: Config, hardware: WorkerHardware): WorkerPlan {
  const relay = config.workerRelay;
  const runsInference = !relay && config.swarm.workerRuntimeUrl !== undefined;
  const tools = runsInference ? [...new Set(config.swarm.workerTools ?? ['web-search'])] : [];
  const unknown = tools.find((t) => !isToolId(t));
  if (unknown !== undefined) {
    throw new ConfigError(`configuration: WORKER_TOOLS: "${unknown}" is not a registry tool (${TOOL_IDS.join(', ')})`);
  }
  const cell = config.swarm.workerCell ?? '';
  return {
    h3_cell: cell,
    routing_cell: routingCell(cell, config.naming),
    relay,
    hardware,
    hardware_tier: supportedHardwareTier(hardware),
    models: runsInference ? [...config.swarm.workerModels] : [],
    tools,
    queues: relay ? [] : [workerQueue(cell, tools, config.naming)],
    gateway_url: config.gatewayUrl,
    central_store_url: config.centralStoreUrl ?? config.gatewayUrl,
    temporal: config.temporal,
  };
}

/** `geofabric worker --check`: the plan, without registering, polling or writing anything. */
export async function workerCheck(config: Config, hardware?: WorkerHardware): Promise<WorkerPlan> {
  return workerPlan(config, hardware ?? (await detectHardware()));
}

export interface RunningWorker {
  pk: string;
  plan: WorkerPlan;
  /** The trust tier the gateway last reported. */
  trustTier(): WorkerTier;
  /** Resolves when the Temporal Workers stop; rejects when one fails (not after `stop()`). */
  running: Promise<void>;
  /** Drains and closes (idempotent): see `startWorker`. */
  stop(): Promise<void>;
}

/**
 * Starts the worker; resolves once it is registered and polling. `stop()` drains: heartbeats stop and the
 * worker leaves the registry (`POST /svc/workers/leave`: offline, and routed no new step, from then on; when the
 * gateway does not answer, it is offline 30 s after its last heartbeat), the Temporal Workers stop polling and
 * give running activities `drainMs` to finish (then they are cancelled and Temporal retries them elsewhere), the proof
 * writer flushes, the sealer and the sync loop stop, every ended epoch is sealed at once, one last sync pushes what is left (what fails stays
 * unsynced in the local store and goes with the next start), and the store closes.
 */
export async function startWorker(config: Config, options: WorkerOptions = {}): Promise<RunningWorker> {
  const logger = options.logger ?? createProcessLogger(config);
  const clock = options.clock ?? Date.now;
  const drainMs = options.drainMs ?? config.workerDrainMs;
  const plan = workerPlan(config, options.hardware ?? (await detectHardware()));
  if (config.mongo) logger.warn('worker: MONGODB_URI is ignored; a worker writes to its local SQLite store');

  const dir = join(config.dataDir, 'worker');
  mkdirSync(dir, { recursive: true });
  const node = loadNodeKey(dir, config.nodeSecretKey);
  const pk = node.key.publicKey;
  logger.info({ node_pk: pk, source: node.source }, 'worker: node key');
  // STORE_MAX_MB bounds an edge worker's disk use too: past it, steps fail with storage_full, nothing half-written.
  const db = openSqlite(join(dir, 'worker.db'), { maxBytes: config.storeMaxBytes });
  const proofs = createSqliteProofStore(db);
  const localWorkers = createSqliteWorkerRegistry(db, { outcomeRetentionMs: config.workerOutcomeRetentionMs });
  const rateLimits = createSqliteRateLimitStore(db);
  const closeStores = async () => {
    await Promise.all([proofs.close(), localWorkers.close(), rateLimits.close()]);
    db.close();
  };
  const writer = writerScopedIds(
    createRecordBatcher({
      store: proofs,
      signer: node.key,
      clock,
      genesisMs: config.epochGenesisMs,
      // A step's activity completes only once its record is stored: no waiting for neighbours a worker rarely has.
      awaitedWriteDelayMs: 0,
      onError: (error, { dropped }) => logger.error({ err: error, dropped }, 'worker: writing proof records failed'),
    }),
    node.key,
  );

  let trust: WorkerTier = 'seedling';
  const self = (): WorkerSelf => ({
    models: plan.models,
    tools: plan.tools,
    hardware_tier: plan.hardware_tier,
    trust_tier: trust,
    h3_cell: plan.h3_cell,
    relay: plan.relay,
  });
  const declaration: WorkerDeclaration = {
    h3_cell: plan.h3_cell,
    models: plan.models,
    tools: plan.tools,
    hardware: plan.hardware,
    hardware_tier: plan.hardware_tier,
    relay: plan.relay,
    version: SERVICE_VERSION,
  };
  const gateway = createGatewayClient({
    gatewayUrl: config.gatewayUrl,
    signer: node.key,
    timeoutMs: options.gatewayTimeoutMs ?? 10_000,
    clock,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });

  let swarm: ReturnType<typeof createSwarm> | undefined;
  let temporal: TemporalWorkers | undefined;
  try {
    const registered = await registerWithRetry(
      config.gatewayUrl,
      gateway,
      declaration,
      options.registerWaitMs ?? 120_000,
      logger,
    );
    trust = registered.trust_tier;
    logger.info(
      { gateway: config.gatewayUrl, h3_cell: plan.h3_cell, trust_tier: trust, relay: plan.relay },
      'worker: registered',
    );
    if (!plan.relay) {
      swarm = createSwarm({
        // Only this worker's own runtime: no backbone, and a registry that holds only this worker.
        config: { ...config.swarm, backboneUrl: undefined, backboneApiKey: undefined, workerTools: plan.tools },
        workers: asDeclared(localWorkers, pk, () => ({ ...declaration, trust_tier: trust })),
        proofs: writer,
        clock,
        nodePk: pk,
        logger,
        rateLimits,
        tools: createToolExecutor({ webSearch: createWebSearch(config.webSearch) }),
        toolPolicy: config.toolPolicy,
      });
      await swarm.start();
      const steps = createStepActivities({
        swarm,
        tiles: createTileActivities({ config: config.tiles, proofs: writer, clock, logger }),
        imagery: createImageryActivities({ config: config.imagery, proofs: writer, clock, logger }),
        // sensor_fusion reads the signed readings the gateway holds, each re-verified here, and takes only those
        // its gateways' node keys wrote: without those keys configured this worker cannot tell, and runs no fusion.
        fusion:
          config.gatewayNodePks === undefined
            ? undefined
            : {
                source: httpTelemetrySource({
                  gatewayUrl: config.gatewayUrl,
                  genesisMs: config.epochGenesisMs,
                  epochMs: EPOCH_MS,
                  writers: config.gatewayNodePks,
                }),
                genesisMs: config.epochGenesisMs,
                epochMs: EPOCH_MS,
                trustedWriters: config.gatewayNodePks,
              },
        nodePk: pk,
        // Large output fields go to the gateway, so this worker's step results stay far below Temporal's limit.
        blobs: createGatewayBlobStore(gateway),
      });
      const activities = withHeartbeats(
        guardSteps(steps, self, { models: swarm.models, toolPolicy: config.toolPolicy }),
        ACTIVITY_HEARTBEAT_MS,
      );
      temporal = await startTemporalWorkers({
        role: 'worker',
        address: config.temporal.address,
        namespace: config.temporal.namespace,
        logger,
        gracefulShutdownMs: drainMs,
        // The gateway routes steps to this worker only while Temporal sees it polling under its key.
        identity: workerIdentity(pk),
        queues: plan.queues.map((taskQueue) => ({ taskQueue, activities })),
      });
    }
  } catch (error) {
    swarm?.stop();
    await writer.close().catch(() => undefined);
    await closeStores().catch(() => undefined);
    throw error;
  }

  // Heartbeats: a refused one (the gateway lost us, or a lost answer left its seq ahead) re-registers.
  let beating: Promise<void> | undefined;
  const beat = async () => {
    try {
      trust = (await gateway.heartbeat()).trust_tier;
    } catch (error) {
      if (error instanceof GatewayError && ['stale_request', 'worker_not_found'].includes(error.code)) {
        trust = (await gateway.register(declaration)).trust_tier;
        return;
      }
      throw error;
    }
  };
  const heartbeats = setInterval(() => {
    if (beating) return;
    beating = beat()
      .catch((error: unknown) => logger.warn({ err: error }, 'worker: heartbeat failed'))
      .finally(() => {
        beating = undefined;
      });
  }, options.heartbeatMs ?? WORKER_HEARTBEAT_MS); // not unref'd: it keeps a relay (which polls nothing) alive

  const sealer = startAutoSealer({
    store: proofs,
    signer: node.key,
    clock,
    genesisMs: config.epochGenesisMs,
    graceMs: config.sealGraceMs,
    intervalMs: config.sealCheckMs,
    onError: (error) => logger.error({ err: error }, 'worker: epoch sealing failed'),
  });
  const sync = createSyncAgent({
    store: proofs,
    centralUrl: plan.central_store_url,
    signer: node.key,
    intervalMs: config.syncIntervalMs,
    logger,
  });
  sync.start();
  let draining = false;
  const retention = startRepeatingTask(
    STORE_PRUNE_INTERVAL_MS,
    () =>
      pruneWorkerStore(
        proofs,
        lastDueEpoch(clock(), config.epochGenesisMs, config.workerStoreRetentionMs),
        () => draining,
        logger,
      ),
    (error) => logger.error({ err: error }, 'worker: pruning its store failed'),
  );
  logger.info({ queues: plan.queues, temporal: config.temporal.address }, 'worker: started');

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      draining = true; // a long prune (a backlog after an upgrade) ends at its current batch
      try {
        clearInterval(heartbeats);
        await beating;
        // Leave first, so the gateway routes nothing new here while the running steps finish.
        try {
          const left = await gateway.leave(WORKER_LEAVE_TIMEOUT_MS);
          logger.info({ left_at: left.left_at }, 'worker: left the registry');
        } catch (error) {
          logger.warn(
            { reason: (error as Error).message },
            'worker: leaving failed; the gateway counts this worker offline 30 s after its last heartbeat',
          );
        }
        await temporal?.shutdown();
        swarm?.stop();
        await writer.close();
        await Promise.all([sealer.stop(), sync.stop(), retention.stop()]);
        // Final seal: every epoch that has ended, without waiting out the grace (which is there for records
        // still on their way; none are: the steps are done and the writer flushed, and only this process writes
        // under this key). The open epoch cannot be sealed (docs/security.md §7): its records are synced
        // unsealed and sealed when the worker next runs.
        try {
          const sealed = await sealDueEpochs({
            store: proofs,
            signer: node.key,
            now: clock(),
            genesisMs: config.epochGenesisMs,
            graceMs: 0,
          });
          if (sealed.length > 0) logger.info({ epochs: sealed.map((s) => s.epoch) }, 'worker: final seal');
        } catch (error) {
          logger.warn({ reason: (error as Error).message }, 'worker: final seal failed; the next start seals');
        }
        try {
          const last = await sync.syncOnce();
          logger.info(last, 'worker: final sync');
        } catch (error) {
          logger.warn({ err: error }, 'worker: final sync failed; unsynced records go with the next start');
        }
      } finally {
        await closeStores();
      }
      logger.info('worker: stopped');
    })();
    return stopping;
  };

  return {
    pk,
    plan,
    trustTier: () => trust,
    running: temporal?.running ?? new Promise<void>(() => undefined),
    stop,
  };
}

/**
 * The worker's store keeps only what correctness needs (docs/operations.md "Retention"): records and seal tree
 * pages of epochs that ended at least WORKER_STORE_RETENTION_HOURS ago and whose seals the central store holds
 * are deleted, a bounded batch per write transaction, until none is due; seals and the seal log stay.
 */
async function pruneWorkerStore(
  proofs: SqliteProofStore,
  throughEpoch: number,
  stopped: () => boolean,
  logger: Logger,
): Promise<void> {
  const total = { records: 0, epochs: 0 };
  for (let more = throughEpoch >= 0; more && !stopped();) {
    const batch = await proofs.pruneHeldEpochs(throughEpoch, STORE_PRUNE_BATCH);
    total.records += batch.records;
    total.epochs += batch.epochs;
    more = batch.more;
    if (more) await new Promise((resolve) => setImmediate(resolve));
  }
  if (total.records > 0 || total.epochs > 0) {
    logger.info({ ...total, through_epoch: throughEpoch }, 'worker: pruned epochs the central store holds');
  }
}

/** Retries while the gateway is unreachable or failing (it may start after us); a refusal (4xx) is final. */
async function registerWithRetry(
  gatewayUrl: string,
  gateway: GatewayClient,
  declaration: WorkerDeclaration,
  waitMs: number,
  logger: Logger,
) {
  const started = Date.now();
  const deadline = started + waitMs;
  for (let delay = 1_000; ; delay = Math.min(delay * 2, 15_000)) {
    try {
      return await gateway.register(declaration);
    } catch (error) {
      const transient = error instanceof GatewayError && (error.status === 0 || error.status >= 500);
      if (!transient || Date.now() + delay > deadline) {
        throw gatewayRegistrationError(gatewayUrl, Date.now() - started, error);
      }
      logger.warn({ reason: (error as Error).message, retry_in_ms: delay }, 'worker: registration failed; retrying');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

/**
 * The local registry as the worker's own dispatcher reads it, with this worker as the gateway knows it: the
 * trust tier the gateway reports (trust is earned there, from verified job outcomes, not by a local count) and
 * the hardware this process declared (with a detected GPU; the swarm's local worker registers node:os's view).
 * The guard has already checked the step against exactly these, so the local dispatcher agrees with it.
 */
function asDeclared(
  registry: WorkerRegistry,
  pk: string,
  self: () => Pick<WorkerRecord, 'trust_tier' | 'hardware' | 'hardware_tier'>,
): WorkerRegistry {
  const adjust = (w: WorkerRecord): WorkerRecord => {
    if (w.pk !== pk) return w;
    const { trust_tier, hardware, hardware_tier } = self();
    return { ...w, trust_tier, hardware, hardware_tier };
  };
  return {
    register: (registration, nowMs) => registry.register(registration, nowMs),
    heartbeat: (id, seq, nowMs) => registry.heartbeat(id, seq, nowMs),
    leave: (id, seq, nowMs) => registry.leave(id, seq, nowMs),
    get: async (id) => {
      const w = await registry.get(id);
      return w && adjust(w);
    },
    list: async () => (await registry.list()).map(adjust),
    recordOutcome: (id, outcome, jobId) => registry.recordOutcome(id, outcome, jobId),
    close: () => registry.close(),
  };
}

/** The CLI: runs until SIGINT/SIGTERM, then drains (exit 0), or exits 1 when draining overruns or fails. */
export async function runWorkerCli(config: Config): Promise<void> {
  const logger = createProcessLogger(config);
  const worker = await startWorker(config, { logger });
  const exitAfterStop = (code: number) => {
    // The whole stop (leave, drain, final sync) stays within drain + AFTER_DRAIN_MS + the leave's bound.
    setTimeout(() => process.exit(1), config.workerDrainMs + WORKER_LEAVE_TIMEOUT_MS + AFTER_DRAIN_MS).unref();
    worker.stop().then(
      () => process.exit(code),
      (error: unknown) => {
        logger.error({ err: error }, 'worker: draining failed');
        process.exit(1);
      },
    );
  };
  worker.running.catch((error: unknown) => {
    logger.error({ err: error }, 'worker: temporal workers failed');
    exitAfterStop(1);
  });
  const onSignal = (signal: string) => {
    logger.info({ signal, drain_seconds: config.workerDrainMs / 1000 }, 'worker: draining');
    exitAfterStop(0);
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
}
