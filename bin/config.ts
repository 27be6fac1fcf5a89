import { z } from 'zod';
import type { ImageryConfig } from '../activities/imagery/index.js';
import type { SwarmConfig } from '../activities/inference/index.js';
import type { TileConfig, TileTemplates } from '../activities/tiles/index.js';
import type { WebSearchConfig } from '../activities/tools/web-search.js';
import { DEFAULT_EPOCH_GENESIS_MS, parseEpochGenesis } from '../core/epoch.js';
import type { HttpLimits } from '../api/http-limits.js';
import type { ProofSyncConfig } from '../api/app-deps.js';
import { SERVICE_VERSION } from '../api/version.js';
import { isCell, DEFAULT_JOB_CELL } from '../core/h3-cell.js';
import { WORKER_MODELS } from '../core/models.js';
import { DEFAULT_QUEUE_PREFIX, DEFAULT_ROUTING_RESOLUTION, type QueueNaming } from '../core/task-queues.js';

/**
 * Default upstreams of the five tile styles: public raster XYZ sources that need no key. Esri's World
 * Imagery orders its path `{z}/{y}/{x}` and answers JPEG. Public servers have usage policies (OSM's asks for
 * an identifying User-Agent and forbids heavy use): production deployments point these at their own tiles.
 */
export const DEFAULT_TILE_TEMPLATES: TileTemplates = {
  'osm-bright': 'https://basemaps.cartocdn.com/rastertiles/voyager/{z}/{x}/{y}.png',
  'osm-standard': 'https://tile.openstreetmap.org/{z}/{x}/{y}.png',
  dark: 'https://basemaps.cartocdn.com/dark_all/{z}/{x}/{y}.png',
  terrain: 'https://tile.opentopomap.org/{z}/{x}/{y}.png',
  satellite: 'https://server.arcgisonline.com/ArcGIS/rest/services/World_Imagery/MapServer/tile/{z}/{y}/{x}',
};
export const DEFAULT_STAC_URL = 'https://earth-search.aws.element84.com/v1';
/** The web-search tool's upstreams: Brave when BRAVE_API_KEY is set, DuckDuckGo's keyless HTML otherwise. */
export const DEFAULT_BRAVE_URL = 'https://api.search.brave.com';
export const DEFAULT_DUCKDUCKGO_URL = 'https://html.duckduckgo.com';
/** Stellar's public test network: free test lumens from friendbot, nothing of value moves. */
export const DEFAULT_HORIZON_URL = 'https://horizon-testnet.stellar.org';
export const TESTNET_PASSPHRASE = 'Test SDF Network ; September 2015';
/** perception_weather's upstream: Open-Meteo's forecast API (free, no key; mind its fair-use terms). */
export const DEFAULT_WEATHER_URL = 'https://api.open-meteo.com';

/**
 * Every environment variable the service reads, with its default. The README's configuration table is
 * this list; keep them together.
 */
