import { availableParallelism } from 'node:os';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ImageryConfig } from '../activities/imagery/index.js';
import type { SwarmConfig } from '../activities/inference/index.js';
import type { TileConfig, TileTemplates } from '../activities/tiles/index.js';
import type { WebSearchConfig } from '../activities/tools/web-search.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS, parseEpochGenesis } from '../core/epoch.js';
import { PROXY_HEADERS } from '../core/forwarded.js';
import type { HttpLimits } from '../api/http-limits.js';
import type { SessionLimits } from '../mcp/shared/session-table.js';
import type { ProofSyncConfig } from '../api/app-deps.js';
import { SERVICE_VERSION } from '../api/version.js';
import { isCell, DEFAULT_JOB_CELL } from '../core/h3-cell.js';
import { EMPTY_TOOL_POLICY, parseToolPolicy, type ToolPolicy } from '../core/gates/tool-policy.js';
import { checkPublicKey } from '../core/identity.js';
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
/** Where Earth Search's Sentinel-2 L2A items keep their Cloud-Optimized GeoTIFFs (and thumbnails). */
export const EARTH_SEARCH_ASSET_ORIGINS = ['https://sentinel-cogs.s3.us-west-2.amazonaws.com'];
/** The web-search tool's upstreams: Brave when BRAVE_API_KEY is set, DuckDuckGo's keyless HTML otherwise. */
export const DEFAULT_BRAVE_URL = 'https://api.search.brave.com';
export const DEFAULT_DUCKDUCKGO_URL = 'https://html.duckduckgo.com';
/** Stellar's public test network: free test lumens from friendbot, nothing of value moves. */
export const DEFAULT_HORIZON_URL = 'https://horizon-testnet.stellar.org';
export const TESTNET_PASSPHRASE = 'Test SDF Network ; September 2015';
/** perception_weather's upstream: Open-Meteo's forecast API (free, no key; mind its fair-use terms). */
export const DEFAULT_WEATHER_URL = 'https://api.open-meteo.com';
/** perception_weather's source for instants older than 5 days: Open-Meteo's ERA5 archive API (from 1940). */
export const DEFAULT_WEATHER_ARCHIVE_URL = 'https://archive-api.open-meteo.com';

/**
 * Every environment variable the service reads, with its default. docs/configuration.md is generated from
 * this schema and ENV_DOCS below (`npm run docs:config`); a variable added here needs its entry there.
 */
/** JOB_RUN_TIMEOUT_SECONDS at most: a worker's store retention outlasts any gateway's longest run. */
const MAX_JOB_RUN_TIMEOUT_SECONDS = 7 * 86_400;

const boolean = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

