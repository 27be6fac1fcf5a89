import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ServiceError } from '../../core/errors.js';
import type { ComputeResponse, JobRecord } from '../../core/job-record.js';
import type { JobRetention, JobStore } from '../../store/job-store.js';

/** Opens a fresh, empty store (with `retention` when given); `cleanup` runs after each test (close the database, drop it …). */
export type JobStoreFactory = (retention?: JobRetention) => Promise<{ store: JobStore; cleanup?: () => Promise<void> }>;

const T0 = Date.UTC(2026, 2, 1, 12);
const iso = (ms: number): string => new Date(ms).toISOString();
const PK = 'a'.repeat(64);

/** A freshly claimed job, as the compute route builds it. */
export const runningJob = (overrides: Partial<JobRecord> = {}): JobRecord => ({
  version: 1,
  job_id: `job-${randomUUID()}`,
  status: 'running',
  requester_pk: PK,
  h3_cell: '861e8050fffffff',
  epoch: 1416,
  step_types: ['inference', 'tile_render'],
  request_hash: 'b'.repeat(64),
  created_at: iso(T0),
  updated_at: iso(T0),
  response: null,
  ...overrides,
});

/** The job finished: a full docs/protocol.md §2.3 answer, with outputs whose keys and values a store must keep exactly. */
export function finishedJob(job: JobRecord, status: 'complete' | 'failed', at = T0 + 5000): JobRecord {
  const response: ComputeResponse = {
    job_id: job.job_id,
    status,
    worker_pk: 'c'.repeat(64),
    h3_cell: job.h3_cell,
    epoch: job.epoch,
    steps: [
      {
        id: 'describe',
        type: 'inference',
        status: 'complete',
        output: {
          text: 'Villa Borghese, Villa Ada, Villa Doria Pamphili — «parchi» 🌳',
          'dotted.key': 1,
          $dollar: { nested: [1, 2.5, -3e-7, null, true, 'x'] },
          empty: {},
        },
        latency_ms: 812,
        worker_pk: 'c'.repeat(64),
        cost: 0.0125,
        record_id: `inference:${job.job_id}:describe`,
      },
      status === 'complete'
        ? {
            id: 'map',
            type: 'tile_render',
            status: 'complete',
            output: { tile_url: '/v1/tiles/15/17505/12176.png' },
            latency_ms: 40,
            worker_pk: null,
            cost: 0,
            record_id: `tile_render:${job.job_id}:map`,
          }
        : {
            id: 'map',
            type: 'tile_render',
            status: 'failed',
            output: {},
            latency_ms: 40,
            worker_pk: null,
            cost: 0,
            record_id: null,
            error: { code: 'upstream_unavailable', detail: 'tile server answered 503' },
          },
    ],
    settlement: { stellar_tx: null, total_credits: 0.0125, breakdown: { describe: 0.0125, map: 0 }, proof_credits: 0 },
    proof:
      status === 'complete'
        ? { job_hash: 'd'.repeat(64), verify_url: `/v1/proof/${job.job_id}`, record_id: `job:${job.job_id}` }
        : null,
    ...(status === 'failed' ? { error: { code: 'step_failed', detail: 'step map failed', step_id: 'map' } } : {}),
  };
  return { ...job, status, updated_at: iso(at), response };
}

const rejectsWith = (promise: Promise<unknown>, code: string) =>
  assert.rejects(promise, (error: unknown) => error instanceof ServiceError && error.code === code);

