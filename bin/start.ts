import { createProcessLogger } from './log-output.js';
import { startAutoSealer } from '../activities/proof/epoch-sealer.js';
import { createSealActivities, type SealActivities } from '../activities/proof/seal-activities.js';
import { ensureSealSchedule } from '../activities/proof/seal-schedule.js';
import { createSyncAgent } from '../activities/proof/sync-agent.js';
import { createImageryActivities } from '../activities/imagery/index.js';
import { createTelemetryActivities } from '../activities/telemetry/index.js';
import { fusionWriters as trustedFusionWriters } from '../core/telemetry.js';
import { createSwarm } from '../activities/inference/index.js';
import { createRecordBatcher } from '../activities/proof/record-batcher.js';
import { createToolExecutor } from '../activities/tools/execute-tool.js';
import { createWebSearch } from '../activities/tools/web-search.js';
import { createTileActivities } from '../activities/tiles/index.js';
import { createComputeActivities, type ComputeActivities, type QueuePollers } from '../activities/compute/index.js';
import { temporalGatewayPollers, temporalQueuePollers } from '../api/temporal-queue-pollers.js';
import { withHeartbeats } from '../activities/compute/heartbeat.js';
import { createEpochAnchorer, type EpochAnchorer } from '../activities/settlement/epoch-anchorer.js';
import { createHorizonClient } from '../activities/settlement/horizon.js';
import { createSettlementService, type SettlementService } from '../activities/settlement/settlement-service.js';
import { parseAsset, stellarAddress } from '../activities/settlement/stellar-keys.js';
import { createKeyedLock, DEFAULT_RETRY } from '../activities/settlement/submission-driver.js';
import { startRepeatingTask } from '../activities/repeating-task.js';
import { toCreditUnits } from '../core/credits.js';
import type { KeyPair } from '../core/identity.js';
import type { Seal } from '../core/proof-types.js';
import type { Stores } from './stores.js';
import type { JobStore } from '../store/job-store.js';
import type { RateLimitStore } from '../store/types.js';
import { createApp } from '../api/app.js';
import { createMetrics, type GatewayMetrics } from '../api/metrics.js';
import { createEmbeddedJobRunner, type JobRunner } from '../api/job-runner.js';
import { createJobAnswers, type JobAnswers } from '../api/job-answers.js';
import { createTemporalJobRunner } from '../api/temporal-job-runner.js';
import {
  createEmbeddedOpenEoRunner,
  createTemporalOpenEoRunner,
  type OpenEoBatchRunner,
} from '../api/openeo/batch-runner.js';
import { encodePng } from '../api/openeo/png.js';
import { REGISTRY } from '../api/openeo/result.js';
import { createOpenEoBatchActivities, type OpenEoBatchActivities } from '../activities/imagery/openeo-batch.js';
import { jobQueue, sealQueue } from '../core/task-queues.js';
import { gatewayIdentity } from '../core/worker-identity.js';
import { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import { connectTemporal, gatewayQueueSpecs, startTemporalWorkers } from './temporal-workers.js';
import { listenHttp } from '../api/http-server.js';
import { ConfigError, DEFAULT_TILE_TEMPLATES, type Config } from './config.js';
import { startDemoUpstream, type DemoUpstream } from './demo-upstream.js';
import { checkStoreEpochLength } from './epoch-length.js';
import { EPOCH_MS } from '../core/epoch.js';
import { TILE_STYLES } from '../core/tile-styles.js';
import type { TileConfig } from '../activities/tiles/index.js';
import { loadNodeKey } from './node-key.js';
import { loadGovernanceKey } from '../mcp/governance/server-key.js';
import { startGovernance } from './governance.js';
import { startPerception } from './perception.js';
import { openStores } from './stores.js';
import { describeStartupError, portsOf } from './startup-errors.js';
import { processRole, runPrimary, runsAsPrimary } from './cluster.js';

/**
 * Runs the gateway until SIGINT/SIGTERM, then shuts down gracefully: the listener closes (new connections are
 * refused), idle keep-alive connections close at once, in-flight requests get SHUTDOWN_DRAIN_SECONDS to finish
 * (answered with `Connection: close`; a request arriving on a kept-alive connection meanwhile gets 503
 * shutting_down), then whatever is still open is closed, and the background tasks and stores stop in order.
 */
export async function startGateway(config: Config): Promise<void> {
  const logger = createProcessLogger(config);
  if (runsAsPrimary(config)) {
    // WEB_CONCURRENCY > 1 (bin/cluster.ts): the one-time start work here, so the workers do not race on it.
    await prepareWorkers(config);
    runPrimary(config, logger);
    return;
  }
  // Under WEB_CONCURRENCY, only the leader (worker 0) runs what must run once per node.
  const { leader } = processRole();
  // Prometheus metrics (GET /metrics): the activities report through their hooks, the app through its middleware.
  const metrics = createMetrics();
  if (!config.mongo) checkStoreEpochLength(config.dataDir, config.epochMs);
  const stores = await openStores(config);
  const node = loadNodeKey(config.dataDir, config.nodeSecretKey);
  logger.info({ node_pk: node.key.publicKey, source: node.source }, 'node key');
  if (config.requireDelegation && config.trustedPrincipals.size === 0) {
    logger.warn(
      'REQUIRE_DELEGATION=true without TRUSTED_PRINCIPALS: gate 3 checks delegation chains for form only, and ' +
        'any self-made key can sign one; set TRUSTED_PRINCIPALS to the human principals whose chains you accept',
    );
  }
  // Settlement and anchoring: before anything runs jobs or seals, so none misses them, and so a bad
  // SETTLEMENT_ASSET stops the start before anything is registered or listening.
  const ledger = leader ? startLedger(config, { stores, signer: node.key, logger, metrics }) : NO_LEDGER;
  // The governance server's key is loaded before anything listens (a bad GOVERNANCE_SK stops the start), and
  // before the perception server starts: perception accepts the tokens it signs.
  const governanceKey =
    config.governance.enabled && leader
      ? loadGovernanceKey({ dataDir: config.dataDir, secretKey: config.governance.secretKey })
      : undefined;
  // Serving paths (tiles, imagery) sign their proof records in batches, off the request path.
  const writer = createRecordBatcher({
    store: stores.proofs,
    signer: node.key,
    clock: Date.now,
    genesisMs: config.epochGenesisMs,
    epochMs: config.epochMs,
    onError: (error, { dropped }) => logger.error({ err: error, dropped }, 'writing proof records failed'),
  });
  // Inference: this node's worker (when WORKER_RUNTIME_URL is set) registers, heartbeats and pre-warms.
  const swarm = createSwarm({
    config: config.swarm,
    workers: stores.workers,
    proofs: writer,
    clock: Date.now,
    nodePk: node.key.publicKey,
    logger,
    rateLimits: stores.rateLimits,
    tools: createToolExecutor({ webSearch: createWebSearch(config.webSearch) }),
    // The embedded worker checks gate 5 again when it takes a completion or step up.
    toolPolicy: config.toolPolicy,
  });
  await swarm.start();
  const demo = config.demo ? await startDemoUpstream() : undefined;
  const tiles = createTileActivities({
    config: demo ? demoTiles(config.tiles, demo) : config.tiles,
    proofs: writer,
    clock: Date.now,
    logger,
    onServeEvent: metrics.tileEvent,
  });
  const imagery = createImageryActivities({ config: config.imagery, proofs: writer, clock: Date.now, logger });
  // Fusion trusts the telemetry this node and its peer node keys wrote (docs/protocol.md §2.10 rule 3).
  const fusionWriters = trustedFusionWriters([node.key.publicKey, ...(config.proofSync?.nodeKeys ?? [])]);
  // Telemetry readings are written straight to the store in their own epoch (not the batcher's clock epoch).
  const telemetry = createTelemetryActivities({
    store: stores.proofs,
    signer: node.key,
    clock: Date.now,
    genesisMs: config.epochGenesisMs,
    epochMs: config.epochMs,
    rateLimits: stores.rateLimits,
    fusionWriters,
  });
  const answers = createJobAnswers();
  // Under Temporal, routing asks who polls each worker queue (set once connected); embedded, nothing is routed.
  let pollers: QueuePollers = async () => new Set();
  const compute = createComputeActivities({
    jobs: stores.jobs,
    blobs: stores.blobs,
    pollers: (queue) => pollers(queue),
    proofs: writer,
    workers: stores.workers,
    swarm,
    tiles,
    imagery,
    fusion: {
      source: telemetry.source,
      genesisMs: config.epochGenesisMs,
      epochMs: config.epochMs,
      trustedWriters: fusionWriters,
    },
    nodePk: node.key.publicKey,
    naming: config.naming,
    backbone: config.swarm.backboneUrl !== undefined,
    clock: Date.now,
    ledger: stores.ledger,
    relayFeeShare: config.ledger.relayFeeShare,
    ...(ledger.onJobPosted ? { onJobPosted: ledger.onJobPosted } : {}),
    onJobFinished: metrics.jobFinished,
    onAnswer: answers.deliver, // the requests waiting for their jobs on Temporal (api/job-answers.ts)
  });
  // Under Temporal, the gateways online (set once Temporal is connected): the seal run seals each one's key.
  const online: { sealers?: (() => Promise<string[]>) | undefined } = {};
  const seals = createSealActivities({
    store: stores.proofs,
    signer: node.key,
    clock: Date.now,
    genesisMs: config.epochGenesisMs,
    graceMs: config.sealGraceMs,
    custody: { workers: stores.workers, custodyMs: config.custodialSealGraceMs },
    ...(ledger.onSealed ? { onSealed: ledger.onSealed } : {}),
    onEpochSealed: metrics.epochSealed,
    sealers: async () => (online.sealers ? online.sealers() : []),
  });
  // openEO batch jobs run on the same engine as compound jobs (docs/protocol.md §16.11).
  const openEo = createOpenEoBatchActivities({
    imagery,
    jobs: stores.openEoJobs,
    registry: REGISTRY,
    encodePng,
    clock: Date.now,
  });
  const orchestration = await startOrchestration(
    config,
    { compute, seals, answers, nodePk: node.key.publicKey, jobs: stores.jobs, leases: stores.rateLimits, openEo },
    logger,
  );
  online.sealers = orchestration.sealers;
  if (orchestration.pollers) pollers = orchestration.pollers;
  // Set by SIGTERM/SIGINT (stop, below); the app refuses new requests from then on.
  let stopping = false;
  const app = createApp({
    config: {
      requireDelegation: config.requireDelegation,
      trustedPrincipals: config.trustedPrincipals,
      toolPolicy: config.toolPolicy,
      bodyLimitBytes: config.bodyLimitBytes,
      httpLimits: config.httpLimits,
      epochGenesisMs: config.epochGenesisMs,
      epochMs: config.epochMs,
      apiKeys: config.apiKeys,
      publicUrl: config.publicUrl,
      metricsToken: config.metricsToken,
      operatorToken: config.operatorToken,
      registrationLimits: config.registrationLimits,
      // The dashboard's compliance view reads reports from the perception service (COMPLIANCE_URL).
      perceptionUrl: config.governance.complianceUrl,
      proofSync: config.proofSync,
      verifyThreads: config.verifyThreads,
    },
    clock: Date.now,
    logger,
    metrics,
    draining: () => stopping,
    rateLimits: stores.rateLimits,
    proofs: stores.proofs,
    tiles,
    imagery,
    telemetry,
    workers: stores.workers,
    apiKeyStore: stores.apiKeys,
    swarm,
    jobs: stores.jobs,
    blobs: stores.blobs,
    jobRunner: orchestration.runner,
    openEo: { jobs: stores.openEoJobs, runner: orchestration.openEoRunner },
    ledger: stores.ledger,
    nodePk: node.key.publicKey,
    headSigner: node.key,
    networkPassphrase: config.ledger.mode === 'stellar' ? config.ledger.networkPassphrase : undefined,
  });
  // Seals this node's epochs (an hour plus the grace after they close), catching up after downtime; under
  // Temporal an hourly Schedule does it (startOrchestration).
  const sealer =
    config.orchestrator === 'embedded' && leader
      ? startAutoSealer({
          store: stores.proofs,
          signer: node.key,
          clock: Date.now,
          genesisMs: config.epochGenesisMs,
          graceMs: config.sealGraceMs,
          epochMs: config.epochMs,
          intervalMs: config.sealCheckMs,
          custody: { workers: stores.workers, custodyMs: config.custodialSealGraceMs },
          onError: (error) => logger.error({ err: error }, 'epoch sealing failed'),
          ...(ledger.onSealed ? { onSealed: ledger.onSealed } : {}),
          onEpochSealed: metrics.epochSealed,
        })
      : undefined;
  const sync =
    config.centralStoreUrl && leader
      ? createSyncAgent({
          store: stores.proofs,
          centralUrl: config.centralStoreUrl,
          signer: node.key,
          intervalMs: config.syncIntervalMs,
          logger,
          onRound: metrics.syncRound,
        })
      : undefined;
  if (sync) metrics.trackSync();
  sync?.start();
  const { server, port } = await listenHttp(app.callback(), config.port, config.host, config.httpLimits);
  logger.info({ url: `http://${config.host}:${port}` }, 'geofabric gateway listening');
  if (demo || config.epochMs !== EPOCH_MS) {
    logger.warn(
      {
        demo_tiles: demo?.url ?? null,
        epoch_seconds: config.epochMs / 1000,
        data_dir: config.dataDir,
      },
      'DEVELOPMENT MODE: ' +
        (demo ? 'tiles are synthetic demo tiles (not map data); ' : '') +
        `epochs last ${config.epochMs / 1000} s, not an hour: proofs from this node are for local demos only`,
    );
  }
  // The perception MCP server beside the gateway, on the same stores; PERCEPTION_ENABLED=false skips it.
  // An identity that does not verify stops the whole process: tools never run unaudited.
  const perception =
    config.perception.enabled && leader
      ? await startPerception(config, {
          audit: stores.audit,
          logger,
          tokenIssuerPk: governanceKey?.key.publicKey,
        }).then(
          (started) => started.server,
          (error: unknown) => {
            failedToStart('perception server', error, config, logger);
          },
        )
      : undefined;
  // The governance tool server on the same audit store, read only; GOVERNANCE_ENABLED=false skips it.
  // Its subject is IDN_DELEGATION_CERT, else the chain the perception server just provisioned (bin/governance.ts).
  const governance =
    governanceKey === undefined
      ? undefined
      : await startGovernance(config, { audit: stores.audit, logger, key: governanceKey }).then(
          (started) => started.server,
          (error: unknown) => {
            failedToStart('governance server', error, config, logger);
          },
        );

  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    const drainMs = config.shutdownDrainMs;
    swarm.stop();
    // close(): the listener stops now, so new connections are refused; its callback runs once every connection
    // has closed. Idle keep-alive connections close at once; busy ones after their response, which says
    // `Connection: close` (api/request-context.ts). What is still open when the drain time is up is cut.
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    logger.info({ signal, drain_seconds: drainMs / 1000 }, 'shutting down: draining in-flight requests');
    const cut = setTimeout(() => {
      logger.warn({ drain_seconds: drainMs / 1000 }, 'drain time is up: closing the connections still open');
      server.closeAllConnections();
    }, drainMs);
    drained
      .then(() => {
        clearTimeout(cut);
        logger.info('in-flight requests drained');
      })
      .then(() => Promise.all([perception?.close(), governance?.close()]))
      .then(() => orchestration.close())
      .then(() => writer.close())
      .then(() => Promise.all([sealer?.stop(), sync?.stop()]))
      .then(() => ledger.stop())
      .then(() => demo?.close())
      .then(() => stores.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'closing stores failed');
          process.exit(1);
        },
      );
    // Whatever hangs after the drain (a job that never ends, a store that never closes), the process ends.
    setTimeout(() => process.exit(1), drainMs + 15_000).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

