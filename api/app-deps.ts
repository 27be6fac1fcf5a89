import type { ToolPolicy } from '../core/gates/tool-policy.js';
import type { KeyPair } from '../core/identity.js';
import type { Logger } from 'pino';
import type { ImageryActivities } from '../activities/imagery/index.js';
import type { Swarm } from '../activities/inference/index.js';
import type { TileActivities } from '../activities/tiles/index.js';
import type { TelemetryActivities } from '../activities/telemetry/index.js';
import type { ApiKeyStore } from '../store/api-key-store.js';
import type { BlobStore } from '../store/blob-store.js';
import type { JobStore } from '../store/job-store.js';
import type { LedgerStore } from '../store/ledger-store.js';
import type { HttpLimits } from './http-limits.js';
import type { ImageryBounds } from './imagery-bound.js';
import type { BlobUploadLimits } from './routes/store-blobs.js';
import type { RegistrationLimits } from './routes/svc-workers.js';
import type { JobRunner } from './job-runner.js';
import type { GatewayMetrics } from './metrics.js';
import type { WorkerRegistry } from '../store/worker-registry.js';
import type { ProofStore } from '../store/proof-store.js';
import type { SyncBounds } from '../activities/proof/sync-writers.js';
import type { RateLimitStore } from '../store/types.js';
import type { OpenEoJobStore } from '../store/openeo-job-store.js';
import type { OpenEoBatchRunner } from './openeo/batch-runner.js';

export interface GatewayConfig {
  /** Gate 3: refuse signed requests that carry no delegation certificate. */
  requireDelegation: boolean;
  /** Gate 3's trust anchors (TRUSTED_PRINCIPALS): a chain's root must be one; unset or empty: form only. */
  trustedPrincipals?: ReadonlySet<string> | undefined;
  /** Gate 5's tool policy (TOOL_POLICY_FILE); unset: no rules. */
  toolPolicy?: ToolPolicy | undefined;
  bodyLimitBytes: number;
  /** Rate limits, trusted proxy and receive timeouts (api/http-limits.ts); unset: no rate limits, default timeouts. */
  httpLimits?: HttpLimits | undefined;
  /** Epoch 0 starts here; hourly windows (epochs, rate limits) align to it. */
  epochGenesisMs: number;
  /** Epoch length: the hour unless a development node shortened it (EPOCH_SECONDS); rate windows stay hourly. */
  epochMs?: number | undefined;
  /** Keys accepted on `api_key` routes (sent as `Authorization: Bearer <key>`). */
  apiKeys: readonly string[];
  /** Absolute base URL of this gateway as clients reach it (`PUBLIC_URL`); default: each request's origin. */
  publicUrl?: string | undefined;
  /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <token>`; unset, it is public. */
  metricsToken?: string | undefined;
  /**
   * OPERATOR_TOKEN: `Authorization: Bearer <token>` lists every job and inference (the dashboard sends it);
   * unset, nobody does, and the lists show counts without ids (a requester still lists its own jobs, signed).
   */
  operatorToken?: string | undefined;
  /** Worker registrations per key and new worker keys per address, per hour; default DEFAULT_REGISTRATION_LIMITS. */
  registrationLimits?: RegistrationLimits | undefined;
  /** The perception service the dashboard's compliance view asks (server-side); default http://127.0.0.1:8100. */
  perceptionUrl?: string | undefined;
  /** Who may push to `/store/sync` and `/store/epochs` beyond this node and registered workers, and how much. */
  proofSync?: ProofSyncConfig | undefined;
  /** Workers' blob uploads (`PUT /store/blobs/{sha256}`): size and hourly bounds; default DEFAULT_BLOB_UPLOAD_LIMITS. */
  blobUploads?: BlobUploadLimits | undefined;
  /** Gate 1's verify threads (VERIFY_THREADS); default: the cores less one (api/request-verifier.ts). */
  verifyThreads?: number | undefined;
  /** Imagery runs per client, at once and per minute (api/imagery-bound.ts); default DEFAULT_IMAGERY_BOUNDS. */
  imageryBounds?: ImageryBounds | undefined;
}

export interface ProofSyncConfig {
  /** SYNC_NODE_KEYS: other nodes' keys, trusted to write compute/job records and to relay other writers' records. */
  nodeKeys: readonly string[];
  /** SYNC_MAX_RECORDS_PER_HOUR, SYNC_MAX_MB_PER_HOUR: per pushing key; DEFAULT_SYNC_BOUNDS when absent. */
  bounds?: SyncBounds | undefined;
  /** SYNC_MAX_BACKFILL_HOURS: oldest epoch a push may bring (with its seal); DEFAULT_MAX_BACKFILL_EPOCHS when absent. */
  maxBackfillEpochs?: number | undefined;
}

/** Everything the gateway needs from outside; `createApp` never reads the environment or listens. */
export interface AppDeps {
  config: GatewayConfig;
  clock: () => number;
  logger: Logger;
  rateLimits: RateLimitStore;
  proofs: ProofStore;
  tiles: TileActivities;
  imagery: ImageryActivities;
  /** IoT telemetry ingest and listing (docs/protocol.md §2.10). */
  telemetry: TelemetryActivities;
  workers: WorkerRegistry;
  apiKeyStore: ApiKeyStore;
  swarm: Swarm;
  jobs: JobStore;
  /** Large step outputs (core/output-blobs.ts): where finishJob resolves them, and where workers upload theirs. */
  blobs: BlobStore;
  jobRunner: JobRunner;
  /** The credit ledger: earnings, job settlements, epoch anchors, proof purchases. */
  ledger: LedgerStore;
  /** This node's key: it seals the proofs it serves and earns what they are bought for. */
  nodePk: string;
  /**
   * This node's key pair: it signs the heads of the seal logs its receipts carry (docs/protocol.md §15.4). Without
   * it, receipts are version 1 (every seal since each sealer's first).
   */
  headSigner?: KeyPair | undefined;
  /** The Stellar network of settlements and anchors (LEDGER=stellar), shown with each anchor. */
  networkPassphrase?: string | undefined;
  /**
   * Prometheus metrics (api/metrics.ts), shared with the activities' hooks by whoever built them (bin/start.ts);
   * default: a registry of this app's own, without process metrics.
   */
  metrics?: GatewayMetrics | undefined;
  /** True once shutdown began: new requests get 503 shutting_down and responses `Connection: close`. */
  draining?: (() => boolean) | undefined;
  /** openEO batch jobs (docs/protocol.md §16.11): their store and what runs them; absent, `/jobs` is not built. */
  openEo?: { jobs: OpenEoJobStore; runner: OpenEoBatchRunner } | undefined;
}
