import assert from 'node:assert/strict';
import fc from 'fast-check';
import { latLngToCell } from 'h3-js';
import { bytesToHex } from '../../core/hex.js';
import { keyPairFromSecret, type KeyPair } from '../../core/identity.js';
import { inclusionProofFromLevels } from '../../core/merkle/inclusion.js';
import { verifyProofBundle } from '../../core/proof-bundle.js';
import { checkRecord, signRecord } from '../../core/proof-record.js';
import {
  COLLECTION_PAYLOAD_TYPES,
  GENESIS_PREV_HASH,
  type CollectionType,
  type ProofRecord,
  type Seal,
} from '../../core/proof-types.js';
import {
  checkSeal,
  checkSealChain,
  checkSealCoversRecords,
  createSeal,
  createSealWithLevels,
} from '../../core/seal.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

/** The values an arbitrary generates. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

const RUNS = fuzzRuns(60);
const tally = new CaseTally('property', 'proof');

const CELLS = [latLngToCell(41.9, 12.5, 6), latLngToCell(48.86, 2.35, 9), latLngToCell(-33.87, 151.21, 0)];
const COLLECTIONS = Object.keys(COLLECTION_PAYLOAD_TYPES) as CollectionType[];
const SEALED_AT = '2026-01-01T06:00:30.000Z';

const keys = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((seed) => keyPairFromSecret(bytesToHex(seed)));

const recordFields = fc.record({
  id: fc.stringMatching(/^[A-Za-z0-9_.:-]{1,40}$/),
  cell: fc.constantFrom(...CELLS),
  collection: fc.constantFrom(...COLLECTIONS),
  typeChoice: fc.nat(3),
  payload: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown),
  writtenAt: fc.integer({ min: Date.parse('2000-01-01'), max: Date.parse('2099-12-31') }),
});

/** `count` records of one writer and epoch with consecutive seqs from `firstSeq`. */
function records(key: KeyPair, epoch: number, firstSeq: number, fields: ValueOf<typeof recordFields>[]): ProofRecord[] {
  return fields.map((f, i) => {
    const types = COLLECTION_PAYLOAD_TYPES[f.collection];
    return signRecord(key.secretKey, {
      version: 1,
      id: `${f.id}-${i}`,
      address: { h3_cell: f.cell, epoch, pk: key.publicKey },
      collection_type: f.collection,
      payload_type: types[f.typeChoice % types.length] as ProofRecord['payload_type'],
      payload: f.payload,
      seq: firstSeq + i,
      written_at: new Date(f.writtenAt).toISOString(),
    });
  });
}

const epochs = fc.record({
  key: keys,
  epoch: fc.nat(1_000_000),
  firstSeq: fc.integer({ min: 1, max: 1_000_000 }),
  fields: fc.array(recordFields, { minLength: 1, maxLength: 24 }),
});

/** Every bundle of a sealed epoch: record, seal, inclusion proof. */
function bundlesOf(input: ValueOf<typeof epochs>) {
  const recs = records(input.key, input.epoch, input.firstSeq, input.fields);
  const { seal, levels } = createSealWithLevels(input.key.secretKey, {
    epoch: input.epoch,
    records: recs,
    prevSealHash: GENESIS_PREV_HASH,
    sealedAt: SEALED_AT,
  });
  const bundles = recs.map((record, i) => ({
    record,
    seal,
    proof: {
      leaf_index: i,
      tree_size: recs.length,
      hashes: inclusionProofFromLevels(levels, i).map(bytesToHex),
    },
  }));
  return { recs, seal, bundles };
}

/** Flips one bit of the UTF-8 JSON text of `value`; undefined when the text no longer parses. */
function flipJsonBit(value: unknown, at: number, bit: number): unknown {
  const bytes = Buffer.from(JSON.stringify(value));
  const i = at % bytes.length;
  bytes[i] = (bytes[i] as number) ^ (1 << bit);
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as unknown;
  } catch {
    return undefined;
  }
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

