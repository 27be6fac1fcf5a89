/**
 * A full store over HTTP (disk full): the gateway's proof store is a SQLite file capped as
 * STORE_MAX_MB caps it (openSqlite maxBytes). Signed pushes go in until the file is full; then the write that
 * does not fit answers 507 `storage_full` JSON, never a 500, nothing of it is stored (neither a record batch nor
 * a seal's tree), everything accepted before reads back, the operator's log says the store is full, and once
 * the cap is raised the refused items are accepted as they are.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway, type TestGateway, type TestResponse } from '../helpers/gateway.js';
import { startFakeRuntime } from '../helpers/fake-openai-runtime.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { inferenceEntry, push, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';

const worker = generateKeyPair();
const EPOCH = 7000;
const KIB = 1024;
const CAP_BYTES = 1024 * KIB;

interface LogLine {
  level: number;
  msg: string;
}

interface PageBody {
  records: ProofRecord[];
  next_cursor: string | null;
}

const padded = (id: string, epoch: number): NewRecord => {
  const entry = inferenceEntry(id, epoch);
  return { ...entry, payload: { ...(entry.payload as Record<string, unknown>), note: 'Villa Ada · '.repeat(20) } };
};

const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

describe('a full proof store over HTTP (507 storage_full)', function () {
  this.timeout(60_000);
  let dir: string;
  let db: SqliteDatabase | undefined;
  let gw: TestGateway | undefined;
  let sealedRecords: ProofRecord[];
  let fillRecords: ProofRecord[];
  let seals: Seal[];
  const lines: LogLine[] = [];

  /** A gateway whose proof store is the capped file (everything else in memory, as the helper builds it). */
  async function gatewayOnFile(maxBytes: number): Promise<{ gw: TestGateway; proofs: ProofStore; db: SqliteDatabase }> {
    const fileDb = openSqlite(join(dir, 'geofabric.db'), { maxBytes });
    const proofs = createSqliteProofStore(fileDb);
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
    // The central store's clock is in EPOCH + 2: the worker's records go with their seals.
    const gw = await startGateway({ proofs, logger, clock: () => timeIn(EPOCH + 2) });
    await registerWorker(gw.workers, worker);
    return { gw, proofs, db: fileDb };
  }

  before(async () => {
    // The worker's own store: one epoch of 300 records (its seal's tree takes more than a database page),
    // then many records in the next epoch to fill the central store with.
    const local = createSqliteProofStore(openSqlite(':memory:'));
    sealedRecords = await local.appendRecords(
      worker,
      Array.from({ length: 300 }, (_, i) => padded(`sealed-${i}`, EPOCH)),
    );
    fillRecords = [];
    for (const batch of chunks(
      Array.from({ length: 1000 }, (_, i) => padded(`fill-${i}`, EPOCH + 1)),
      500,
    )) {
      fillRecords.push(...(await local.appendRecords(worker, batch)));
    }
    seals = await sealThrough(local, worker, EPOCH + 1);
  });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-storage-full-'));
    lines.length = 0;
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    if (db?.open) db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 507 storage_full for the push that does not fit, stores none of it, and keeps serving reads', async () => {
    let started = await gatewayOnFile(CAP_BYTES);
    ({ gw, db } = started);
    const responses: TestResponse[] = [];
    const send = async (path: '/store/sync' | '/store/epochs', items: unknown[]) => {
      const res = await push(gw!, worker, path, items, path === '/store/sync' ? seals : undefined);
      responses.push(res);
      return res;
    };

    // The sealed epoch fits.
    for (const batch of chunks(sealedRecords, 100)) {
      const res = await send('/store/sync', batch);
      assert.equal(res.status, 200, res.text);
    }
    // Batches of 50 until one is refused, then single records until one is.
    const accepted = new Set(sealedRecords.map((r) => r.id));
    let refusedBatch: ProofRecord[] | undefined;
    let refusedSingle: ProofRecord | undefined;
    let next = 0;
    for (const batch of chunks(fillRecords, 50)) {
      const res = await send('/store/sync', batch);
      next += batch.length;
      if (res.status === 507) {
        refusedBatch = batch;
        break;
      }
      assert.equal(res.status, 200, res.text);
      for (const r of batch) accepted.add(r.id);
    }
    assert.ok(refusedBatch, 'the capped store never filled up');
    const full = responses[responses.length - 1]!;
    assert.equal(full.headers.get('content-type'), 'application/json; charset=utf-8');
    const body = full.body as { error: string; detail: string };
    assert.equal(body.error, 'storage_full');
    assert.match(body.detail, /full/);
    assert.ok(!/sqlite|SQLITE/.test(full.text), 'nothing internal reaches the client');
    // Pushes are retried in order: the records the refused batch carried go first, one by one.
    for (const record of [...refusedBatch, ...fillRecords.slice(next)]) {
      const res = await send('/store/sync', [record]);
      if (res.status === 507) {
        refusedSingle = record;
        break;
      }
      assert.equal(res.status, 200, res.text);
      accepted.add(record.id);
    }
    assert.ok(refusedSingle, 'single records never filled the store');
    assert.ok(
      refusedBatch.some((r) => accepted.has(r.id)),
      'there was room for part of the refused batch: it was refused whole, not cut',
    );

    // The worker's seal of the first epoch: its tree does not fit; no half seal is left.
    const sealPush = await send('/store/epochs', [seals[0]]);
    assert.equal(sealPush.status, 507, sealPush.text);
    assert.equal((sealPush.body as { error: string }).error, 'storage_full');

    // Never a 500, only 200s and 507s.
    assert.deepEqual(
      [...new Set(responses.map((r) => r.status))].sort(),
      [200, 507],
      responses.map((r) => `${r.status} ${r.text.slice(0, 200)}`).join('\n'),
    );

    // Reads go on: every accepted record, and nothing else, is stored; the refused ones are unknown.
    assert.equal((await gw.get('/health')).status, 200);
    const stored: ProofRecord[] = [];
    let cursor: string | null = null;
    do {
      const page: TestResponse = await gw.get(
        `/store/query?epoch_start=${EPOCH}&limit=1000${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      assert.equal(page.status, 200, page.text);
      stored.push(...(page.body as PageBody).records);
      cursor = (page.body as PageBody).next_cursor;
    } while (cursor !== null);
    assert.deepEqual(new Set(stored.map((r) => r.id)), accepted);
    const byId = new Map([...sealedRecords, ...fillRecords].map((r) => [r.id, r]));
    for (const record of stored) assert.deepEqual(record, byId.get(record.id));
    const missing = await gw.get(`/store/proof/${refusedSingle.id}`);
    assert.equal(missing.status, 404);
    assert.equal((missing.body as { error: string }).error, 'record_not_found');
    const pending = await gw.get(`/store/proof/${sealedRecords[0]!.id}`);
    assert.equal(pending.status, 200);
    assert.equal((pending.body as { pending?: boolean; seal: unknown }).pending, true, 'no seal was stored');
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');

    // The operator hears of it: one error line per refused write, not an "unhandled error".
    const full507 = responses.filter((r) => r.status === 507).length;
    assert.equal(lines.filter((l) => l.msg === 'store is full' && l.level === 50).length, full507);
    assert.equal(lines.filter((l) => l.msg === 'unhandled error').length, 0);

    // STORE_MAX_MB raised, the gateway restarted on the same file: the refused items go in as they are.
    await gw.close();
    db.close();
    started = await gatewayOnFile(4 * 1024 * KIB);
    ({ gw, db } = started);
    const retried = await push(gw, worker, '/store/sync', [refusedSingle]);
    assert.equal(retried.status, 200, retried.text);
    const sealed = await push(gw, worker, '/store/epochs', [seals[0]]);
    assert.equal(sealed.status, 200, sealed.text);
    const proof = await gw.get(`/store/proof/${sealedRecords[299]!.id}`);
    assert.equal((proof.body as { verified: boolean }).verified, true, proof.text);
  });

  it('fails a compute job cleanly when its proof record cannot be stored: no hang, no charge, a clean stop', async () => {
    const runtime = await startFakeRuntime('full');
    // The disk is full: every append fails as SQLite fails then (SQLITE_FULL), whatever its size.
    const memory = createSqliteProofStore(openSqlite(':memory:'));
    const full: ProofStore = {
      ...memory,
      appendRecords: () =>
        Promise.reject(Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' })),
    };
    const requester = generateKeyPair();
    const started = await startGateway({
      proofs: full,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: ['tinyllama', 'lfm2.5-1.2b-instruct'], prewarmModels: [] },
      logger: pino({ level: 'silent' }),
    });
    gw = started;
    try {
      const { body, headers } = signJob(requester, inferenceJob('a park in Rome', { nonce: 'full-1' }));
      const sent = Date.now();
      const res = await gw.post('/v1/compute', body, headers);
      // The step's awaited proof write is refused at once (not retried until the job timeout).
      assert.ok(Date.now() - sent < 5000, `answered after ${Date.now() - sent} ms`);
      assert.equal(res.status, 507, res.text);
      assert.equal((res.body as { error: string }).error, 'storage_full');
      assert.equal(await started.ledger.balance(requester.publicKey), 0, 'nothing was charged');
      const started2 = Date.now();
      await gw.close(); // no job is left waiting on the writer
      gw = undefined;
      assert.ok(Date.now() - started2 < 5000, 'the gateway stopped at once');
    } finally {
      await runtime.close();
    }
  });
});
