import assert from 'node:assert/strict';
import { createMongoProofStore } from '../../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../../store/mongo/rate-limit-store.js';
import { describeProofStoreContract } from '../store/proof-store.contract.js';
import { describeRateLimitStoreContract } from '../store/rate-limit-store.contract.js';
import { useLiveMongo } from './live-env.js';

// MONGODB_URI points at FerretDB (scripts/engines.sh) or any MongoDB. Each test gets its own database, dropped
// afterwards, so a shared server is left as it was found.
describe('MongoDB-protocol server (live)', () => {
  const { uri, client, freshDb } = useLiveMongo();

  it('answers ping and reports its version', async () => {
    assert.deepEqual(await client.db('admin').command({ ping: 1 }), { ok: 1 });
    const info = await client.db('admin').command({ buildInfo: 1 });
    assert.match(String(info.version), /^\d+\.\d+/);
  });

  describeRateLimitStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoRateLimitStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  describeProofStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoProofStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
