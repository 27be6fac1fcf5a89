import assert from 'node:assert/strict';
import { createMongoOpenEoJobStore } from '../../store/mongo/openeo-job-store.js';
import { describeOpenEoJobStoreContract, openEoJob } from '../store/openeo-job-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The openEO job store's contract on the MongoDB-protocol server (FerretDB in CI): a database per test, dropped after.
describe('MongoDB-protocol openEO job store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeOpenEoJobStoreContract(`MongoDB protocol at ${uri}`, async (retention) => {
    const db = freshDb();
    const store = await createMongoOpenEoJobStore(db, retention);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  it('prunes a job stored before the retention fields by the status and time in its record', async () => {
    const DAY = 86_400_000;
    const T0 = Date.UTC(2026, 2, 1, 12);
    const db = freshDb();
    try {
      const old = openEoJob('j-old', 'key_a', new Date(T0).toISOString());
      // A document as the store wrote it before `status` and `updated_at` were kept beside the record.
      await db
        .collection<{ _id: string; owner: string; created_at: string; version: number; json: string }>('openeo_jobs')
        .insertOne({ _id: old.id, owner: old.owner, created_at: old.created, version: 1, json: JSON.stringify(old) });
      const store = await createMongoOpenEoJobStore(db, { jobRetentionMs: 30 * DAY });
      assert.equal((await store.get(old.id))?.id, old.id);
      await store.create(openEoJob('j-new', 'key_a', new Date(T0 + 31 * DAY).toISOString())); // prunes
      assert.equal(await store.get(old.id), null);
    } finally {
      await db.dropDatabase();
    }
  });
});