export const envSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // auto: readable lines when stdout is a terminal, JSON otherwise (bin/log-output.ts).
  LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
  REQUIRE_DELEGATION: boolean.default(false),
  // Gate 3's trust anchors: comma-separated hex Ed25519 public keys of the human principals whose chains are
  // accepted. Empty: any well-formed chain is (form only; start warns when REQUIRE_DELEGATION is set).
  TRUSTED_PRINCIPALS: z.string().default(''),
  // The fifth gate's policy (core/gates/tool-policy.ts): a JSON file of tool rules by jurisdiction. Unset: none.
  TOOL_POLICY_FILE: z.string().min(1).optional(),
  EPOCH_GENESIS: z.string().optional(),
  // Development only (docs/quickstart.md), both refused when NODE_ENV=production. DEMO=true serves synthetic,
  // labelled tiles from a loopback upstream in this process and implies EPOCH_SECONDS=60 and DATA_DIR=./data-demo.
  // EPOCH_SECONDS shortens epochs so a record is sealed (and its proof verifies) within a minute or two instead
  // of up to an hour; such epoch numbers mean nothing to any other node, so it is refused wherever they would be
  // shared (central store, MongoDB, Temporal, anchoring).
  NODE_ENV: z.string().optional(),
  DEMO: boolean.default(false),
  EPOCH_SECONDS: z.coerce.number().int().min(10).max(3600).optional(),
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
  // Request body bytes per minute per address (32 MiB): parsing and verifying a body costs CPU by its size.
  RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 40)
    .default(32 * 1024 * 1024),
  // MCP Streamable HTTP sessions of each MCP server (mcp/shared/session-table.ts): in all, per client address,
  // per bearer-token agent; the least recently used idle one makes room for a new one. Idle ones close.
  MCP_MAX_SESSIONS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  MCP_SESSIONS_PER_CLIENT: z.coerce.number().int().min(1).max(1_000_000).default(100),
  MCP_SESSIONS_PER_PRINCIPAL: z.coerce.number().int().min(1).max(1_000_000).default(100),
  MCP_SESSION_IDLE_SECONDS: z.coerce.number().int().min(10).max(86_400).default(600),
  // Every MCP JSON-RPC request is answered within MCP_REQUEST_DEADLINE_SECONDS (-32001 past it, the call
  // cancelled); at most MCP_REQUESTS_IN_FLIGHT_PER_CLIENT POSTs of one address wait on an MCP server at once.
  MCP_REQUEST_DEADLINE_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  MCP_REQUESTS_IN_FLIGHT_PER_CLIENT: z.coerce.number().int().min(1).max(1_000_000).default(64),
  // Behind reverse proxies: take the client address (the per-IP limit), host and scheme (absolute URLs) from
  // what the proxies forwarded, at the position the outermost of TRUST_PROXY_HOPS proxies wrote; only the one
  // header family TRUST_PROXY_HEADER names is read. Off, both are ignored: a client cannot pick its address.
  TRUST_PROXY: boolean.default(false),
  TRUST_PROXY_HOPS: z.coerce.number().int().min(1).max(16).default(1),
  TRUST_PROXY_HEADER: z.enum(PROXY_HEADERS).default('x-forwarded-for'),
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
  // How long a worker's counted job outcome is kept to refuse a second count of that job (then pruned); must
  // outlast the longest job run, checked in loadConfig.
  WORKER_OUTCOME_RETENTION_HOURS: z.coerce.number().int().min(1).max(87_600).default(192),
  // How long a job (its answer, signed request and receipt) is kept after its last write, then pruned; must
  // outlast the longest job run, checked in loadConfig.
  JOB_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(120),
  MONGODB_URI: z.string().optional(),
  MONGODB_DB: z.string().min(1).default('geofabric'),
  NODE_SECRET_KEY: z.string().optional(),
  SEAL_GRACE_SECONDS: z.coerce.number().int().min(31).max(3600).default(60),
  SEAL_CHECK_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  CUSTODIAL_SEAL_GRACE_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(90 * 86_400)
    .default(86_400),
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
  // Origins band assets may be read from besides the catalog's own (comma-separated); the default catalog's
  // asset host is added for it. Redirects are followed only among them.
  IMAGERY_ASSET_ORIGINS: z.string().default(''),
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
  JOB_RUN_TIMEOUT_SECONDS: z.coerce.number().int().min(60).max(MAX_JOB_RUN_TIMEOUT_SECONDS).default(3600),
  PUBLIC_URL: z.url().optional(),
  // GET /metrics (Prometheus): public unless set; set, scrapes send `Authorization: Bearer <METRICS_TOKEN>`.
  METRICS_TOKEN: z.string().regex(/^\S*$/, 'must not contain whitespace (it is sent as a bearer token)').optional(),
  // The operator credential: `Authorization: Bearer <OPERATOR_TOKEN>` lists every job and inference (the dashboard
  // asks for it once and sends it). Unset: nobody does; the public sees counts, a requester its own jobs, signed.
  OPERATOR_TOKEN: z.string().regex(/^\S*$/, 'must not contain whitespace (it is sent as a bearer token)').optional(),
  // Worker registration bounds per hour (0: unlimited): registrations per worker key, and new worker keys per
  // client address (behind a proxy, TRUST_PROXY decides what the address is).
  WORKER_REGISTRATIONS_PER_KEY_PER_HOUR: z.coerce.number().int().min(0).default(30),
  WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(0).default(10),
  // On SIGTERM/SIGINT the gateway stops accepting connections and lets in-flight requests finish for at most
  // this long before closing what is left. Keep it below the orchestrator's kill delay (compose stop_grace_period).
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().int().min(0).max(3600).default(25),
  // `geofabric start` on this many processes (node:cluster; bin/cluster.ts), one per core: docs/operations.md.
  WEB_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(1),
  // Gate 1's Ed25519 verify threads per gateway process (api/request-verifier.ts); 0: the cores each process
  // has (cores / WEB_CONCURRENCY) less the one its event loop uses, at least 1.
  VERIFY_THREADS: z.coerce.number().int().min(0).max(256).default(0),
  GATEWAY_URL: z.url().default('http://127.0.0.1:8080'),
  // The gateways' node keys (comma-separated): the only writers whose telemetry a worker's sensor_fusion takes.
  GATEWAY_NODE_PK: z
    .string()
    .refine(
      (v) => list(v).length > 0 && list(v).every((pk) => /^[0-9a-f]{64}$/.test(pk)),
      'must be comma-separated 64 lowercase hex (Ed25519 public keys)',
    )
    .optional(),
  WORKER_RELAY: boolean.default(false),
  // On SIGTERM/SIGINT a worker leaves the registry, then lets running steps finish for at most this long; with
  // the final sync it stays within Kubernetes' default 30 s grace (docs/operations.md "Worker lifecycle").
  WORKER_DRAIN_SECONDS: z.coerce.number().int().min(1).max(3600).default(20),
  // How long a worker keeps the records of an epoch the central store holds whole, then prunes them; must
  // outlast the longest job run any gateway allows, checked in loadConfig.
  WORKER_STORE_RETENTION_HOURS: z.coerce.number().int().min(1).max(87_600).default(192),
  // The perception and compliance MCP server (mcp/perception).
  PERCEPTION_ENABLED: boolean.default(true),
  PERCEPTION_PORT: z.coerce.number().int().min(0).max(65_535).default(8100),
  PERCEPTION_HOST: z.string().min(1).default('127.0.0.1'),
  PERCEPTION_ALLOWED_ORIGINS: z.string().default(''),
  PERCEPTION_ALLOWED_HOSTS: z.string().default(''),
  IDN_AGENT_SK: z.string().optional(),
  IDN_DELEGATION_CERT: z.string().optional(),
  WEATHER_URL: z.url().default(DEFAULT_WEATHER_URL),
  WEATHER_ARCHIVE_URL: z.url().default(DEFAULT_WEATHER_ARCHIVE_URL),
  WEATHER_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  CLASSIFY_URL: z.url().optional(),
  CLASSIFY_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(60_000),
  // PERCEPTION_REQUIRE_TOKEN=true: perception MCP calls need a governance-issued bearer token (POST /token).
  PERCEPTION_REQUIRE_TOKEN: boolean.default(false),
  // PERCEPTION_TEST_ROUTES=true serves GET /test/weather (a real audited call per request: under a token it moves trust).
  PERCEPTION_TEST_ROUTES: boolean.default(false),
  // The token issuer's public key for a perception server whose governance server runs elsewhere; beside
  // it (`geofabric start`, or the same DATA_DIR / GOVERNANCE_SK) the key is known without it.
  GOVERNANCE_PK: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex (an Ed25519 public key)')
    .optional(),
  // The governance tool server (mcp/governance).
  GOVERNANCE_ENABLED: boolean.default(true),
  GOVERNANCE_PORT: z.coerce.number().int().min(0).max(65_535).default(8000),
  // Loopback by default: its routes carry no authentication (docs/protocol.md §5.9) and its tools reveal audit
  // chains, in bundles signed by this server. docs/protocol.md §4.3 binds 0.0.0.0; set GOVERNANCE_HOST=0.0.0.0 (a
  // container, behind a network you control) to do that. The address is logged at start.
  GOVERNANCE_HOST: z.string().min(1).default('127.0.0.1'),
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

/** Where a variable is listed in docs/configuration.md, in this order. */
export const ENV_SECTIONS = [
  'Gateway',
  'Abuse bounds',
  'Stores',
  'Proof sealing and sync',
  'Tiles',
  'Imagery',
  'Inference and swarm',
  'Web search tool',
  'Compound jobs and Temporal',
  'Worker (`geofabric worker`)',
  'Perception MCP server',
  'Governance tool server',
  'Settlement and anchoring',
  'Operations',
] as const;

export interface EnvDoc {
  section: (typeof ENV_SECTIONS)[number];
  description: string;
  /** The default as shown, when loadConfig (not the schema) supplies it or it is not a plain value. */
  shownDefault?: string;
}

/**
 * The documentation of each variable of envSchema (the schema supplies type, bounds and default). Data, not
 * behaviour: loadConfig never reads it. test/bin/config-doc.test.ts checks that the two list the same names.
 */
