import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import { SQLITE_MIGRATIONS } from '../../store/sqlite/migrations.js';
import { describeRateLimitStoreContract } from './rate-limit-store.contract.js';

describeRateLimitStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteRateLimitStore(db), cleanup: async () => void db.close() };
});

describe('SQLite rate-limit store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-rate-limit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('counts across two connections to the same file, as two processes would', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteRateLimitStore(a), createSqliteRateLimitStore(b)];
      const counts = [];
      for (let i = 0; i < 6; i++) counts.push(await (i % 2 ? storeB : storeA).increment('agent:a', 0, 3_600_000));
      assert.deepEqual(counts, [1, 2, 3, 4, 5, 6]);
      assert.equal(a.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      a.close();
      b.close();
    }
  });

  it('migrates a database once, however often it is opened', () => {
    const path = join(dir, 'geofabric.db');
    openSqlite(path).close();
    const db = openSqlite(path);
    try {
      const ids = db.prepare<[], { id: string }>('SELECT id FROM schema_migrations').all();
      assert.deepEqual(
        ids.map((row) => row.id),
        SQLITE_MIGRATIONS.map((migration) => migration.id),
      );
    } finally {
      db.close();
    }
  });

  it('drops windows that expired before a newer window is counted', async () => {
    const db = openSqlite(':memory:');
    try {
      const store = createSqliteRateLimitStore(db);
      const hour = 3_600_000;
      await store.increment('agent:a', 0, hour);
      await store.increment('agent:a', 3 * hour, hour);
      const rows = db.prepare<[], { window_start: number }>('SELECT window_start FROM rate_limit_counters').all();
      assert.deepEqual(
        rows.map((row) => row.window_start),
        [3 * hour],
      );
    } finally {
      db.close();
    }
  });
});
