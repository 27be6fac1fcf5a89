import assert from 'node:assert/strict';
import { cellToChildren, cellToParent, gridDisk } from 'h3-js';
import { ServiceError } from '../../core/errors.js';
import { cellContains } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { verifyInclusion } from '../../core/merkle/inclusion.js';
import { merkleLevels, merkleLevelsOfPacked } from '../../core/merkle/tree.js';
import { recordLeaf, signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type CollectionType, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { createSealOverTree, createSealWithLevels, type EpochTree } from '../../core/seal.js';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { sha256Hex } from '../../core/hash.js';
import {
  sealLeafHash,
  sealLogAppend,
  sealLogFrontier,
  sealLogNodeKey,
  sealLogRoot,
  signSealHead,
} from '../../core/seal-log.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';

/** Opens a fresh, empty store; `cleanup` runs after each test (close the store, drop the database …). */
export type ProofStoreFactory = () => Promise<{ store: ProofStore; cleanup?: () => Promise<void> }>;

const ROME_5 = '851e8053fffffff';
const ROME_6 = '861e8050fffffff';
const ROME_9 = '891e8052a3bffff'; // inside ROME_5, not inside ROME_6
const ROME_6_9 = cellToChildren(ROME_6, 9)[5] as string; // inside ROME_6 and ROME_5
// A res-5 neighbour on the same base cell: its records share Rome's leading H3 bits but are not inside it.
const NEAR_5 = gridDisk(ROME_5, 1).find((c) => c !== ROME_5 && cellToParent(c, 0) === cellToParent(ROME_5, 0));
const NEAR_9 = cellToChildren(NEAR_5 as string, 9)[0] as string;
const PARIS_9 = cellToChildren('851fb467fffffff', 9)[0] as string;

const PAYLOADS: Record<CollectionType, NewRecord['payload_type']> = {
  inference: 'hive/inference',
  tile: 'tile/vector',
  compute_job: 'compute/job',
  imagery: 'imagery/ndvi',
  breadcrumb: 'gns/breadcrumb',
  telemetry: 'iot/telemetry',
};

function entry(id: string, epoch: number, cell = ROME_6_9, collection: CollectionType = 'inference'): NewRecord {
  return {
    id,
    h3_cell: cell,
    epoch,
    collection_type: collection,
    payload_type: PAYLOADS[collection],
    payload: { job: id, tokens: 42, nested: { list: [1, 2.5, 'three', null, true], text: 'Roma, è' } },
    written_at: '2026-01-01T05:00:01.000Z',
  };
}

const entries = (prefix: string, epoch: number, n: number, cell?: string): NewRecord[] =>
  Array.from({ length: n }, (_, i) => entry(`${prefix}-${i + 1}`, epoch, cell));

/** A seal of `epoch` over what the store holds, chained to the signer's latest seal, with its levels. */
async function sealOf(store: ProofStore, signer: KeyPair, epoch: number) {
  const latest = await store.latestSeal(signer.publicKey);
  return createSealWithLevels(signer.secretKey, {
    epoch,
    records: await store.recordsOfEpoch(signer.publicKey, epoch),
    prevSealHash: latest?.seal_hash ?? GENESIS_PREV_HASH,
    sealedAt: '2026-01-01T10:01:00.000Z',
  });
}

async function seal(store: ProofStore, signer: KeyPair, epoch: number): Promise<Seal> {
  const { seal: made, levels } = await sealOf(store, signer, epoch);
  assert.equal(await store.putSeal(made, levels), 'inserted');
  return made;
}

/** A record signed by `signer` outside any store, as a worker would push it to the central store. */
function signed(signer: KeyPair, id: string, epoch: number, seq: number, payload: unknown = { id }): ProofRecord {
  return signRecord(signer.secretKey, {
    version: 1,
    id,
    address: { h3_cell: ROME_6_9, epoch, pk: signer.publicKey },
    collection_type: 'inference',
    payload_type: 'hive/inference',
    payload,
    seq,
    written_at: '2026-01-01T05:00:01.000Z',
  });
}

const rejectsWith = (promise: Promise<unknown>, code: string) =>
  assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ServiceError, `expected a ServiceError, got ${String(error)}`);
    assert.equal(error.code, code, error.message);
    return true;
  });

async function allPages(store: ProofStore, query: Omit<Parameters<ProofStore['queryRecords']>[0], 'cursor'>) {
  const pages: ProofRecord[][] = [];
  let cursor: string | null = null;
  do {
    const page: { records: ProofRecord[]; nextCursor: string | null } = await store.queryRecords({
      ...query,
      ...(cursor === null ? {} : { cursor }),
    });
    pages.push(page.records);
    cursor = page.nextCursor;
  } while (cursor !== null && pages.length < 100);
  return pages;
}