/** The ledger hooks of a process that runs no settlement (a WEB_CONCURRENCY worker other than the leader). */
const NO_LEDGER: LedgerHooks = { stop: async () => undefined };

/**
 * WEB_CONCURRENCY's one-time start work, in the primary before any worker exists: the epoch-length check, the
 * schema (migrations), the node key and the governance key files (created on first start: two workers creating
 * them at once would end with two different keys).
 */
async function prepareWorkers(config: Config): Promise<void> {
  if (config.ledger.mode === 'stellar') {
    // One payer account: its sequence numbers are ordered by a lock in one process (startLedger).
    throw new ConfigError('configuration: WEB_CONCURRENCY > 1 is not supported with LEDGER=stellar');
  }
  if (!config.mongo) checkStoreEpochLength(config.dataDir, config.epochMs);
  await (await openStores(config)).close();
  loadNodeKey(config.dataDir, config.nodeSecretKey);
  if (config.governance.enabled) loadGovernanceKey({ dataDir: config.dataDir, secretKey: config.governance.secretKey });
}

/** DEMO: every style whose TILE_URL_* is not set is served by the demo upstream, and its records say so. */
/** A server beside the gateway did not start: its one-line reason (the stack with LOG_LEVEL=debug), exit 1. */
function failedToStart(what: string, error: unknown, config: Config, logger: Logger): never {
  const known = describeStartupError(error, portsOf(config), config.logLevel === 'debug');
  if (known === null) logger.fatal({ err: error }, `${what} failed to start: ${(error as Error).message}`);
  else process.stderr.write(`geofabric: ${what}: ${known}\n`);
  process.exit(known === null ? 2 : 1);
}

