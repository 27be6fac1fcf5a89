import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEFAULT_SEAL_GRACE_MS,
  lastDueEpoch,
  sealDueEpochs,
  startAutoSealer,
} from '../../activities/proof/epoch-sealer.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { ServiceError } from '../../core/errors.js';
import { hexToBytes } from '../../core/hex.js';
import { verifyInclusion } from '../../core/merkle/inclusion.js';
import { recordLeaf } from '../../core/proof-record.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { GENESIS_PREV_HASH, type Seal } from '../../core/proof-types.js';
import { checkSeal, checkSealChain, checkSealCoversRecords } from '../../core/seal.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';

const GENESIS = DEFAULT_EPOCH_GENESIS_MS;
const GRACE = DEFAULT_SEAL_GRACE_MS;
/** The instant `epoch` has closed plus the grace: the epoch before it is due. */
const dueAt = (epoch: number) => epochWindow(epoch, GENESIS).start + GRACE;

const entry = (id: string, epoch: number): NewRecord => ({
  id,
  h3_cell: '861e8050fffffff',
  epoch,
  collection_type: 'tile',
  payload_type: 'tile/vector',
  payload: { z: 12, id },
  written_at: new Date(epochWindow(epoch, GENESIS).start + 5000).toISOString(),
});

describe('epoch sealer', () => {
  let db: SqliteDatabase;
  let store: ProofStore;
  let node: KeyPair;
  const seal = (now: number) => sealDueEpochs({ store, signer: node, now, genesisMs: GENESIS, graceMs: GRACE });

  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteProofStore(db);
    node = generateKeyPair();
  });
  afterEach(async () => {
    await store.close();
    db.close();
  });

  it('knows which epoch is due: closed plus the grace', () => {
    assert.equal(lastDueEpoch(dueAt(10), GENESIS, GRACE), 9);
    assert.equal(lastDueEpoch(dueAt(10) - 1, GENESIS, GRACE), 8);
    assert.equal(lastDueEpoch(GENESIS, GENESIS, GRACE), -2);
    assert.ok(GRACE > 30_000, 'the grace exceeds the 30 s sync interval');
  });

  it('seals every due epoch in order, empty ones too, chained, and nothing twice', async () => {
    await store.appendRecords(node, [entry('a', 5), entry('b', 5), entry('c', 5)]);
    await store.appendRecords(node, [entry('d', 8)]);
    const made = await seal(dueAt(10));
    assert.deepEqual(
      made.map((s) => [s.epoch, s.record_count]),
      [
        [5, 3],
        [6, 0],
        [7, 0],
        [8, 1],
        [9, 0],
      ],
    );
    assert.equal(made[0]?.prev_epoch_hash, GENESIS_PREV_HASH);
    const stored = await store.sealsOf(node.publicKey);
    assert.deepEqual(stored, made);
    assert.deepEqual(checkSealChain(stored), []);
    for (const s of stored) {
      assert.ok(checkSeal(s).ok);
      assert.ok(checkSealCoversRecords(s, await store.recordsOfEpoch(node.publicKey, s.epoch)).ok);
      assert.equal(s.sealed_at, new Date(dueAt(10)).toISOString());
    }
    assert.deepEqual(await seal(dueAt(10) + 1000), []);
    await assert.rejects(
      store.appendRecords(node, [entry('late', 7)]),
      (error: unknown) => error instanceof ServiceError && error.code === 'epoch_sealed',
    );
    // Sealed epochs prove their records.
    const [d] = await store.recordsOfEpoch(node.publicKey, 8);
    assert.equal((await store.sealedPath(d!))?.leafIndex, 0);
  });

  it('waits for the grace after an epoch closes', async () => {
    await store.appendRecords(node, [entry('a', 5)]);
    assert.deepEqual(await seal(dueAt(6) - 1), []);
    assert.deepEqual(
      (await seal(dueAt(6))).map((s) => s.epoch),
      [5],
    );
  });

  it('never seals an epoch that has not ended, whatever the grace: epoch_open naming its end', async () => {
    await store.appendRecords(node, [entry('a', 5)]);
    const early = (graceMs: number) =>
      sealDueEpochs({ store, signer: node, now: dueAt(6) - 1, genesisMs: GENESIS, graceMs });
    await assert.rejects(
      early(-2 * 3_600_000),
      (error: unknown) =>
        error instanceof ServiceError &&
        error.code === 'epoch_open' &&
        error.message.includes(`ends at ${new Date(epochWindow(6, GENESIS).end).toISOString()}`),
    );
    assert.deepEqual(
      (await store.sealsOf(node.publicKey)).map((s) => s.epoch),
      [5],
      'the ended epoch is sealed, the open one is not',
    );
  });

  it('has nothing to seal for a node without records or seals', async () => {
    assert.deepEqual(await seal(dueAt(100)), []);
    assert.deepEqual(await store.writers(), []);
  });

  it('catches up on every epoch missed while the node was down, continuing the chain', async () => {
    await store.appendRecords(node, [entry('a', 5)]);
    const first = await seal(dueAt(6));
    await store.appendRecords(node, [entry('b', 8), entry('c', 8)]);
    const later = await seal(dueAt(12));
    assert.deepEqual(
      later.map((s) => s.epoch),
      [6, 7, 8, 9, 10, 11],
    );
    assert.equal(later[0]?.prev_epoch_hash, first[0]?.seal_hash);
    assert.deepEqual(checkSealChain(await store.sealsOf(node.publicKey)), []);
  });

  it('lets two sealers of one key race without breaking the chain', async () => {
    await store.appendRecords(node, [entry('a', 5), entry('b', 7)]);
    const [one, two] = await Promise.all([seal(dueAt(9)), seal(dueAt(9) + 1)]);
    const stored = await store.sealsOf(node.publicKey);
    assert.deepEqual(
      stored.map((s) => s.epoch),
      [5, 6, 7, 8],
    );
    assert.equal(one.length + two.length, 4, 'each epoch sealed once');
    assert.deepEqual(checkSealChain(stored), []);
  });

  it('retries an epoch whose records changed between reading and sealing', async () => {
    await store.appendRecords(node, [entry('a', 5)]);
    // A record lands right after the sealer read the epoch, once, and the store refuses the seal with
    // seal_mismatch (test/store/proof-store.test.ts shows SQLite doing so); the sealer reads again.
    let raced = false;
    const racing: ProofStore = {
      ...store,
      async sealEpoch(pk, epoch, sign) {
        if (!raced) {
          raced = true;
          await store.appendRecords(node, [entry('racer', 5)]);
          throw new ServiceError('seal_mismatch', 'epoch 5: a record landed');
        }
        return store.sealEpoch(pk, epoch, sign);
      },
    };
    const made = await sealDueEpochs({
      store: racing,
      signer: node,
      now: dueAt(6),
      genesisMs: GENESIS,
      graceMs: GRACE,
    });
    assert.equal(made[0]?.record_count, 2);
  });

  it('seals an epoch of more records than a tree page, with proofs that verify', async () => {
    const entries = Array.from({ length: 700 }, (_, i) => entry(`p${i}`, 5));
    const written = await store.appendRecords(node, entries);
    const [seal] = await sealDueEpochs({ store, signer: node, now: dueAt(6), genesisMs: GENESIS, graceMs: GRACE });
    assert.equal(seal?.record_count, 700);
    assert.equal(checkSealCoversRecords(seal!, await store.recordsOfEpoch(node.publicKey, 5)).ok, true);
    for (const record of [written[0]!, written[255]!, written[256]!, written[699]!]) {
      const path = await store.sealedPath(record);
      verifyInclusion(path!.leafIndex, 700, recordLeaf(record), path!.path, hexToBytes(seal!.merkle_root));
    }
  });

  describe('startAutoSealer', () => {
    it('seals on its timer, never overlapping runs, and stops cleanly', async () => {
      await store.appendRecords(node, [entry('a', 5)]);
      let now = dueAt(6);
      let running = 0;
      let overlapped = false;
      const runs: number[] = [];
      const watched: ProofStore = {
        ...store,
        async latestSeal(pk) {
          running += 1;
          overlapped ||= running > 1;
          runs.push(now);
          await sleep(15);
          running -= 1;
          return store.latestSeal(pk);
        },
      };
      const errors: unknown[] = [];
      const sealer = startAutoSealer({
        store: watched,
        signer: node,
        clock: () => now,
        genesisMs: GENESIS,
        graceMs: GRACE,
        intervalMs: 5,
        onError: (error) => errors.push(error),
      });
      while ((await store.sealsOf(node.publicKey)).length < 1) await sleep(5);
      now = dueAt(9);
      while ((await store.sealsOf(node.publicKey)).length < 4) await sleep(5);
      await sealer.stop();
      const after = runs.length;
      now = dueAt(20);
      await sleep(50);
      assert.equal(runs.length, after, 'no run after stop()');
      assert.equal(overlapped, false);
      assert.deepEqual(errors, []);
      assert.deepEqual(
        (await store.sealsOf(node.publicKey)).map((s: Seal) => s.epoch),
        [5, 6, 7, 8],
      );
    });

    it('reports a failed run and keeps going', async () => {
      await store.appendRecords(node, [entry('a', 5)]);
      let failures = 1;
      const flaky: ProofStore = {
        ...store,
        async latestSeal(pk) {
          if (failures-- > 0) throw new Error('database unavailable');
          return store.latestSeal(pk);
        },
      };
      const errors: unknown[] = [];
      const sealer = startAutoSealer({
        store: flaky,
        signer: node,
        clock: () => dueAt(6),
        genesisMs: GENESIS,
        intervalMs: 5,
        onError: (error) => errors.push(error),
      });
      while ((await store.sealsOf(node.publicKey)).length < 1) await sleep(5);
      await sealer.stop();
      assert.equal(errors.length, 1);
      assert.match(String(errors[0]), /database unavailable/);
    });
  });
});