const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  REQUIRE_DELEGATION: boolean.default(false),
  EPOCH_GENESIS: z.string().optional(),
  API_KEYS: z.string().default(''),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  // Request abuse bounds. Rates are token buckets holding RATE_LIMIT_BURST_SECONDS of their rate;
  // 0 turns a limit off. Per IP covers every route of every server; per principal (a signed request's key, an
  // API key, an MCP bearer token) every authenticated one.
  RATE_LIMIT_IP_PER_MINUTE: z.coerce.number().int().min(0).max(10_000_000).default(6000),
  RATE_LIMIT_PRINCIPAL_PER_MINUTE: z.coerce.number().int().min(0).max(10_000_000).default(1200),
  RATE_LIMIT_BURST_SECONDS: z.coerce.number().int().min(1).max(3600).default(10),
  // Behind a reverse proxy: take the client address from X-Forwarded-For (the per-IP limit, logs). Off, the
  // header is ignored, so a client cannot pick its own address.
  TRUST_PROXY: boolean.default(false),
  // A request (headers and body) must arrive within REQUEST_TIMEOUT_SECONDS, its headers within
  // HEADERS_TIMEOUT_SECONDS (slowloris); 408 request_timeout otherwise.
  REQUEST_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  HEADERS_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(20),
  // The embedded SQLite store's size cap (SQLite max_page_count); unset, the disk is the limit. Either way a
  // full store answers 507 storage_full and keeps every committed record.
  STORE_MAX_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(16 * 1024 * 1024)
    .optional(),
  MONGODB_URI: z.string().optional(),
  MONGODB_DB: z.string().min(1).default('geofabric'),
  NODE_SECRET_KEY: z.string().optional(),
  SEAL_GRACE_SECONDS: z.coerce.number().int().min(31).max(3600).default(60),
  SEAL_CHECK_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  CENTRAL_STORE_URL: z.url().optional(),
  SYNC_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  // The central proof store takes pushes from this node's key, registered workers and these node keys
  // (comma-separated Ed25519 public keys): only node keys write compute/job records or relay others' records.
  SYNC_NODE_KEYS: z
    .string()
    .default('')
    .refine(
      (v) => list(v).every((pk) => /^[0-9a-f]{64}$/.test(pk)),
      'must be comma-separated 64 lowercase hex (Ed25519 public keys)',
    ),
  // Per pushing key and hour; a push past either bound is 429 quota_exceeded (docs/security.md).
  SYNC_MAX_RECORDS_PER_HOUR: z.coerce.number().int().min(1).max(100_000_000).default(36_000),
  SYNC_MAX_MB_PER_HOUR: z.coerce.number().int().min(1).max(1_048_576).default(64),
  // Records older than the open epoch and the one before come only with their writer's seal, at most this old.
  SYNC_MAX_BACKFILL_HOURS: z.coerce.number().int().min(1).max(87_600).default(168),
  TILE_URL_OSM_BRIGHT: z.string().optional(),
  TILE_URL_OSM_STANDARD: z.string().optional(),
  TILE_URL_DARK: z.string().optional(),
  TILE_URL_TERRAIN: z.string().optional(),
  TILE_URL_SATELLITE: z.string().optional(),
  TILE_CACHE_MB: z.coerce.number().int().min(1).max(65_536).default(256),
  TILE_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  STAC_URL: z.url().default(DEFAULT_STAC_URL),
  STAC_COLLECTION: z.string().min(1).default('sentinel-2-l2a'),
  STAC_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(30_000),
  BRAVE_API_KEY: z.string().optional(),
  BRAVE_URL: z.url().default(DEFAULT_BRAVE_URL),
  DUCKDUCKGO_URL: z.url().default(DEFAULT_DUCKDUCKGO_URL),
  WEB_SEARCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  WORKER_RUNTIME_URL: z.url().optional(),
  WORKER_MODELS: z.string().default('tinyllama,lfm2.5-1.2b-instruct'),
  PREWARM_MODELS: z.string().default('tinyllama'),
  BACKBONE_URL: z.url().optional(),
  BACKBONE_API_KEY: z.string().optional(),
  INFERENCE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(180_000),
  FREE_MESSAGES_PER_DAY: z.coerce.number().int().min(0).max(1_000_000).default(50),
  MODELS: z.string().default(WORKER_MODELS.join(',')),
  WORKER_CELL: z.string().default(DEFAULT_JOB_CELL),
  WORKER_TOOLS: z.string().optional(),
  WORKER_MODEL_NAMES: z.string().default(''),
  ORCHESTRATOR: z.enum(['embedded', 'temporal']).default('embedded'),
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TASK_QUEUE_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, _ . - (1-64)')
    .default(DEFAULT_QUEUE_PREFIX),
  ROUTING_RESOLUTION: z.coerce.number().int().min(0).max(15).default(DEFAULT_ROUTING_RESOLUTION),
  JOB_WAIT_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  JOB_RUN_TIMEOUT_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(3600),
  PUBLIC_URL: z.url().optional(),
  // GET /metrics (Prometheus): public unless set; set, scrapes send `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().regex(/^\S*$/, 'must not contain whitespace (it is sent as a bearer token)').optional(),
  // On SIGTERM/SIGINT the gateway stops accepting connections and lets in-flight requests finish for at most
  // this long before closing what is left. Keep it below the orchestrator's kill delay (compose stop_grace_period).
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().int().min(0).max(3600).default(25),
  GATEWAY_URL: z.url().default('http://127.0.0.1:8080'),
  WORKER_RELAY: boolean.default(false),
  // The perception and compliance MCP server (mcp/perception).
  PERCEPTION_ENABLED: boolean.default(true),
  PERCEPTION_PORT: z.coerce.number().int().min(0).max(65_535).default(8100),
  PERCEPTION_HOST: z.string().min(1).default('127.0.0.1'),
  PERCEPTION_ALLOWED_ORIGINS: z.string().default(''),
  PERCEPTION_ALLOWED_HOSTS: z.string().default(''),
  IDN_AGENT_SK: z.string().optional(),
  IDN_DELEGATION_CERT: z.string().optional(),
  WEATHER_URL: z.url().default(DEFAULT_WEATHER_URL),
  WEATHER_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  CLASSIFY_URL: z.url().optional(),
  CLASSIFY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
  // PERCEPTION_REQUIRE_TOKEN=true: perception MCP calls need a governance-issued bearer token (POST /token).
  PERCEPTION_REQUIRE_TOKEN: boolean.default(false),
  // The token issuer's public key for a perception server whose governance server runs elsewhere; beside
  // it (`geofabric start`, or the same DATA_DIR / GOVERNANCE_SK) the key is known without it.
  GOVERNANCE_PK: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex (an Ed25519 public key)')
    .optional(),
  // The governance tool server (mcp/governance).
  GOVERNANCE_ENABLED: boolean.default(true),
  GOVERNANCE_PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  // docs/protocol.md §4.3 binds 0.0.0.0: the server is reachable from the network and its routes carry no authentication
  // (docs/protocol.md §5.9), so its answers about certificates and audit chains are visible to anyone who can reach the
  // port. Set GOVERNANCE_HOST=127.0.0.1 to keep it local. Browser Origins are still checked on /mcp.
  GOVERNANCE_HOST: z.string().min(1).default('0.0.0.0'),
  GOVERNANCE_ALLOWED_ORIGINS: z.string().default(''),
  GOVERNANCE_ALLOWED_HOSTS: z.string().default(''),
  GOVERNANCE_SK: z.string().optional(),
  COMPLIANCE_URL: z.url().optional(),
  COMPLIANCE_TIMEOUT_MS: z.coerce.number().int().min(100).max(300_000).default(10_000),
  // At most 3600: verifiers refuse longer-lived tokens (mcp/governance/token.ts MAX_TOKEN_TTL_SECONDS).
  TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(3600).default(900),
  // Settlement and anchoring. The credit ledger is always kept (earnings, proof charges); LEDGER=stellar
  // also pays it out on a Stellar network and, with ANCHOR_EPOCHS, writes sealed epoch roots there.
  LEDGER: z.enum(['none', 'stellar']).default('none'),
  HORIZON_URL: z.url().default(DEFAULT_HORIZON_URL),
  STELLAR_NETWORK_PASSPHRASE: z.string().min(1).default(TESTNET_PASSPHRASE),
  SETTLEMENT_ASSET: z.string().default('native'),
  // Credits: the least one payment carries (mode job: a job's payees together; mode balance: one account's
  // unsettled earnings), so micro-payments do not each cost a transaction fee. The default is the settlement
  // service's own (DEFAULT_SETTLEMENT_THRESHOLD_UNITS, 0.01 credits); a test keeps the two equal.
  SETTLEMENT_THRESHOLD: z.coerce.number().min(0).max(1_000_000).default(0.01),
  SETTLEMENT_MODE: z.enum(['job', 'balance']).default('job'),
  // The sweep also retries settlements and anchors a crash or an unreachable Horizon left open.
  SETTLEMENT_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(60),
  ANCHOR_EPOCHS: boolean.default(false),
  // docs/protocol.md §1.4: a mobile relay's share of each step it routed, taken from the worker's earning.
  RELAY_FEE_PERCENT: z.coerce.number().min(0).max(100).default(20),
});

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** The inference settings: enabled models (MODELS), the local worker's models, cell, tools and model names. */
function swarmConfig(e: z.infer<typeof envSchema>): SwarmConfig {
  const models = list(e.MODELS);
  const unknown = models.find((m) => !(WORKER_MODELS as readonly string[]).includes(m));
  if (unknown !== undefined || models.length === 0) {
    throw new ConfigError(`configuration: MODELS: a comma-separated list of ${WORKER_MODELS.join(', ')} is required`);
  }
  for (const [name, value] of [
    ['WORKER_MODELS', e.WORKER_MODELS],
    ['PREWARM_MODELS', e.PREWARM_MODELS],
  ] as const) {
    const off = list(value).find((m) => !models.includes(m));
    if (off !== undefined) throw new ConfigError(`configuration: ${name}: "${off}" is not an enabled model (MODELS)`);
  }
  if (!isCell(e.WORKER_CELL)) throw new ConfigError('configuration: WORKER_CELL: an H3 cell index is required');
  const runtimeModelNames: Record<string, string> = {};
  for (const pair of list(e.WORKER_MODEL_NAMES)) {
    const [id, name] = pair.split('=').map((s) => s.trim());
    if (!id || !name || !models.includes(id)) {
      throw new ConfigError(`configuration: WORKER_MODEL_NAMES: "${pair}" is not <enabled model>=<runtime model name>`);
    }
    runtimeModelNames[id] = name;
  }
  return {
    workerRuntimeUrl: e.WORKER_RUNTIME_URL?.replace(/\/+$/, ''),
    workerModels: list(e.WORKER_MODELS),
    prewarmModels: list(e.PREWARM_MODELS),
    backboneUrl: e.BACKBONE_URL?.replace(/\/+$/, ''),
    backboneApiKey: e.BACKBONE_API_KEY,
    timeoutMs: e.INFERENCE_TIMEOUT_MS,
    freeMessagesPerDay: e.FREE_MESSAGES_PER_DAY,
    models,
    workerCell: e.WORKER_CELL,
    ...(e.WORKER_TOOLS === undefined ? {} : { workerTools: list(e.WORKER_TOOLS) }),
    runtimeModelNames,
    version: SERVICE_VERSION,
  };
}

