import assert from 'node:assert/strict';
import { CanonicalJsonError, canonicalJson, MAX_CANONICAL_DEPTH } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { hexToBytes } from '../../core/hex.js';
import { keyPairFromSecret, signMessage } from '../../core/identity.js';
import { leafHash } from '../../core/merkle/tree.js';
import {
  checkRecord,
  hashRecordToSign,
  proofRecordSchema,
  recordHash,
  recordLeaf,
  signRecord,
  stepRecordId,
} from '../../core/proof-record.js';
import { COLLECTION_PAYLOAD_TYPES, type CollectionType, type UnsignedProofRecord } from '../../core/proof-types.js';

const writer = keyPairFromSecret('1'.repeat(64));
const mallory = keyPairFromSecret('2'.repeat(64));
const ROME = '861e8050fffffff';

const unsigned = (overrides: Partial<UnsignedProofRecord> = {}): UnsignedProofRecord => ({
  version: 1,
  id: 'job-42:step-1',
  address: { h3_cell: ROME, epoch: 7, pk: writer.publicKey },
  collection_type: 'inference',
  payload_type: 'hive/inference',
  payload: { model: 'tinyllama', tokens: 345, latency_ms: 812.5, note: 'caffè', tags: ['a', null] },
  seq: 1,
  written_at: '2026-01-01T07:12:13.456Z',
  ...overrides,
});

const signed = (overrides: Partial<UnsignedProofRecord> = {}) => signRecord(writer.secretKey, unsigned(overrides));

function rejected(value: unknown): string {
  const result = checkRecord(value);
  assert.equal(result.ok, false, 'expected the record to be rejected');
  if (result.ok) throw new Error('unreachable');
  assert.equal(result.error, 'invalid_record');
  return result.detail;
}