function demoTiles(tiles: TileConfig, demo: DemoUpstream): TileConfig {
  const demoStyles = TILE_STYLES.filter((style) => tiles.templates[style] === DEFAULT_TILE_TEMPLATES[style]);
  return {
    ...tiles,
    templates: { ...tiles.templates, ...Object.fromEntries(demoStyles.map((s) => [s, demo.templates[s]])) },
    upstreamNames: Object.fromEntries(demoStyles.map((s) => [s, demo.name])),
  };
}

interface LedgerHooks {
  /** finishJob's cue that a job's entries are posted: settle it (LEDGER=stellar). */
  onJobPosted?: (jobId: string) => void;
  /** The sealers' cue: anchor the new seals (ANCHOR_EPOCHS). */
  onSealed?: (seals: Seal[]) => Promise<void>;
  stop(): Promise<void>;
}

/**
 * LEDGER=stellar: the settlement service (per job or by balance, with its sweep retrying open settlements) and,
 * with ANCHOR_EPOCHS, the epoch anchorer with its own retry sweep. LEDGER=none: the credit ledger is still kept
 * (finishJob posts entries), nothing is paid out. Payments and anchors never hold up or fail a job or a seal:
 * their failures are logged and stay open in the ledger store for the sweeps.
 */
export function startLedger(
  config: Config,
  {
    stores,
    signer,
    logger,
    metrics,
  }: {
    stores: Pick<Stores, 'ledger' | 'jobs' | 'workers' | 'proofs'>;
    signer: KeyPair;
    logger: Logger;
    /** Counts each settlement drive by its final state (settlements_total). */
    metrics?: Pick<GatewayMetrics, 'settled'>;
  },
): LedgerHooks {
  const settings = config.ledger;
  if (settings.mode !== 'stellar') return { stop: async () => undefined };
  let asset;
  try {
    asset = parseAsset(settings.asset); // checks the issuer's checksum, which the config's shape check does not
  } catch (error) {
    throw new ConfigError(`configuration: SETTLEMENT_ASSET: ${(error as Error).message}`);
  }
  const horizon = createHorizonClient({ url: settings.horizonUrl });
  // Payments and anchors are signed by one account: one lock orders their sequence numbers.
  const payerLock = createKeyedLock();
  const settlement: SettlementService = createSettlementService({
    payerLock,
    ledger: stores.ledger,
    port: 'stellar',
    horizon,
    payer: signer,
    networkPassphrase: settings.networkPassphrase,
    asset,
    thresholdUnits: toCreditUnits(settings.thresholdCredits),
    mode: settings.settlementMode,
    clock: Date.now,
    logger,
    retry: DEFAULT_RETRY,
    // docs/protocol.md §2.3: the memo of a job's payment is its job hash, so the payment points at the proof.
    jobHashOf: async (jobId) => (await stores.jobs.get(jobId))?.response?.proof?.job_hash ?? null,
    listAccounts: async () => (await stores.workers.list()).map((w) => w.pk),
    ...(metrics ? { onSettlement: metrics.settled } : {}),
  });
  settlement.start(settings.sweepIntervalMs);
  const anchorer: EpochAnchorer | undefined = settings.anchorEpochs
    ? createEpochAnchorer({
        payerLock,
        ledger: stores.ledger,
        horizon,
        signer,
        networkPassphrase: settings.networkPassphrase,
        clock: Date.now,
        logger,
        retry: DEFAULT_RETRY,
      })
    : undefined;
  const anchorSweep = anchorer
    ? startRepeatingTask(
        settings.sweepIntervalMs,
        async () => {
          // Seals a crash kept from onSealed first (restarted sealers start after them), then open anchors.
          await anchorer.anchorMissing({
            latest: () => stores.proofs.latestSeal(signer.publicKey),
            all: () => stores.proofs.sealsOf(signer.publicKey),
          });
          await anchorer.retryOpen();
        },
        (error) => logger.error({ err: error }, 'anchor sweep failed'),
      )
    : undefined;
  logger.info(
    {
      // The paying and anchoring account: it must exist and hold enough of the asset (testnet: friendbot).
      account: stellarAddress(signer.publicKey),
      horizon: settings.horizonUrl,
      mode: settings.settlementMode,
      threshold_credits: settings.thresholdCredits,
      anchor_epochs: settings.anchorEpochs,
    },
    'settling on stellar',
  );
  return {
    onJobPosted: (jobId) => {
      settlement.settleJob(jobId).catch((error: unknown) => {
        logger.error({ err: error, job_id: jobId }, 'settling the job failed; the sweep retries open settlements');
      });
    },
    ...(anchorer ? { onSealed: (seals: Seal[]) => anchorer.onSealed(seals) } : {}),
    async stop() {
      await Promise.all([settlement.stop(), anchorSweep?.stop()]);
    },
  };
}