describe('property: proof records, seals and proof bundles', () => {
  after(() => tally.print());

  it('sign → check: any record survives a JSON round trip and passes checkRecord', () => {
    fc.assert(
      fc.property(keys, fc.nat(1_000_000), fc.integer({ min: 1, max: 2 ** 40 }), recordFields, (key, epoch, seq, f) => {
        tally.add('record-round-trip', 'checkRecord');
        const [record] = records(key, epoch, seq, [f]);
        const back = checkRecord(JSON.parse(JSON.stringify(record)));
        assert.ok(back.ok, back.ok ? '' : back.detail);
        assert.deepEqual(back.value, record);
      }),
      fcParams(RUNS),
    );
  });

  it('rejects a record after any single-bit flip of its JSON text', () => {
    fc.assert(
      fc.property(keys, recordFields, fc.nat(), fc.nat(7), (key, f, at, bit) => {
        const [record] = records(key, 7, 1, [f]);
        const bent = flipJsonBit(record, at, bit);
        fc.pre(!same(bent, record));
        tally.add(bent === undefined ? 'record-bit-flip-unparsable' : 'record-bit-flip-rejected', 'checkRecord');
        if (bent === undefined) return;
        const checked = checkRecord(bent);
        assert.equal(checked.ok, false, `accepted a changed record: ${JSON.stringify(bent)}`);
        assert.equal(checked.ok ? '' : checked.error, 'invalid_record');
      }),
      fcParams(RUNS * 3),
    );
  });

  it('seal → bundle → verify: every record of a random epoch has a proof bundle that verifies offline', () => {
    fc.assert(
      fc.property(epochs, (input) => {
        tally.add('bundle-round-trip', 'verifyProofBundle');
        const { recs, seal, bundles } = bundlesOf(input);
        assert.ok(checkSeal(JSON.parse(JSON.stringify(seal))).ok);
        assert.ok(checkSealCoversRecords(seal, recs).ok);
        for (const bundle of bundles) {
          const verdict = verifyProofBundle(JSON.parse(JSON.stringify(bundle)), bundle.record.id);
          assert.deepEqual(verdict.problems, []);
          assert.equal(verdict.verified, true);
        }
      }),
      fcParams(RUNS),
    );
  });

  it('rejects a bundle after any single-bit flip of its record, seal or proof, or another leaf_index / tree_size', () => {
    const cases = fc.tuple(
      epochs,
      fc.nat(),
      fc.oneof(
        fc.tuple(fc.constantFrom('record' as const, 'seal' as const, 'proof' as const), fc.nat(), fc.nat(7)),
        fc.tuple(
          fc.constantFrom('leaf_index' as const, 'tree_size' as const),
          fc.integer({ min: 1, max: 40 }),
          fc.nat(),
        ),
      ),
    );
    fc.assert(
      fc.property(cases, ([input, which, [part, a, b]]) => {
        const { bundles } = bundlesOf(input);
        const bundle = bundles[which % bundles.length] as (typeof bundles)[number];
        let bent: { record: unknown; seal: unknown; proof: unknown };
        if (part === 'leaf_index' || part === 'tree_size') {
          const value = (bundle.proof[part] + a) % (2 * bundle.proof.tree_size + 1);
          fc.pre(value !== bundle.proof[part]);
          bent = { ...bundle, proof: { ...bundle.proof, [part]: value } };
        } else {
          const changed = flipJsonBit(bundle[part], a, b);
          fc.pre(!same(changed, bundle[part]));
          bent = { ...bundle, [part]: changed === undefined ? null : changed };
        }
        tally.add(`bundle-mutation-${part}`, 'verifyProofBundle');
        const verdict = verifyProofBundle(bent, bundle.record.id);
        assert.equal(verdict.verified, false, `accepted a changed bundle (${part})`);
        assert.ok(verdict.problems.length > 0);
      }),
      fcParams(RUNS * 3),
    );
  });

  it('a sealer’s chain of seals verifies; any single-bit flip of one seal is found', () => {
    const cases = fc.tuple(keys, fc.nat(1000), fc.integer({ min: 2, max: 8 }), fc.nat(), fc.nat(), fc.nat(7));
    fc.assert(
      fc.property(cases, ([key, firstEpoch, count, which, at, bit]) => {
        const seals: Seal[] = [];
        let prev = GENESIS_PREV_HASH;
        for (let e = firstEpoch; e < firstEpoch + count; e++) {
          const seal = createSeal(key.secretKey, { epoch: e, records: [], prevSealHash: prev, sealedAt: SEALED_AT });
          seals.push(seal);
          prev = seal.seal_hash;
        }
        assert.deepEqual(checkSealChain(seals), []);
        const k = which % count;
        const bent = flipJsonBit(seals[k], at, bit);
        fc.pre(!same(bent, seals[k]));
        tally.add('seal-chain-bit-flip', 'checkSeal');
        const single = checkSeal(bent);
        assert.equal(single.ok, false);
        assert.equal(single.ok ? '' : single.error, 'invalid_seal');
      }),
      fcParams(RUNS),
    );
  });
});
