import assert from 'node:assert/strict';
import { ServiceError } from '../../core/errors.js';
import { generateKeyPair } from '../../core/identity.js';
import type { OutcomeRetention, WorkerRegistration, WorkerRegistry } from '../../store/worker-registry.js';

/** Opens a fresh, empty registry; `cleanup` runs after each test (close the database, drop it …). */
export type WorkerRegistryFactory = (
  retention?: OutcomeRetention,
) => Promise<{ store: WorkerRegistry; cleanup?: () => Promise<void> }>;

const T0 = Date.UTC(2026, 0, 1, 12);

export const registration = (overrides: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
  pk: generateKeyPair().publicKey,
  h3_cell: '861e8050fffffff',
  models: ['tinyllama'],
  tools: ['web-search'],
  hardware: { platform: 'linux-x64', gpu: 'NVIDIA GeForce RTX 3060', vram_gb: 12, ram_gb: 32, cores: 8 },
  hardware_tier: 2,
  relay: false,
  version: '0.1.0',
  ...overrides,
});

const rejectsWith = (promise: Promise<unknown>, code: string) =>
  assert.rejects(promise, (error: unknown) => error instanceof ServiceError && error.code === code);

/** The behaviour every WorkerRegistry adapter must show; the routes and the swarm rely on nothing else. */
export function describeWorkerRegistryContract(name: string, factory: WorkerRegistryFactory): void {
  describe(`WorkerRegistry contract: ${name}`, () => {
    let store: WorkerRegistry;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('registers a new worker as a seedling, seen now, with no heartbeat yet', async () => {
      const r = registration();
      const record = await store.register(r, T0);
      assert.deepEqual(record, {
        ...r,
        trust_tier: 'seedling',
        jobs_completed: 0,
        jobs_failed: 0,
        registered_at: new Date(T0).toISOString(),
        last_seen_ms: T0,
        heartbeat_seq: 0,
        left_at_ms: null,
      });
      assert.deepEqual(await store.get(r.pk), record);
    });

    it('stores only the declared fields', async () => {
      const r = registration();
      const extra = { ...r, secret: 'x', hardware: { ...r.hardware, serial: 'ABC' } } as WorkerRegistration;
      const record = await store.register(extra, T0);
      assert.deepEqual(Object.keys(record.hardware).sort(), ['cores', 'gpu', 'platform', 'ram_gb', 'vram_gb']);
      assert.equal((record as unknown as Record<string, unknown>).secret, undefined);
    });

    it('answers null for an unknown worker and lists every worker by pk', async () => {
      assert.equal(await store.get(generateKeyPair().publicKey), null);
      const [a, b, c] = [registration(), registration({ relay: true }), registration()];
      for (const r of [a, b, c]) await store.register(r, T0);
      const listed = await store.list();
      assert.deepEqual(
        listed.map((w) => w.pk),
        [a.pk, b.pk, c.pk].sort(),
      );
      assert.equal(listed.find((w) => w.pk === b.pk)?.relay, true);
    });

    it('replaces the declaration on re-registration, keeping trust, counters, heartbeat seq and registered_at', async () => {
      const r = registration();
      await store.register(r, T0);
      await store.heartbeat(r.pk, 7, T0 + 1000);
      for (let i = 0; i < 10; i++) await store.recordOutcome(r.pk, 'completed', `job-${i}`);
      await store.recordOutcome(r.pk, 'failed', 'job-10');
      const moved = {
        ...r,
        h3_cell: '861f1d48fffffff',
        models: ['phi-3-mini', 'tinyllama'],
        tools: [],
        hardware_tier: 1 as const,
        version: '0.2.0',
      };
      const record = await store.register(moved, T0 + 5000);
      assert.equal(record.h3_cell, '861f1d48fffffff');
      assert.deepEqual(record.models, ['phi-3-mini', 'tinyllama']);
      assert.deepEqual(record.tools, []);
      assert.equal(record.version, '0.2.0');
      assert.equal(record.trust_tier, 'explorer');
      assert.equal(record.jobs_completed, 10);
      assert.equal(record.jobs_failed, 1);
      assert.equal(record.heartbeat_seq, 7);
      assert.equal(record.registered_at, new Date(T0).toISOString());
      assert.equal(record.last_seen_ms, T0 + 5000);
      await rejectsWith(store.heartbeat(r.pk, 7, T0 + 6000), 'stale_request');
    });

    it('refuses a declaration older than the stored one (a replayed registration) and changes nothing', async () => {
      const r = registration({ version: '0.1.0', declared_at_ms: T0 });
      await store.register(r, T0);
      const newer = { ...r, version: '0.2.0', h3_cell: '861f1d48fffffff', declared_at_ms: T0 + 60_000 };
      await store.register(newer, T0 + 60_000);
      // The captured first registration, sent again within its 5 minutes.
      await rejectsWith(store.register(r, T0 + 90_000), 'stale_request');
      const kept = await store.get(r.pk);
      assert.equal(kept?.version, '0.2.0');
      assert.equal(kept?.h3_cell, '861f1d48fffffff');
      assert.equal(kept?.last_seen_ms, T0 + 60_000, 'a refused replay is not a sign of life');
      // The same declaration again is fine (an exact retry), and so is a newer one.
      assert.equal((await store.register(newer, T0 + 91_000)).version, '0.2.0');
      assert.equal(
        (await store.register({ ...r, version: '0.3.0', declared_at_ms: T0 + 120_000 }, T0 + 120_000)).version,
        '0.3.0',
      );
      // A registration without a signed time counts as made at the moment it is stored.
      assert.equal(
        (await store.register({ ...r, version: '0.4.0', declared_at_ms: undefined }, T0 + 200_000)).version,
        '0.4.0',
      );
      await rejectsWith(store.register({ ...r, declared_at_ms: T0 + 150_000 }, T0 + 210_000), 'stale_request');
    });

    describe('heartbeat', () => {
      it('marks the worker seen and records the seq; seqs may skip', async () => {
        const r = registration();
        await store.register(r, T0);
        const first = await store.heartbeat(r.pk, 1, T0 + 30_000);
        assert.equal(first.heartbeat_seq, 1);
        assert.equal(first.last_seen_ms, T0 + 30_000);
        const later = await store.heartbeat(r.pk, 1_000, T0 + 60_000);
        assert.equal(later.heartbeat_seq, 1_000);
        assert.equal(later.last_seen_ms, T0 + 60_000);
        assert.deepEqual(await store.get(r.pk), later);
      });

      it('refuses an unknown worker with worker_not_found', async () => {
        await rejectsWith(store.heartbeat(generateKeyPair().publicKey, 1, T0), 'worker_not_found');
      });

      it('refuses a replayed or older seq with stale_request and leaves the worker as it was', async () => {
        const r = registration();
        await store.register(r, T0);
        const accepted = await store.heartbeat(r.pk, 5, T0 + 1000);
        await rejectsWith(store.heartbeat(r.pk, 5, T0 + 2000), 'stale_request');
        await rejectsWith(store.heartbeat(r.pk, 4, T0 + 3000), 'stale_request');
        assert.deepEqual(await store.get(r.pk), accepted);
      });

      it('never moves last_seen back when a heartbeat carries an earlier time', async () => {
        const r = registration();
        await store.register(r, T0 + 10_000);
        const record = await store.heartbeat(r.pk, 1, T0);
        assert.equal(record.last_seen_ms, T0 + 10_000);
      });

      it('lets exactly one of ten concurrent heartbeats with the same seq succeed', async () => {
        const r = registration();
        await store.register(r, T0);
        const results = await Promise.allSettled(
          Array.from({ length: 10 }, (_, i) => store.heartbeat(r.pk, 3, T0 + i)),
        );
        assert.equal(results.filter((x) => x.status === 'fulfilled').length, 1);
        for (const x of results) {
          if (x.status === 'rejected') assert.equal((x.reason as ServiceError).code, 'stale_request');
        }
        assert.equal((await store.get(r.pk))?.heartbeat_seq, 3);
      });

      it('rejects a seq that is not a positive integer as a caller error', async () => {
        const r = registration();
        await store.register(r, T0);
        for (const seq of [0, -1, 1.5, Number.NaN]) await assert.rejects(store.heartbeat(r.pk, seq, T0), RangeError);
      });
    });

    describe('leave', () => {
      it('marks the worker left at that time and takes its seq; last_seen stays', async () => {
        const r = registration();
        await store.register(r, T0);
        await store.heartbeat(r.pk, 3, T0 + 1000);
        const left = await store.leave(r.pk, 4, T0 + 2000);
        assert.equal(left.left_at_ms, T0 + 2000);
        assert.equal(left.heartbeat_seq, 4);
        assert.equal(left.last_seen_ms, T0 + 1000);
        assert.equal((await store.get(r.pk))?.left_at_ms, T0 + 2000);
        assert.equal((await store.list())[0]?.left_at_ms, T0 + 2000);
      });

      it('refuses a replayed seq (stale_request) and an unknown worker (worker_not_found)', async () => {
        const r = registration();
        await store.register(r, T0);
        await store.heartbeat(r.pk, 5, T0 + 1000);
        await rejectsWith(store.leave(r.pk, 5, T0 + 2000), 'stale_request');
        await rejectsWith(store.leave(generateKeyPair().publicKey, 1, T0), 'worker_not_found');
        assert.equal((await store.get(r.pk))?.left_at_ms, null);
        await store.leave(r.pk, 6, T0 + 2000);
        // A heartbeat sent before the leave (a lower seq) does not bring the worker back.
        await rejectsWith(store.heartbeat(r.pk, 6, T0 + 3000), 'stale_request');
        assert.equal((await store.get(r.pk))?.left_at_ms, T0 + 2000);
      });

      it('is cleared by the next registration or heartbeat: the worker is back', async () => {
        const r = registration();
        await store.register(r, T0);
        await store.leave(r.pk, 1, T0 + 1000);
        assert.equal((await store.register({ ...r, declared_at_ms: T0 + 2000 }, T0 + 2000)).left_at_ms, null);
        await store.leave(r.pk, 2, T0 + 3000);
        assert.equal((await store.heartbeat(r.pk, 3, T0 + 4000)).left_at_ms, null);
      });
    });

    describe('recordOutcome', () => {
      it('answers null for an unknown worker', async () => {
        assert.equal(await store.recordOutcome(generateKeyPair().publicKey, 'completed', 'job-1'), null);
      });

      it('counts outcomes and applies the trust ladder: explorer at 10, back after 3 failures in a row', async () => {
        const r = registration();
        await store.register(r, T0);
        let record = await store.recordOutcome(r.pk, 'completed', 'job-0');
        assert.equal(record?.jobs_completed, 1);
        assert.equal(record?.trust_tier, 'seedling');
        for (let i = 1; i < 10; i++) record = await store.recordOutcome(r.pk, 'completed', `job-${i}`);
        assert.equal(record?.trust_tier, 'explorer');
        for (let i = 10; i < 12; i++) record = await store.recordOutcome(r.pk, 'failed', `job-${i}`);
        assert.equal(record?.trust_tier, 'explorer');
        record = await store.recordOutcome(r.pk, 'failed', 'job-12');
        assert.equal(record?.trust_tier, 'seedling');
        assert.equal(record?.jobs_completed, 10);
        assert.equal(record?.jobs_failed, 3);
        assert.deepEqual(await store.get(r.pk), record);
        assert.deepEqual(
          (await store.list()).find((w) => w.pk === r.pk),
          record,
        );
      });

      it('counts every one of many concurrent outcomes exactly once', async () => {
        const r = registration();
        await store.register(r, T0);
        await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            store.recordOutcome(r.pk, i % 4 === 3 ? 'failed' : 'completed', `job-${i}`),
          ),
        );
        const record = await store.get(r.pk);
        assert.equal(record?.jobs_completed, 12);
        assert.equal(record?.jobs_failed, 4);
        assert.deepEqual(
          (await store.list()).find((w) => w.pk === r.pk),
          record,
        );
      });

      it('counts a job once: the same job id again changes nothing, whatever its outcome', async () => {
        const r = registration();
        await store.register(r, T0);
        const first = await store.recordOutcome(r.pk, 'completed', 'job-1');
        assert.equal(first?.jobs_completed, 1);
        assert.deepEqual(await store.recordOutcome(r.pk, 'completed', 'job-1'), first);
        assert.deepEqual(await store.recordOutcome(r.pk, 'failed', 'job-1'), first);
        assert.deepEqual(await store.get(r.pk), first);
        assert.equal(first?.jobs_failed, 0);
      });

      it('counts one of ten concurrent calls with the same job id', async () => {
        const r = registration();
        await store.register(r, T0);
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.recordOutcome(r.pk, 'completed', 'job-retried')),
        );
        const record = await store.get(r.pk);
        assert.equal(record?.jobs_completed, 1);
        assert.equal(record?.jobs_failed, 0);
        // A duplicate racing the counting call may answer the worker from just before that count.
        for (const result of results) assert.ok(result?.jobs_completed === 0 || result?.jobs_completed === 1);
        assert.ok(
          results.some((x) => x?.jobs_completed === 1),
          'the counting call answers with its count',
        );
      });

      describe('retention of counted outcomes', () => {
        const DAY = 86_400_000;
        let now = T0;
        let kept: WorkerRegistry;
        let keptCleanup: (() => Promise<void>) | undefined;
        beforeEach(async () => {
          now = T0;
          ({ store: kept, cleanup: keptCleanup } = await factory({ outcomeRetentionMs: 8 * DAY, clock: () => now }));
        });
        afterEach(async () => {
          await kept.close();
          await keptCleanup?.();
        });

        it('still counts a job once when it comes again inside the window, after prunes ran', async () => {
          const r = registration();
          await kept.register(r, T0);
          await kept.recordOutcome(r.pk, 'completed', 'job-long');
          // Outcomes of other jobs at each day of the window, each one a chance to prune.
          for (let day = 1; day < 8; day++) {
            now = T0 + day * DAY;
            await kept.recordOutcome(r.pk, 'completed', `job-day-${day}`);
          }
          now = T0 + 8 * DAY - 1;
          const record = await kept.recordOutcome(r.pk, 'failed', 'job-long');
          assert.equal(record?.jobs_completed, 8);
          assert.equal(record?.jobs_failed, 0, 'a retry inside the window must not count again');
        });

        it('prunes claims older than the window: the table does not grow with history', async () => {
          const r = registration();
          await kept.register(r, T0);
          await kept.recordOutcome(r.pk, 'completed', 'job-old');
          now = T0 + 8 * DAY + 1;
          await kept.recordOutcome(r.pk, 'completed', 'job-new'); // prunes job-old's claim
          // Proof the claim is gone: the same id is counted afresh (no job can come back this late; see the port).
          const record = await kept.recordOutcome(r.pk, 'completed', 'job-old');
          assert.equal(record?.jobs_completed, 3);
          // And job-new, inside the window, is still refused.
          assert.equal((await kept.recordOutcome(r.pk, 'completed', 'job-new'))?.jobs_completed, 3);
        });
      });

      it('counts each job once when repeats of several jobs arrive at once', async () => {
        const r = registration();
        await store.register(r, T0);
        await Promise.all(
          Array.from({ length: 16 }, (_, i) =>
            store.recordOutcome(r.pk, i % 4 === 3 ? 'failed' : 'completed', `job-${i % 4}`),
          ),
        );
        const record = await store.get(r.pk);
        assert.equal(record?.jobs_completed, 3);
        assert.equal(record?.jobs_failed, 1);
      });

      it('counts distinct job ids separately, per worker', async () => {
        const [a, b] = [registration(), registration()];
        await store.register(a, T0);
        await store.register(b, T0);
        await store.recordOutcome(a.pk, 'completed', 'job-1');
        await store.recordOutcome(a.pk, 'completed', 'job-2');
        await store.recordOutcome(a.pk, 'failed', 'job-3');
        // The same job id on another worker is another worker's outcome (a job with steps on several workers).
        await store.recordOutcome(b.pk, 'completed', 'job-1');
        await store.recordOutcome(a.pk, 'completed', 'job-2');
        assert.deepEqual([(await store.get(a.pk))?.jobs_completed, (await store.get(a.pk))?.jobs_failed], [2, 1]);
        assert.equal((await store.get(b.pk))?.jobs_completed, 1);
      });

      it('records nothing for an unknown worker, so the job counts once it registers', async () => {
        const r = registration();
        assert.equal(await store.recordOutcome(r.pk, 'completed', 'job-early'), null);
        await store.register(r, T0);
        assert.equal((await store.recordOutcome(r.pk, 'completed', 'job-early'))?.jobs_completed, 1);
      });

      it('refuses an empty job id as a caller error', async () => {
        const r = registration();
        await store.register(r, T0);
        await assert.rejects(store.recordOutcome(r.pk, 'completed', ''), RangeError);
        assert.equal((await store.get(r.pk))?.jobs_completed, 0);
      });
    });
  });
}