describe('core/proof-record', () => {
  it('round-trips: a signed record passes checkRecord unchanged', () => {
    const record = signed();
    const result = checkRecord(JSON.parse(JSON.stringify(record)));
    assert.ok(result.ok);
    assert.deepEqual(result.value, record);
    assert.equal(proofRecordSchema.safeParse(record).success, true);
  });

  it('hashes JCS of the record without record_hash and signature, and signs the hash text', () => {
    const record = signed();
    assert.equal(record.record_hash, sha256Hex(canonicalJson(unsigned())));
    assert.equal(recordHash(record), record.record_hash, 'the two derived keys are stripped');
    assert.equal(record.signature, signMessage(writer.secretKey, record.record_hash), 'Ed25519 is deterministic');
  });

  it('ignores a stale record_hash and signature on the input to signRecord', () => {
    const stale = { ...signed(), seq: 2 };
    assert.deepEqual(signRecord(writer.secretKey, stale), signed({ seq: 2 }));
  });

  it('accepts every collection with each of its payload types, and any JSON payload', () => {
    for (const [collection, types] of Object.entries(COLLECTION_PAYLOAD_TYPES)) {
      for (const type of types) {
        const record = signed({ collection_type: collection as CollectionType, payload_type: type });
        assert.ok(checkRecord(record).ok, `${collection} / ${type}`);
      }
    }
    for (const payload of [null, 0, 'text', [1, 2], { deep: { er: [true] } }])
      assert.ok(checkRecord(signed({ payload })).ok);
  });

  it('rejects a changed payload as a hash mismatch', () => {
    const record = signed();
    assert.equal(
      rejected({ ...record, payload: { model: 'gpt', tokens: 345 } }),
      'record_hash does not match the record',
    );
    assert.equal(rejected({ ...record, seq: 2 }), 'record_hash does not match the record');
  });

  it('rejects a record re-hashed but not re-signed', () => {
    const forged = { ...unsigned(), payload: { model: 'forged' } };
    const record = { ...signed(), payload: forged.payload, record_hash: recordHash(forged) };
    assert.equal(rejected(record), 'signature does not verify');
  });

  it('rejects a record re-signed by another key than address.pk', () => {
    const record = signed();
    assert.equal(
      rejected({ ...record, signature: signMessage(mallory.secretKey, record.record_hash) }),
      'signature does not verify',
    );
  });

  it('rejects a payload type from another collection', () => {
    const bad = { ...unsigned(), collection_type: 'tile', payload_type: 'hive/inference' };
    const record = { ...bad, record_hash: recordHash(bad as UnsignedProofRecord), signature: '0'.repeat(128) };
    assert.match(
      rejected(record),
      /^payload_type: hive\/inference does not belong to collection tile \(allowed: tile\/vector, tile\/raster\)$/,
    );
    assert.throws(
      () => signRecord(writer.secretKey, bad as UnsignedProofRecord),
      (error: Error) => error instanceof TypeError && /payload_type/.test(error.message),
    );
  });

  it('rejects a bad cell, naming the field, and refuses to sign it', () => {
    for (const h3_cell of ['861e8050ffffff', '861E8050FFFFFFF', '861e8050fffffffx', 'ffffffffffffffff'.slice(1)]) {
      const record = { ...signed(), address: { ...signed().address, h3_cell } };
      assert.match(rejected(record), /^address\.h3_cell: must be a valid H3 cell/);
      assert.throws(() => signed({ address: { ...unsigned().address, h3_cell } }), TypeError);
    }
  });

  it('names the field for every other shape error', () => {
    const record = signed();
    const cases: [unknown, RegExp][] = [
      [{ ...record, version: 2 }, /^version:/],
      [{ ...record, id: '' }, /^id: must be 1 to 128/],
      [{ ...record, id: 'has space' }, /^id:/],
      [{ ...record, id: 'x'.repeat(129) }, /^id:/],
      [{ ...record, address: { ...record.address, epoch: -1 } }, /^address\.epoch:/],
      [{ ...record, address: { ...record.address, epoch: 1.5 } }, /^address\.epoch:/],
      [
        { ...record, address: { ...record.address, pk: record.address.pk.toUpperCase() } },
        /^address\.pk: must be 64 lowercase hex/,
      ],
      [{ ...record, address: { ...record.address, extra: 1 } }, /^address:/],
      [{ ...record, collection_type: 'ledger' }, /^collection_type:/],
      [{ ...record, payload_type: 'x/y' }, /^payload_type:/],
      [{ ...record, payload: undefined }, /^payload:/],
      [{ ...record, payload: { n: Number.NaN } }, /^payload/],
      [{ ...record, seq: 0 }, /^seq:/],
      [{ ...record, seq: 2.5 }, /^seq:/],
      [{ ...record, written_at: '2026-01-01T08:12:13+01:00' }, /^written_at:/],
      [{ ...record, written_at: 'yesterday' }, /^written_at:/],
      [{ ...record, record_hash: record.record_hash.slice(2) }, /^record_hash: must be 64 lowercase hex/],
      [{ ...record, signature: record.signature.toUpperCase() }, /^signature: must be 128 lowercase hex/],
      [(({ payload: _payload, ...rest }) => rest)(record), /^payload: must be plain JSON/],
      [{ ...record, payload: { when: new Date(0) } }, /^payload: must be plain JSON/],
      [{ ...record, extra: true }, /^record: Unrecognized key: "extra"/],
    ];
    for (const [value, detail] of cases) assert.match(rejected(value), detail);
    for (const value of [null, 'record', 42, []]) rejected(value);
  });

  it('signs (hashRecordToSign) exactly what the schema accepts, with the JCS hash of the whole record', () => {
    const nested = (depth: number): unknown => (depth === 0 ? 1 : { n: nested(depth - 1) });
    const accepted: UnsignedProofRecord[] = [
      unsigned(),
      unsigned({ id: 'a.b_c:D-9', seq: Number.MAX_SAFE_INTEGER, written_at: '2026-01-01T07:12:13Z' }),
      unsigned({ address: { h3_cell: ROME, epoch: 0, pk: writer.publicKey }, payload: null }),
      unsigned({
        payload: ['x', { z: 1, a: [true, -0, 1e21, 'é\u2028"'] }],
        collection_type: 'tile',
        payload_type: 'tile/raster',
      }),
      unsigned({ payload: Object.assign(Object.create(null), { b: 2, a: 1 }) as unknown }),
    ];
    for (const record of accepted) {
      assert.equal(hashRecordToSign(record, () => writer.publicKey).record_hash, recordHash(record));
    }
    // What the schema refuses is refused with its message, also where only a plain check would differ.
    const refused: [UnsignedProofRecord, RegExp][] = [
      [unsigned({ id: 'x'.repeat(129) }), /id:/],
      [unsigned({ written_at: '2026-01-01T08:12:13+01:00' }), /written_at:/],
      [unsigned({ payload_type: 'tile/vector' }), /payload_type:/],
      [unsigned({ collection_type: 'toString' as CollectionType }), /collection_type:/],
      [unsigned({ payload: { when: new Date(0) } }), /payload: must be plain JSON/],
      [{ ...unsigned(), extra: undefined } as UnsignedProofRecord, /Unrecognized key/],
    ];
    for (const [record, message] of refused) {
      assert.throws(
        () => hashRecordToSign(record, () => writer.publicKey),
        (error: Error) => {
          return error instanceof TypeError && message.test(error.message);
        },
      );
    }
    // Nesting as deep as the record's JCS allows: the payload sits one level down in it.
    const deep = unsigned({ payload: nested(MAX_CANONICAL_DEPTH) });
    assert.throws(() => recordHash(deep), CanonicalJsonError);
    assert.throws(() => hashRecordToSign(deep, () => writer.publicKey), CanonicalJsonError);
  });

  it('refuses to sign when address.pk is not the signing key', () => {
    assert.throws(
      () => signRecord(mallory.secretKey, unsigned()),
      (error: Error) =>
        error instanceof TypeError && /address\.pk .* is not the public key of the signing key/.test(error.message),
    );
  });

  it('derives the Merkle leaf from the record_hash bytes', () => {
    const record = signed();
    assert.deepEqual(recordLeaf(record), leafHash(hexToBytes(record.record_hash)));
    assert.throws(() => recordLeaf({ record_hash: 'AB'.repeat(32) }), TypeError);
    assert.throws(() => recordLeaf({ record_hash: 'ab'.repeat(31) }), TypeError);
  });

  it('derives a step record id from job and step: readable when it can be, never ambiguous', () => {
    assert.equal(stepRecordId('tile', 'job-1', 'render'), 'tile:job-1:render');
    const hashed = stepRecordId('tile', 'a:b', 'c');
    assert.equal(hashed, `tile:${sha256Hex(canonicalJson(['a:b', 'c']))}`);
    assert.notEqual(hashed, stepRecordId('tile', 'a', 'b:c'));
    assert.match(stepRecordId('imagery', 'j'.repeat(120), 's'), /^imagery:[0-9a-f]{64}$/, 'too long to be readable');
    for (const id of [hashed, stepRecordId('tile', 'job-1', 'render')]) {
      assert.ok(proofRecordSchema.shape.id.safeParse(id).success, id);
    }
  });
});