/** A template must be an http(s) URL naming {z}, {x} and {y}. */
function tileTemplate(name: string, value: string | undefined, fallback: string): string {
  if (value === undefined || value === '') return fallback;
  let url: URL | undefined;
  try {
    url = new URL(value.replace(/\{[zxy]\}/g, '0'));
  } catch {
    url = undefined;
  }
  const missing = ['{z}', '{x}', '{y}'].filter((p) => !value.includes(p));
  if (!url || !/^https?:$/.test(url.protocol) || missing.length > 0) {
    throw new ConfigError(`configuration: ${name}: an http(s) URL template with {z}, {x} and {y} is required`);
  }
  return value;
}

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  requireDelegation: boolean;
  epochGenesisMs: number;
  apiKeys: string[];
  bodyLimitBytes: number;
  /** Request abuse bounds shared by the gateway and both MCP servers (api/http-limits.ts). */
  httpLimits: HttpLimits;
  /** STORE_MAX_MB in bytes: the SQLite store's cap; undefined: none but the disk. */
  storeMaxBytes: number | undefined;
  mongo: { uri: string; db: string } | null;
  nodeSecretKey: string | undefined;
  /** Seal an epoch this long after it closes; longer than the sync interval so late pushes land first. */
  sealGraceMs: number;
  sealCheckMs: number;
  /** When set, this node pushes its records and seals there (a worker's local store → the central store). */
  centralStoreUrl: string | undefined;
  syncIntervalMs: number;
  /** What the central proof store takes, from whom (SYNC_NODE_KEYS, SYNC_MAX_*): api/app-deps.ts ProofSyncConfig. */
  proofSync: ProofSyncConfig;
  tiles: TileConfig;
  imagery: ImageryConfig;
  swarm: SwarmConfig;
  /** The `web-search` tool's upstream (activities/tools/web-search.ts), for the inference tool loop. */
  webSearch: WebSearchConfig;
  /** Who runs compound jobs: `embedded` (in process, the default) or `temporal` (workflows on a cluster). */
  orchestrator: 'embedded' | 'temporal';
  temporal: { address: string; namespace: string };
  naming: QueueNaming;
  /** How long POST /v1/compute waits for a job before 504 job_timeout (the job goes on). */
  jobWaitMs: number;
  /** A Temporal job run still open after this is stopped (the job-level timeout). */
  jobRunTimeoutMs: number;
  publicUrl: string | undefined;
  /** METRICS_TOKEN: the bearer token GET /metrics requires; undefined (unset or empty): /metrics is public. */
  metricsToken: string | undefined;
  /** SHUTDOWN_DRAIN_SECONDS: how long a stopping gateway lets in-flight requests finish. */
  shutdownDrainMs: number;
  /** `geofabric worker`: the gateway it registers with and syncs to. */
  gatewayUrl: string;
  /** `geofabric worker`: a mobile relay (docs/protocol.md §1.4). */
  workerRelay: boolean;
  perception: PerceptionConfig;
  governance: GovernanceConfig;
  ledger: LedgerConfig;
}

