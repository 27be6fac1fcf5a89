import assert from 'node:assert/strict';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { keyPairFromSecret, signMessage } from '../../core/identity.js';
import { inclusionProofFromLevels, verifyInclusion } from '../../core/merkle/inclusion.js';
import { EMPTY_ROOT, merkleRoot } from '../../core/merkle/tree.js';
import { checkRecord, recordHash, recordLeaf, signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import {
  checkSeal,
  checkSealChain,
  checkSealCoversRecords,
  createSeal,
  createSealWithLevels,
  sealHash,
  sealSchema,
} from '../../core/seal.js';

const sealer = keyPairFromSecret('3'.repeat(64));
const other = keyPairFromSecret('4'.repeat(64));
const ROME = '861e8050fffffff';
const EPOCH = 5;
const SEALED_AT = '2026-01-01T06:00:30.000Z';
const EMPTY_ROOT_HEX = bytesToHex(EMPTY_ROOT);

const recordOf = (seq: number, epoch = EPOCH, key = sealer): ProofRecord =>
  signRecord(key.secretKey, {
    version: 1,
    id: `job-${seq}:step-1`,
    address: { h3_cell: ROME, epoch, pk: key.publicKey },
    collection_type: 'compute_job',
    payload_type: 'compute/job',
    payload: { job: seq, status: 'complete' },
    seq,
    written_at: '2026-01-01T05:10:00.000Z',
  });

/** Seqs 11..15: a writer's seqs continue across epochs, so an epoch rarely starts at 1. */
const RECORDS = [11, 12, 13, 14, 15].map((seq) => recordOf(seq));

const sealOf = (records: readonly ProofRecord[], epoch = EPOCH, prevSealHash = GENESIS_PREV_HASH): Seal =>
  createSeal(sealer.secretKey, { epoch, records, prevSealHash, sealedAt: SEALED_AT });

/** Re-hashes and re-signs a seal after an edit, as its sealer would. */
const resign = (seal: Seal, key = sealer): Seal => {
  const hash = sealHash(seal);
  return { ...seal, seal_hash: hash, signature: signMessage(key.secretKey, hash) };
};

function failure(result: { ok: boolean; error?: string; detail?: string }, error: string): string {
  assert.equal(result.ok, false, 'expected a failure');
  assert.equal(result.error, error);
  return result.detail ?? '';
}

describe('core/seal', () => {
  describe('createSeal and checkSeal', () => {
    it('round-trips: the seal covers the records in seq order and passes checkSeal', () => {
      const seal = sealOf(RECORDS);
      assert.deepEqual(
        { ...seal, seal_hash: undefined, signature: undefined },
        {
          version: 1,
          sealer_pk: sealer.publicKey,
          epoch: EPOCH,
          record_count: 5,
          first_seq: 11,
          last_seq: 15,
          merkle_root: bytesToHex(merkleRoot(RECORDS.map(recordLeaf))),
          prev_epoch_hash: GENESIS_PREV_HASH,
          sealed_at: SEALED_AT,
          seal_hash: undefined,
          signature: undefined,
        },
      );
      const { seal_hash: _hash, signature: _signature, ...body } = seal;
      assert.equal(seal.seal_hash, sha256Hex(canonicalJson(body)));
      assert.equal(sealHash(seal), seal.seal_hash);
      assert.equal(seal.signature, signMessage(sealer.secretKey, seal.seal_hash));
      const checked = checkSeal(JSON.parse(JSON.stringify(seal)));
      assert.ok(checked.ok);
      assert.deepEqual(checked.value, seal);
      assert.ok(checkSealCoversRecords(seal, RECORDS).ok);
    });

    it('seals an empty epoch with the empty-tree root and null seqs', () => {
      const seal = sealOf([]);
      assert.equal(seal.record_count, 0);
      assert.equal(seal.first_seq, null);
      assert.equal(seal.last_seq, null);
      assert.equal(seal.merkle_root, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      assert.ok(checkSeal(seal).ok);
      assert.ok(checkSealCoversRecords(seal, []).ok);
      assert.match(
        failure(checkSealCoversRecords(seal, [recordOf(11)]), 'seal_mismatch'),
        /^epoch 5: the seal covers no records, but record job-11:step-1 \(seq 11\) exists$/,
      );
    });

    it('sorts records given out of order by seq', () => {
      const shuffled = [RECORDS[3], RECORDS[0], RECORDS[4], RECORDS[2], RECORDS[1]] as ProofRecord[];
      assert.deepEqual(sealOf(shuffled), sealOf(RECORDS));
      assert.ok(checkSealCoversRecords(sealOf(RECORDS), shuffled).ok);
    });

    it('also returns the stored levels, from which every record proves its inclusion', () => {
      const { seal, levels } = createSealWithLevels(sealer.secretKey, {
        epoch: EPOCH,
        records: [...RECORDS].reverse(),
        prevSealHash: GENESIS_PREV_HASH,
        sealedAt: SEALED_AT,
      });
      assert.deepEqual(seal, sealOf(RECORDS));
      RECORDS.forEach((record, index) => {
        const proof = inclusionProofFromLevels(levels, index);
        verifyInclusion(index, seal.record_count, recordLeaf(record), proof, hexToBytes(seal.merkle_root));
      });
      const empty = createSealWithLevels(sealer.secretKey, {
        epoch: EPOCH,
        records: [],
        prevSealHash: GENESIS_PREV_HASH,
        sealedAt: SEALED_AT,
      });
      assert.equal(bytesToHex(empty.levels.at(-1) as Uint8Array), empty.seal.merkle_root);
    });

    it('refuses to seal a gap, a duplicate seq or malformed fields', () => {
      const seal = (
        records: ProofRecord[],
        extra: Partial<{ prevSealHash: string; sealedAt: string; epoch: number }> = {},
      ) =>
        createSeal(sealer.secretKey, {
          epoch: EPOCH,
          records,
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: SEALED_AT,
          ...extra,
        });
      assert.throws(() => seal([recordOf(11), recordOf(13)]), /seqs 12\.\.12 are missing/);
      assert.throws(() => seal([recordOf(11), recordOf(11)]), /two records share seq 11/);
      assert.throws(() => seal(RECORDS, { prevSealHash: 'abc' }), /cannot seal: prev_epoch_hash/);
      assert.throws(() => seal(RECORDS, { sealedAt: '2026-01-01 06:00' }), /cannot seal: sealed_at/);
      assert.throws(() => seal(RECORDS, { epoch: -1 }), /cannot seal: epoch/);
      assert.throws(() => seal([{ ...recordOf(11), record_hash: 'xyz' }]), TypeError);
    });

    it('rejects an edited seal, a re-hashed but unsigned one, and one signed by another key', () => {
      const seal = sealOf(RECORDS);
      const edited = { ...seal, merkle_root: EMPTY_ROOT_HEX.replace(/^e/, 'f') };
      assert.equal(failure(checkSeal(edited), 'invalid_seal'), 'seal_hash does not match the seal');
      assert.equal(
        failure(checkSeal({ ...edited, seal_hash: sealHash(edited) }), 'invalid_seal'),
        'signature does not verify',
      );
      assert.equal(failure(checkSeal(resign(edited, other)), 'invalid_seal'), 'signature does not verify');
      assert.ok(checkSeal(resign(edited)).ok, 'the sealer itself may seal any root; coverage is a separate check');
    });

    it('rejects seals whose counts and seqs disagree, naming the field', () => {
      const seal = sealOf(RECORDS);
      const empty = sealOf([]);
      const cases: [unknown, RegExp][] = [
        [resign({ ...seal, record_count: 4 }), /^record_count: 4 does not equal the seqs 11\.\.15 \(5\)$/],
        [resign({ ...seal, last_seq: null }), /^first_seq: first_seq and last_seq are required/],
        [resign({ ...empty, first_seq: 1, last_seq: 1 }), /^first_seq: must be null in an empty epoch$/],
        [resign({ ...empty, merkle_root: seal.merkle_root }), /^merkle_root: must be the empty-tree root/],
        [resign({ ...seal, first_seq: 0 }), /^first_seq:/],
        [resign({ ...seal, sealed_at: '2026-01-01T07:00:30+01:00' }), /^sealed_at:/],
        [resign({ ...seal, version: 2 as 1 }), /^version:/],
        [{ ...seal, extra: 1 }, /^seal: Unrecognized key: "extra"$/],
        [{ ...seal, sealer_pk: seal.sealer_pk.toUpperCase() }, /^sealer_pk: must be 64 lowercase hex$/],
        [null, /^seal:/],
      ];
      for (const [value, detail] of cases) assert.match(failure(checkSeal(value), 'invalid_seal'), detail);
      assert.equal(sealSchema.safeParse(seal).success, true);
    });
  });

  describe('checkSealCoversRecords', () => {
    const seal = sealOf(RECORDS);
    const without = (seq: number) => RECORDS.filter((r) => r.seq !== seq);
    const covers = (records: ProofRecord[]) => failure(checkSealCoversRecords(seal, records), 'seal_mismatch');

    it('catches a missing record, first, middle or last', () => {
      assert.equal(covers(without(13)), 'epoch 5: seq 13 is missing: the seal covers 5 records, 4 held');
      assert.equal(covers(without(11)), 'epoch 5: seq 11 is missing: the seal covers 5 records, 4 held');
      assert.equal(covers(without(15)), 'epoch 5: seq 15 is missing: the seal covers 5 records, 4 held');
      assert.equal(covers([]), 'epoch 5: seq 11 is missing: the seal covers 5 records, 0 held');
    });

    it('catches an extra record after or before the sealed range', () => {
      assert.equal(
        covers([...RECORDS, recordOf(16)]),
        'epoch 5: record job-16:step-1 (seq 16) is outside the sealed seqs 11..15',
      );
      assert.equal(
        covers([recordOf(10), ...RECORDS]),
        'epoch 5: record job-10:step-1 (seq 10) is outside the sealed seqs 11..15',
      );
    });

    it("catches a record of another epoch, another writer's record and a doubled seq", () => {
      assert.equal(
        covers([...without(12), recordOf(12, 6)]),
        'epoch 5: record job-12:step-1 (seq 12) belongs to epoch 6',
      );
      assert.equal(
        covers([...without(12), recordOf(12, EPOCH, other)]),
        'epoch 5: record job-12:step-1 (seq 12) was written by another key',
      );
      const twin = { ...recordOf(12), id: 'twin' };
      assert.match(
        covers([...RECORDS, twin]),
        /^epoch 5: records (job-12:step-1 and twin|twin and job-12:step-1) share seq 12$/,
      );
    });

    it('catches records whose hashes appear in a different order than seq, naming the forged record', () => {
      // Swap the seqs of two records, keeping each record's hash and signature: the leaves change order.
      const [a, b] = [RECORDS[1] as ProofRecord, RECORDS[2] as ProofRecord];
      const swappedSeqs = [RECORDS[0], { ...a, seq: 13 }, { ...b, seq: 12 }, RECORDS[3], RECORDS[4]] as ProofRecord[];
      assert.equal(
        covers(swappedSeqs),
        'epoch 5: merkle root over the records does not match the seal; record job-13:step-1 (seq 12): record_hash does not match the record',
      );
      // Or swap the hashes and signatures between the two records, keeping their content and seqs.
      const swappedHashes = [
        RECORDS[0],
        { ...a, record_hash: b.record_hash, signature: b.signature },
        { ...b, record_hash: a.record_hash, signature: a.signature },
        RECORDS[3],
        RECORDS[4],
      ] as ProofRecord[];
      assert.match(covers(swappedHashes), /; record job-12:step-1 \(seq 12\): record_hash does not match the record$/);
    });

    it('catches a changed record that was re-hashed, naming it', () => {
      const changed = { ...(RECORDS[2] as ProofRecord), payload: { job: 13, status: 'failed' } };
      const rehashed = { ...changed, record_hash: recordHash(changed) };
      assert.equal(
        covers([RECORDS[0], RECORDS[1], rehashed, RECORDS[3], RECORDS[4]] as ProofRecord[]),
        'epoch 5: merkle root over the records does not match the seal; record job-13:step-1 (seq 13): signature does not verify',
      );
    });

    it('leaves a changed record with its old record_hash to checkRecord (coverage is by hash)', () => {
      const changed = { ...(RECORDS[2] as ProofRecord), payload: { job: 13, status: 'failed' } };
      const held = [RECORDS[0], RECORDS[1], changed, RECORDS[3], RECORDS[4]] as ProofRecord[];
      assert.ok(checkSealCoversRecords(seal, held).ok);
      assert.equal(failure(checkRecord(changed), 'invalid_record'), 'record_hash does not match the record');
    });

    it('says so when every record is intact but the seal was made over other records', () => {
      // The writer signed two different records with seq 13; the seal covers the other one.
      const equivocation = signRecord(sealer.secretKey, { ...(RECORDS[2] as ProofRecord), payload: { job: 'other' } });
      assert.equal(
        covers([RECORDS[0], RECORDS[1], equivocation, RECORDS[3], RECORDS[4]] as ProofRecord[]),
        'epoch 5: merkle root over the records does not match the seal, though every record is intact (the seal was made over other records)',
      );
    });
  });

  describe('checkSealChain', () => {
    /** One sealer's seals for consecutive epochs, each linked to the previous; some epochs empty. */
    function chain(from: number, to: number): Seal[] {
      const seals: Seal[] = [];
      let prev = GENESIS_PREV_HASH;
      for (let epoch = from; epoch <= to; epoch++) {
        const records = epoch % 2 === 0 ? [recordOf(epoch * 10 + 1, epoch), recordOf(epoch * 10 + 2, epoch)] : [];
        const seal = sealOf(records, epoch, prev);
        seals.push(seal);
        prev = seal.seal_hash;
      }
      return seals;
    }
    const seals = chain(3, 7);

    it('accepts an intact chain in any order, and no seals at all', () => {
      assert.deepEqual(checkSealChain(seals), []);
      assert.deepEqual(checkSealChain([...seals].reverse()), []);
      assert.deepEqual(checkSealChain([]), []);
      assert.deepEqual(checkSealChain(seals.slice(0, 1)), []);
    });

    it('catches an edited seal at the next link, whether or not its seal_hash was updated', () => {
      const edited = seals.map((s) => (s.epoch === 4 ? { ...s, merkle_root: EMPTY_ROOT_HEX } : s));
      const problem = [{ epoch: 5, problem: 'epoch 5: prev_epoch_hash does not match the seal of epoch 4' }];
      assert.deepEqual(checkSealChain(edited), problem);
      assert.deepEqual(checkSealChain(edited.map((s) => (s.epoch === 4 ? resign(s) : s))), problem);
    });

    it('catches a missing epoch', () => {
      assert.deepEqual(checkSealChain(seals.filter((s) => s.epoch !== 5)), [
        { epoch: 5, problem: 'epoch 5 has no seal' },
      ]);
      assert.deepEqual(checkSealChain(seals.filter((s) => s.epoch !== 4 && s.epoch !== 5)), [
        { epoch: 4, problem: 'epoch 4 has no seal' },
        { epoch: 5, problem: 'epoch 5 has no seal' },
      ]);
    });

    it('catches a wrong genesis, including a dropped first seal', () => {
      const first = resign({ ...(seals[0] as Seal), prev_epoch_hash: 'ab'.repeat(32) });
      const problems = checkSealChain([first, ...seals.slice(1)]);
      assert.deepEqual(
        problems.map((p) => p.epoch),
        [3, 4],
      );
      assert.match(
        problems[0]?.problem ?? '',
        /^epoch 3: the sealer's earliest seal must chain to genesis \(64 zeros\), not abab/,
      );
      assert.equal(problems[1]?.problem, 'epoch 4: prev_epoch_hash does not match the seal of epoch 3');
      assert.deepEqual(
        checkSealChain(seals.slice(1)).map((p) => p.epoch),
        [4],
        'without epoch 3, epoch 4 links to a seal that is not genesis',
      );
    });

    it('catches two seals for one epoch and a seal by another sealer', () => {
      const twin = resign({ ...(seals[1] as Seal), sealed_at: '2026-01-01T06:01:00.000Z' });
      assert.deepEqual(
        checkSealChain([...seals, twin]).map((p) => p.problem),
        ['epoch 4 has more than one seal'],
      );
      const foreign = resign({ ...(seals[2] as Seal), sealer_pk: other.publicKey }, other);
      assert.deepEqual(
        checkSealChain(seals.map((s) => (s.epoch === 5 ? foreign : s))).map((p) => p.problem),
        [
          `epoch 5: seal is by ${other.publicKey}, not ${sealer.publicKey}`,
          'epoch 6: prev_epoch_hash does not match the seal of epoch 5',
        ],
      );
    });

    it('summarises a very long gap in one problem', () => {
      const late = resign({ ...(seals[1] as Seal), epoch: 1_000_000 });
      const problems = checkSealChain([seals[0] as Seal, late]);
      assert.equal(problems.length, 101);
      assert.deepEqual(problems[0], { epoch: 4, problem: 'epoch 4 has no seal' });
      assert.deepEqual(problems[100], { epoch: 104, problem: 'epochs 104..999999 have no seal' });
    });
  });
});
