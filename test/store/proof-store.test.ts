import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPair } from '../../core/identity.js';
import { ServiceError } from '../../core/errors.js';
import { hexToBytes } from '../../core/hex.js';
import { verifyInclusion } from '../../core/merkle/inclusion.js';
import { checkRecord, recordLeaf, signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH } from '../../core/proof-types.js';
import { createSealOverTree } from '../../core/seal.js';
import type { NewRecord } from '../../store/proof-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { describeProofStoreContract } from './proof-store.contract.js';

/** A tile record of epoch 1; `payload` defaults to `{ i }`. */
const tileRecord = (id: string, i: number, payload: Record<string, unknown> = { i }): NewRecord => ({
  id,
  h3_cell: '861e8050fffffff',
  epoch: 1,
  collection_type: 'tile',
  payload_type: 'tile/raster',
  payload,
  written_at: '2026-01-01T01:00:00.000Z',
});

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
        const [record] = await (i % 2 ? storeB : storeA).appendRecords(signer, [tileRecord(`r${i}`, i)]);
        seqs.push(record?.seq ?? 0);
      }
      assert.deepEqual(seqs, [1, 2, 3, 4, 5, 6]);
      assert.equal((await storeB.getRecord('r0'))?.seq, 1);
    } finally {
      a.close();
      b.close();
    }
  });

  it('signs large batches off the event loop and keeps seqs gapless when two connections race', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path)];
    try {
      const [storeA, storeB] = [createSqliteProofStore(a), createSqliteProofStore(b)];
      const signer = generateKeyPair();
      const batch = (tag: string) => Array.from({ length: 300 }, (_, i) => tileRecord(`${tag}-${i}`, i));
      // The event loop keeps turning while a batch is signed (it used to be held for the whole batch).
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 0);
      await storeA.appendRecords(signer, batch('warm'));
      clearInterval(ticker);
      assert.ok(ticks > 0, 'the event loop ran during the append');
      // Both read the same tail, sign on the workers meanwhile; the second to write must plan again.
      const [fromA, fromB] = await Promise.all([
        storeA.appendRecords(signer, batch('a')),
        storeB.appendRecords(signer, batch('b')),
        storeA.appendRecords(signer, batch('c')),
      ]);
      const all = await storeB.recordsOfEpoch(signer.publicKey, 1);
      assert.deepEqual(
        all.map((r) => r.seq),
        Array.from({ length: 1200 }, (_, i) => i + 1),
      );
      for (const record of all) assert.equal(checkRecord(record).ok, true, record.id);
      // What appendRecords returned is what was stored.
      for (const record of [...fromA, ...fromB]) assert.deepEqual(await storeA.getRecord(record.id), record);
    } finally {
      a.close();
      b.close();
    }
  });

  it('stores a large batch as exactly the JSON of each signed record it returns', async () => {
    const db = openSqlite(join(dir, 'geofabric.db'));
    try {
      const store = createSqliteProofStore(db);
      const signer = generateKeyPair();
      // Over the pool threshold, so rows are prepared while the workers sign; payloads with escapes.
      const written = await store.appendRecords(
        signer,
        Array.from({ length: 300 }, (_, i) =>
          tileRecord(`big-${i}`, i, { i, text: 'quote " backslash \\ é \u2028', list: [i, null] }),
        ),
      );
      const stored = db
        .prepare<[], { id: string; json: string }>('SELECT id, json FROM proof_records ORDER BY seq')
        .all();
      assert.equal(stored.length, 300);
      stored.forEach((row, i) => {
        assert.equal(row.json, JSON.stringify(written[i]));
        assert.equal(checkRecord(JSON.parse(row.json)).ok, true, row.id);
      });
    } finally {
      db.close();
    }
  });

  it('seals without holding the write lock while it builds, refusing a seal a record slipped past', async () => {
    const path = join(dir, 'geofabric.db');
    const [a, b] = [openSqlite(path), openSqlite(path, { busyTimeoutMs: 0 })];
    try {
      const [sealer, writer] = [createSqliteProofStore(a), createSqliteProofStore(b)];
      const signer = generateKeyPair();
      const record = (i: number) => tileRecord(`s${i}`, i);
      await writer.appendRecords(
        signer,
        Array.from({ length: 600 }, (_, i) => record(i)),
      );
      const at = { prevSealHash: GENESIS_PREV_HASH, sealedAt: '2026-01-01T02:01:00.000Z' };
      // The other connection writes while the tree is built and signed (busy timeout 0: any lock held fails it).
      const slipped = sealer.sealEpoch(signer.publicKey, 1, (tree) => {
        const { id, h3_cell, epoch, ...rest } = record(600);
        const late = signRecord(signer.secretKey, {
          version: 1,
          id,
          address: { h3_cell, epoch, pk: signer.publicKey },
          ...rest,
          seq: 601,
        });
        // ingestRecords writes synchronously, so it lands before the seal is stored.
        void writer.ingestRecords([late]);
        return createSealOverTree(signer.secretKey, { epoch: 1, tree, ...at });
      });
      await assert.rejects(
        slipped,
        (error: unknown) => error instanceof ServiceError && error.code === 'seal_mismatch',
      );
      assert.equal(await sealer.getSeal(signer.publicKey, 1), null);
      assert.equal((await writer.recordsOfEpoch(signer.publicKey, 1)).length, 601);
      const { seal, status } = await sealer.sealEpoch(signer.publicKey, 1, (tree) =>
        createSealOverTree(signer.secretKey, { epoch: 1, tree, ...at }),
      );
      assert.equal(status, 'inserted');
      assert.equal(seal.record_count, 601);
      const last = (await writer.getRecord('s600'))!;
      const path601 = (await writer.sealedPath(last))!;
      verifyInclusion(path601.leafIndex, 601, recordLeaf(last), path601.path, hexToBytes(seal.merkle_root));
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
