/**
 * A full SQLite store (disk full): with STORE_MAX_MB the database is capped by
 * `PRAGMA max_page_count`, and a write past the cap fails with SQLITE_FULL, which is exactly what SQLite
 * reports when the disk itself is full (ENOSPC). Through the store interfaces: the failed write changed nothing
 * (a batch, a seal, a job, a ledger post are each all-or-nothing), the file passes `integrity_check`, every
 * record committed before is readable and verifies, and the same file reopened under a bigger cap takes writes
 * again with gapless seqs and seals that cover everything.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { readProof } from '../../activities/proof/proof-ingest.js';
import { auditStore } from '../../activities/proof/store-audit.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { checkRecord } from '../../core/proof-record.js';
import type { JobRecord } from '../../core/job-record.js';
import type { ProofRecord } from '../../core/proof-types.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { capDatabaseSize, openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { isStorageFull } from '../../store/store-errors.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { runningJob } from './job-store.contract.js';
import { jobBatch, newAccount } from './ledger-store.contract.js';

const EPOCH = 9000;
const KIB = 1024;
// A payload of about 250 bytes: a few hundred records fill a small cap, and their seal's tree needs pages.
const PADDING = 'Villa Borghese · '.repeat(15);

const entry = (id: string, epoch = EPOCH): NewRecord => ({
  id,
  h3_cell: '861e8050fffffff',
  epoch,
  collection_type: 'inference',
  payload_type: 'hive/inference',
  payload: { model: 'tinyllama', text: `${id} ${PADDING}` },
  written_at: new Date(epochWindow(epoch).start + 1000).toISOString(),
});

/** The error a call threw (it must throw). */
async function thrown(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return assert.fail('expected the write to fail');
}

const integrity = (db: SqliteDatabase): unknown => db.pragma('integrity_check', { simple: true });

/** Appends batches of `batch` records until the store refuses one; returns what was committed and the error. */
async function fill(store: ProofStore, signer: KeyPair, batch: number, prefix: string) {
  const committed: ProofRecord[] = [];
  for (let round = 0; round < 10_000; round++) {
    const entries = Array.from({ length: batch }, (_, i) => entry(`${prefix}-${round}-${i}`));
    try {
      committed.push(...(await store.appendRecords(signer, entries)));
    } catch (error) {
      return { committed, error, refused: entries };
    }
  }
  throw new Error('the capped store never filled up');
}

/** Seals `signer`'s epochs through EPOCH, as the auto-sealer would an hour later. */
const sealThroughEpoch = (store: ProofStore, signer: KeyPair) =>
  sealDueEpochs({
    store,
    signer,
    now: epochWindow(EPOCH + 1).start + 61_000,
    genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    graceMs: 60_000,
  });

