import assert from 'node:assert/strict';
import { ServiceError } from '../../core/errors.js';
import { createMongoAuditStore } from '../../store/mongo/audit-store.js';
import { describeAuditStoreContract, iso, makeBlock, makeChain, newAgent, T0 } from '../store/audit-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The audit store's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI), as
// test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol audit store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeAuditStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoAuditStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  // The tip hint (`audit_tips`) is moved by `$max`, which FerretDB applies without a lock: a hint may lag or be
  // missing, and the tip must not care.
  it('finds the tip whether its hint is current, lagging, missing or ahead of the chain', async () => {
    const db = freshDb();
    try {
      const store = await createMongoAuditStore(db);
      const hints = db.collection<{ _id: string; index: number }>('audit_tips');
      const pk = newAgent();
      const chain = makeChain(pk, 40);
      for (const block of chain) await store.appendBlock(block);
      assert.deepEqual(await store.tip(pk), chain[39]);
      for (const lagging of [0, 1, 7, 23, 38]) {
        await hints.updateOne({ _id: pk }, { $set: { index: lagging } });
        assert.deepEqual(await store.tip(pk), chain[39], `hint at ${lagging}`);
      }
      await hints.deleteOne({ _id: pk });
      assert.deepEqual(await store.tip(pk), chain[39], 'no hint');
      assert.equal((await hints.findOne({ _id: pk }))?.index, 39, 'a far-behind hint is moved up');
      await hints.updateOne({ _id: pk }, { $set: { index: 1000 } });
      assert.deepEqual(await store.tip(pk), chain[39], 'hint beyond the chain');
      await hints.deleteOne({ _id: pk });
      const next = makeBlock(pk, 40, iso(T0 + 60_000));
      await store.appendBlock(next);
      assert.deepEqual(await store.tip(pk), next);
      assert.equal(await store.tip(newAgent()), null);
    } finally {
      await db.dropDatabase();
    }
  });

  it('never forks a chain under rounds of concurrent appends from separate store instances', async () => {
    const db = freshDb();
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => createMongoAuditStore(db)));
      const pk = newAgent();
      await stores[0]!.appendBlock(makeBlock(pk, 0, iso(T0)));
      for (let index = 1; index <= 10; index++) {
        const rivals = Array.from({ length: 8 }, (_, i) =>
          makeBlock(pk, index, iso(T0 + index * 1000 + i), { meta: { i } }),
        );
        const results = await Promise.allSettled(
          rivals.map((block, i) => stores[i % stores.length]!.appendBlock(block)),
        );
        const won = results.filter((r) => r.status === 'fulfilled').length;
        assert.equal(won, 1, `index ${index}: ${won} winners`);
        for (const r of results) {
          if (r.status === 'rejected')
            assert.ok(r.reason instanceof ServiceError && r.reason.code === 'record_conflict');
        }
      }
      const blocks = await stores[1]!.blocks(pk);
      assert.deepEqual(
        blocks.map((b) => b.index),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      assert.deepEqual(await stores[2]!.tip(pk), blocks[10]);
    } finally {
      await db.dropDatabase();
    }
  });
});
