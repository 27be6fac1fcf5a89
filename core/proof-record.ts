/**
 * Proof records (docs/protocol.md §1.8, §2.6; docs/protocol.md §10): what every computation leaves behind, addressed by
 * (H3 cell, epoch, writer key). `record_hash` binds every other field (JCS, RFC 8785) and the writer's
 * Ed25519 signature over it binds the writer, so a record read back from any store is checked with
 * `checkRecord` alone: callers must never trust a stored record_hash without it.
 */
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { describeZodIssue } from './zod-issue.js';
import { fail, pass, type Check } from './check.js';
import { isCell } from './h3-cell.js';
import { sha256Hex } from './hash.js';
import { checkPublicKey, keyPairFromSecret, signMessage, verifySignature } from './identity.js';
import { leafHashFromHex } from './merkle/tree.js';
import {
  COLLECTION_PAYLOAD_TYPES,
  type CollectionType,
  type PayloadType,
  type ProofRecord,
  type UnsignedProofRecord,
} from './proof-types.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const hex128 = z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex');
const collectionTypes = Object.keys(COLLECTION_PAYLOAD_TYPES) as [CollectionType, ...CollectionType[]];
const payloadTypes = Object.values(COLLECTION_PAYLOAD_TYPES).flat() as [PayloadType, ...PayloadType[]];

/** Plain JSON only: what JCS hashes is exactly what a JSON round trip through a store gives back. */
function isJsonValue(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isJsonValue(value[i])) return false; // holes are undefined
    return true;
  }
  if (typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value).every(isJsonValue);
}

const addressSchema = z.strictObject({
  h3_cell: z.string().refine(isCell, 'must be a valid H3 cell (15 lowercase hex)'),
  epoch: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  pk: hex64,
});

export const proofRecordSchema = z
  .strictObject({
    version: z.literal(1),
    id: z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1 to 128 characters of A-Z a-z 0-9 _ . : -'),
    address: addressSchema,
    collection_type: z.enum(collectionTypes),
    payload_type: z.enum(payloadTypes),
    // Any JSON value, but present: JCS drops undefined fields, so an absent payload would not be signed.
    payload: z.unknown().refine(isJsonValue, 'must be plain JSON (no undefined, NaN, infinities, dates or functions)'),
    seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    written_at: z.iso.datetime(),
    record_hash: hex64,
    signature: hex128,
  })
  .superRefine((record, ctx) => {
    const allowed: readonly string[] = COLLECTION_PAYLOAD_TYPES[record.collection_type];
    if (!allowed.includes(record.payload_type)) {
      ctx.addIssue({
        code: 'custom',
        path: ['payload_type'],
        message: `${record.payload_type} does not belong to collection ${record.collection_type} (allowed: ${allowed.join(', ')})`,
      });
    }
  });

// Compile-time proof that the schema's output is the shared interface.
const _schemaMatchesInterface = (parsed: z.output<typeof proofRecordSchema>): ProofRecord => parsed;

/** The record without its two derived fields, whatever else the caller passed along. */
function unsignedPart(record: UnsignedProofRecord | ProofRecord): UnsignedProofRecord {
  const { record_hash: _hash, signature: _signature, ...unsigned } = record as ProofRecord;
  return unsigned;
}

/** SHA-256 hex of the UTF-8 of JCS(record without record_hash and signature). */
export function recordHash(record: UnsignedProofRecord): string {
  return sha256Hex(canonicalJson(unsignedPart(record)));
}

/**
 * Hashes and signs a record as its writer. Throws TypeError when `address.pk` is not the key's public
 * key or the result would not pass `checkRecord`, so a bad record fails at write time, not at audit.
 */
export function signRecord(secretKey: string, record: UnsignedProofRecord): ProofRecord {
  const hashed = hashRecordToSign(record, () => keyPairFromSecret(secretKey).publicKey);
  return { ...hashed, signature: signMessage(secretKey, hashed.record_hash) };
}

/**
 * signRecord's checks and hash, without the signature (for a caller that signs record_hash elsewhere, on a
 * worker thread); `signerPk` gives the signing key's public key. Throws TypeError as signRecord does.
 */
export function hashRecordToSign(
  record: UnsignedProofRecord,
  signerPk: () => string,
): UnsignedProofRecord & { record_hash: string } {
  const unsigned = unsignedPart(record);
  const checked = proofRecordSchema.safeParse({ ...unsigned, record_hash: '0'.repeat(64), signature: '0'.repeat(128) });
  if (!checked.success) throw new TypeError(`cannot sign record: ${describeZodIssue(checked.error, 'record')}`);
  if (signerPk() !== unsigned.address.pk) {
    throw new TypeError(`address.pk ${unsigned.address.pk} is not the public key of the signing key`);
  }
  return { ...unsigned, record_hash: recordHash(unsigned) };
}

/** Shape, then hash, then signature; every failure is `invalid_record` naming what is wrong. */
export function checkRecord(value: unknown): Check<ProofRecord> {
  const parsed = proofRecordSchema.safeParse(value);
  if (!parsed.success) return fail('invalid_record', describeZodIssue(parsed.error, 'record'));
  const record = parsed.data;
  if (recordHash(record) !== record.record_hash) return fail('invalid_record', 'record_hash does not match the record');
  if (!verifySignature(record.address.pk, record.record_hash, record.signature)) {
    const key = checkPublicKey(record.address.pk);
    return fail('invalid_record', key.ok ? 'signature does not verify' : `signature does not verify: ${key.detail}`);
  }
  return pass(record);
}

/** The Merkle leaf of a record: leafHash of its record_hash bytes. */
export function recordLeaf(record: Pick<ProofRecord, 'record_hash'>): Uint8Array {
  return leafHashFromHex(record.record_hash);
}

// A step id part: the record id alphabet minus ':', so "a:b"+"c" and "a"+"b:c" never meet.
const ID_PART = /^[A-Za-z0-9_.-]+$/;

/**
 * The record id of a compound-job step (`tile:<job>:<step>`, `imagery:<job>:<step>` …): derived from job and
 * step, so a retried activity finds its record instead of writing a second one (docs/architecture.md). Readable when both
 * parts fit the id alphabet, else `<kind>:` + SHA-256 of the pair.
 */
export function stepRecordId(kind: string, jobId: string, stepId: string): string {
  const readable = `${kind}:${jobId}:${stepId}`;
  if (ID_PART.test(jobId) && ID_PART.test(stepId) && readable.length <= 128) return readable;
  return `${kind}:${sha256Hex(canonicalJson([jobId, stepId]))}`;
}
