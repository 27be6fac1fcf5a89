import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceError } from '../../core/errors.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { describeLedgerStoreContract, entry, jobBatch, newAccount } from './ledger-store.contract.js';

describeLedgerStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteLedgerStore(db), cleanup: async () => void db.close() };
});

describe('SQLite ledger store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-ledger-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stores a batch once across two connections (as two processes), and refuses a rival whole', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteLedgerStore(a), createSqliteLedgerStore(b)];
      const accounts = { requester: newAccount(), worker: newAccount(), relay: newAccount(), platform: newAccount() };
      const batch = jobBatch(accounts, 'job-a');
      assert.equal((await storeA.post(batch)).length, 4);
      assert.deepEqual(await storeB.post(batch), []);
      const fresh = entry({ account_pk: accounts.worker, job_id: 'job-b' });
      await assert.rejects(
        storeB.post([fresh, { ...batch[0]!, amount_units: -1 }]),
        (error: unknown) => error instanceof ServiceError && error.code === 'record_conflict',
      );
      assert.deepEqual(await storeA.jobEntries('job-b'), []);
      assert.deepEqual(await storeA.jobEntries('job-a'), batch);
    } finally {
      a.close();
      b.close();
    }
  });

  it('answers its queries from indexes', () => {
    const db = openSqlite(':memory:');
    try {
      const plan = (sql: string): string =>
        (
          db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...Array.from(sql.matchAll(/\?/g), () => 1)) as Array<{
            detail: string;
          }>
        )
          .map((r) => r.detail)
          .join('; ');
      assert.match(
        plan(
          'SELECT json FROM ledger_entries WHERE account_pk = ? AND created_ms BETWEEN ? AND ? ORDER BY created_ms, seq LIMIT ?',
        ),
        /ledger_entries_account_time/,
      );
      assert.match(
        plan('SELECT json FROM ledger_entries WHERE job_id = ? ORDER BY created_ms, seq'),
        /ledger_entries_job/,
      );
      assert.match(
        plan(
          "SELECT day, SUM(amount_units) FROM ledger_entries WHERE kind IN ('step_earning', 'relay_fee') AND amount_units > 0 AND created_ms BETWEEN ? AND ? GROUP BY day, hardware_tier",
        ),
        /ledger_entries_earnings/,
      );
    } finally {
      db.close();
    }
  });
});