const ids = (records: readonly ProofRecord[]) => records.map((r) => r.id);
const sortKey = (r: ProofRecord) =>
  `${String(r.address.epoch).padStart(6, '0')}:${r.address.pk}:${String(r.seq).padStart(6, '0')}`;

/** The behaviour every ProofStore adapter must show; the endpoints, sealer, sync agent and audit rely on it. */
export function describeProofStoreContract(name: string, factory: ProofStoreFactory): void {
  describe(`ProofStore contract: ${name}`, () => {
    let store: ProofStore;
    let cleanup: (() => Promise<void>) | undefined;
    let alice: KeyPair;
    let bob: KeyPair;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
      [alice, bob] = [generateKeyPair(), generateKeyPair()];
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    describe('appendRecords', () => {
      it('assigns each signer gapless seqs 1, 2, 3 … independently of other signers', async () => {
        const a1 = await store.appendRecords(alice, entries('a', 5, 3));
        const b1 = await store.appendRecords(bob, entries('b', 5, 2));
        const a2 = await store.appendRecords(alice, entries('a2', 5, 2));
        assert.deepEqual(
          [...a1, ...a2].map((r) => r.seq),
          [1, 2, 3, 4, 5],
        );
        assert.deepEqual(
          b1.map((r) => r.seq),
          [1, 2],
        );
        for (const record of [...a1, ...a2]) assert.equal(record.address.pk, alice.publicKey);
        assert.deepEqual(await store.getRecord('a2-2'), a2[1]);
      });

      it('returns an id already stored as stored, consuming no seq', async () => {
        const first = await store.appendRecords(alice, entries('a', 5, 2));
        const again = await store.appendRecords(alice, [
          { ...entry('a-1', 5), payload: { changed: true } },
          entry('a-3', 5),
          entry('a-3', 5),
        ]);
        assert.deepEqual(again[0], first[0]);
        assert.equal(again[1]?.seq, 3);
        assert.deepEqual(again[2], again[1]);
        assert.equal((await store.appendRecords(alice, [entry('a-4', 5)]))[0]?.seq, 4);
      });

      it("never adopts another writer's record: its own goes under an id only it can compute", async () => {
        // Bob's record arrived first (a push of the id Alice is about to write).
        const [planted] = await store.appendRecords(bob, [entry('job-1', 5)]);
        const [mine, again] = await store.appendRecords(alice, [entry('job-1', 5), entry('job-1', 5)]);
        assert.equal(mine?.address.pk, alice.publicKey);
        assert.match(mine!.id, /^job-1:w-[0-9a-f]{32}$/);
        assert.deepEqual(again, mine);
        assert.deepEqual(await store.getRecord('job-1'), planted, "Bob's record is untouched");
        assert.deepEqual(await store.getRecord(mine!.id), mine);
        // A retry finds the same record (no new seq); Bob cannot take Alice's scoped id first, nor is it his.
        assert.deepEqual(await store.appendRecords(alice, [entry('job-1', 5)]), [mine]);
        assert.equal(mine?.seq, 1);
        const [bobs] = await store.appendRecords(bob, [entry('job-1', 5)]);
        assert.deepEqual(bobs, planted);
      });

      it("answers a record of a writer the entry names as sharedWith as stored, writing nothing (a peer's reading)", async () => {
        const [peers] = await store.appendRecords(bob, [entry('reading-1', 5)]);
        const [answered] = await store.appendRecords(alice, [
          { ...entry('reading-1', 5), sharedWith: [bob.publicKey] },
        ]);
        assert.deepEqual(answered, peers);
        assert.equal((await store.recordsOfEpoch(alice.publicKey, 5)).length, 0, 'Alice wrote nothing');
        // Named for another key only, Bob's record is not adopted.
        const [own] = await store.appendRecords(alice, [
          { ...entry('reading-1', 5), sharedWith: [generateKeyPair().publicKey] },
        ]);
        assert.equal(own?.address.pk, alice.publicKey);
      });

      it('keeps seqs gapless under concurrent appends by one signer', async () => {
        const batches = await Promise.all(
          Array.from({ length: 5 }, (_, b) => store.appendRecords(alice, entries(`c${b}`, 5, 3))),
        );
        assert.deepEqual(
          batches
            .flat()
            .map((r) => r.seq)
            .sort((x, y) => x - y),
          Array.from({ length: 15 }, (_, i) => i + 1),
        );
        assert.equal((await store.recordsOfEpoch(alice.publicKey, 5)).length, 15);
      });

      it('gives a mixed-epoch batch contiguous seqs per epoch', async () => {
        const batch = await store.appendRecords(alice, [entry('x', 7), entry('y', 6), entry('z', 7)]);
        assert.deepEqual(
          batch.map((r) => [r.id, r.address.epoch, r.seq]),
          [
            ['x', 7, 2],
            ['y', 6, 1],
            ['z', 7, 3],
          ],
        );
      });

      it('writes nothing of a batch when one entry targets a sealed epoch', async () => {
        await store.appendRecords(alice, entries('a', 5, 2));
        await seal(store, alice, 5);
        await rejectsWith(store.appendRecords(alice, [entry('new-6', 6), entry('late-5', 5)]), 'epoch_sealed');
        assert.equal(await store.getRecord('new-6'), null);
        assert.equal(await store.getRecord('late-5'), null);
        // Earlier than the latest seal counts as sealed too: the chain never goes back.
        await rejectsWith(store.appendRecords(alice, [entry('ancient', 2)]), 'epoch_sealed');
        // Nothing was consumed: the next record takes seq 3.
        assert.equal((await store.appendRecords(alice, [entry('new-6', 6)]))[0]?.seq, 3);
        // Bob's epoch 5 is not Alice's.
        assert.equal((await store.appendRecords(bob, [entry('bob-5', 5)]))[0]?.seq, 1);
      });

      it('refuses an epoch before the signer latest record, which could never be sealed', async () => {
        await store.appendRecords(alice, [entry('a', 5), entry('b', 6)]);
        await rejectsWith(store.appendRecords(alice, [entry('c', 5)]), 'epoch_sealed');
        assert.equal((await store.appendRecords(alice, [entry('c', 6)]))[0]?.seq, 3);
      });

      it('refuses an entry that would not make a valid record, writing nothing', async () => {
        await rejectsWith(
          store.appendRecords(alice, [entry('ok', 5), entry('bad', 5, 'not-a-cell')]),
          'invalid_record',
        );
        await rejectsWith(
          store.appendRecords(alice, [{ ...entry('bad', 5), payload_type: 'tile/raster' }]),
          'invalid_record',
        );
        await rejectsWith(store.appendRecords(alice, [{ ...entry('bad', 5), epoch: -1 }]), 'invalid_record');
        assert.equal(await store.getRecord('ok'), null);
        assert.equal((await store.appendRecords(alice, [entry('ok', 5)]))[0]?.seq, 1);
      });
    });

    describe('ingestRecords', () => {
      it('classifies each record: inserted, duplicate, conflict, sealed epoch', async () => {
        const r1 = signed(alice, 'r1', 5, 1);
        const r2 = signed(alice, 'r2', 5, 2);
        assert.deepEqual(await store.ingestRecords([r1, r2]), [
          { id: 'r1', status: 'inserted' },
          { id: 'r2', status: 'inserted' },
        ]);
        const outcomes = await store.ingestRecords([
          r1,
          signed(alice, 'r2', 5, 2, { other: 'content' }),
          signed(alice, 'r3', 5, 2),
          signed(alice, 'r9', 9, 9), // a gap in seqs is fine here
        ]);
        assert.deepEqual(
          outcomes.map((o) => [o.id, o.status, o.status === 'rejected' ? o.error : undefined]),
          [
            ['r1', 'duplicate', undefined],
            ['r2', 'rejected', 'record_conflict'],
            ['r3', 'rejected', 'record_conflict'],
            ['r9', 'inserted', undefined],
          ],
        );
        assert.deepEqual(await store.getRecord('r2'), r2);
        assert.equal(await store.getRecord('r3'), null);

        await seal(store, alice, 5);
        const late = await store.ingestRecords([signed(alice, 'r-late', 5, 3), r1]);
        assert.equal(late[0]?.status, 'rejected');
        assert.equal(late[0]?.status === 'rejected' && late[0].error, 'epoch_sealed');
        // A resent record of a sealed epoch is still a harmless duplicate (its acknowledgement was lost).
        assert.deepEqual(late[1], { id: 'r1', status: 'duplicate' });
        assert.equal(await store.getRecord('r-late'), null);
      });

      it('inserts a record pushed by two concurrent batches exactly once', async () => {
        const batch = Array.from({ length: 20 }, (_, i) => signed(bob, `p${i}`, 1, i + 1));
        const [one, two] = await Promise.all([store.ingestRecords(batch), store.ingestRecords(batch)]);
        for (let i = 0; i < batch.length; i++) {
          assert.deepEqual([one[i]?.status, two[i]?.status].sort(), ['duplicate', 'inserted'], `record ${i}`);
        }
        assert.equal((await store.recordsOfEpoch(bob.publicKey, 1)).length, 20);
      });

      it('treats the same id twice in one batch as insert then duplicate', async () => {
        const r1 = signed(bob, 'twice', 1, 1);
        assert.deepEqual(
          (await store.ingestRecords([r1, r1])).map((o) => o.status),
          ['inserted', 'duplicate'],
        );
      });
    });

    describe('reading records', () => {
      it('returns a record exactly as written, payload intact', async () => {
        const [written] = await store.appendRecords(alice, [
          {
            ...entry('deep', 3),
            payload: { a: [{ b: 'ü 🛰', c: 1e-7, d: -12.5, e: null, f: [] }], g: {}, h: 9007199254740991 },
          },
        ]);
        assert.deepEqual(await store.getRecord('deep'), written);
        assert.equal(await store.getRecord('missing'), null);
        const pushed = signed(bob, 'pushed', 4, 1, ['x', { y: [true, false] }]);
        await store.ingestRecords([pushed]);
        assert.deepEqual(await store.getRecord('pushed'), pushed);
      });

      it('finds records by H3 containment, never by string equality', async () => {
        await store.appendRecords(alice, [
          entry('rome-6-9', 5, ROME_6_9),
          entry('rome-9', 5, ROME_9),
          entry('rome-6', 5, ROME_6),
          entry('rome-5', 5, ROME_5),
          entry('near', 5, NEAR_9),
          entry('paris', 5, PARIS_9),
        ]);
        const find = async (cell: string) => ids((await store.queryRecords({ cell, limit: 100 })).records).sort();
        assert.deepEqual(await find(ROME_5), ['rome-5', 'rome-6', 'rome-6-9', 'rome-9']);
        assert.deepEqual(await find(ROME_6), ['rome-6', 'rome-6-9']);
        assert.deepEqual(await find(ROME_6_9), ['rome-6-9']);
        assert.deepEqual(await find(ROME_9), ['rome-9']);
        assert.deepEqual(await find(NEAR_5 as string), ['near']);
        const base = cellToParent(ROME_5, 0); // Paris may share Rome's base cell: containment decides
        assert.deepEqual(await find(base), [
          'near',
          ...(cellContains(base, PARIS_9) ? ['paris'] : []),
          'rome-5',
          'rome-6',
          'rome-6-9',
          'rome-9',
        ]);
        assert.deepEqual(await find(cellToParent(PARIS_9, 3)), ['paris']);
        assert.deepEqual(await find(cellToChildren(ROME_6_9, 10)[0] as string), []);
      });

      it('filters by inclusive epoch range and by collection', async () => {
        await store.appendRecords(alice, [
          entry('e3', 3),
          entry('e4', 4, ROME_6_9, 'tile'),
          entry('e5', 5),
          entry('e6', 6, ROME_6_9, 'tile'),
        ]);
        const find = async (query: Partial<Parameters<ProofStore['queryRecords']>[0]>) =>
          ids((await store.queryRecords({ limit: 100, ...query })).records);
        assert.deepEqual(await find({ epochStart: 4, epochEnd: 5 }), ['e4', 'e5']);
        assert.deepEqual(await find({ epochStart: 5 }), ['e5', 'e6']);
        assert.deepEqual(await find({ epochEnd: 3 }), ['e3']);
        assert.deepEqual(await find({ collection: 'tile' }), ['e4', 'e6']);
        assert.deepEqual(await find({ collection: 'tile', epochStart: 5, cell: ROME_5 }), ['e6']);
        assert.deepEqual(await find({ collection: 'imagery' }), []);
      });

      it('pages through every match exactly once in (epoch, pk, seq) order, limit honoured', async () => {
        const carol = generateKeyPair();
        for (const epoch of [2, 3]) {
          for (const [signer, n] of [
            [alice, 4],
            [bob, 3],
            [carol, 5],
          ] as const) {
            await store.appendRecords(signer, entries(`${signer.publicKey.slice(0, 6)}-${epoch}`, epoch, n));
          }
        }
        await store.appendRecords(alice, [entry('far-away', 3, PARIS_9)]);
        const expected = [...(await store.queryRecords({ limit: 1000 })).records];
        assert.equal(expected.length, 25);
        assert.deepEqual(ids(expected), ids([...expected].sort((a, b) => sortKey(a).localeCompare(sortKey(b)))));

        const pages = await allPages(store, { limit: 5 });
        assert.deepEqual(
          pages.map((p) => p.length),
          [5, 5, 5, 5, 5],
        );
        assert.deepEqual(ids(pages.flat()), ids(expected));

        const rome = await allPages(store, { limit: 7, cell: ROME_5, epochStart: 3 });
        assert.deepEqual(
          rome.map((p) => p.length),
          [7, 5],
        );
        assert.deepEqual(ids(rome.flat()), ids(expected.filter((r) => r.address.epoch === 3 && r.id !== 'far-away')));
      });

      it('rejects a cursor it did not issue and a malformed query', async () => {
        await rejectsWith(store.queryRecords({ limit: 5, cursor: 'bm90LWEtY3Vyc29y' }), 'invalid_request');
        await rejectsWith(store.queryRecords({ limit: 5, cursor: '!!' }), 'invalid_request');
        await rejectsWith(store.queryRecords({ limit: 5, cell: '851e8053ffffffg' }), 'invalid_cell');
        await assert.rejects(store.queryRecords({ limit: 0 }), RangeError);
      });

      it('refuses to pack the leaves of an epoch with a seq gap (ingested records)', async () => {
        await store.ingestRecords([signed(alice, 'g1', 5, 1), signed(alice, 'g3', 5, 3)]);
        await assert.rejects(store.epochLeafHashes(alice.publicKey, 5), /seqs 2\.\.2 are missing/);
      });

      it('lists the records and leaves of an epoch in seq order, and where a writer starts', async () => {
        assert.equal(await store.firstRecordEpoch(alice.publicKey), null);
        await store.appendRecords(alice, [entry('a', 4), entry('b', 5), entry('c', 5)]);
        await store.appendRecords(bob, [entry('d', 5)]);
        await store.appendRecords(alice, [entry('e', 5), entry('f', 6)]);
        const epoch5 = await store.recordsOfEpoch(alice.publicKey, 5);
        assert.deepEqual(
          epoch5.map((r) => [r.id, r.seq]),
          [
            ['b', 2],
            ['c', 3],
            ['e', 4],
          ],
        );
        assert.deepEqual(
          await store.epochLeaves(alice.publicKey, 5),
          epoch5.map((r) => ({ seq: r.seq, record_hash: r.record_hash })),
        );
        assert.deepEqual(await store.recordsOfEpoch(alice.publicKey, 7), []);
        // Packed for sealing: the same seal and levels as over the records, byte for byte.
        const packed = await store.epochLeafHashes(alice.publicKey, 5);
        assert.equal(packed.firstSeq, 2);
        assert.deepEqual(packed.leaves, merkleLevels(epoch5.map(recordLeaf))[0]);
        const input = { epoch: 5, prevSealHash: GENESIS_PREV_HASH, sealedAt: '2026-01-01T10:01:00.000Z' };
        const levels = merkleLevelsOfPacked(packed.leaves);
        const tree = { count: 3, firstSeq: packed.firstSeq, root: levels[levels.length - 1]! };
        assert.deepEqual(
          { seal: createSealOverTree(alice.secretKey, { ...input, tree }), levels },
          createSealWithLevels(alice.secretKey, { ...input, records: epoch5 }),
        );
        assert.deepEqual(await store.epochLeafHashes(alice.publicKey, 7), {
          firstSeq: null,
          leaves: new Uint8Array(0),
        });
        assert.equal(await store.firstRecordEpoch(alice.publicKey), 4);
        assert.equal(await store.firstRecordEpoch(bob.publicKey), 5);
      });
    });

    describe('sealEpoch', () => {
      const at = { prevSealHash: GENESIS_PREV_HASH, sealedAt: '2026-01-01T10:01:00.000Z' };

      it('seals byte for byte as createSealWithLevels + putSeal, with proofs from its stored tree', async () => {
        // 600 records: leaf pages of 256 nodes, a partial last page and an odd node promoted.
        await store.appendRecords(alice, entries('s', 5, 300));
        await store.appendRecords(alice, entries('t', 5, 300));
        const records = await store.recordsOfEpoch(alice.publicKey, 5);
        const expected = createSealWithLevels(alice.secretKey, { epoch: 5, records, ...at });
        const { seal: made, status } = await store.sealEpoch(alice.publicKey, 5, (tree) =>
          createSealOverTree(alice.secretKey, { epoch: 5, tree, ...at }),
        );
        assert.equal(status, 'inserted');
        assert.deepEqual(made, expected.seal);
        assert.deepEqual(await store.getSeal(alice.publicKey, 5), made);
        const root = hexToBytes(made.merkle_root);
        for (const record of [records[0]!, records[255]!, records[256]!, records[511]!, records[599]!]) {
          const path = await store.sealedPath(record);
          assert.equal(path?.leafIndex, record.seq - 1);
          verifyInclusion(path!.leafIndex, 600, recordLeaf(record), path!.path, root);
        }
      });

      it('seals an empty epoch, and returns a stored seal without asking for another', async () => {
        const sign = (epoch: number) => (tree: EpochTree) =>
          createSealOverTree(alice.secretKey, { epoch, tree, ...at });
        const empty = await store.sealEpoch(alice.publicKey, 3, sign(3));
        assert.equal(empty.status, 'inserted');
        assert.equal(empty.seal.record_count, 0);
        assert.equal(
          empty.seal.merkle_root,
          createSealWithLevels(alice.secretKey, { epoch: 3, records: [], ...at }).seal.merkle_root,
        );
        const again = await store.sealEpoch(alice.publicKey, 3, () => assert.fail('signed twice'));
        assert.deepEqual(again, { seal: empty.seal, status: 'exists' });
        await rejectsWith(store.appendRecords(alice, [entry('late', 3)]), 'epoch_sealed');
      });

      it('refuses a seal that is not over the tree it built, and a seq gap, storing nothing', async () => {
        await store.appendRecords(alice, entries('w', 5, 3));
        await store.appendRecords(bob, entries('b', 5, 2));
        // Bob's tree signed as if it were Alice's epoch 6: wrong writer and epoch.
        await rejectsWith(
          store.sealEpoch(bob.publicKey, 5, (tree) => createSealOverTree(alice.secretKey, { epoch: 6, tree, ...at })),
          'invalid_seal',
        );
        await rejectsWith(
          store.sealEpoch(alice.publicKey, 5, (tree) =>
            createSealOverTree(alice.secretKey, { epoch: 5, tree: { ...tree, root: new Uint8Array(32) }, ...at }),
          ),
          'invalid_seal',
        );
        assert.equal(await store.getSeal(alice.publicKey, 5), null);
        assert.equal(await store.getSeal(bob.publicKey, 5), null);
        const carol = generateKeyPair();
        await store.ingestRecords([signed(carol, 'g1', 5, 1), signed(carol, 'g3', 5, 3)]);
        await assert.rejects(
          store.sealEpoch(carol.publicKey, 5, (tree) => createSealOverTree(carol.secretKey, { epoch: 5, tree, ...at })),
          /seqs 2\.\.2 are missing/,
        );
        assert.equal(await store.getSeal(carol.publicKey, 5), null);
        // Nothing half-stored: a proper seal afterwards goes in.
        const { status } = await store.sealEpoch(alice.publicKey, 5, (tree) =>
          createSealOverTree(alice.secretKey, { epoch: 5, tree, ...at }),
        );
        assert.equal(status, 'inserted');
      });
    });

    describe('seals', () => {
      it('proves every record of a 37-record epoch against the seal root from stored levels', async () => {
        await store.appendRecords(alice, entries('pre', 2, 3));
        await seal(store, alice, 2);
        const records = await store.appendRecords(alice, entries('r', 3, 37));
        const made = await seal(store, alice, 3);
        assert.equal(made.record_count, 37);
        const root = hexToBytes(made.merkle_root);
        for (const [i, record] of records.entries()) {
          const sealed = await store.sealedPath(record);
          assert.ok(sealed, `record ${record.id} has a sealed path`);
          assert.deepEqual(sealed.seal, made);
          assert.equal(sealed.leafIndex, i);
          verifyInclusion(sealed.leafIndex, made.record_count, recordLeaf(record), sealed.path, root);
          for (const hash of sealed.path) assert.equal(Object.getPrototypeOf(hash), Uint8Array.prototype);
        }
        // A forged record at a real position gets a path that does not verify.
        const forged = { ...(records[4] as ProofRecord), record_hash: 'ab'.repeat(32) };
        const path = await store.sealedPath(forged);
        assert.ok(path);
        assert.throws(() => verifyInclusion(path.leafIndex, 37, recordLeaf(forged), path.path, root));
      });

      it('has no path for a record of an unsealed epoch', async () => {
        const [record] = await store.appendRecords(alice, [entry('open', 8)]);
        assert.equal(await store.sealedPath(record as ProofRecord), null);
      });

      it('stores empty epochs and a chain, newest last', async () => {
        await store.appendRecords(alice, [entry('a', 1)]);
        const s1 = await seal(store, alice, 1);
        const s2 = await seal(store, alice, 2);
        const s3 = await seal(store, alice, 3);
        assert.equal(s2.record_count, 0);
        assert.equal(s2.prev_epoch_hash, s1.seal_hash);
        assert.deepEqual(await store.getSeal(alice.publicKey, 2), s2);
        assert.equal(await store.getSeal(alice.publicKey, 4), null);
        assert.deepEqual(await store.latestSeal(alice.publicKey), s3);
        assert.equal(await store.latestSeal(bob.publicKey), null);
        assert.deepEqual(await store.sealsOf(alice.publicKey), [s1, s2, s3]);
        assert.deepEqual(await store.sealsOf(bob.publicKey), []);
      });

      it('answers duplicate for the same seal and seal_mismatch for another one of the same epoch', async () => {
        await store.appendRecords(alice, entries('a', 4, 3));
        const { seal: first, levels } = await sealOf(store, alice, 4);
        assert.equal(await store.putSeal(first, levels), 'inserted');
        assert.equal(await store.putSeal(first, levels), 'duplicate');
        const other = createSealWithLevels(alice.secretKey, {
          epoch: 4,
          records: await store.epochLeaves(alice.publicKey, 4),
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: '2026-01-01T10:02:00.000Z',
        });
        await rejectsWith(store.putSeal(other.seal, other.levels), 'seal_mismatch');
        assert.deepEqual(await store.getSeal(alice.publicKey, 4), first);
      });

      it('refuses a seal that does not cover exactly the records it holds', async () => {
        const records = await store.appendRecords(alice, entries('a', 4, 5));
        const short = createSealWithLevels(alice.secretKey, {
          epoch: 4,
          records: records.slice(0, 4),
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: '2026-01-01T10:02:00.000Z',
        });
        await rejectsWith(store.putSeal(short.seal, short.levels), 'seal_mismatch');
        const empty = createSealWithLevels(alice.secretKey, {
          epoch: 4,
          records: [],
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: '2026-01-01T10:02:00.000Z',
        });
        await rejectsWith(store.putSeal(empty.seal, empty.levels), 'seal_mismatch');
        // A writer sealing an epoch another store holds no records of: nothing to cover.
        const bobs = createSealWithLevels(bob.secretKey, {
          epoch: 4,
          records: [signed(bob, 'elsewhere', 4, 1)],
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: '2026-01-01T10:02:00.000Z',
        });
        await rejectsWith(store.putSeal(bobs.seal, bobs.levels), 'seal_mismatch');
        assert.equal(await store.getSeal(alice.publicKey, 4), null);
        assert.equal(await store.getSeal(bob.publicKey, 4), null);
        // Records keep arriving while unsealed.
        assert.equal((await store.appendRecords(alice, [entry('a-6', 4)]))[0]?.seq, 6);
      });

      it('refuses levels that are not the seal tree', async () => {
        const records = await store.appendRecords(alice, entries('a', 4, 5));
        const { seal: made, levels } = await sealOf(store, alice, 4);
        await rejectsWith(store.putSeal(made, levels.slice(1)), 'invalid_seal');
        await rejectsWith(store.putSeal(made, merkleLevels(records.slice(0, 4).map(recordLeaf))), 'invalid_seal');
        const wrongRoot = levels.map((level) => level.slice());
        const top = wrongRoot[wrongRoot.length - 1] as Uint8Array;
        top[0] = (top[0] as number) ^ 1;
        await rejectsWith(store.putSeal(made, wrongRoot), 'invalid_seal');
        assert.equal(await store.getSeal(alice.publicKey, 4), null);
      });

      it('never keeps a seal beside a record it does not cover when both race in', async () => {
        let seq = 0;
        for (let epoch = 1; epoch <= 8; epoch++) {
          const base = [signed(alice, `b${epoch}-1`, epoch, ++seq), signed(alice, `b${epoch}-2`, epoch, ++seq)];
          await store.ingestRecords(base);
          const latest = await store.latestSeal(alice.publicKey);
          const made = createSealWithLevels(alice.secretKey, {
            epoch,
            records: base,
            prevSealHash: latest?.seal_hash ?? GENESIS_PREV_HASH,
            sealedAt: '2026-01-01T10:01:00.000Z',
          });
          const racer = signed(alice, `late${epoch}`, epoch, ++seq);
          await Promise.allSettled([store.putSeal(made.seal, made.levels), store.ingestRecords([racer])]);
          const stored = await store.getSeal(alice.publicKey, epoch);
          const held = await store.recordsOfEpoch(alice.publicKey, epoch);
          if (stored !== null) assert.equal(held.length, stored.record_count, `epoch ${epoch}`);
          if (stored === null) {
            // The racer won: seal the epoch as it now stands, so the next epoch chains on.
            const again = createSealWithLevels(alice.secretKey, {
              epoch,
              records: held,
              prevSealHash: latest?.seal_hash ?? GENESIS_PREV_HASH,
              sealedAt: '2026-01-01T10:01:00.000Z',
            });
            assert.equal(await store.putSeal(again.seal, again.levels), 'inserted');
          }
        }
      });

      it('lists every writer with records or seals', async () => {
        const carol = generateKeyPair();
        await store.appendRecords(alice, [entry('a', 1)]);
        await store.ingestRecords([signed(bob, 'b', 1, 1)]);
        await seal(store, carol, 1);
        assert.deepEqual(await store.writers(), [alice.publicKey, bob.publicKey, carol.publicKey].sort());
      });
    });

    describe('seal log (docs/protocol.md §15.4)', () => {
      const leaf = (i: number) => sealLeafHash(sha256Hex(`seal ${i}`));
      const headOver = (signer: KeyPair, sealer: string, leaves: Uint8Array[]) =>
        signSealHead(signer.secretKey, { sealerPk: sealer, firstEpoch: 7, leaves });

      it('keeps the nodes and heads appended, counts a leaf once stored, and stores nothing twice on a retry', async () => {
        const node = generateKeyPair();
        assert.equal(await store.sealLogState(alice.publicKey), null);
        const leaves = Array.from({ length: 5 }, (_, i) => leaf(i));
        const first = sealLogAppend(0, leaves.slice(0, 3), { node: () => assert.fail('nothing is read') });
        const head3 = headOver(node, alice.publicKey, leaves.slice(0, 3));
        await store.appendSealLog(alice.publicKey, 7, first, head3);
        await store.appendSealLog(alice.publicKey, 7, first, head3); // a retry
        assert.deepEqual(await store.sealLogState(alice.publicKey), { firstEpoch: 7, size: 3 });
        const frontier = await store.sealLogNodes(alice.publicKey, sealLogFrontier(3));
        assert.deepEqual([...frontier.keys()].sort(), ['0:2', '1:0']);
        const more = sealLogAppend(3, leaves.slice(3), {
          node: (l, i) => frontier.get(sealLogNodeKey(l, i)) ?? assert.fail(`no node ${l}:${i}`),
        });
        const head5 = headOver(node, alice.publicKey, leaves);
        await store.appendSealLog(alice.publicKey, 7, more, head5);
        assert.deepEqual(await store.sealLogState(alice.publicKey), { firstEpoch: 7, size: 5 });
        assert.deepEqual(await store.sealHead(alice.publicKey, node.publicKey), head5);
        assert.deepEqual(await store.sealHead(alice.publicKey, node.publicKey, 3), head3);
        assert.equal(await store.sealHead(alice.publicKey, bob.publicKey), null);
        assert.equal(await store.sealLogState(bob.publicKey), null);
        const all = await store.sealLogNodes(alice.publicKey, [
          { level: 2, index: 0 },
          { level: 0, index: 4 },
          { level: 3, index: 0 },
        ]);
        assert.deepEqual([...all.keys()].sort(), ['0:4', '2:0']);
        assert.equal(
          bytesToHex(sealLogRoot({ node: (l, i) => all.get(sealLogNodeKey(l, i)) ?? assert.fail() }, 4)),
          bytesToHex(sealLogRoot(leaves, 4)),
        );
      });
    });

    describe('sync bookkeeping', () => {
      it('lists unsynced records and seals oldest first until they are marked', async () => {
        await store.appendRecords(bob, entries('b', 1, 2));
        await store.appendRecords(alice, entries('a', 1, 3));
        await store.ingestRecords([signed(bob, 'b-pushed', 2, 3)]);
        const s1 = await seal(store, alice, 1);
        const s2 = await seal(store, alice, 2);
        const sb = await seal(store, bob, 1);

        const unsynced = await store.unsyncedRecords(100);
        const byWriter = (pk: string) => unsynced.filter((r) => r.address.pk === pk).map((r) => r.seq);
        assert.equal(unsynced.length, 6);
        assert.deepEqual(byWriter(alice.publicKey), [1, 2, 3]);
        assert.deepEqual(byWriter(bob.publicKey), [1, 2, 3]);
        assert.deepEqual(
          ids(unsynced),
          ids([...unsynced].sort((a, b) => (a.address.pk + String(a.seq)).localeCompare(b.address.pk + String(b.seq)))),
        );
        assert.equal((await store.unsyncedRecords(4)).length, 4);

        await store.markRecordsSynced(['a-1', 'a-2', 'b-1', 'unknown']);
        assert.deepEqual(ids(await store.unsyncedRecords(100)).sort(), ['a-3', 'b-2', 'b-pushed']);
        await store.markRecordsSynced(['a-1']); // marking twice is harmless
        await store.markRecordsSynced(['a-3', 'b-2', 'b-pushed']);
        assert.deepEqual(await store.unsyncedRecords(100), []);
        assert.ok(await store.getRecord('a-3'), 'a synced record stays readable');

        const seals = await store.unsyncedSeals(100);
        assert.equal(seals.length, 3);
        assert.deepEqual(
          seals.filter((s) => s.sealer_pk === alice.publicKey),
          [s1, s2],
        );
        assert.deepEqual(
          seals.filter((s) => s.sealer_pk === bob.publicKey),
          [sb],
        );
        assert.equal((await store.unsyncedSeals(1)).length, 1);
        await store.markSealsSynced([{ sealer_pk: alice.publicKey, epoch: 1 }]);
        assert.deepEqual(
          (await store.unsyncedSeals(100)).map((s) => s.seal_hash).sort(),
          [s2.seal_hash, sb.seal_hash].sort(),
        );
        await store.markSealsSynced([s2, sb]);
        assert.deepEqual(await store.unsyncedSeals(100), []);
        assert.deepEqual(await store.getSeal(alice.publicKey, 1), s1);
      });
    });
  });
}
