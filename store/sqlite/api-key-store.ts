import {
  API_KEY_RECORD_VERSION,
  apiKeyRecordSchema,
  assertNewApiKey,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../api-key-format.js';
import type { ApiKeyRecord, ApiKeyStore, ApiKeyTier } from '../api-key-store.js';
import type { SqliteDatabase } from './open-database.js';

type Row = Omit<ApiKeyRecord, 'tier'> & { tier: string };

const COLUMNS = 'id, name, tier, created_at, revoked_at';

/**
 * SQLite adapter of {@link ApiKeyStore} (table `api_keys`, store/sqlite/api-key-schema.ts). Each call is one
 * statement, so it is atomic across processes sharing the file: a key revoked by `geofabric apikey revoke`
 * is refused by a running gateway's next request.
 */
export function createSqliteApiKeyStore(
  db: SqliteDatabase,
  options: { random?: (size: number) => Buffer } = {},
): ApiKeyStore {
  const insert = db.prepare<[string, number, string, string, string, string]>(
    'INSERT INTO api_keys (id, record_version, key_hash, name, tier, created_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const byHash = db.prepare<[string], Row>(`SELECT ${COLUMNS} FROM api_keys WHERE key_hash = ?`);
  const all = db.prepare<[], Row>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, id`);
  const revoke = db.prepare<[string, string]>('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL');

  const verifyNow = (key: string): ApiKeyRecord | null => {
    if (!isWellFormedApiKey(key)) return null;
    const row = byHash.get(hashApiKey(key));
    if (!row || row.revoked_at !== null) return null;
    return apiKeyRecordSchema.parse(row);
  };

  return {
    async create(name: string, tier: ApiKeyTier, nowMs: number) {
      const cleanName = assertNewApiKey(name, tier);
      const { key, id, keyHash } = generateApiKey(options.random);
      const record: ApiKeyRecord = {
        id,
        name: cleanName,
        tier,
        created_at: new Date(nowMs).toISOString(),
        revoked_at: null,
      };
      insert.run(id, API_KEY_RECORD_VERSION, keyHash, record.name, tier, record.created_at);
      return { key, record };
    },
    async verify(key) {
      return verifyNow(key);
    },
    verifyNow,
    async list() {
      return all.all().map((row) => apiKeyRecordSchema.parse(row));
    },
    async revoke(id, nowMs) {
      return revoke.run(new Date(nowMs).toISOString(), id).changes === 1;
    },
    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}
