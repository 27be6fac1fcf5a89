import assert from 'node:assert/strict';
import { createMongoLedgerStore } from '../../store/mongo/ledger-store.js';
import { describeLedgerStoreContract, jobBatch, newAccount, settlementRecord } from '../store/ledger-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The ledger store's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI), as
// test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol ledger store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeLedgerStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoLedgerStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });

  it('stores a batch once when separate store instances post it at the same time, and completes a partial one', async () => {
    const db = freshDb();
    try {
      const stores = await Promise.all(Array.from({ length: 4 }, () => createMongoLedgerStore(db)));
      const accounts = { requester: newAccount(), worker: newAccount(), relay: newAccount(), platform: newAccount() };
      for (let round = 0; round < 5; round++) {
        const batch = jobBatch(accounts, `job-${round}`);
        const results = await Promise.all(stores.map((store) => store.post(batch)));
        assert.deepEqual(results.flat().sort(), batch.map((e) => e.id).sort(), `round ${round}`);
        assert.deepEqual(await stores[0]!.jobEntries(`job-${round}`), batch);
      }
      assert.equal(await stores[1]!.balance(accounts.requester), -5 * 160_000);
      // A post that died after its first insert: posting the batch again completes it.
      const batch = jobBatch(accounts, 'job-partial');
      await db.collection('ledger_entries').insertOne({
        _id: batch[0]!.id as never,
        account_pk: batch[0]!.account_pk,
        kind: batch[0]!.kind,
        amount_units: batch[0]!.amount_units,
        job_id: batch[0]!.job_id,
        hardware_tier: batch[0]!.hardware_tier,
        created_ms: Date.parse(batch[0]!.created_at),
        day: batch[0]!.created_at.slice(0, 10),
        pos: 0,
        json: JSON.stringify(batch[0]),
      });
      assert.deepEqual(
        await stores[2]!.post(batch),
        batch.slice(1).map((e) => e.id),
      );
      assert.deepEqual(await stores[3]!.jobEntries('job-partial'), batch);
    } finally {
      await db.dropDatabase();
    }
  });

  // `superseded` is a hint moved by updateMany, which FerretDB applies without a lock: a lost one must not matter.
  it('lists open settlements right whether the superseded hints are set or lost', async () => {
    const db = freshDb();
    try {
      const store = await createMongoLedgerStore(db);
      const open = settlementRecord({ id: 'job:open' });
      const paid = settlementRecord({ id: 'job:paid' });
      await store.recordSettlement(open);
      await store.recordSettlement(paid);
      const landed = { ...paid, status: 'submitted' as const, ledger: 9 };
      await store.recordSettlement(landed);
      assert.deepEqual(await store.openSettlements(), [open]);
      await db.collection('ledger_settlements').updateMany({}, { $set: { superseded: false } });
      assert.deepEqual(await store.openSettlements(), [open]);
      assert.deepEqual(await store.settlement('job:paid'), landed);
    } finally {
      await db.dropDatabase();
    }
  });
});