export const ENV_DOCS: Record<keyof z.input<typeof envSchema>, EnvDoc> = {
  PORT: { section: 'Gateway', description: 'gateway port' },
  HOST: {
    section: 'Gateway',
    description: 'gateway bind address (`0.0.0.0` to serve other machines, e.g. in a container)',
  },
  DATA_DIR: {
    section: 'Stores',
    description:
      'the embedded SQLite store (`geofabric.db`), node key, perception and governance keys; a worker keeps its own under `DATA_DIR/worker/`',
  },
  LOG_LEVEL: { section: 'Operations', description: 'pino level: `fatal` … `trace`, `silent`' },
  LOG_FORMAT: {
    section: 'Operations',
    description: '`auto`: readable lines when stdout is a terminal, JSON lines otherwise; or `pretty`, `json`',
  },
  REQUIRE_DELEGATION: {
    section: 'Gateway',
    description: 'gate 3 refuses signed requests that carry no delegation certificate',
  },
  TRUSTED_PRINCIPALS: {
    section: 'Gateway',
    description:
      'comma-separated hex Ed25519 public keys of the human principals a delegation chain must start at (403 `delegation_invalid` "untrusted principal" otherwise); empty: chains are checked for form only (docs/security.md)',
  },
  TOOL_POLICY_FILE: {
    section: 'Gateway',
    description:
      'JSON file of the fifth gate: which tools may execute for cells of which jurisdictions or frameworks, optionally from a trust tier (docs/protocol.md §1.7, example in docs/examples/tool-policy.json); read at start by the gateway, `geofabric worker` and the MCP servers; unset: no rules, nothing changes',
  },
  NODE_ENV: {
    section: 'Operations',
    description: 'read only to refuse the development settings `DEMO` and `EPOCH_SECONDS` when it is `production`',
  },
  DEMO: {
    section: 'Proof sealing and sync',
    description:
      'development only (docs/quickstart.md): synthetic, labelled tiles from a loopback upstream, `EPOCH_SECONDS=60` and `DATA_DIR=./data-demo`',
  },
  EPOCH_SECONDS: {
    section: 'Proof sealing and sync',
    description:
      'development only: shorter epochs (10–3600 s) so a proof verifies within minutes; a store keeps one length for life; refused in production, with MongoDB, a central store, Temporal, Stellar or NODE_SECRET_KEY',
    shownDefault: '3600 (one hour)',
  },
  EPOCH_GENESIS: {
    section: 'Proof sealing and sync',
    description: 'start of epoch 0 (ISO 8601, on the hour); hourly epochs and rate windows align to it',
    shownDefault: new Date(DEFAULT_EPOCH_GENESIS_MS).toISOString().replace('.000Z', 'Z'),
  },
  API_KEYS: {
    section: 'Gateway',
    description:
      'comma-separated keys accepted on `api_key` routes as `Authorization: Bearer <key>` (tier `pro`), besides keys made with `geofabric apikey create`',
  },
  BODY_LIMIT_BYTES: {
    section: 'Abuse bounds',
    description: 'largest JSON body accepted (413 `payload_too_large` above)',
  },
  RATE_LIMIT_IP_PER_MINUTE: {
    section: 'Abuse bounds',
    description:
      'requests per minute per client address (IPv6 per /64) on every route of the gateway and both MCP servers; `0` turns it off',
  },
  RATE_LIMIT_PRINCIPAL_PER_MINUTE: {
    section: 'Abuse bounds',
    description:
      'requests per minute per principal (a verified signing key, an API key, an MCP bearer token); `0` turns it off',
  },
  RATE_LIMIT_BURST_SECONDS: {
    section: 'Abuse bounds',
    description: 'a rate bucket holds this many seconds of its rate: the burst allowed at once (then 429 `rate_limit`)',
  },
  RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE: {
    section: 'Abuse bounds',
    description:
      'request body bytes per client address per minute, charged from Content-Length before the body is read (2 s burst; 429 `rate_limit`); 0 turns it off',
  },
  MCP_MAX_SESSIONS: {
    section: 'Abuse bounds',
    description:
      'open MCP Streamable HTTP sessions per MCP server; a new one closes the least recently used idle one (429 only when all are busy)',
  },
  MCP_SESSIONS_PER_CLIENT: {
    section: 'Abuse bounds',
    description: "open MCP sessions per client address; past it the address's least recently used idle one is closed",
  },
  MCP_SESSIONS_PER_PRINCIPAL: {
    section: 'Abuse bounds',
    description:
      "open MCP sessions per bearer-token agent; past it that agent's least recently used idle one is closed",
  },
  MCP_SESSION_IDLE_SECONDS: {
    section: 'Abuse bounds',
    description:
      'an MCP session (or `/sse` stream) without a request for this long is closed (its client gets 404 and initializes again)',
  },
  MCP_REQUEST_DEADLINE_SECONDS: {
    section: 'Abuse bounds',
    description:
      'an MCP request (stateless, session or SSE) not answered within this is cancelled and answered JSON-RPC -32001',
  },
  MCP_REQUESTS_IN_FLIGHT_PER_CLIENT: {
    section: 'Abuse bounds',
    description:
      'MCP POSTs of one client address being answered at once, per MCP server; past it 429 `rate_limit` with `retry-after`',
  },
  TRUST_PROXY: {
    section: 'Abuse bounds',
    description:
      'behind a reverse proxy: read the client address, host and scheme from the forwarding header the trusted proxies write (docs/operations.md#behind-a-reverse-proxy); off, forwarding headers are ignored',
  },
  TRUST_PROXY_HOPS: {
    section: 'Abuse bounds',
    description:
      'how many entries the trusted proxies add to the forwarding header: the client is that many entries from the right',
  },
  TRUST_PROXY_HEADER: {
    section: 'Abuse bounds',
    description:
      'the one header family read with TRUST_PROXY: `x-forwarded-for` (with X-Forwarded-Host/-Proto) or `forwarded` (RFC 7239); the other is ignored',
  },
  REQUEST_TIMEOUT_SECONDS: {
    section: 'Abuse bounds',
    description: 'a request (headers and body) must arrive within this (408 `request_timeout`, connection closed)',
  },
  HEADERS_TIMEOUT_SECONDS: {
    section: 'Abuse bounds',
    description: 'request headers must arrive within this (capped at `REQUEST_TIMEOUT_SECONDS`; 408)',
  },
  STORE_MAX_MB: {
    section: 'Stores',
    description:
      'cap on each SQLite store file (`max_page_count`); when full (or the disk is): 507 `storage_full`, nothing half-written',
    shownDefault: 'unset (the disk)',
  },
  WORKER_OUTCOME_RETENTION_HOURS: {
    section: 'Stores',
    description:
      'how long each counted worker outcome (`worker_outcomes`) is kept so a retried or replayed job never counts twice, then pruned; must exceed `JOB_RUN_TIMEOUT_SECONDS` plus 5 minutes (docs/operations.md "Retention")',
  },
  JOB_RETENTION_DAYS: {
    section: 'Stores',
    description:
      'how long a compute job (`compute_jobs`: its answer, signed request and so its receipt) is kept after it was last written, then pruned: `GET /v1/compute/{id}` and its receipt answer 404 `job_not_found` after that (its proof records stay). The default, 120 days, is the longest common window for disputing a charge with a card network, so a receipt outlives any billing dispute about its job; an openEO batch job not queued or running is pruned as long after its last update; must exceed `JOB_RUN_TIMEOUT_SECONDS` plus 5 minutes. Step output blobs (`job_blobs`) are kept `JOB_RUN_TIMEOUT_SECONDS` plus a day (docs/operations.md "Retention")',
  },
  MONGODB_URI: {
    section: 'Stores',
    description: 'use MongoDB (any MongoDB, or FerretDB) as the store instead of the embedded SQLite file',
  },
  MONGODB_DB: { section: 'Stores', description: 'database name on `MONGODB_URI`' },
  NODE_SECRET_KEY: {
    section: 'Proof sealing and sync',
    description:
      "this node's Ed25519 secret key (hex), which signs its proof records and seals; else `DATA_DIR/node-key.json`, created on first start",
    shownDefault: 'generated',
  },
  SEAL_GRACE_SECONDS: {
    section: 'Proof sealing and sync',
    description:
      'an epoch is sealed this long after it closes (longer than the sync interval, so late pushes land first)',
  },
  SEAL_CHECK_SECONDS: {
    section: 'Proof sealing and sync',
    description: 'how often the auto-sealer looks for due epochs',
  },
  CUSTODIAL_SEAL_GRACE_SECONDS: {
    section: 'Proof sealing and sync',
    description:
      'the central store seals, with its own key (a custodial seal), the epochs a worker left unsealed once it has been offline this long (a worker that returns later finds its epochs sealed for it)',
  },
  CENTRAL_STORE_URL: {
    section: 'Proof sealing and sync',
    description:
      "push this node's records and seals to that gateway's `/store/sync` and `/store/epochs` (a worker defaults to `GATEWAY_URL`)",
  },
  SYNC_INTERVAL_SECONDS: { section: 'Proof sealing and sync', description: 'interval between sync rounds' },
  SYNC_NODE_KEYS: {
    section: 'Proof sealing and sync',
    description:
      "comma-separated hex public keys of other nodes that may push to this store (`/store/sync`, `/store/epochs`), beside this node and registered workers (docs/security.md); also the peers whose telemetry records this node's `sensor_fusion` steps take as inputs beside its own (docs/protocol.md §2.10)",
  },
  SYNC_MAX_RECORDS_PER_HOUR: {
    section: 'Proof sealing and sync',
    description: 'records and seals one pushing key may send per clock hour (429 `quota_exceeded` past it)',
  },
  SYNC_MAX_MB_PER_HOUR: {
    section: 'Proof sealing and sync',
    description: 'JSON megabytes of records and seals one pushing key may send per clock hour',
  },
  SYNC_MAX_BACKFILL_HOURS: {
    section: 'Proof sealing and sync',
    description:
      'the oldest epoch a push may bring, and only with its seal (records of the open epoch and the one before need none)',
  },
  TILE_URL_OSM_BRIGHT: {
    section: 'Tiles',
    description: 'upstream XYZ template of style `osm-bright` (`{z}`, `{x}`, `{y}`)',
    shownDefault: DEFAULT_TILE_TEMPLATES['osm-bright'],
  },
  TILE_URL_OSM_STANDARD: {
    section: 'Tiles',
    description: 'style `osm-standard`',
    shownDefault: DEFAULT_TILE_TEMPLATES['osm-standard'],
  },
  TILE_URL_DARK: { section: 'Tiles', description: 'style `dark`', shownDefault: DEFAULT_TILE_TEMPLATES.dark },
  TILE_URL_TERRAIN: { section: 'Tiles', description: 'style `terrain`', shownDefault: DEFAULT_TILE_TEMPLATES.terrain },
  TILE_URL_SATELLITE: {
    section: 'Tiles',
    description: 'style `satellite` (Esri orders its path `{z}/{y}/{x}` and answers JPEG)',
    shownDefault: DEFAULT_TILE_TEMPLATES.satellite,
  },
  TILE_CACHE_MB: { section: 'Tiles', description: 'byte budget of the in-memory tile cache (LRU)' },
  TILE_TIMEOUT_MS: { section: 'Tiles', description: 'per upstream tile request (504 `upstream_timeout` beyond)' },
  STAC_URL: { section: 'Imagery', description: 'STAC API of the imagery endpoints and `perception_fetch_tile`' },
  IMAGERY_ASSET_ORIGINS: {
    section: 'Imagery',
    description:
      "extra origins (`scheme://host[:port]`, comma-separated) band assets may be read from, beside the catalog's own origin (and the Sentinel-2 COG host of the default catalog)",
  },
  STAC_COLLECTION: { section: 'Imagery', description: 'STAC collection searched' },
  STAC_TIMEOUT_MS: { section: 'Imagery', description: 'per STAC request and per COG range read' },
  BRAVE_API_KEY: {
    section: 'Web search tool',
    description:
      'Brave Search API token; when set, `web-search` uses Brave instead of DuckDuckGo (set it in production)',
  },
  BRAVE_URL: { section: 'Web search tool', description: 'Brave Search API root' },
  DUCKDUCKGO_URL: { section: 'Web search tool', description: 'DuckDuckGo HTML root (keyless fallback)' },
  WEB_SEARCH_TIMEOUT_MS: { section: 'Web search tool', description: 'per search (504 `upstream_timeout` beyond)' },
  WORKER_RUNTIME_URL: {
    section: 'Inference and swarm',
    description:
      "OpenAI-compatible base URL of this node's model runtime (e.g. Ollama `http://127.0.0.1:11434/v1`); unset: no local worker",
  },
  WORKER_MODELS: { section: 'Inference and swarm', description: 'models the local worker serves (each in `MODELS`)' },
  PREWARM_MODELS: {
    section: 'Inference and swarm',
    description: 'models warmed at start with a one-token completion (each in `MODELS`)',
  },
  BACKBONE_URL: {
    section: 'Inference and swarm',
    description:
      'OpenAI-compatible fast-inference backbone (`llama-3.3-70b-versatile`), used when no worker is eligible',
  },
  BACKBONE_API_KEY: { section: 'Inference and swarm', description: 'bearer key of `BACKBONE_URL`' },
  INFERENCE_TIMEOUT_MS: {
    section: 'Inference and swarm',
    description: 'per runtime or backbone call (while streaming: between chunks)',
  },
  FREE_MESSAGES_PER_DAY: {
    section: 'Inference and swarm',
    description: 'chat messages per free-tier API key per UTC day (429 `quota_exceeded` beyond)',
  },
  MODELS: {
    section: 'Inference and swarm',
    description: 'comma-separated enabled registry models (others are 400 `invalid_model`)',
  },
  WORKER_CELL: {
    section: 'Inference and swarm',
    description: 'H3 cell the local worker (or `geofabric worker`) registers in',
  },
  WORKER_TOOLS: {
    section: 'Inference and swarm',
    description: 'comma-separated registry tools the worker advertises',
    shownDefault: '`web-search`',
  },
  WORKER_MODEL_NAMES: {
    section: 'Inference and swarm',
    description:
      '`id=runtime-name,…` when the runtime names a model differently, e.g. `phi-3-mini=phi3:mini` for Ollama',
  },
  ORCHESTRATOR: {
    section: 'Compound jobs and Temporal',
    description: 'who runs compound jobs: `embedded` (in the gateway process) or `temporal` (workflows on a cluster)',
  },
  TEMPORAL_ADDRESS: {
    section: 'Compound jobs and Temporal',
    description: 'Temporal frontend (the gateway with `ORCHESTRATOR=temporal`, and `geofabric worker`)',
  },
  TEMPORAL_NAMESPACE: { section: 'Compound jobs and Temporal', description: 'Temporal namespace' },
  TASK_QUEUE_PREFIX: {
    section: 'Compound jobs and Temporal',
    description: 'first part of every task queue name and of the seal Schedule id (deployments sharing a namespace)',
  },
  ROUTING_RESOLUTION: {
    section: 'Compound jobs and Temporal',
    description: 'H3 resolution of the routing cell in task queue names',
  },
  JOB_WAIT_SECONDS: {
    section: 'Compound jobs and Temporal',
    description: 'how long `POST /v1/compute` waits before 504 `job_timeout` (the job goes on)',
  },
  JOB_RUN_TIMEOUT_SECONDS: {
    section: 'Compound jobs and Temporal',
    description: 'job-level timeout of a Temporal `computeJob` run',
  },
  PUBLIC_URL: {
    section: 'Gateway',
    description:
      'absolute base URL of this gateway as clients reach it (`verify_url`, tile grid URLs, OpenAPI `servers`); set it behind any proxy',
    shownDefault: 'the request origin (trusted forwarded host and scheme with TRUST_PROXY)',
  },
  OPERATOR_TOKEN: {
    section: 'Operations',
    description:
      'bearer token of operators and the dashboard: lists every job (`/v1/compute/recent`) and the job ids of `/svc/inference/recent`; unset, nobody can (docs/security.md)',
  },
  WORKER_REGISTRATIONS_PER_KEY_PER_HOUR: {
    section: 'Inference and swarm',
    description:
      'registrations and re-registrations of one worker key per hour (429 `rate_limit` past it); 0: unlimited',
  },
  WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR: {
    section: 'Inference and swarm',
    description: 'first registrations of new worker keys from one client address per hour; 0: unlimited',
  },
  METRICS_TOKEN: {
    section: 'Operations',
    description: 'when set, `GET /metrics` needs `Authorization: Bearer <token>`; unset, it is public',
  },
  SHUTDOWN_DRAIN_SECONDS: {
    section: 'Operations',
    description: "how long in-flight requests get on SIGTERM/SIGINT (keep it below the orchestrator's kill delay)",
  },
  WEB_CONCURRENCY: {
    section: 'Operations',
    description:
      'gateway processes on this machine (node:cluster; set it to the cores); worker 0 alone seals, syncs and runs the MCP servers. Not with `LEDGER=stellar`',
  },
  VERIFY_THREADS: {
    section: 'Operations',
    description:
      "worker threads per gateway process that verify signed requests' Ed25519 signatures; 0 (default): the process's share of the cores (cores ÷ `WEB_CONCURRENCY`) less one for its event loop, at least 1",
  },
  GATEWAY_URL: {
    section: 'Worker (`geofabric worker`)',
    description: 'the gateway the worker registers with (and syncs to, unless `CENTRAL_STORE_URL`)',
  },
  GATEWAY_NODE_PK: {
    section: 'Worker (`geofabric worker`)',
    description:
      "the gateways' node keys, comma-separated (hex; each its `geofabric keygen` public key, or `node_pk` in its start-up log): `sensor_fusion` steps on this worker take only telemetry records those keys wrote (docs/protocol.md §2.10); list every gateway of the deployment that writes telemetry; unset: a `sensor_fusion` step routed to this worker fails (`step_type_unavailable`)",
  },
  WORKER_RELAY: {
    section: 'Worker (`geofabric worker`)',
    description: 'register as a mobile relay: polls no compute queue, earns `RELAY_FEE_PERCENT` of the steps it routes',
  },
  WORKER_STORE_RETENTION_HOURS: {
    section: 'Worker (`geofabric worker`)',
    description:
      'how long the worker keeps, in its own store (`worker.db`), the records and seal tree pages of a sealed epoch whose seal the central store holds (and so every record of it), counted from the epoch\'s end, then prunes them hourly in batches (its seals stay); must exceed 168 h, the longest job run a gateway allows, so a retried step still finds its record (docs/operations.md "Retention")',
  },
  WORKER_DRAIN_SECONDS: {
    section: 'Worker (`geofabric worker`)',
    description:
      'on SIGTERM/SIGINT: how long running steps get to finish after the worker has left the registry (keep it ' +
      "about 10 s below the orchestrator's kill delay: the final sync follows)",
  },
  PERCEPTION_ENABLED: {
    section: 'Perception MCP server',
    description: '`geofabric start` runs the perception MCP server beside the gateway',
  },
  PERCEPTION_PORT: { section: 'Perception MCP server', description: 'perception server port' },
  PERCEPTION_HOST: { section: 'Perception MCP server', description: 'perception server bind address' },
  PERCEPTION_ALLOWED_ORIGINS: {
    section: 'Perception MCP server',
    description: 'comma-separated origins (`scheme://host[:port]`) besides loopback ones allowed on the MCP routes',
  },
  PERCEPTION_ALLOWED_HOSTS: {
    section: 'Perception MCP server',
    description: "Host names besides loopback ones a loopback-bound perception server answers (e.g. a local proxy's)",
  },
  IDN_AGENT_SK: {
    section: 'Perception MCP server',
    description: "the perception agent's secret key (hex); else `DATA_DIR/perception/agent-key.json`",
    shownDefault: 'generated',
  },
  IDN_DELEGATION_CERT: {
    section: 'Perception MCP server',
    description:
      "the agent's delegation certificate or chain (JSON, or base64 of it); else a local development one (also the governance server's default subject)",
    shownDefault: 'provisioned locally',
  },
  WEATHER_URL: { section: 'Perception MCP server', description: 'Open-Meteo-compatible API of `perception_weather`' },
  WEATHER_ARCHIVE_URL: {
    section: 'Perception MCP server',
    description:
      'Open-Meteo-compatible ERA5 archive (`/v1/archive`) asked for instants older than 5 days, back to 1940',
  },
  WEATHER_TIMEOUT_MS: { section: 'Perception MCP server', description: 'per weather request' },
  CLASSIFY_URL: {
    section: 'Perception MCP server',
    description:
      "GPU inference endpoint of `perception_classify` (classify v1), and of the gateway's `flood_classify` when a request names a `model`; unset: the tool answers `not_configured` and `flood_classify` uses MNDWI",
  },
  CLASSIFY_TIMEOUT_MS: { section: 'Perception MCP server', description: 'per classify request' },
  PERCEPTION_TEST_ROUTES: {
    section: 'Perception MCP server',
    description:
      "serve `GET /test/weather` (each call is a real audited tool call; under a bearer token it moves the agent's trust); off by default",
  },
  PERCEPTION_REQUIRE_TOKEN: {
    section: 'Perception MCP server',
    description: 'perception MCP calls need a governance bearer token (`POST /token`)',
  },
  GOVERNANCE_PK: {
    section: 'Perception MCP server',
    description: 'public key whose tokens a perception server running apart from its governance server accepts',
    shownDefault: 'the local governance key',
  },
  GOVERNANCE_ENABLED: {
    section: 'Governance tool server',
    description: '`geofabric start` runs the governance tool server beside the gateway',
  },
  GOVERNANCE_PORT: { section: 'Governance tool server', description: 'governance server port' },
  GOVERNANCE_HOST: {
    section: 'Governance tool server',
    description:
      'governance bind address; its routes carry no authentication, so `127.0.0.1` keeps it local (see docs/security.md)',
  },
  GOVERNANCE_ALLOWED_ORIGINS: {
    section: 'Governance tool server',
    description: 'browser origins besides loopback ones allowed on `/mcp` and `/token`',
  },
  GOVERNANCE_ALLOWED_HOSTS: {
    section: 'Governance tool server',
    description: 'Host names besides loopback ones a loopback-bound governance server answers',
  },
  GOVERNANCE_SK: {
    section: 'Governance tool server',
    description: "the governance server's signing key (hex); else `DATA_DIR/governance/server-key.json`",
    shownDefault: 'generated',
  },
  COMPLIANCE_URL: {
    section: 'Governance tool server',
    description: 'perception service whose `/compliance` reports go into audit bundles (and the dashboard)',
    shownDefault: 'http://127.0.0.1:<PERCEPTION_PORT>',
  },
  COMPLIANCE_TIMEOUT_MS: { section: 'Governance tool server', description: 'per compliance report request' },
  TOKEN_TTL_SECONDS: {
    section: 'Governance tool server',
    description: 'longest lifetime of an issued token (verifiers refuse more than an hour)',
  },
  LEDGER: {
    section: 'Settlement and anchoring',
    description: '`none`: the credit ledger only; `stellar`: also pay out on Stellar',
  },
  HORIZON_URL: {
    section: 'Settlement and anchoring',
    description: 'Horizon API for payments, anchors and `proof verify --anchor`',
  },
  STELLAR_NETWORK_PASSPHRASE: {
    section: 'Settlement and anchoring',
    description: 'network the transactions are signed for (default: the public testnet)',
  },
  SETTLEMENT_ASSET: {
    section: 'Settlement and anchoring',
    description: '`native` (XLM) or `CODE:ISSUER`; 1 credit = 1 unit',
  },
  SETTLEMENT_THRESHOLD: {
    section: 'Settlement and anchoring',
    description: "credits: a job (mode `job`) or an account's unsettled earnings reaching it is paid",
  },
  SETTLEMENT_MODE: {
    section: 'Settlement and anchoring',
    description: '`job`: pay each finished job at once; `balance`: pay accounts on the sweep',
  },
  SETTLEMENT_INTERVAL_SECONDS: {
    section: 'Settlement and anchoring',
    description: 'the sweep: balance payouts, retries of open settlements and anchors',
  },
  ANCHOR_EPOCHS: {
    section: 'Settlement and anchoring',
    description: 'write each sealed epoch root to the ledger (`epoch:<n>`); needs `LEDGER=stellar`',
  },
  RELAY_FEE_PERCENT: {
    section: 'Settlement and anchoring',
    description: "a relay's share of the steps it routed, taken from the worker's earning",
  },
};

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** TOOL_POLICY_FILE read and checked; a broken policy stops the start rather than silently allowing every tool. */
function toolPolicy(path: string | undefined): ToolPolicy {
  if (path === undefined) return EMPTY_TOOL_POLICY;
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new ConfigError(`configuration: TOOL_POLICY_FILE: ${path}: ${(error as Error).message}`);
  }
  const parsed = parseToolPolicy(json);
  if (!parsed.ok) throw new ConfigError(`configuration: TOOL_POLICY_FILE: ${path}: ${parsed.detail}`);
  return parsed.policy;
}