describe('SQLite store at its size cap (STORE_MAX_MB, disk full)', function () {
  this.timeout(60_000);
  let dir: string;
  let path: string;
  const open: SqliteDatabase[] = [];
  const openDb = (maxBytes: number | undefined) => {
    const db = openSqlite(path, { maxBytes });
    open.push(db);
    return db;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-full-'));
    path = join(dir, 'geofabric.db');
  });
  afterEach(() => {
    for (const db of open.splice(0)) if (db.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the write that does not fit whole, keeps every committed record, and takes writes under a bigger cap', async () => {
    const signer = generateKeyPair();
    let db = openDb(640 * KIB);
    let store = createSqliteProofStore(db);

    // Batches of 40 until one is refused part-way through its inserts (there was room for some of it): the size
    // depends on the schema's pages, so a migration that adds tables or indexes may have to move it.
    const batches = await fill(store, signer, 40, 'r');
    const { error, refused } = batches;
    assert.ok(batches.committed.length >= 25, `only ${batches.committed.length} records fitted`);
    assert.equal((error as { code?: unknown }).code, 'SQLITE_FULL', String(error));
    assert.ok(isStorageFull(error));
    assert.ok(
      (db.pragma('page_count', { simple: true }) as number) <=
        (640 * KIB) / (db.pragma('page_size', { simple: true }) as number),
      'the file stays within the cap',
    );

    // Nothing of the refused batch was stored, and its seqs were not spent.
    for (const e of refused) assert.equal(await store.getRecord(e.id), null, `${e.id} was half-written`);
    // Single records fill what room is left, until one does not fit either; it is not stored.
    const singles = await fill(store, signer, 1, 's');
    assert.ok(isStorageFull(singles.error), String(singles.error));
    assert.equal(await store.getRecord(singles.refused[0]!.id), null);
    assert.ok(singles.committed.length > 0, 'there was room for part of the refused batch: it was refused whole');
    const committed = [...batches.committed, ...singles.committed];

    // A seal needs room for its tree: refused whole, the epoch stays unsealed and the records pending.
    assert.ok(isStorageFull(await thrown(() => sealThroughEpoch(store, signer))));
    assert.equal(await store.getSeal(signer.publicKey, EPOCH), null);
    assert.equal(await store.latestSeal(signer.publicKey), null);
    assert.equal(await store.sealedPath(committed[0]!), null);

    assert.equal(integrity(db), 'ok');
    for (const record of committed) {
      const stored = await store.getRecord(record.id);
      assert.deepEqual(stored, record);
      assert.ok(checkRecord(stored).ok, `record ${record.id} does not verify`);
    }
    assert.deepEqual(
      committed.map((r) => r.seq),
      committed.map((_, i) => i + 1),
    );

    // The operator raises STORE_MAX_MB and restarts: the same file takes writes again.
    db.close();
    db = openDb(4 * 1024 * KIB);
    store = createSqliteProofStore(db);
    assert.equal(integrity(db), 'ok');
    const [next] = await store.appendRecords(signer, [entry('after-restart')]);
    assert.equal(next?.seq, committed.length + 1, 'seqs stay gapless across the refused writes');
    const [seal] = await sealThroughEpoch(store, signer);
    assert.equal(seal?.record_count, committed.length + 1);

    // Every record is covered by the seal, and its proof verifies.
    for (const record of [...committed, next!]) {
      const bundle = await readProof(store, record.id);
      assert.equal(bundle?.verified, true, `the proof of ${record.id} does not verify`);
    }
    const audit = await auditStore(store, { sealedThrough: EPOCH });
    assert.deepEqual(audit.problems, []);
    assert.equal(audit.records_checked, committed.length + 1);
  });

  it('leaves no half-written job or ledger post on a full file shared with the proof store', async () => {
    const db = openDb(200 * KIB);
    const proofs = createSqliteProofStore(db);
    const jobs = createSqliteJobStore(db);
    const ledger = createSqliteLedgerStore(db);
    const { error } = await fill(proofs, generateKeyPair(), 10, 'p');
    assert.ok(isStorageFull(error));

    // A claim is one statement: claims go in until one is refused, and the refused one left no row.
    let refusedJob: JobRecord | undefined;
    for (let i = 0; i < 1000 && refusedJob === undefined; i++) {
      const job = runningJob();
      const failure = await jobs.claim(job).then(
        () => null,
        (e: unknown) => e,
      );
      if (failure !== null) {
        assert.ok(isStorageFull(failure), String(failure));
        refusedJob = job;
      }
    }
    assert.ok(refusedJob, 'the job table never filled up');
    assert.equal(await jobs.get(refusedJob.job_id), null);

    // A ledger post is one transaction over several entries: refused whole. Posts until one is refused.
    const accounts = { requester: newAccount(), worker: newAccount(), relay: newAccount(), platform: newAccount() };
    let refusedJobId: string | undefined;
    for (let i = 0; i < 1000 && refusedJobId === undefined; i++) {
      const jobId = `job-${i}`;
      const failure = await ledger.post(jobBatch(accounts, jobId)).then(
        () => null,
        (e: unknown) => e,
      );
      if (failure !== null) {
        assert.ok(isStorageFull(failure), String(failure));
        refusedJobId = jobId;
      }
    }
    assert.ok(refusedJobId !== undefined, 'the ledger never filled up');
    assert.ok((await ledger.jobEntries('job-0')).length > 0, 'the first posts went in');
    const stored = await ledger.jobEntries(refusedJobId);
    assert.deepEqual(stored, [], 'a refused post stored none of its entries');
    assert.equal(integrity(db), 'ok');
  });

  it('caps at floor(maxBytes / page_size) after the migrations, never below the pages in use', () => {
    // A cap below the empty schema still opens (migrations run uncapped), and takes no growth.
    const tiny = openDb(1);
    const inUse = tiny.pragma('page_count', { simple: true }) as number;
    assert.ok(inUse > 1, 'the schema was migrated');
    assert.equal(tiny.pragma('max_page_count', { simple: true }), inUse);
    tiny.close();

    const db = openDb(1024 * KIB + 4095);
    assert.equal(db.pragma('max_page_count', { simple: true }), 256);
    assert.throws(() => capDatabaseSize(db, 0), RangeError);
    assert.throws(() => capDatabaseSize(db, Number.NaN), RangeError);
    // Without a cap, SQLite's own default limit stays (far beyond any disk here).
    const uncapped = openDb(undefined);
    assert.ok((uncapped.pragma('max_page_count', { simple: true }) as number) > 1_000_000);
  });

  it('recognises a full store, and nothing else, as storage_full', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE t (x TEXT UNIQUE)');
      db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
      const full = (() => {
        try {
          db.prepare('INSERT INTO t VALUES (?)').run('x'.repeat(100_000));
        } catch (error) {
          return error;
        }
        return null;
      })();
      assert.ok(full instanceof Database.SqliteError);
      assert.ok(isStorageFull(full));

      const enospc = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      assert.ok(isStorageFull(enospc));

      db.pragma('max_page_count = 1000');
      db.prepare('INSERT INTO t VALUES (?)').run('a');
      const constraint = (() => {
        try {
          db.prepare('INSERT INTO t VALUES (?)').run('a');
        } catch (error) {
          return error;
        }
        return null;
      })();
      assert.ok(constraint instanceof Database.SqliteError);
      for (const other of [
        constraint,
        new Error('SQLITE_FULL'),
        { code: 'SQLITE_BUSY' },
        'SQLITE_FULL',
        null,
        undefined,
      ]) {
        assert.equal(isStorageFull(other), false, String(other));
      }
    } finally {
      db.close();
    }
  });
});
