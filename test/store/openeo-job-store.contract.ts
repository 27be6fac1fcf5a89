import assert from 'node:assert/strict';
import type { OpenEoJob, OpenEoJobRetention, OpenEoJobStore } from '../../store/openeo-job-store.js';

export type OpenEoJobStoreFactory = (
  retention?: OpenEoJobRetention,
) => Promise<{ store: OpenEoJobStore; cleanup?: () => Promise<void> }>;

export const openEoJob = (id: string, owner: string, created: string): OpenEoJob => ({
  id,
  owner,
  // Keys MongoDB would refuse as field names: the job is kept as text.
  request: { process: { process_graph: { $x: { 'a.b': 1 } } } },
  authenticated_by: { api_key_id: owner },
  process_graph_sha256: '0'.repeat(64),
  title: null,
  description: null,
  plan: null,
  budget: null,
  status: 'created',
  created,
  updated: created,
  run: 0,
  h3_cell: '861e8050fffffff',
  bbox: null,
  costs: null,
  assets: [],
  logs: [],
  version: 1,
});

/** store/openeo-job-store.ts on any adapter. */
export function describeOpenEoJobStoreContract(name: string, open: OpenEoJobStoreFactory): void {
  describe(`openEO job store contract: ${name}`, () => {
    let store: OpenEoJobStore;
    let cleanup: (() => Promise<void>) | undefined;
    beforeEach(async () => {
      ({ store, cleanup } = await open());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('stores a job as given, refuses its id twice, and lists an owner’s jobs newest first', async () => {
      const job = openEoJob('j-1', 'key_a', '2026-03-01T10:00:00.000Z');
      await store.create(job);
      await assert.rejects(store.create(job), RangeError);
      await store.create(openEoJob('j-2', 'key_a', '2026-03-01T11:00:00.000Z'));
      await store.create(openEoJob('j-3', 'key_b', '2026-03-01T12:00:00.000Z'));
      assert.deepEqual(await store.get('j-1'), job);
      assert.equal(await store.get('j-9'), null);
      assert.deepEqual(
        (await store.list('key_a', 10)).map((j) => j.id),
        ['j-2', 'j-1'],
      );
      assert.deepEqual(
        (await store.list('key_a', 1)).map((j) => j.id),
        ['j-2'],
      );
      assert.deepEqual(await store.list('key_c', 10), []);
    });

    it('saves a change only over the version it read: of two saves from one read, one wins', async () => {
      const job = openEoJob('j-1', 'key_a', '2026-03-01T10:00:00.000Z');
      await store.create(job);
      const queued = await store.save({ ...job, status: 'queued' });
      assert.equal(queued?.version, 2);
      assert.equal(await store.save({ ...job, status: 'canceled' }), null, 'a stale version');
      assert.equal((await store.get('j-1'))?.status, 'queued');
      assert.equal((await store.save({ ...queued!, status: 'running' }))?.version, 3);
      await store.delete('j-1');
      assert.equal(await store.save({ ...queued!, version: 3 }), null, 'a deleted job');
    });

    it('keeps result files by job and name, replaces one written again, and deletes them with the job', async () => {
      await store.create(openEoJob('j-1', 'key_a', '2026-03-01T10:00:00.000Z'));
      const bytes = new Uint8Array(70_000).map((_, i) => i % 251);
      await store.putAsset('j-1', 'result.tif', bytes);
      assert.deepEqual(await store.getAsset('j-1', 'result.tif'), bytes);
      await store.putAsset('j-1', 'result.tif', new Uint8Array([1, 2, 3]));
      assert.deepEqual(await store.getAsset('j-1', 'result.tif'), new Uint8Array([1, 2, 3]));
      assert.equal(await store.getAsset('j-1', 'other.tif'), null);
      await store.delete('j-1');
      assert.equal(await store.get('j-1'), null);
      assert.equal(await store.getAsset('j-1', 'result.tif'), null);
    });

    describe('retention', () => {
      const DAY = 86_400_000;
      const T0 = Date.UTC(2026, 2, 1, 12);
      const iso = (ms: number) => new Date(ms).toISOString();
      let kept: OpenEoJobStore;
      let keptCleanup: (() => Promise<void>) | undefined;
      beforeEach(async () => {
        // Now is the created time of the job being created (the clock that stamps jobs).
        ({ store: kept, cleanup: keptCleanup } = await open({ jobRetentionMs: 30 * DAY }));
      });
      afterEach(async () => {
        await kept.close();
        await keptCleanup?.();
      });

      it('prunes a job and its files left alone past the window, and keeps running jobs and jobs updated inside it', async () => {
        const finished = openEoJob('j-finished', 'key_a', iso(T0));
        await kept.create(finished);
        await kept.putAsset(finished.id, 'out.tif', new Uint8Array([1, 2, 3]));
        const running = openEoJob('j-running', 'key_a', iso(T0));
        await kept.create(running);
        assert.ok(await kept.save({ ...running, status: 'running', updated: iso(T0 + 1000) }));
        const touched = openEoJob('j-touched', 'key_a', iso(T0));
        await kept.create(touched);
        assert.ok(await kept.save({ ...touched, status: 'finished', updated: iso(T0 + 25 * DAY) }));
        const newer = openEoJob('j-newer', 'key_b', iso(T0 + 20 * DAY));
        await kept.create(newer);
        assert.ok(await kept.get(finished.id), 'nothing is pruned inside the window');

        await kept.create(openEoJob('j-fresh', 'key_b', iso(T0 + 31 * DAY))); // prunes
        assert.equal(await kept.get(finished.id), null, 'a job left alone past the window is pruned');
        assert.equal(await kept.getAsset(finished.id, 'out.tif'), null, 'with its result files');
        assert.equal((await kept.get(running.id))?.status, 'running', 'a run under way is never pruned');
        assert.equal((await kept.get(touched.id))?.status, 'finished');
        assert.ok(await kept.get(newer.id));
        assert.deepEqual((await kept.list('key_a', 10)).map((j) => j.id).sort(), [running.id, touched.id].sort());
      });
    });
  });
}