/** The behaviour every JobStore adapter must show; the compute route and the job workflow rely on nothing else. */
export function describeJobStoreContract(name: string, factory: JobStoreFactory): void {
  describe(`JobStore contract: ${name}`, () => {
    let store: JobStore;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    describe('claim', () => {
      it('creates a running job that reads back deep-equal', async () => {
        const job = runningJob();
        assert.deepEqual(await store.claim(job), { created: true, job });
        assert.deepEqual(await store.get(job.job_id), job);
      });

      it('returns the stored job, not the new one, when the id exists (created: false)', async () => {
        const job = runningJob();
        await store.claim(job);
        const replay = { ...job, created_at: iso(T0 + 60_000), updated_at: iso(T0 + 60_000) };
        assert.deepEqual(await store.claim(replay), { created: false, job });
        assert.deepEqual(await store.get(job.job_id), job);
      });

      it('returns a finished job as it is stored when its request is replayed', async () => {
        const job = runningJob();
        await store.claim(job);
        const done = await store.finish(finishedJob(job, 'complete'));
        assert.deepEqual(await store.claim(job), { created: false, job: done });
      });

      it('lets exactly one of ten concurrent claims of one id create it; all see that one', async () => {
        const base = runningJob();
        const claims = Array.from({ length: 10 }, (_, i) =>
          store.claim({ ...base, created_at: iso(T0 + i), updated_at: iso(T0 + i) }),
        );
        const results = await Promise.all(claims);
        const winners = results.filter((r) => r.created);
        assert.equal(winners.length, 1);
        const stored = await store.get(base.job_id);
        assert.deepEqual(stored, winners[0]?.job);
        for (const r of results) assert.deepEqual(r.job, stored);
      });

      it('refuses a record that is not running, or not a valid job record, storing nothing', async () => {
        const job = runningJob();
        await assert.rejects(store.claim(finishedJob(job, 'complete')), RangeError);
        await assert.rejects(store.claim({ ...job, version: 2 } as unknown as JobRecord), RangeError);
        await assert.rejects(store.claim({ ...job, created_at: 'yesterday' }), RangeError);
        await assert.rejects(store.claim({ ...job, step_types: ['mining'] } as unknown as JobRecord), RangeError);
        assert.equal(await store.get(job.job_id), null);
      });
    });

    describe('finish', () => {
      it('stores the final state, which reads back deep-equal (complete and failed)', async () => {
        for (const status of ['complete', 'failed'] as const) {
          const job = runningJob();
          await store.claim(job);
          const done = finishedJob(job, status);
          assert.deepEqual(await store.finish(done), done);
          assert.deepEqual(await store.get(job.job_id), done);
        }
      });

      it('finishes once: a second finish returns the first and changes nothing', async () => {
        const job = runningJob();
        await store.claim(job);
        const first = finishedJob(job, 'failed');
        await store.finish(first);
        assert.deepEqual(await store.finish(finishedJob(job, 'complete', T0 + 9000)), first);
        assert.deepEqual(await store.get(job.job_id), first);
      });

      it('stores exactly one of ten concurrent finishes, and every caller gets that one', async () => {
        const job = runningJob();
        await store.claim(job);
        const finishes = Array.from({ length: 10 }, (_, i) =>
          store.finish(finishedJob(job, i % 2 === 0 ? 'complete' : 'failed', T0 + 1000 + i)),
        );
        const results = await Promise.all(finishes);
        const stored = await store.get(job.job_id);
        assert.notEqual(stored?.status, 'running');
        for (const r of results) assert.deepEqual(r, stored);
      });

      it('throws job_not_found for an unknown id', async () => {
        await rejectsWith(store.finish(finishedJob(runningJob(), 'complete')), 'job_not_found');
      });

      it('refuses a running record or a finished one without its response', async () => {
        const job = runningJob();
        await store.claim(job);
        await assert.rejects(store.finish(job), RangeError);
        await assert.rejects(store.finish({ ...job, status: 'complete' }), RangeError);
        assert.deepEqual(await store.get(job.job_id), job);
      });
    });

    describe('retry', () => {
      it('moves a failed job back to running with the given record', async () => {
        const job = runningJob();
        await store.claim(job);
        await store.finish(finishedJob(job, 'failed'));
        const again = { ...job, updated_at: iso(T0 + 60_000) };
        assert.deepEqual(await store.retry(again), { restarted: true, job: again });
        assert.deepEqual(await store.get(job.job_id), again);
        // The restarted job runs and finishes again, once.
        const done = finishedJob(again, 'complete', T0 + 70_000);
        assert.deepEqual(await store.finish(done), done);
        assert.deepEqual(await store.get(job.job_id), done);
      });

      it('returns a running or complete job unchanged (restarted: false)', async () => {
        const running = runningJob();
        await store.claim(running);
        const later = { ...running, updated_at: iso(T0 + 60_000) };
        assert.deepEqual(await store.retry(later), { restarted: false, job: running });
        const done = await store.finish(finishedJob(running, 'complete'));
        assert.deepEqual(await store.retry(later), { restarted: false, job: done });
        assert.deepEqual(await store.get(running.job_id), done);
      });

      it('lets exactly one of ten concurrent retries restart the job; all see its record', async () => {
        const job = runningJob();
        await store.claim(job);
        await store.finish(finishedJob(job, 'failed'));
        const retries = Array.from({ length: 10 }, (_, i) => store.retry({ ...job, updated_at: iso(T0 + 60_000 + i) }));
        const results = await Promise.all(retries);
        assert.equal(results.filter((r) => r?.restarted).length, 1);
        const stored = await store.get(job.job_id);
        assert.equal(stored?.status, 'running');
        for (const r of results) assert.deepEqual(r?.job, stored);
      });

      it('answers null for an unknown id and refuses a record that is not running', async () => {
        assert.equal(await store.retry(runningJob()), null);
        const job = runningJob();
        await store.claim(job);
        await store.finish(finishedJob(job, 'failed'));
        await assert.rejects(store.retry(finishedJob(job, 'failed', T0 + 9000)), RangeError);
      });
    });

    describe('get and recent', () => {
      it('answers null for an unknown id', async () => {
        assert.equal(await store.get('job-unknown'), null);
      });

      it('lists newest first (created_at, then job_id descending), current state, at most `limit`', async () => {
        const jobs = [
          runningJob({ job_id: 'job-b', created_at: iso(T0 + 2000), updated_at: iso(T0 + 2000) }),
          runningJob({ job_id: 'job-a', created_at: iso(T0 + 1000), updated_at: iso(T0 + 1000) }),
          runningJob({ job_id: 'job-d', created_at: iso(T0 + 2000), updated_at: iso(T0 + 2000) }),
          runningJob({ job_id: 'job-c', created_at: iso(T0 + 3000), updated_at: iso(T0 + 3000) }),
        ];
        for (const job of jobs) await store.claim(job);
        const doneB = await store.finish(finishedJob(jobs[0]!, 'complete', T0 + 9000));
        const all = await store.recent(10);
        assert.deepEqual(
          all.map((j) => j.job_id),
          ['job-c', 'job-d', 'job-b', 'job-a'],
        );
        assert.deepEqual(all[2], doneB);
        for (const job of all) assert.deepEqual(await store.get(job.job_id), job);
        assert.deepEqual(await store.recent(2), all.slice(0, 2));
        assert.deepEqual(await store.recent(1), all.slice(0, 1));
      });

      it("lists one requester's jobs only when asked for them, newest first, current state", async () => {
        const [alice, bob] = ['a'.repeat(64), 'b'.repeat(64)];
        const jobs = [
          runningJob({ job_id: 'job-a1', requester_pk: alice, created_at: iso(T0 + 1000), updated_at: iso(T0 + 1000) }),
          runningJob({ job_id: 'job-b1', requester_pk: bob, created_at: iso(T0 + 2000), updated_at: iso(T0 + 2000) }),
          runningJob({ job_id: 'job-a2', requester_pk: alice, created_at: iso(T0 + 3000), updated_at: iso(T0 + 3000) }),
        ];
        for (const job of jobs) await store.claim(job);
        const done = await store.finish(finishedJob(jobs[0]!, 'complete', T0 + 9000));
        const mine = await store.recent(10, { requesterPk: alice });
        assert.deepEqual(
          mine.map((j) => j.job_id),
          ['job-a2', 'job-a1'],
        );
        assert.deepEqual(mine[1], done);
        assert.deepEqual(
          (await store.recent(10, { requesterPk: bob })).map((j) => j.job_id),
          ['job-b1'],
        );
        assert.deepEqual(await store.recent(10, { requesterPk: 'c'.repeat(64) }), []);
        assert.equal((await store.recent(1, { requesterPk: alice }))[0]?.job_id, 'job-a2');
        assert.equal((await store.recent(10)).length, 3);
      });

      it('pages by keyset: `before` the last job of a page gives the next, down to the oldest, ties included', async () => {
        const [alice, bob] = ['a'.repeat(64), 'b'.repeat(64)];
        // 250 jobs over 50 distinct times (5 share each created_at: the job_id breaks the tie), two requesters.
        for (let i = 0; i < 250; i++) {
          const at = iso(T0 + Math.floor(i / 5) * 1000);
          await store.claim(
            runningJob({
              job_id: `job-${String(i).padStart(3, '0')}`,
              requester_pk: i % 2 === 0 ? alice : bob,
              created_at: at,
              updated_at: at,
            }),
          );
        }
        const expected = Array.from({ length: 250 }, (_, i) => `job-${String(249 - i).padStart(3, '0')}`);
        const walk = async (filter: { requesterPk?: string }, limit: number) => {
          const seen: string[] = [];
          for (let before: { createdAt: string; jobId: string } | undefined; ;) {
            const page = await store.recent(limit, before === undefined ? filter : { ...filter, before });
            seen.push(...page.map((j) => j.job_id));
            const last = page[page.length - 1];
            if (page.length < limit || last === undefined) return seen;
            before = { createdAt: last.created_at, jobId: last.job_id };
          }
        };
        assert.deepEqual(await walk({}, 7), expected);
        assert.deepEqual(
          await walk({ requesterPk: bob }, 9),
          expected.filter((id) => Number(id.slice(4)) % 2 === 1),
        );
        // A deep page by itself: the 26 jobs after job-100 (created_at T0 + 20 s, shared with job-101..104).
        const deep = await store.recent(26, { before: { createdAt: iso(T0 + 20_000), jobId: 'job-100' } });
        assert.deepEqual(
          deep.map((j) => j.job_id),
          expected.slice(150, 176),
        );
        assert.deepEqual(await store.recent(5, { before: { createdAt: iso(T0), jobId: 'job-000' } }), []);
      });

      it('clamps limit to 1..100 and refuses a non-integer limit', async () => {
        assert.deepEqual(await store.recent(5), []);
        for (let i = 0; i < 102; i++) {
          await store.claim(runningJob({ job_id: `job-${String(i).padStart(3, '0')}` }));
        }
        assert.equal((await store.recent(1000)).length, 100);
        assert.equal((await store.recent(0)).length, 1);
        assert.equal((await store.recent(-5)).length, 1);
        assert.equal((await store.recent(100))[0]?.job_id, 'job-101');
        for (const limit of [1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          await assert.rejects(store.recent(limit), RangeError);
        }
      });
    });

    describe('retention', () => {
      const DAY = 86_400_000;
      let now = T0;
      let kept: JobStore;
      let keptCleanup: (() => Promise<void>) | undefined;
      beforeEach(async () => {
        now = T0;
        // Now is the claimed job's updated_at (the clock that stamps jobs), so `now` only names it.
        ({ store: kept, cleanup: keptCleanup } = await factory({ jobRetentionMs: 30 * DAY }));
      });
      afterEach(async () => {
        await kept.close();
        await keptCleanup?.();
      });

      it('prunes jobs last written before the window at a later claim, and keeps every job written inside it', async () => {
        const old = runningJob();
        await kept.claim(old);
        await kept.finish(finishedJob(old, 'complete', T0 + 5000));
        // Claimed with the old one but finished six days later: its last write is inside the window.
        const long = runningJob();
        await kept.claim(long);
        await kept.finish(finishedJob(long, 'failed', T0 + 6 * DAY));
        // Claimed later and still running: never finished, last written inside the window.
        now = T0 + 25 * DAY;
        const running = runningJob({ created_at: iso(now), updated_at: iso(now) });
        await kept.claim(running);
        assert.equal((await kept.get(old.job_id))?.status, 'complete', 'nothing is pruned inside the window');

        now = T0 + 30 * DAY + 10_000;
        const fresh = runningJob({ created_at: iso(now), updated_at: iso(now) });
        await kept.claim(fresh); // prunes
        assert.equal(await kept.get(old.job_id), null, 'a job last written before the window is pruned');
        assert.equal((await kept.get(long.job_id))?.status, 'failed');
        assert.equal((await kept.get(running.job_id))?.status, 'running');
        assert.equal((await kept.get(fresh.job_id))?.status, 'running');
        assert.deepEqual(
          (await kept.recent(10)).map((j) => j.job_id).sort(),
          [long, running, fresh].map((j) => j.job_id).sort(),
        );
        // A pruned job is unknown to every operation, as one never claimed.
        assert.equal(await kept.retry(old), null);
        await rejectsWith(kept.finish(finishedJob(old, 'complete')), 'job_not_found');
      });

      it('keeps a job retried inside the window though it was first written before it', async () => {
        const job = runningJob();
        await kept.claim(job);
        await kept.finish(finishedJob(job, 'failed', T0 + 5000));
        now = T0 + 20 * DAY;
        const again = { ...job, created_at: iso(now), updated_at: iso(now) };
        assert.equal((await kept.retry(again))?.restarted, true);
        await kept.finish(finishedJob(again, 'complete', now + 5000));
        now = T0 + 31 * DAY;
        await kept.claim(runningJob({ created_at: iso(now), updated_at: iso(now) })); // prunes
        assert.equal((await kept.get(job.job_id))?.status, 'complete');
      });
    });
  });
}