/** The credit ledger's settlement and anchoring (docs/protocol.md §1.10). */
export interface LedgerConfig {
  /** LEDGER: `none` keeps the credit ledger only; `stellar` also settles it and may anchor epochs on Stellar. */
  mode: 'none' | 'stellar';
  horizonUrl: string;
  networkPassphrase: string;
  /**
   * SETTLEMENT_ASSET: lumens (`native`), or an issued asset `CODE:ISSUER`, checked for shape here; the issuer's
   * checksum is checked when the settlement service starts (activities/settlement/stellar-keys.ts parseAsset).
   */
  asset: string;
  /** SETTLEMENT_THRESHOLD in credits: the least a payee is paid at once. */
  thresholdCredits: number;
  /** SETTLEMENT_MODE: `job` settles each finished job; `balance` pays unsettled balances on the sweep. */
  settlementMode: 'job' | 'balance';
  /** SETTLEMENT_INTERVAL_SECONDS: the sweep (balance payouts, retries of open settlements and anchors). */
  sweepIntervalMs: number;
  /** ANCHOR_EPOCHS: write each sealed epoch's Merkle root to the ledger (needs LEDGER=stellar). */
  anchorEpochs: boolean;
  /** RELAY_FEE_PERCENT / 100: the relay's share of each step it routed. */
  relayFeeShare: number;
}

