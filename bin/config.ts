import { z } from 'zod';
import { DEFAULT_EPOCH_GENESIS_MS, parseEpochGenesis } from '../core/epoch.js';

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
  MONGODB_URI: z.string().optional(),
  MONGODB_DB: z.string().min(1).default('geofabric'),
  NODE_SECRET_KEY: z.string().optional(),
  SEAL_GRACE_SECONDS: z.coerce.number().int().min(31).max(3600).default(60),
  SEAL_CHECK_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  CENTRAL_STORE_URL: z.url().optional(),
  SYNC_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
});

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  requireDelegation: boolean;
  epochGenesisMs: number;
  apiKeys: string[];
  bodyLimitBytes: number;
  mongo: { uri: string; db: string } | null;
  nodeSecretKey: string | undefined;
  /** Seal an epoch this long after it closes; longer than the sync interval so late pushes land first. */
  sealGraceMs: number;
  sealCheckMs: number;
  /** When set, this node pushes its records and seals there (a worker's local store → the central store). */
  centralStoreUrl: string | undefined;
  syncIntervalMs: number;
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
    mongo: e.MONGODB_URI ? { uri: e.MONGODB_URI, db: e.MONGODB_DB } : null,
    nodeSecretKey: e.NODE_SECRET_KEY,
    sealGraceMs: e.SEAL_GRACE_SECONDS * 1000,
    sealCheckMs: e.SEAL_CHECK_SECONDS * 1000,
    centralStoreUrl: e.CENTRAL_STORE_URL,
    syncIntervalMs: e.SYNC_INTERVAL_SECONDS * 1000,
  };
}
