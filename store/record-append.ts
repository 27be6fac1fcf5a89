/**
 * The part of `appendRecords` both adapters share: which entries are new, their seqs and their signatures.
 * Pure apart from signing; each adapter supplies what it read and writes what this returns.
 */
import { createHmac } from 'node:crypto';
import { CanonicalJsonError } from '../core/canonical-json.js';
import { ServiceError } from '../core/errors.js';
import { keyPairFromSecret, signMessage, type KeyPair } from '../core/identity.js';
import { hashRecordToSign } from '../core/proof-record.js';
import type { ProofRecord, UnsignedProofRecord } from '../core/proof-types.js';
import { sharedEd25519Pool, type Ed25519Pool } from './ed25519-pool.js';
import type { NewRecord } from './proof-store.js';

/** The signer's highest-seq record: where its next seq and its earliest writable epoch come from. */
export interface WriterTail {
  seq: number;
  epoch: number;
}

export interface AppendPlan {
  /** One per entry, in entry order (an id given twice yields the same record twice). */
  records: ProofRecord[];
  /** The records to insert, in seq order. */
  fresh: ProofRecord[];
}

/**
 * The id `signer` writes `id` under when another key already holds `id` (a record pushed first, on purpose or
 * not): `<id>:w-<tag>`, the tag an HMAC of the id under the signer's secret key. Nobody else can compute it, so
 * nobody can take it first, and a retry finds the same id. Over 128 characters: `w:<64 hex>`.
 */
export function writerScopedId(signer: KeyPair, id: string): string {
  const tag = createHmac('sha256', signer.secretKey).update(`geofabric/record-id\n${id}`).digest('hex');
  const readable = `${id}:w-${tag.slice(0, 32)}`;
  return readable.length <= 128 ? readable : `w:${tag}`;
}

/**
 * Assigns seqs tail.seq + 1 … to the entries whose id is not stored yet, in (epoch, position) order, and
 * signs them. An id another writer holds is written under `writerScopedId` instead (the returned record says
 * which). Refused with `epoch_sealed`, before anything is signed:
 *  - an epoch the signer has sealed, or one before its latest seal (the chain never goes back);
 *  - an epoch before its latest record's: a seal covers seqs first..last with no gap (core/seal.ts), so once
 *    a writer has moved on to a later epoch, a record for an earlier one could never be sealed.
 * Writers therefore take the epoch from the clock at append time.
 */
export function planAppend(
  signer: KeyPair,
  entries: readonly NewRecord[],
  stored: (id: string) => ProofRecord | undefined,
  tail: WriterTail | null,
  latestSealEpoch: number | null,
): AppendPlan {
  const prepared = prepareAppend(signer, entries, stored, tail, latestSealEpoch);
  const pk = signerPk(signer);
  return prepared.finish(
    prepared.fresh.map((record) => {
      const hashed = hashFresh(pk, record);
      return { ...hashed, signature: signMessage(signer.secretKey, hashed.record_hash) };
    }),
  );
}

/** planAppend before hashing and signing: the seqs are assigned, `finish` takes the fresh records signed. */
export interface PreparedAppend {
  /** The records to write, in seq order, without record_hash and signature. */
  fresh: UnsignedProofRecord[];
  finish(signed: readonly ProofRecord[]): AppendPlan;
}

