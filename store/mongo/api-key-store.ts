import { MongoServerError, type Db } from 'mongodb';
import {
  API_KEY_RECORD_VERSION,
  apiKeyRecordSchema,
  assertNewApiKey,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../api-key-format.js';
import type { ApiKeyRecord, ApiKeyStore, ApiKeyTier } from '../api-key-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/** A key as stored: its hash, never the key. */
interface ApiKeyDoc {
  id: string;
  /** The document layout's version, for a future migration to tell old documents from new ones. */
  record_version: number;
  key_hash: string;
  name: string;
  tier: ApiKeyTier;
  created_at: string;
}

/** A key's revocation; the unique index on `id` lets each key be revoked once, on every engine. */
interface RevocationDoc {
  id: string;
  revoked_at: string;
}

const DUPLICATE_KEY = 11000;
const NO_ID = { projection: { _id: 0 } } as const;

/**
 * MongoDB adapter of {@link ApiKeyStore} for MongoDB and FerretDB v1 alike (README.md beside this file).
 * Keys are verified by one lookup on the unique `key_hash` index. Revocation is an insert into
 * `api_key_revocations` against a unique `id` rather than an update of the key: FerretDB applies updates as an
 * unlocked read-modify-write, while a unique insert wins exactly once, so of two concurrent revokes exactly
 * one reports `true`. Verifying therefore reads two documents (the key, then its revocation), both by index.
 */
export async function createMongoApiKeyStore(
  db: Db,
  options: { random?: (size: number) => Buffer } = {},
): Promise<ApiKeyStore> {
  const keys = db.collection<ApiKeyDoc>('api_keys');
  const revocations = db.collection<RevocationDoc>('api_key_revocations');
  await ensureIndexes(keys, [
    { key: { key_hash: 1 }, name: 'key_hash_unique', unique: true },
    { key: { id: 1 }, name: 'id_unique', unique: true },
  ]);
  await ensureIndexes(revocations, [{ key: { id: 1 }, name: 'id_unique', unique: true }]);

  const record = (doc: ApiKeyDoc, revokedAt: string | null): ApiKeyRecord =>
    apiKeyRecordSchema.parse({
      id: doc.id,
      name: doc.name,
      tier: doc.tier,
      created_at: doc.created_at,
      revoked_at: revokedAt,
    });

  return {
    async create(name, tier, nowMs) {
      const cleanName = assertNewApiKey(name, tier);
      const { key, id, keyHash } = generateApiKey(options.random);
      const doc: ApiKeyDoc = {
        id,
        record_version: API_KEY_RECORD_VERSION,
        key_hash: keyHash,
        name: cleanName,
        tier,
        created_at: new Date(nowMs).toISOString(),
      };
      // insertOne adds `_id` to the object it is given: insert a copy, keep `doc` clean.
      await keys.insertOne({ ...doc });
      return { key, record: record(doc, null) };
    },
    async verify(key) {
      if (!isWellFormedApiKey(key)) return null;
      const doc = await keys.findOne({ key_hash: hashApiKey(key) }, NO_ID);
      if (!doc) return null;
      if (await revocations.findOne({ id: doc.id }, NO_ID)) return null;
      return record(doc, null);
    },
    async list() {
      const [docs, revoked] = await Promise.all([
        keys.find({}, NO_ID).toArray(),
        revocations.find({}, NO_ID).toArray(),
      ]);
      const revokedAt = new Map(revoked.map((r) => [r.id, r.revoked_at]));
      // Sorted here, not by the server: FerretDB sorts in memory anyway, and the set is an operator's keys.
      return docs
        .map((doc) => record(doc, revokedAt.get(doc.id) ?? null))
        .sort((a, b) => (a.created_at === b.created_at ? cmp(a.id, b.id) : cmp(a.created_at, b.created_at)));
    },
    async revoke(id, nowMs) {
      if (!(await keys.findOne({ id }, NO_ID))) return false;
      try {
        await revocations.insertOne({ id, revoked_at: new Date(nowMs).toISOString() });
        return true;
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
        throw error;
      }
    },
    async close() {
      // Nothing held beyond the connection, which belongs to the caller.
    },
  };
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
