import { parseArgs } from 'node:util';
import type { ApiKeyRecord } from '../store/api-key-store.js';
import { API_KEY_TIERS, isApiKeyTier } from '../store/api-key-format.js';
import { loadConfig } from './config.js';
import { openStores, type Stores } from './stores.js';

/**
 * `geofabric apikey create | list | revoke`: manages the API keys of the OpenAI-compatible endpoints in the
 * configured store (DATA_DIR's SQLite, or MONGODB_URI), the one a running gateway reads, so a created key
 * works and a revoked key is refused on the next request without a restart. Exit codes: 0 done, 1 the
 * key to revoke was not live, 2 usage or configuration errors (thrown to bin/geofabric.ts).
 */

export const APIKEY_USAGE = `apikey create --name NAME [--tier free|pro|enterprise] [--json]
                                 new API key (default tier free); printed once, only its hash is kept
  apikey list [--json]           every key: id, tier, name, created, revoked
  apikey revoke ID [--json]      refuses the key from now on; exit 1 if no live key has that id`;

const out = (text: string) => process.stdout.write(`${text}\n`);
const json = (value: unknown) => out(JSON.stringify(value, null, 2));

class ApiKeyUsageError extends Error {
  constructor(detail: string) {
    super(`usage: ${detail}\n\n  ${APIKEY_USAGE}`);
  }
}

async function withStores<T>(run: (stores: Stores) => Promise<T>): Promise<T> {
  const stores = await openStores(loadConfig());
  try {
    return await run(stores);
  } finally {
    await stores.close();
  }
}

export async function apikeyCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create':
      return create(rest);
    case 'list':
      return list(rest);
    case 'revoke':
      return revoke(rest);
    default:
      throw new ApiKeyUsageError(sub === undefined ? 'apikey needs a subcommand' : `unknown subcommand "${sub}"`);
  }
}

const OPTIONS = {
  name: { type: 'string' },
  tier: { type: 'string' },
  json: { type: 'boolean', default: false },
} as const;

/** Every subcommand's flags; one a subcommand does not take is a usage error, not silently ignored. */
function parse(argv: string[], allowed: readonly (keyof typeof OPTIONS)[], usage: string) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  } catch (error) {
    throw new ApiKeyUsageError(`${(error as Error).message}: ${usage}`);
  }
  const stray = Object.keys(parsed.values).find((k) => k !== 'json' && !allowed.includes(k as keyof typeof OPTIONS));
  if (stray !== undefined) throw new ApiKeyUsageError(`--${stray} is not an option here: ${usage}`);
  return parsed;
}

async function create(argv: string[]): Promise<number> {
  const usage = 'apikey create --name NAME [--tier free|pro|enterprise] [--json]';
  const { values, positionals } = parse(argv, ['name', 'tier'], usage);
  const { name, tier = 'free' } = values;
  if (positionals.length > 0 || !name?.trim()) throw new ApiKeyUsageError(usage);
  if (!isApiKeyTier(tier)) throw new ApiKeyUsageError(`--tier is one of ${API_KEY_TIERS.join(', ')}`);
  const { key, record } = await withStores((stores) => stores.apiKeys.create(name, tier, Date.now()));
  if (values.json) {
    json({ key, ...record });
  } else {
    out(`key:     ${key}`);
    out(`id:      ${record.id}`);
    out(`tier:    ${record.tier}`);
    out(`name:    ${record.name}`);
    out('');
    out('Store the key now: it is not shown again (only its SHA-256 is kept). Clients send it as');
    out(`  Authorization: Bearer ${key.slice(0, 7)}…`);
  }
  return 0;
}

async function list(argv: string[]): Promise<number> {
  const usage = 'apikey list [--json]';
  const { values, positionals } = parse(argv, [], usage);
  if (positionals.length > 0) throw new ApiKeyUsageError(usage);
  const records = await withStores((stores) => stores.apiKeys.list());
  if (values.json) {
    json(records);
    return 0;
  }
  if (records.length === 0) {
    out('no API keys (create one with: geofabric apikey create --name NAME)');
    return 0;
  }
  const rows = records.map((r: ApiKeyRecord) => [r.id, r.tier, r.created_at, r.revoked_at ?? '-', r.name]);
  const header = ['ID', 'TIER', 'CREATED', 'REVOKED', 'NAME'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  for (const row of [header, ...rows]) {
    out(
      row
        .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    );
  }
  return 0;
}

async function revoke(argv: string[]): Promise<number> {
  const usage = 'apikey revoke ID [--json]';
  const { values, positionals } = parse(argv, [], usage);
  const [id] = positionals;
  if (id === undefined || positionals.length > 1) throw new ApiKeyUsageError(usage);
  const revoked = await withStores((stores) => stores.apiKeys.revoke(id, Date.now()));
  if (values.json) json({ id, revoked });
  else out(revoked ? `revoked ${id}` : `no live API key with id ${id} (unknown or already revoked)`);
  return revoked ? 0 : 1;
}
