import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { describeJobStoreContract, finishedJob, runningJob } from './job-store.contract.js';

describeJobStoreContract('SQLite (in memory)', async (retention) => {
  const db = openSqlite(':memory:');
  return { store: createSqliteJobStore(db, retention), cleanup: async () => void db.close() };
});

describe('SQLite job store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-jobs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('claims and finishes a job once across two connections, as two processes would', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteJobStore(a), createSqliteJobStore(b)];
      const job = runningJob();
      assert.equal((await storeA.claim(job)).created, true);
      assert.deepEqual(await storeB.claim(job), { created: false, job });
      const done = await storeB.finish(finishedJob(job, 'failed'));
      assert.deepEqual(await storeA.finish(finishedJob(job, 'complete')), done);
      assert.equal((await storeA.retry(job))?.restarted, true);
      assert.equal((await storeB.retry(job))?.restarted, false);
    } finally {
      a.close();
      b.close();
    }
  });

  it('refuses to read back a row that is not a valid job record', async () => {
    const db = openSqlite(':memory:');
    try {
      const store = createSqliteJobStore(db);
      const job = runningJob();
      await store.claim(job);
      db.prepare('UPDATE compute_jobs SET json = ? WHERE job_id = ?').run(
        JSON.stringify({ ...job, version: 9 }),
        job.job_id,
      );
      await assert.rejects(store.get(job.job_id), /not a valid job record/);
    } finally {
      db.close();
    }
  });
});
