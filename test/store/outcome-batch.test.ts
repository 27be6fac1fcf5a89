import assert from 'node:assert/strict';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { createOutcomeBatch } from '../../store/outcome-batch.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { describeWorkerRegistryContract, registration } from './worker-registry.contract.js';

// The batching registry is a WorkerRegistry like any other: the whole contract holds through it.
describeWorkerRegistryContract('SQLite, completions batched (store/outcome-batch.ts)', async (retention) => {
  const db = openSqlite(':memory:');
  return { store: createOutcomeBatch(createSqliteWorkerRegistry(db, retention)), cleanup: async () => void db.close() };
});

describe('completions counted in memory, written in batches (store/outcome-batch.ts)', () => {
  const T0 = Date.UTC(2026, 0, 1, 12);
  let db: ReturnType<typeof openSqlite>;
  let stored: WorkerRegistry;
  beforeEach(() => {
    db = openSqlite(':memory:');
    stored = createSqliteWorkerRegistry(db);
  });
  afterEach(() => db.close());

  it('counts a completion in every read at once, and in the store only once the batch is written', async () => {
    const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    batch.countCompleted(r.pk, 'inference:a');
    batch.countCompleted(r.pk, 'inference:b');
    batch.countCompleted(r.pk, 'inference:a'); // the same job counts once
    assert.equal((await batch.get(r.pk))?.jobs_completed, 2);
    assert.equal((await batch.list()).find((w) => w.pk === r.pk)?.jobs_completed, 2);
    assert.equal((await stored.get(r.pk))?.jobs_completed, 0, 'nothing written on the caller’s path');
    await batch.flush();
    assert.equal((await stored.get(r.pk))?.jobs_completed, 2);
    assert.equal((await batch.get(r.pk))?.jobs_completed, 2, 'not counted twice once written');
    // Written as recordOutcome writes it: a later record of the same job changes nothing.
    assert.equal((await batch.recordOutcome(r.pk, 'completed', 'inference:a'))?.jobs_completed, 2);
  });

  it('writes the counted completions on its own shortly after', async () => {
    const batch = createOutcomeBatch(stored, { delayMs: 5 });
    const r = registration();
    await batch.register(r, T0);
    batch.countCompleted(r.pk, 'inference:a');
    for (let i = 0; i < 200 && (await stored.get(r.pk))?.jobs_completed !== 1; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal((await stored.get(r.pk))?.jobs_completed, 1);
  });

  it('writes what is counted when closed (graceful shutdown)', async () => {
    const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    for (let i = 0; i < 7; i++) batch.countCompleted(r.pk, `inference:${i}`);
    await batch.close();
    assert.equal((await stored.get(r.pk))?.jobs_completed, 7);
  });

  it('writes a failure after the completions counted before it, so the trust ladder sees them in order', async () => {
    const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    // Ten completions in a row and then a failure: in this order the worker was promoted (10 completions, streak
    // 10) before the failure; a failure written first would leave it a seedling with a broken streak.
    for (let i = 0; i < 10; i++) batch.countCompleted(r.pk, `inference:${i}`);
    const after = await batch.recordOutcome(r.pk, 'failed', 'inference:failed');
    assert.equal(after?.jobs_completed, 10);
    assert.equal(after?.jobs_failed, 1);
    assert.equal(after?.trust_tier, 'explorer');
  });

  it('keeps a batch the store refused and writes it on the next try, once', async () => {
    let refuse = true;
    const flaky: WorkerRegistry = {
      ...stored,
      recordCompletions: undefined,
      recordOutcome: (pk, outcome, jobId) =>
        refuse ? Promise.reject(new Error('database is locked')) : stored.recordOutcome(pk, outcome, jobId),
    };
    const batch = createOutcomeBatch(flaky, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    batch.countCompleted(r.pk, 'inference:a');
    await batch.flush();
    assert.equal((await stored.get(r.pk))?.jobs_completed, 0);
    assert.equal((await batch.get(r.pk))?.jobs_completed, 1, 'still counted while it waits');
    refuse = false;
    await batch.flush();
    assert.equal((await stored.get(r.pk))?.jobs_completed, 1);
    assert.equal((await batch.get(r.pk))?.jobs_completed, 1);
  });

  it('writes a batch one by one when the store refuses it whole', async () => {
    const whole: WorkerRegistry = { ...stored, recordCompletions: () => Promise.reject(new Error('busy')) };
    const batch = createOutcomeBatch(whole, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    for (let i = 0; i < 3; i++) batch.countCompleted(r.pk, `inference:${i}`);
    await batch.flush();
    assert.equal((await stored.get(r.pk))?.jobs_completed, 3);
  });

  it('drops and reports a completion the store refused maxAttempts times', async () => {
    const dropped: string[] = [];
    const refusing: WorkerRegistry = {
      ...stored,
      recordCompletions: () => Promise.reject(new Error('gone')),
      recordOutcome: () => Promise.reject(new Error('gone')),
    };
    const batch = createOutcomeBatch(refusing, {
      delayMs: 60_000,
      maxAttempts: 2,
      onDropped: (_error, { jobId }) => dropped.push(jobId),
    });
    const r = registration();
    await batch.register(r, T0);
    batch.countCompleted(r.pk, 'inference:a');
    await batch.close();
    assert.deepEqual(dropped, ['inference:a']);
    assert.equal((await batch.get(r.pk))?.jobs_completed, 0);
  });

  it('never shows a completion twice or not at all to reads that overlap a batch being written', async () => {
    const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
    const r = registration();
    await batch.register(r, T0);
    for (let i = 0; i < 50; i++) batch.countCompleted(r.pk, `inference:${i}`);
    const reads = [batch.get(r.pk), batch.flush().then(() => batch.get(r.pk)), batch.get(r.pk), batch.list()];
    const [a, b, c, list] = await Promise.all(reads);
    for (const seen of [a, b, c, (list as { jobs_completed: number }[])[0]]) {
      assert.equal((seen as { jobs_completed: number }).jobs_completed, 50);
    }
  });

  describe("the record a read kept (recent: chat dispatch's own worker)", () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    it('serves what the last get read, within the age asked, with completions counted since folded in', async () => {
      const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
      const r = registration();
      await batch.register(r, T0);
      assert.equal(batch.recent(r.pk, 60_000), undefined, 'a write keeps nothing');
      const read = await batch.get(r.pk);
      assert.deepEqual(batch.recent(r.pk, 60_000), read);
      batch.countCompleted(r.pk, 'inference:a');
      assert.equal(batch.recent(r.pk, 60_000)?.jobs_completed, 1);
      await sleep(5);
      assert.equal(batch.recent(r.pk, 1), undefined, 'older than the age asked');
      assert.equal(batch.recent('f'.repeat(64), 60_000), undefined, 'never read');
      assert.equal(await batch.get('f'.repeat(64)), null);
      assert.equal(batch.recent('f'.repeat(64), 60_000), undefined, 'read, and not registered: nothing kept');
    });

    it('forgets every kept record on a write through it: register, heartbeat, leave, an outcome, a batch written', async () => {
      const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
      const r = registration();
      await batch.register(r, T0);
      const writes: [string, () => Promise<unknown>][] = [
        ['register', () => batch.register(r, T0 + 1)],
        ['heartbeat', () => batch.heartbeat(r.pk, 1, T0 + 2)],
        ['leave', () => batch.leave(r.pk, 2, T0 + 3)],
        ['an outcome', () => batch.recordOutcome(r.pk, 'failed', 'inference:failed')],
        [
          'a batch written',
          () => {
            batch.countCompleted(r.pk, 'inference:b');
            return batch.flush();
          },
        ],
      ];
      for (const [name, write] of writes) {
        await batch.get(r.pk);
        assert.notEqual(batch.recent(r.pk, 60_000), undefined);
        await write();
        assert.equal(batch.recent(r.pk, 60_000), undefined, name);
      }
    });

    it('keeps nothing from a read that a write overlapped, and sees another process only through a new read', async () => {
      const batch = createOutcomeBatch(stored, { delayMs: 60_000 });
      const r = registration();
      await batch.register(r, T0);
      await Promise.all([batch.get(r.pk), batch.heartbeat(r.pk, 1, T0 + 1)]);
      assert.equal(batch.recent(r.pk, 60_000), undefined);
      // Another process's write goes to the store, not through this object: the kept read stays until it is too old.
      await batch.get(r.pk);
      await stored.leave(r.pk, 2, T0 + 2);
      assert.equal(batch.recent(r.pk, 60_000)?.left_at_ms, null);
      assert.equal((await batch.get(r.pk))?.left_at_ms, T0 + 2);
      assert.equal(batch.recent(r.pk, 60_000)?.left_at_ms, T0 + 2);
    });
  });
});
