/**
 * Jobs are kept JOB_RETENTION_DAYS after their last write, then pruned by the job store (docs/operations.md
 * "Retention"): GET /v1/compute/:id and its receipt answer the documented 404 job_not_found for a pruned job, and
 * every job written inside the window answers as before.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { JobRecord } from '../../core/job-record.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { startGateway } from '../helpers/gateway.js';
import { finishedJob, runningJob } from '../store/job-store.contract.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 2, 1, 12);
const iso = (ms: number) => new Date(ms).toISOString();

/** A job as the compute route stores it: a UUID id and its signed request, at `atMs`. */
const jobAt = (atMs: number): JobRecord =>
  runningJob({
    job_id: randomUUID(),
    created_at: iso(atMs),
    updated_at: iso(atMs),
    request: { body: { requester_pk: 'a'.repeat(64), steps: [] }, delegation_chain: null },
  });

describe('job retention over HTTP', () => {
  it('answers 404 job_not_found for a job pruned after the window, and 200 for jobs written inside it', async () => {
    const db = openSqlite(':memory:');
    const jobs = createSqliteJobStore(db, { jobRetentionMs: 30 * DAY });
    const gw = await startGateway({ jobs, clock: () => T0 + 31 * DAY });
    try {
      const old = jobAt(T0);
      await jobs.claim(old);
      await jobs.finish(finishedJob(old, 'complete', T0 + 5000));
      const recent = jobAt(T0 + 20 * DAY);
      await jobs.claim(recent);
      await jobs.finish(finishedJob(recent, 'complete', T0 + 20 * DAY + 5000));
      assert.equal((await gw.get(`/v1/compute/${old.job_id}`)).status, 200, 'kept until a claim after the window');
      assert.equal((await gw.get(`/v1/compute/${old.job_id}/receipt`)).status, 200);

      await jobs.claim(jobAt(T0 + 31 * DAY)); // the next job's claim prunes

      for (const path of [`/v1/compute/${old.job_id}`, `/v1/compute/${old.job_id}/receipt`]) {
        const res = await gw.get(path);
        assert.equal(res.status, 404, path);
        const body = res.body as { error: string; detail: string };
        assert.equal(body.error, 'job_not_found');
        assert.match(body.detail, /JOB_RETENTION_DAYS/, 'the detail says a job may have been pruned');
      }
      const kept = await gw.get(`/v1/compute/${recent.job_id}`);
      assert.equal(kept.status, 200);
      assert.equal((kept.body as { job_id: string }).job_id, recent.job_id);
      assert.equal((await gw.get(`/v1/compute/${recent.job_id}/receipt`)).status, 200);
    } finally {
      await gw.close();
      db.close();
    }
  });
});
