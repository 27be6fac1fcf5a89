import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { createMongoProofStore } from '../../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../../store/mongo/rate-limit-store.js';
import { describeProofStoreContract } from '../store/proof-store.contract.js';
import { describeRateLimitStoreContract } from '../store/rate-limit-store.contract.js';
import { requireEnv } from './live-env.js';

// MONGODB_URI points at FerretDB (scripts/engines.sh) or any MongoDB. Each test gets its own database, dropped
// afterwards, so a shared server is left as it was found.
describe('MongoDB-protocol server (live)', () => {
  const uri = requireEnv('MONGODB_URI');
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });

  before(async () => {
    await client.connect();
  });
  after(async () => {
    await client.close();
  });

  it('answers ping and reports its version', async () => {
    assert.deepEqual(await client.db('admin').command({ ping: 1 }), { ok: 1 });
    const info = await client.db('admin').command({ buildInfo: 1 });
    assert.match(String(info.version), /^\d+\.\d+/);
  });

  describeRateLimitStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = client.db(`geofabric_test_${randomUUID().replaceAll('-', '')}`);
    const store = await createMongoRateLimitStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  describeProofStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = client.db(`geofabric_test_${randomUUID().replaceAll('-', '')}`);
    const store = await createMongoProofStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