/** A Stellar account id (strkey): `G` and 55 base32 characters (the checksum is the ledger client's to check). */
const STELLAR_ACCOUNT = /^G[A-Z2-7]{55}$/;
/** Stellar asset codes: 1–12 letters or digits. */
const ASSET_CODE = /^[A-Za-z0-9]{1,12}$/;

function settlementAsset(value: string): string {
  const trimmed = value.trim();
  if (trimmed === 'native') return trimmed;
  const [code, issuer, extra] = trimmed.split(':');
  if (extra !== undefined || !code || !ASSET_CODE.test(code) || !issuer || !STELLAR_ACCOUNT.test(issuer)) {
    throw new ConfigError(
      'configuration: SETTLEMENT_ASSET: `native` or CODE:ISSUER (1-12 letters or digits, a G... account id) is required',
    );
  }
  return trimmed;
}

function ledgerConfig(e: z.infer<typeof envSchema>): LedgerConfig {
  // Anchors are Stellar transactions: asking for them without a ledger to write to is a mistake, not a no-op.
  if (e.ANCHOR_EPOCHS && e.LEDGER !== 'stellar') {
    throw new ConfigError('configuration: ANCHOR_EPOCHS: needs LEDGER=stellar');
  }
  return {
    mode: e.LEDGER,
    horizonUrl: e.HORIZON_URL.replace(/\/+$/, ''),
    networkPassphrase: e.STELLAR_NETWORK_PASSPHRASE,
    asset: settlementAsset(e.SETTLEMENT_ASSET),
    thresholdCredits: e.SETTLEMENT_THRESHOLD,
    settlementMode: e.SETTLEMENT_MODE,
    sweepIntervalMs: e.SETTLEMENT_INTERVAL_SECONDS * 1000,
    anchorEpochs: e.ANCHOR_EPOCHS,
    relayFeeShare: e.RELAY_FEE_PERCENT / 100,
  };
}

/** The governance tool server (`geofabric governance`, and beside the gateway in `start`; docs/protocol.md §4.3). */
export interface GovernanceConfig {
  /** GOVERNANCE_ENABLED: whether `geofabric start` runs it beside the gateway. */
  enabled: boolean;
  port: number;
  /** Default 0.0.0.0 (docs/protocol.md §4.3); see the security note at GOVERNANCE_HOST. */
  host: string;
  /** Origins besides loopback ones allowed on /mcp (exact scheme://host[:port]). */
  allowedOrigins: string[];
  /** Host names besides loopback ones a loopback-bound server answers. */
  allowedHosts: string[];
  /** GOVERNANCE_SK: the server's signing key (bundles, tokens); else generated under DATA_DIR/governance. */
  secretKey: string | undefined;
  /** IDN_DELEGATION_CERT (shared with perception): the default subject; else perception's provisioned one. */
  delegationCert: string | undefined;
  /** COMPLIANCE_URL: base address of the perception service's /compliance routes. */
  complianceUrl: string;
  complianceTimeoutMs: number;
  /** TOKEN_TTL_SECONDS: the longest lifetime of an issued token. */
  tokenTtlSeconds: number;
}

