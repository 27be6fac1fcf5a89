import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServiceError } from '../../core/errors.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { describeWorkerRegistryContract, registration } from './worker-registry.contract.js';

describeWorkerRegistryContract('SQLite (in memory)', async (retention) => {
  const db = openSqlite(':memory:');
  return { store: createSqliteWorkerRegistry(db, retention), cleanup: async () => void db.close() };
});

describe('SQLite worker registry on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-workers-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a heartbeat replayed through a second connection, as another process would send it', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteWorkerRegistry(a), createSqliteWorkerRegistry(b)];
      const r = registration();
      await storeA.register(r, 1000);
      await storeA.heartbeat(r.pk, 1, 2000);
      await assert.rejects(
        storeB.heartbeat(r.pk, 1, 3000),
        (error: unknown) => error instanceof ServiceError && error.code === 'stale_request',
      );
      await storeB.recordOutcome(r.pk, 'completed', 'job-1');
      assert.equal((await storeA.get(r.pk))?.jobs_completed, 1);
      await storeA.recordOutcome(r.pk, 'completed', 'job-1'); // the same job through the other connection
      assert.equal((await storeB.get(r.pk))?.jobs_completed, 1);
    } finally {
      a.close();
      b.close();
    }
  });
});