/** TRUSTED_PRINCIPALS as a set of usable Ed25519 keys; a typo must stop the start, not trust nobody silently. */
function trustedPrincipals(value: string): ReadonlySet<string> {
  const keys = list(value).map((k) => k.toLowerCase());
  for (const key of keys) {
    const checked = checkPublicKey(key);
    if (!checked.ok) throw new ConfigError(`configuration: TRUSTED_PRINCIPALS: "${key}": ${checked.detail}`);
  }
  return new Set(keys);
}

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
/** The catalog's documented asset host when it is the default catalog, plus IMAGERY_ASSET_ORIGINS. */
function assetOrigins(stacUrl: string, configured: string): string[] {
  const extra = configured
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((value) => {
      let url: URL | undefined;
      try {
        url = new URL(value);
      } catch {
        url = undefined;
      }
      if (!url || !/^https?:$/.test(url.protocol) || (url.pathname !== '/' && url.pathname !== '')) {
        throw new ConfigError(`configuration: IMAGERY_ASSET_ORIGINS: ${value} is not an http(s) origin`);
      }
      return url.origin;
    });
  const builtIn = new URL(stacUrl).origin === new URL(DEFAULT_STAC_URL).origin ? EARTH_SEARCH_ASSET_ORIGINS : [];
  return [...new Set([...builtIn, ...extra])];
}

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
  /** LOG_FORMAT: `pretty` lines, `json` lines, or `auto` (pretty on a terminal). */
  logFormat: z.infer<typeof envSchema>['LOG_FORMAT'];
  requireDelegation: boolean;
  /** TRUSTED_PRINCIPALS: roots a delegation chain must start at; empty: any root (form only). */
  trustedPrincipals: ReadonlySet<string>;
  /** TOOL_POLICY_FILE parsed: the fifth gate's rules (EMPTY_TOOL_POLICY when unset). */
  toolPolicy: ToolPolicy;
  epochGenesisMs: number;
  /** EPOCH_MS (the hour), unless EPOCH_SECONDS (development) shortened it. */
  epochMs: number;
  /** DEMO: the in-process demo tile upstream serves every style not set by TILE_URL_* (bin/demo-upstream.ts). */
  demo: boolean;
  apiKeys: string[];
  bodyLimitBytes: number;
  /** Request abuse bounds shared by the gateway and both MCP servers (api/http-limits.ts). */
  httpLimits: HttpLimits;
  /**
   * MCP_MAX_SESSIONS, MCP_SESSIONS_PER_CLIENT, MCP_SESSIONS_PER_PRINCIPAL, MCP_SESSION_IDLE_SECONDS,
   * MCP_REQUEST_DEADLINE_SECONDS, MCP_REQUESTS_IN_FLIGHT_PER_CLIENT.
   */
  mcpSessions: SessionLimits;
  /** STORE_MAX_MB in bytes: the SQLite store's cap; undefined: none but the disk. */
  storeMaxBytes: number | undefined;
  /** WORKER_OUTCOME_RETENTION_HOURS in ms: counted outcomes older than this are pruned. */
  workerOutcomeRetentionMs: number;
  /** JOB_RETENTION_DAYS in ms: jobs last written longer ago than this are pruned. */
  jobRetentionMs: number;
  /** Blobs last stored longer ago than this are pruned: the longest run (jobRunTimeoutMs) plus a day. */
  blobRetentionMs: number;
  mongo: { uri: string; db: string } | null;
  nodeSecretKey: string | undefined;
  /** Seal an epoch this long after it closes; longer than the sync interval so late pushes land first. */
  sealGraceMs: number;
  sealCheckMs: number;
  /** CUSTODIAL_SEAL_GRACE_SECONDS in ms: a worker gone this long has its unsealed epochs sealed by the node. */
  custodialSealGraceMs: number;
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
  /** OPERATOR_TOKEN: the bearer token that lists every job and inference; undefined: nobody can. */
  operatorToken: string | undefined;
  /** WORKER_REGISTRATIONS_PER_KEY_PER_HOUR, WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR (0: unlimited). */
  registrationLimits: { perKeyPerHour: number; newKeysPerAddressPerHour: number };
  metricsToken: string | undefined;
  /** SHUTDOWN_DRAIN_SECONDS: how long a stopping gateway lets in-flight requests finish. */
  shutdownDrainMs: number;
  /** WEB_CONCURRENCY: gateway processes (node:cluster, bin/cluster.ts); 1: this process serves. */
  webConcurrency: number;
  /** Gate 1's verify threads per gateway process (VERIFY_THREADS, else this process's share of the cores less one). */
  verifyThreads: number;
  /** `geofabric worker`: the gateway it registers with and syncs to. */
  gatewayUrl: string;
  /** GATEWAY_NODE_PK: the gateways' node keys, the writers of telemetry a worker's fusion trusts. */
  gatewayNodePks: string[] | undefined;
  /** `geofabric worker`: a mobile relay (docs/protocol.md §1.4). */
  workerRelay: boolean;
  /** WORKER_DRAIN_SECONDS, in ms. */
  workerDrainMs: number;
  /** WORKER_STORE_RETENTION_HOURS in ms: a worker prunes epochs the central store holds, ended this long ago. */
  workerStoreRetentionMs: number;
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
  /** GOVERNANCE_HOST, default 127.0.0.1; see the security note at GOVERNANCE_HOST. */
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
  /** WEATHER_ARCHIVE_URL: the ERA5 archive API, asked for instants older than 5 days. */
  weatherArchiveUrl: string;
  weatherTimeoutMs: number;
  /** perception_classify's GPU inference endpoint; unset → the tool answers not_configured. */
  classifyUrl: string | undefined;
  classifyTimeoutMs: number;
  /** PERCEPTION_REQUIRE_TOKEN: every route but /health needs a governance-issued bearer token. */
  requireToken: boolean;
  /** PERCEPTION_TEST_ROUTES: serve GET /test/weather (default off). */
  testRoutes: boolean;
  /** GOVERNANCE_PK: the public key whose tokens the perception server accepts. */
  tokenIssuerPk: string | undefined;
}