/** The perception and compliance MCP server (`geofabric perception`, and beside the gateway in `start`). */
export interface PerceptionConfig {
  /** PERCEPTION_ENABLED: whether `geofabric start` runs it beside the gateway. */
  enabled: boolean;
  port: number;
  host: string;
  /** Origins besides loopback ones allowed on the MCP routes (exact scheme://host[:port]). */
  allowedOrigins: string[];
  /** Host names besides loopback ones a loopback-bound server answers (e.g. behind a local reverse proxy). */
  allowedHosts: string[];
  /** IDN_AGENT_SK: the agent's secret key; else generated under DATA_DIR/perception. */
  agentSecretKey: string | undefined;
  /** IDN_DELEGATION_CERT: JSON (or base64 JSON) certificate or chain; else a local development one. */
  delegationCert: string | undefined;
  weatherUrl: string;
  weatherTimeoutMs: number;
  /** perception_classify's GPU inference endpoint; unset → the tool answers not_configured. */
  classifyUrl: string | undefined;
  classifyTimeoutMs: number;
  /** PERCEPTION_REQUIRE_TOKEN: MCP calls need a governance-issued bearer token. */
  requireToken: boolean;
  /** GOVERNANCE_PK: the public key whose tokens the perception server accepts. */
  tokenIssuerPk: string | undefined;
}

