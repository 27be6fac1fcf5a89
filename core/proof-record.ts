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
  // The append hot path: a record that passes the plain checks is one the schema accepts, and its JCS text
  // is written field by field; anything else goes through the schema, for its precise refusal.
  if (isPlainRecord(unsigned)) {
    if (signerPk() !== unsigned.address.pk) {
      throw new TypeError(`address.pk ${unsigned.address.pk} is not the public key of the signing key`);
    }
    return { ...unsigned, record_hash: sha256Hex(canonicalRecordText(unsigned)) };
  }
  const checked = proofRecordSchema.safeParse({ ...unsigned, record_hash: '0'.repeat(64), signature: '0'.repeat(128) });
  if (!checked.success) throw new TypeError(`cannot sign record: ${describeZodIssue(checked.error, 'record')}`);
  if (signerPk() !== unsigned.address.pk) {
    throw new TypeError(`address.pk ${unsigned.address.pk} is not the public key of the signing key`);
  }
  return { ...unsigned, record_hash: recordHash(unsigned) };
}

const RECORD_KEYS = ['address', 'collection_type', 'id', 'payload', 'payload_type', 'seq', 'version', 'written_at'];
const ADDRESS_KEYS = ['epoch', 'h3_cell', 'pk'];
const RECORD_ID = /^[A-Za-z0-9_.:-]{1,128}$/;
const HEX_64 = /^[0-9a-f]{64}$/;
const isoDatetime = z.iso.datetime();
/** written_at values already accepted: a batch's records mostly share a few. */
const datetimesSeen = new Set<string>();

function hasExactKeys(value: object, keys: readonly string[]): boolean {
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  const own = Object.keys(value);
  if (own.length !== keys.length) return false;
  for (const key of own) if (!keys.includes(key)) return false;
  return true;
}

const isIndex = (n: unknown, min: number): n is number => Number.isSafeInteger(n) && (n as number) >= min;

/**
 * True only for what proofRecordSchema accepts (with any well-formed record_hash and signature), checked
 * with the schema's own predicates but without building a parse result. False is no verdict: the caller
 * runs the schema. Kept stricter than the schema, never looser (test/core/proof-record.test.ts).
 */
function isPlainRecord(record: UnsignedProofRecord): boolean {
  if (typeof record !== 'object' || record === null || !hasExactKeys(record, RECORD_KEYS)) return false;
  const { address } = record;
  if (typeof address !== 'object' || address === null || !hasExactKeys(address, ADDRESS_KEYS)) return false;
  if (record.version !== 1 || !isIndex(record.seq, 1) || !isIndex(address.epoch, 0)) return false;
  if (typeof record.id !== 'string' || !RECORD_ID.test(record.id)) return false;
  if (typeof address.pk !== 'string' || !HEX_64.test(address.pk) || !isCell(address.h3_cell)) return false;
  const allowed = (COLLECTION_PAYLOAD_TYPES as Record<string, readonly string[] | undefined>)[record.collection_type];
  if (!Object.hasOwn(COLLECTION_PAYLOAD_TYPES, record.collection_type) || !allowed?.includes(record.payload_type)) {
    return false;
  }
  if (typeof record.written_at !== 'string') return false;
  if (!datetimesSeen.has(record.written_at)) {
    if (!isoDatetime.safeParse(record.written_at).success) return false;
    if (datetimesSeen.size >= 1024) datetimesSeen.clear();
    datetimesSeen.add(record.written_at);
  }
  return record.payload !== undefined && isJsonValue(record.payload);
}

/** canonicalJson(record) of a record isPlainRecord accepted: its keys in JCS order, the payload canonical. */
function canonicalRecordText(record: UnsignedProofRecord): string {
  const { address } = record;
  // The payload serialised one level down, as inside the record, so the nesting limit falls where it does there.
  const payload = canonicalJson([record.payload]).slice(1, -1);
  return (
    `{"address":{"epoch":${address.epoch},"h3_cell":"${address.h3_cell}","pk":"${address.pk}"},` +
    `"collection_type":"${record.collection_type}","id":"${record.id}","payload":${payload},` +
    `"payload_type":"${record.payload_type}","seq":${record.seq},"version":1,"written_at":${JSON.stringify(record.written_at)}}`
  );
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
