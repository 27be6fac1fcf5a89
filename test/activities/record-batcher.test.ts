import assert from 'node:assert/strict';
import { ServiceError } from '../../core/errors.js';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { createRecordBatcher, type RecordEntry } from '../../activities/proof/record-batcher.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { checkRecord } from '../../core/proof-record.js';
import type { ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';

const GENESIS = DEFAULT_EPOCH_GENESIS_MS;
const EPOCH = 7000;

const tileEntry = (id: string): RecordEntry => ({
  id,
  h3_cell: '861e8050fffffff',
  collection_type: 'tile',
  payload_type: 'tile/raster',
  payload: { style: 'dark', zoom: 12 },
});

describe('record batcher (the proof writer of serving paths)', () => {
  let db: SqliteDatabase;
  let store: ProofStore;
  let node: KeyPair;
  let now: number;
  const errors: unknown[] = [];
  const batcher = (options: { store?: ProofStore; maxBatch?: number; maxQueued?: number; flushMs?: number } = {}) =>
    createRecordBatcher({
      store: options.store ?? store,
      signer: node,
      clock: () => now,
      genesisMs: GENESIS,
      flushMs: options.flushMs ?? 5,
      ...(options.maxBatch === undefined ? {} : { maxBatch: options.maxBatch }),
      ...(options.maxQueued === undefined ? {} : { maxQueued: options.maxQueued }),
      onError: (error) => errors.push(error),
    });
  const stored = async () => (await store.queryRecords({ limit: 1000 })).records;

  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteProofStore(db);
    node = generateKeyPair();
    now = epochWindow(EPOCH, GENESIS).start + 10_000;
    errors.length = 0;
  });
  afterEach(() => db.close());

  it('writes an awaited record on the next turn of the event loop when it need not wait for neighbours (a worker)', async () => {
    const appends: number[] = [];
    const counting: ProofStore = {
      ...store,
      appendRecords: (signer, entries) => {
        appends.push(entries.length);
        return store.appendRecords(signer, entries);
      },
    };
    const nextTurn = () => new Promise((resolve) => setImmediate(resolve));
    const worker = createRecordBatcher({
      store: counting,
      signer: node,
      clock: () => now,
      genesisMs: GENESIS,
      awaitedWriteDelayMs: 0,
    });
    const both = [worker.write(tileEntry('w1')), worker.write(tileEntry('w2'))];
    await nextTurn();
    assert.deepEqual(appends, [2], 'the worker writes at once, with what came in the same turn');
    assert.deepEqual(
      (await Promise.all(both)).map((r) => r.id),
      ['w1', 'w2'],
    );
    await worker.close();

    // The option is the wait: one told to wait a minute has written nothing a moment later, and writes on close.
    appends.length = 0;
    const patient = createRecordBatcher({
      store: counting,
      signer: node,
      clock: () => now,
      genesisMs: GENESIS,
      awaitedWriteDelayMs: 60_000,
    });
    const later = patient.write(tileEntry('p'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(appends, []);
    await patient.close();
    assert.equal((await later).id, 'p');
  });

  it('records with the epoch and time of the moment they were queued, signed by the node', async () => {
    const writer = batcher({ flushMs: 60_000 });
    assert.deepEqual(writer.record(tileEntry('a')), { id: 'a', epoch: EPOCH });
    now += 3_600_000; // written after the hour turned: still the epoch it was served in
    writer.record(tileEntry('b'));
    assert.equal((await stored()).length, 0, 'nothing is written on the request path');
    await writer.flush();
    const records = await stored();
    assert.deepEqual(
      records.map((r) => [r.id, r.address.epoch, r.address.pk, r.seq]),
      [
        ['a', EPOCH, node.publicKey, 1],
        ['b', EPOCH + 1, node.publicKey, 2],
      ],
    );
    assert.equal(records[0]!.written_at, new Date(epochWindow(EPOCH, GENESIS).start + 10_000).toISOString());
    for (const r of records) assert.ok(checkRecord(r).ok);
    await writer.close();
  });

  it('writes by itself once the flush interval passes, and in batches of maxBatch', async () => {
    const writer = batcher({ maxBatch: 3, flushMs: 10 });
    for (const id of ['a', 'b', 'c', 'd']) writer.record(tileEntry(id));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal((await stored()).length, 4);
    await writer.close();
  });

  it('write() resolves with the stored record; the same id twice is one record', async () => {
    const writer = batcher();
    const [first, again] = await Promise.all([
      writer.write(tileEntry('job-1:tile')),
      writer.write(tileEntry('job-1:tile')),
    ]);
    assert.equal(first.id, 'job-1:tile');
    assert.deepEqual(again, first);
    assert.equal((await stored()).length, 1);
    await writer.close();
  });

  it('an awaited write does not wait for the flush interval, and takes queued records along', async () => {
    const writer = batcher({ flushMs: 60_000 });
    writer.record(tileEntry('queued-before'));
    const record = await writer.write(tileEntry('awaited')); // would time out if it waited a minute
    assert.equal(record.id, 'awaited');
    assert.deepEqual(
      (await stored()).map((r) => r.id),
      ['queued-before', 'awaited'],
    );
    await writer.close();
  });

  it('drops only the record that can never be stored; its neighbours are written', async () => {
    const writer = batcher({ flushMs: 60_000 });
    writer.record(tileEntry('good-1'));
    const bad = writer.write({ ...tileEntry('bad'), h3_cell: 'not-a-cell' });
    writer.record(tileEntry('good-2'));
    await writer.flush();
    await assert.rejects(bad, { code: 'invalid_record' });
    assert.deepEqual(
      (await stored()).map((r) => r.id),
      ['good-1', 'good-2'],
    );
    assert.equal(writer.dropped(), 1);
    await writer.close();
  });

  it('a record of an epoch sealed meanwhile is refused, not retried forever', async () => {
    const early = { ...tileEntry('early'), epoch: EPOCH, written_at: new Date(now).toISOString() };
    await store.appendRecords(node, [early]);
    const writer = batcher({ flushMs: 60_000 });
    const late = writer.write(tileEntry('late'));
    await sealDueEpochs({
      store,
      signer: node,
      now: epochWindow(EPOCH + 1, GENESIS).start + 61_000,
      genesisMs: GENESIS,
      graceMs: 60_000,
    });
    await writer.flush();
    await assert.rejects(late, { code: 'epoch_sealed' });
    await writer.close();
  });

  it('keeps the queue through a transient store failure and writes it on the next attempt', async () => {
    let failures = 1;
    const flaky: ProofStore = {
      ...store,
      appendRecords: async (signer, entries) => {
        if (failures-- > 0) throw new Error('SQLITE_BUSY: database is locked');
        return store.appendRecords(signer, entries);
      },
    };
    const writer = batcher({ store: flaky });
    const record = writer.write(tileEntry('survives'));
    await writer.flush();
    assert.equal((await stored()).length, 0);
    assert.match(String(errors[0]), /retrying/);
    await writer.flush();
    assert.equal((await record).id, 'survives');
    await writer.close();
  });

  it('fails awaited writes at once with storage_full when the store is full, and keeps the rest for later', async () => {
    let full = true;
    const capped: ProofStore = {
      ...store,
      appendRecords: async (signer, entries) => {
        if (full) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        return store.appendRecords(signer, entries);
      },
    };
    const writer = batcher({ store: capped });
    writer.record(tileEntry('served'));
    await assert.rejects(writer.write(tileEntry('awaited')), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.equal(error.code, 'storage_full');
      return true;
    });
    assert.equal((await stored()).length, 0);
    full = false; // space freed
    await writer.flush();
    assert.deepEqual(
      (await stored()).map((r) => r.id),
      ['served'],
    );
    await writer.close();
  });

  it('bounds its queue: past maxQueued new records are dropped and counted', async () => {
    const writer = batcher({ maxQueued: 2, flushMs: 60_000 });
    for (const id of ['a', 'b', 'c']) writer.record(tileEntry(id));
    assert.equal(writer.dropped(), 1);
    assert.match(String(errors[0]), /queue is full/);
    await writer.flush();
    assert.equal((await stored()).length, 2);
    await writer.close();
  });

  it('aggregates repeated serves of one key into one record per flush, listing every serve', async () => {
    const writer = batcher({ flushMs: 60_000 });
    const open = (id: string) => () => ({ ...tileEntry(id), payload: { style: 'dark', sha256: 'ab' } });
    const first = writer.aggregate('dark/12', open('agg-1'), { request_id: 'r1', cache: 'MISS' });
    now += 1000;
    const second = writer.aggregate('dark/12', open('unused'), { request_id: 'r2', cache: 'HIT' });
    writer.aggregate('osm/12', open('agg-2'), { request_id: 'r3', cache: 'HIT' });
    assert.deepEqual(first, { id: 'agg-1', epoch: EPOCH });
    assert.deepEqual(second, first, 'the second serve joins the open aggregate');
    writer.record(tileEntry('single'));
    await writer.flush();
    const records = await stored();
    assert.deepEqual(
      records.map((r) => r.id),
      ['single', 'agg-1', 'agg-2'],
    );
    const agg = records.find((r) => r.id === 'agg-1')!;
    assert.deepEqual(agg.payload, {
      style: 'dark',
      sha256: 'ab',
      serve_count: 2,
      first_served_at: new Date(now - 1000).toISOString(),
      last_served_at: new Date(now).toISOString(),
      serves: [
        { request_id: 'r1', cache: 'MISS' },
        { request_id: 'r2', cache: 'HIT' },
      ],
    });
    writer.aggregate('dark/12', open('agg-3'), { request_id: 'r4', cache: 'HIT' });
    await writer.flush();
    assert.ok((await store.getRecord('agg-3')) !== null, 'after a flush the next serve opens a new aggregate');
    await writer.close();
  });

  it('opens a new aggregate when the epoch turns or the aggregate is full', async () => {
    const writer = createRecordBatcher({
      store,
      signer: node,
      clock: () => now,
      genesisMs: GENESIS,
      flushMs: 60_000,
      maxServes: 2,
    });
    let n = 0;
    const open = () => ({ ...tileEntry(`agg-${++n}`), payload: {} });
    writer.aggregate('k', open, { i: 1 });
    writer.aggregate('k', open, { i: 2 }); // full: queued
    writer.aggregate('k', open, { i: 3 });
    now += 3_600_000;
    writer.aggregate('k', open, { i: 4 }); // next epoch
    await writer.flush();
    const records = await stored();
    assert.deepEqual(
      records.map((r) => [r.id, r.address.epoch, (r.payload as { serve_count: number }).serve_count]),
      [
        ['agg-1', EPOCH, 2],
        ['agg-2', EPOCH, 1],
        ['agg-3', EPOCH + 1, 1],
      ],
    );
    await writer.close();
  });

  it('close() writes what is queued, then refuses new writes', async () => {
    const writer = batcher({ flushMs: 60_000 });
    writer.record(tileEntry('queued'));
    await writer.close();
    assert.equal((await stored()).length, 1);
    await assert.rejects(writer.write(tileEntry('after')), /closed/);
  });
});