const USER_AGENT = `geofabric/${SERVICE_VERSION}`;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(`configuration: ${issue?.path.join('.')}: ${issue?.message}`);
  }
  const e = parsed.data;
  let epochGenesisMs = DEFAULT_EPOCH_GENESIS_MS;
  if (e.EPOCH_GENESIS !== undefined) {
    try {
      epochGenesisMs = parseEpochGenesis(e.EPOCH_GENESIS);
    } catch (error) {
      throw new ConfigError(`configuration: EPOCH_GENESIS: ${(error as Error).message}`);
    }
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    logLevel: e.LOG_LEVEL,
    requireDelegation: e.REQUIRE_DELEGATION,
    epochGenesisMs,
    apiKeys: e.API_KEYS.split(',')
      .map((k) => k.trim())
      .filter(Boolean),
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    httpLimits: {
      ipPerMinute: e.RATE_LIMIT_IP_PER_MINUTE,
      principalPerMinute: e.RATE_LIMIT_PRINCIPAL_PER_MINUTE,
      burstSeconds: e.RATE_LIMIT_BURST_SECONDS,
      trustProxy: e.TRUST_PROXY,
      requestTimeoutMs: e.REQUEST_TIMEOUT_SECONDS * 1000,
      headersTimeoutMs: Math.min(e.HEADERS_TIMEOUT_SECONDS, e.REQUEST_TIMEOUT_SECONDS) * 1000,
    },
    storeMaxBytes: e.STORE_MAX_MB === undefined ? undefined : e.STORE_MAX_MB * 1024 * 1024,
    mongo: e.MONGODB_URI ? { uri: e.MONGODB_URI, db: e.MONGODB_DB } : null,
    nodeSecretKey: e.NODE_SECRET_KEY,
    sealGraceMs: e.SEAL_GRACE_SECONDS * 1000,
    sealCheckMs: e.SEAL_CHECK_SECONDS * 1000,
    centralStoreUrl: e.CENTRAL_STORE_URL,
    syncIntervalMs: e.SYNC_INTERVAL_SECONDS * 1000,
    proofSync: {
      nodeKeys: list(e.SYNC_NODE_KEYS),
      bounds: { itemsPerHour: e.SYNC_MAX_RECORDS_PER_HOUR, bytesPerHour: e.SYNC_MAX_MB_PER_HOUR * 1024 * 1024 },
      maxBackfillEpochs: e.SYNC_MAX_BACKFILL_HOURS,
    },
    tiles: {
      templates: {
        'osm-bright': tileTemplate('TILE_URL_OSM_BRIGHT', e.TILE_URL_OSM_BRIGHT, DEFAULT_TILE_TEMPLATES['osm-bright']),
        'osm-standard': tileTemplate(
          'TILE_URL_OSM_STANDARD',
          e.TILE_URL_OSM_STANDARD,
          DEFAULT_TILE_TEMPLATES['osm-standard'],
        ),
        dark: tileTemplate('TILE_URL_DARK', e.TILE_URL_DARK, DEFAULT_TILE_TEMPLATES.dark),
        terrain: tileTemplate('TILE_URL_TERRAIN', e.TILE_URL_TERRAIN, DEFAULT_TILE_TEMPLATES.terrain),
        satellite: tileTemplate('TILE_URL_SATELLITE', e.TILE_URL_SATELLITE, DEFAULT_TILE_TEMPLATES.satellite),
      },
      timeoutMs: e.TILE_TIMEOUT_MS,
      cacheBytes: e.TILE_CACHE_MB * 1024 * 1024,
      userAgent: USER_AGENT,
    },
    swarm: swarmConfig(e),
    imagery: {
      stacUrl: e.STAC_URL.replace(/\/+$/, ''),
      collection: e.STAC_COLLECTION,
      timeoutMs: e.STAC_TIMEOUT_MS,
      userAgent: USER_AGENT,
    },
    orchestrator: e.ORCHESTRATOR,
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE },
    naming: { prefix: e.TASK_QUEUE_PREFIX, routingResolution: e.ROUTING_RESOLUTION },
    jobWaitMs: e.JOB_WAIT_SECONDS * 1000,
    jobRunTimeoutMs: e.JOB_RUN_TIMEOUT_SECONDS * 1000,
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    metricsToken: e.METRICS_TOKEN || undefined,
    shutdownDrainMs: e.SHUTDOWN_DRAIN_SECONDS * 1000,
    gatewayUrl: e.GATEWAY_URL.replace(/\/+$/, ''),
    workerRelay: e.WORKER_RELAY,
    perception: {
      enabled: e.PERCEPTION_ENABLED,
      port: e.PERCEPTION_PORT,
      host: e.PERCEPTION_HOST,
      allowedOrigins: list(e.PERCEPTION_ALLOWED_ORIGINS),
      allowedHosts: list(e.PERCEPTION_ALLOWED_HOSTS),
      agentSecretKey: e.IDN_AGENT_SK || undefined,
      delegationCert: e.IDN_DELEGATION_CERT || undefined,
      weatherUrl: e.WEATHER_URL.replace(/\/+$/, ''),
      weatherTimeoutMs: e.WEATHER_TIMEOUT_MS,
      classifyUrl: e.CLASSIFY_URL?.replace(/\/+$/, ''),
      classifyTimeoutMs: e.CLASSIFY_TIMEOUT_MS,
      requireToken: e.PERCEPTION_REQUIRE_TOKEN,
      tokenIssuerPk: e.GOVERNANCE_PK || undefined,
    },
    governance: {
      enabled: e.GOVERNANCE_ENABLED,
      port: e.GOVERNANCE_PORT,
      host: e.GOVERNANCE_HOST,
      allowedOrigins: list(e.GOVERNANCE_ALLOWED_ORIGINS),
      allowedHosts: list(e.GOVERNANCE_ALLOWED_HOSTS),
      secretKey: e.GOVERNANCE_SK || undefined,
      delegationCert: e.IDN_DELEGATION_CERT || undefined,
      // The perception service this process runs (loopback, its port) unless told otherwise.
      complianceUrl: (e.COMPLIANCE_URL ?? `http://127.0.0.1:${e.PERCEPTION_PORT}`).replace(/\/+$/, ''),
      complianceTimeoutMs: e.COMPLIANCE_TIMEOUT_MS,
      tokenTtlSeconds: e.TOKEN_TTL_SECONDS,
    },
    ledger: ledgerConfig(e),
    webSearch: {
      braveUrl: e.BRAVE_URL.replace(/\/+$/, ''),
      braveApiKey: e.BRAVE_API_KEY || undefined,
      duckDuckGoUrl: e.DUCKDUCKGO_URL.replace(/\/+$/, ''),
      timeoutMs: e.WEB_SEARCH_TIMEOUT_MS,
      userAgent: USER_AGENT,
    },
  };
}