/**
 * The JobRunner of ORCHESTRATOR: `embedded` runs jobs in this process; `temporal` starts workflows and runs
 * this gateway's Temporal Workers (the job queue's workflows; the gateway queue's routing, final record and
 * tile and imagery steps no cell worker takes; the backbone queue's inference).
 */
async function startOrchestration(
  config: Config,
  {
    compute,
    seals,
    answers,
    nodePk,
    jobs,
    leases,
    openEo,
  }: {
    compute: ComputeActivities;
    seals: SealActivities;
    answers: JobAnswers;
    nodePk: string;
    jobs: JobStore;
    /** Where embedded runs keep their leases (the rate-limit store every gateway process shares). */
    leases: RateLimitStore;
    /** The openEO batch job run (a local activity of the job queue's Worker under Temporal). */
    openEo: OpenEoBatchActivities;
  },
  logger: Logger,
): Promise<{
  runner: JobRunner;
  openEoRunner: OpenEoBatchRunner;
  pollers?: QueuePollers;
  sealers?: () => Promise<string[]>;
  close(): Promise<void>;
}> {
  if (config.orchestrator === 'embedded') {
    const runner = createEmbeddedJobRunner({
      steps: compute.steps,
      jobs: compute.jobs,
      store: jobs,
      waitMs: config.jobWaitMs,
      leases,
    });
    const openEoRunner = createEmbeddedOpenEoRunner(openEo, logger);
    return {
      runner,
      openEoRunner,
      close: async () => {
        await Promise.all([runner.close(), openEoRunner.close()]);
      },
    };
  }
  const steps = withHeartbeats(compute.steps, 5_000);
  // One connection for the Workers and the Client, so runs start eagerly on this gateway's job-queue Worker.
  const connection = await connectTemporal(config.temporal.address, logger);
  const workers = await startTemporalWorkers({
    address: config.temporal.address,
    namespace: config.temporal.namespace,
    connection,
    logger,
    // Names this gateway's key, so the seal run finds every gateway among the job queue's pollers.
    identity: gatewayIdentity(nodePk),
    // sealEpoch runs on the job queue; it seals each gateway's key on that gateway's own seal queue.
    queues: gatewayQueueSpecs(config.naming, { jobs: compute.jobs, steps, seals, sealer: nodePk, openEo }),
  });
  workers.running.catch((error: unknown) => logger.error({ err: error }, 'temporal workers stopped'));
  const client = new Client({ connection, namespace: config.temporal.namespace });
  const schedule = await ensureSealSchedule(client, {
    scheduleId: `${config.naming.prefix}-seal-epochs`,
    taskQueue: jobQueue(config.naming),
    genesisMs: config.epochGenesisMs,
  });
  logger.info(schedule, 'hourly seal schedule');
  const runner = createTemporalJobRunner({
    client,
    naming: config.naming,
    waitMs: config.jobWaitMs,
    runTimeoutMs: config.jobRunTimeoutMs,
    answers,
    route: compute.jobs.routeJob,
  });
  const gateways = temporalGatewayPollers(client, config.temporal.namespace, Date.now);
  return {
    runner,
    openEoRunner: createTemporalOpenEoRunner({
      client,
      naming: config.naming,
      runTimeoutMs: config.jobRunTimeoutMs,
    }),
    pollers: temporalQueuePollers(client, config.temporal.namespace, Date.now),
    sealers: async () => [...(await gateways(jobQueue(config.naming)))].map((pk) => sealQueue(config.naming, pk)),
    async close() {
      await workers.shutdown();
      await connection.close();
    },
  };
}
