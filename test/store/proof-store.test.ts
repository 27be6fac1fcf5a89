import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { describeProofStoreContract } from './proof-store.contract.js';

describeProofStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteProofStore(db), cleanup: async () => void db.close() };
});

describeProofStoreContract('SQLite (file, WAL)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-proofs-'));
  const db = openSqlite(join(dir, 'geofabric.db'));
  return {
    store: createSqliteProofStore(db),
    cleanup: async () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SQLite proof store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-proofs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps seqs gapless for one signer across two connections, as two processes would', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteProofStore(a), createSqliteProofStore(b)];
      const signer = generateKeyPair();
      const seqs: number[] = [];
      for (let i = 0; i < 6; i++) {
        const [record] = await (i % 2 ? storeB : storeA).appendRecords(signer, [
          {
            id: `r${i}`,
            h3_cell: '861e8050fffffff',
            epoch: 1,
            collection_type: 'tile',
            payload_type: 'tile/raster',
            payload: { i },
            written_at: '2026-01-01T01:00:00.000Z',
          },
        ]);
        seqs.push(record?.seq ?? 0);
      }
      assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
      assert.equal((await storeB.getRecord('r0'))?.seq, 1);
    } finally {
      a.close();
      b.close();
    }
  });

  it('uses the order index for cursor pages instead of sorting the table', () => {
    const db = openSqlite(':memory:');
    try {
      const plan = db
        .prepare<[], { detail: string }>(
          `EXPLAIN QUERY PLAN SELECT json FROM proof_records
           WHERE (epoch, pk, seq) > (1, 'a', 1) AND epoch <= 9 AND cell_key BETWEEN 1 AND 2
           ORDER BY epoch, pk, seq LIMIT 10`,
        )
        .all()
        .map((row) => row.detail)
        .join('\n');
      assert.match(plan, /proof_records_order/);
      assert.doesNotMatch(plan, /TEMP B-TREE/);
    } finally {
      db.close();
    }
  });
});
