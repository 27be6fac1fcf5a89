import assert from 'node:assert/strict';
import { createMongoJobStore } from '../../store/mongo/job-store.js';
import { describeJobStoreContract, finishedJob, runningJob } from '../store/job-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The job store's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI),
// as test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol job store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeJobStoreContract(`MongoDB protocol at ${uri}`, async (retention) => {
    const db = freshDb();
    const store = await createMongoJobStore(db, retention);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  it('prunes a job with its revisions, and keeps one whose hint lags behind a revision inside the window', async () => {
    const DAY = 86_400_000;
    const T0 = Date.UTC(2026, 2, 1, 12);
    const iso = (ms: number) => new Date(ms).toISOString();
    const db = freshDb();
    try {
      const store = await createMongoJobStore(db, { jobRetentionMs: 30 * DAY });
      const old = runningJob();
      await store.claim(old);
      await store.finish(finishedJob(old, 'complete', T0 + 5000));
      const lagging = runningJob();
      await store.claim(lagging);
      await store.finish(finishedJob(lagging, 'complete', T0 + 20 * DAY));
      // The hint as a lost `$set` leaves it on FerretDB (concurrent transitions): at the claim, written at T0.
      await db
        .collection<{ _id: string }>('compute_jobs')
        .updateOne({ _id: lagging.job_id }, { $set: { rev: 0, updated_at: iso(T0) } });
      await store.claim(runningJob({ created_at: iso(T0 + 31 * DAY), updated_at: iso(T0 + 31 * DAY) })); // prunes
      assert.equal(await store.get(old.job_id), null);
      assert.equal(await db.collection('compute_job_revisions').countDocuments({ job_id: old.job_id }), 0);
      assert.equal((await store.get(lagging.job_id))?.status, 'complete');
    } finally {
      await db.dropDatabase();
    }
  });
});