/** planAppend's reads and checks, without the hashing and signing (which `signFresh` can do off-thread). */
export function prepareAppend(
  signer: KeyPair,
  entries: readonly NewRecord[],
  stored: (id: string) => ProofRecord | undefined,
  tail: WriterTail | null,
  latestSealEpoch: number | null,
): PreparedAppend {
  const records = new Array<ProofRecord | undefined>(entries.length);
  const firstIndex = new Map<string, number>();
  const fresh: { index: number; entry: NewRecord }[] = [];
  entries.forEach((entry, index) => {
    const id = entry?.id;
    if (typeof id !== 'string') throw new ServiceError('invalid_record', `entry ${index}: id must be a string`);
    if (firstIndex.has(id)) return;
    firstIndex.set(id, index);
    // A record stands only for what its own writer wrote: another key's record is never answered (a pushed
    // record would otherwise stand in for this writer's, e.g. a job's proof); the entry moves to its scoped id.
    let writeId = id;
    let existing = stored(id);
    if (
      existing !== undefined &&
      existing.address.pk !== signer.publicKey &&
      entry.sharedWith?.includes(existing.address.pk)
    ) {
      records[index] = existing;
      return;
    }
    if (existing !== undefined && existing.address.pk !== signer.publicKey) {
      writeId = writerScopedId(signer, id);
      existing = stored(writeId);
      if (existing !== undefined && existing.address.pk !== signer.publicKey) {
        throw new ServiceError('record_conflict', `record ${id}: ${writeId} is held by another writer`);
      }
    }
    if (existing !== undefined) {
      records[index] = existing;
      return;
    }
    if (!Number.isSafeInteger(entry.epoch) || entry.epoch < 0) {
      throw new ServiceError('invalid_record', `record ${id}: epoch must be an integer ≥ 0`);
    }
    if (latestSealEpoch !== null && entry.epoch <= latestSealEpoch) {
      throw new ServiceError(
        'epoch_sealed',
        `record ${id}: epoch ${entry.epoch} of writer ${signer.publicKey} is sealed (sealed through epoch ${latestSealEpoch})`,
      );
    }
    if (tail !== null && entry.epoch < tail.epoch) {
      throw new ServiceError(
        'epoch_sealed',
        `record ${id}: epoch ${entry.epoch} is closed for writer ${signer.publicKey}, whose records have reached epoch ${tail.epoch}`,
      );
    }
    fresh.push({ index, entry: writeId === id ? entry : { ...entry, id: writeId } });
  });

  fresh.sort((a, b) => a.entry.epoch - b.entry.epoch || a.index - b.index);
  let seq = tail?.seq ?? 0;
  const unsigned = fresh.map(({ entry }): UnsignedProofRecord => {
    seq += 1;
    return {
      version: 1,
      id: entry.id,
      address: { h3_cell: entry.h3_cell, epoch: entry.epoch, pk: signer.publicKey },
      collection_type: entry.collection_type,
      payload_type: entry.payload_type,
      payload: entry.payload,
      seq,
      written_at: entry.written_at,
    };
  });
  return {
    fresh: unsigned,
    finish(signed) {
      fresh.forEach(({ index }, i) => (records[index] = signed[i]));
      return {
        records: entries.map((entry, index) => records[firstIndex.get(entry.id) ?? index] as ProofRecord),
        fresh: [...signed],
      };
    },
  };
}

/** The signing key's own public key, derived once per batch and only when a record needs it. */
function signerPk(signer: KeyPair): () => string {
  let pk: string | undefined;
  return () => (pk ??= keyPairFromSecret(signer.secretKey).publicKey);
}

/** hashRecordToSign with the store's error: what signRecord refuses is `invalid_record`. */
function hashFresh(pk: () => string, record: UnsignedProofRecord): UnsignedProofRecord & { record_hash: string } {
  try {
    return hashRecordToSign(record, pk);
  } catch (error) {
    // signRecord refuses what checkRecord would (TypeError) and payloads JSON cannot carry.
    if (error instanceof TypeError || error instanceof CanonicalJsonError)
      throw new ServiceError('invalid_record', `record ${record.id}: ${error.message}`);
    throw error;
  }
}

/** Below this many records a batch is signed on the calling thread: a worker round trip costs more. */
const POOL_MIN_RECORDS = 64;

/**
 * Hashes the fresh records on this thread and signs them on the Ed25519 pool, chunk by chunk, so the workers
 * sign the first chunks while this thread still hashes the last. The same records as planAppend's.
 */
export async function signFresh(
  signer: KeyPair,
  fresh: readonly UnsignedProofRecord[],
  pool: Ed25519Pool = sharedEd25519Pool(),
  /** Called with every record hashed (in order) while the workers still sign: an adapter's idle time. */
  whileSigning?: (hashed: readonly (UnsignedProofRecord & { record_hash: string })[]) => void,
): Promise<ProofRecord[]> {
  const pk = signerPk(signer);
  if (fresh.length < POOL_MIN_RECORDS) {
    return fresh.map((record) => {
      const hashed = hashFresh(pk, record);
      return { ...hashed, signature: signMessage(signer.secretKey, hashed.record_hash) };
    });
  }
  const hashed: (UnsignedProofRecord & { record_hash: string })[] = [];
  const signing: Promise<string[]>[] = [];
  const chunk = Math.max(POOL_MIN_RECORDS, Math.ceil(fresh.length / (2 * pool.size)));
  for (let from = 0; from < fresh.length; from += chunk) {
    const part = fresh.slice(from, from + chunk).map((record) => hashFresh(pk, record));
    hashed.push(...part);
    signing.push(
      pool.sign(
        signer.secretKey,
        part.map((record) => record.record_hash),
      ),
    );
  }
  whileSigning?.(hashed);
  const signatures = (await Promise.all(signing)).flat();
  return hashed.map((record, i) => ({ ...record, signature: signatures[i] as string }));
}