const USER_AGENT = `geofabric/${SERVICE_VERSION}`;

/** What DEMO implies when EPOCH_SECONDS is not set: a record is sealed about a minute after it is written. */
export const DEMO_EPOCH_SECONDS = 60;
/**
 * Short epochs seal this soon after they end, checked this often, unless SEAL_GRACE_SECONDS/SEAL_CHECK_SECONDS
 * say otherwise: the hourly grace (60 s) exists for the 30 s sync to a central store, which short epochs refuse.
 * It still exceeds the proof writer's 1 s flush, so no record arrives after its epoch is sealed.
 */
const SHORT_EPOCH_SEAL_SECONDS = 5;

/** DEMO and EPOCH_SECONDS: development settings, checked against everything they must never meet. */
function devSettings(
  e: z.infer<typeof envSchema>,
  env: NodeJS.ProcessEnv,
): { epochMs: number; dataDir: string; sealGraceMs: number; sealCheckMs: number } {
  const production = e.NODE_ENV === 'production';
  if (e.DEMO && production) {
    throw new ConfigError('configuration: DEMO: refused when NODE_ENV=production (demo tiles are synthetic)');
  }
  const seconds = e.EPOCH_SECONDS ?? (e.DEMO ? DEMO_EPOCH_SECONDS : undefined);
  const dataDir = e.DEMO && env.DATA_DIR === undefined ? './data-demo' : e.DATA_DIR;
  if (seconds === undefined || seconds * 1000 === EPOCH_MS) {
    return {
      epochMs: EPOCH_MS,
      dataDir,
      sealGraceMs: e.SEAL_GRACE_SECONDS * 1000,
      sealCheckMs: e.SEAL_CHECK_SECONDS * 1000,
    };
  }
  const name = e.EPOCH_SECONDS === undefined ? 'DEMO (EPOCH_SECONDS=60)' : 'EPOCH_SECONDS';
  const clash: [boolean, string][] = [
    [production, 'NODE_ENV=production'],
    [Boolean(e.MONGODB_URI), 'MONGODB_URI'],
    [e.CENTRAL_STORE_URL !== undefined, 'CENTRAL_STORE_URL'],
    [e.ORCHESTRATOR === 'temporal', 'ORCHESTRATOR=temporal'],
    [e.LEDGER === 'stellar', 'LEDGER=stellar'],
    // A real node key must never sign seals of made-up epochs; a development node makes its own key.
    [e.NODE_SECRET_KEY !== undefined, 'NODE_SECRET_KEY'],
  ];
  const found = clash.find(([hit]) => hit);
  if (found) {
    throw new ConfigError(
      `configuration: ${name}: short epochs are for a local development node and are refused with ${found[1]} ` +
        '(their epoch numbers mean nothing to any other node or store)',
    );
  }
  return {
    epochMs: seconds * 1000,
    dataDir,
    sealGraceMs: (env.SEAL_GRACE_SECONDS === undefined ? SHORT_EPOCH_SEAL_SECONDS : e.SEAL_GRACE_SECONDS) * 1000,
    sealCheckMs: (env.SEAL_CHECK_SECONDS === undefined ? SHORT_EPOCH_SEAL_SECONDS : e.SEAL_CHECK_SECONDS) * 1000,
  };
}

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
  // A job's outcome can be recorded again while its run lasts and while its signed request may be replayed
  // (5 minutes, core/gates/signature.ts): a shorter window would let that job count twice.
  if (e.WORKER_OUTCOME_RETENTION_HOURS * 3600 <= e.JOB_RUN_TIMEOUT_SECONDS + 300) {
    throw new ConfigError(
      `configuration: WORKER_OUTCOME_RETENTION_HOURS: ${e.WORKER_OUTCOME_RETENTION_HOURS} h does not outlast ` +
        `JOB_RUN_TIMEOUT_SECONDS (${e.JOB_RUN_TIMEOUT_SECONDS} s) plus the 5-minute replay window`,
    );
  }
  // A job is claimed again by a replay of its signed request (5 minutes) and written by its run until it ends.
  if (e.JOB_RETENTION_DAYS * 86_400 <= e.JOB_RUN_TIMEOUT_SECONDS + 300) {
    throw new ConfigError(
      `configuration: JOB_RETENTION_DAYS: ${e.JOB_RETENTION_DAYS} d does not outlast ` +
        `JOB_RUN_TIMEOUT_SECONDS (${e.JOB_RUN_TIMEOUT_SECONDS} s) plus the 5-minute replay window`,
    );
  }
  // A worker's step, retried within its job's run, finds the record it wrote before by id; pruned, it would write
  // it again under that id in a later epoch, which the central store refuses, and with it that epoch's seal
  // and every later one. The run's bound is the gateway's, which a worker does not know: its maximum counts.
  if (e.WORKER_STORE_RETENTION_HOURS * 3600 <= MAX_JOB_RUN_TIMEOUT_SECONDS) {
    throw new ConfigError(
      `configuration: WORKER_STORE_RETENTION_HOURS: ${e.WORKER_STORE_RETENTION_HOURS} h does not outlast the ` +
        `longest job run a gateway allows (JOB_RUN_TIMEOUT_SECONDS at most ${MAX_JOB_RUN_TIMEOUT_SECONDS / 3600} h)`,
    );
  }
  const dev = devSettings(e, env);
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: dev.dataDir,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    requireDelegation: e.REQUIRE_DELEGATION,
    trustedPrincipals: trustedPrincipals(e.TRUSTED_PRINCIPALS),
    toolPolicy: toolPolicy(e.TOOL_POLICY_FILE),
    epochGenesisMs,
    epochMs: dev.epochMs,
    demo: e.DEMO,
    apiKeys: e.API_KEYS.split(',')
      .map((k) => k.trim())
      .filter(Boolean),
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    httpLimits: {
      ipPerMinute: e.RATE_LIMIT_IP_PER_MINUTE,
      principalPerMinute: e.RATE_LIMIT_PRINCIPAL_PER_MINUTE,
      burstSeconds: e.RATE_LIMIT_BURST_SECONDS,
      ipBodyBytesPerMinute: e.RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE,
      trustProxy: e.TRUST_PROXY,
      trustProxyHops: e.TRUST_PROXY_HOPS,
      trustProxyHeader: e.TRUST_PROXY_HEADER,
      requestTimeoutMs: e.REQUEST_TIMEOUT_SECONDS * 1000,
      headersTimeoutMs: Math.min(e.HEADERS_TIMEOUT_SECONDS, e.REQUEST_TIMEOUT_SECONDS) * 1000,
    },
    mcpSessions: {
      max: e.MCP_MAX_SESSIONS,
      perClient: e.MCP_SESSIONS_PER_CLIENT,
      perPrincipal: e.MCP_SESSIONS_PER_PRINCIPAL,
      idleMs: e.MCP_SESSION_IDLE_SECONDS * 1000,
      deadlineMs: e.MCP_REQUEST_DEADLINE_SECONDS * 1000,
      inFlightPerClient: e.MCP_REQUESTS_IN_FLIGHT_PER_CLIENT,
    },
    storeMaxBytes: e.STORE_MAX_MB === undefined ? undefined : e.STORE_MAX_MB * 1024 * 1024,
    workerOutcomeRetentionMs: e.WORKER_OUTCOME_RETENTION_HOURS * 3_600_000,
    jobRetentionMs: e.JOB_RETENTION_DAYS * 86_400_000,
    blobRetentionMs: e.JOB_RUN_TIMEOUT_SECONDS * 1000 + 86_400_000,
    mongo: e.MONGODB_URI ? { uri: e.MONGODB_URI, db: e.MONGODB_DB } : null,
    nodeSecretKey: e.NODE_SECRET_KEY,
    sealGraceMs: dev.sealGraceMs,
    sealCheckMs: dev.sealCheckMs,
    custodialSealGraceMs: e.CUSTODIAL_SEAL_GRACE_SECONDS * 1000,
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
      assetOrigins: assetOrigins(e.STAC_URL, e.IMAGERY_ASSET_ORIGINS),
      classifyUrl: e.CLASSIFY_URL?.replace(/\/+$/, ''),
      classifyTimeoutMs: e.CLASSIFY_TIMEOUT_MS,
    },
    orchestrator: e.ORCHESTRATOR,
    temporal: { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE },
    naming: { prefix: e.TASK_QUEUE_PREFIX, routingResolution: e.ROUTING_RESOLUTION },
    jobWaitMs: e.JOB_WAIT_SECONDS * 1000,
    jobRunTimeoutMs: e.JOB_RUN_TIMEOUT_SECONDS * 1000,
    publicUrl: e.PUBLIC_URL?.replace(/\/+$/, ''),
    metricsToken: e.METRICS_TOKEN || undefined,
    operatorToken: e.OPERATOR_TOKEN || undefined,
    registrationLimits: {
      perKeyPerHour: e.WORKER_REGISTRATIONS_PER_KEY_PER_HOUR,
      newKeysPerAddressPerHour: e.WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR,
    },
    shutdownDrainMs: e.SHUTDOWN_DRAIN_SECONDS * 1000,
    webConcurrency: e.WEB_CONCURRENCY,
    verifyThreads:
      e.VERIFY_THREADS > 0 ? e.VERIFY_THREADS : Math.max(1, Math.floor(availableParallelism() / e.WEB_CONCURRENCY) - 1),
    gatewayUrl: e.GATEWAY_URL.replace(/\/+$/, ''),
    gatewayNodePks: e.GATEWAY_NODE_PK === undefined ? undefined : list(e.GATEWAY_NODE_PK),
    workerRelay: e.WORKER_RELAY,
    workerDrainMs: e.WORKER_DRAIN_SECONDS * 1000,
    workerStoreRetentionMs: e.WORKER_STORE_RETENTION_HOURS * 3_600_000,
    perception: {
      enabled: e.PERCEPTION_ENABLED,
      port: e.PERCEPTION_PORT,
      host: e.PERCEPTION_HOST,
      allowedOrigins: list(e.PERCEPTION_ALLOWED_ORIGINS),
      allowedHosts: list(e.PERCEPTION_ALLOWED_HOSTS),
      agentSecretKey: e.IDN_AGENT_SK || undefined,
      delegationCert: e.IDN_DELEGATION_CERT || undefined,
      weatherUrl: e.WEATHER_URL.replace(/\/+$/, ''),
      weatherArchiveUrl: e.WEATHER_ARCHIVE_URL.replace(/\/+$/, ''),
      weatherTimeoutMs: e.WEATHER_TIMEOUT_MS,
      classifyUrl: e.CLASSIFY_URL?.replace(/\/+$/, ''),
      classifyTimeoutMs: e.CLASSIFY_TIMEOUT_MS,
      requireToken: e.PERCEPTION_REQUIRE_TOKEN,
      testRoutes: e.PERCEPTION_TEST_ROUTES,
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
