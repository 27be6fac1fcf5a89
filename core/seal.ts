/**
 * Epoch seals (docs/protocol.md §1.8, §3; docs/protocol.md §10): one per (sealer key, epoch), empty epochs included, over
 * the RFC 9162 tree of the sealer's records in seq order, signed by the sealer and chained to its
 * previous seal. Three separate checks, because a store must run all of them:
 *   checkSeal              — the seal itself (shape, seal_hash, signature);
 *   checkSealCoversRecords — it covers exactly the records held for its (sealer, epoch);
 *   checkSealChain         — a sealer's seals link up from genesis with no epoch missing.
 * None of them checks the records themselves: callers run checkRecord on each record too.
 */
import { sha256Hex } from './hash.js';
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { describeZodIssue } from './zod-issue.js';
import { fail, pass, type Check } from './check.js';
import { bytesToHex, isHex } from './hex.js';
import { checkPublicKey, keyPairFromSecret, signMessage, verifySignature } from './identity.js';
import { EMPTY_ROOT, merkleLevels, merkleRoot } from './merkle/tree.js';
import { checkRecord, recordLeaf } from './proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal, type UnsignedSeal } from './proof-types.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const hex128 = z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex');
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const seq = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
const EMPTY_ROOT_HEX = bytesToHex(EMPTY_ROOT);

export const sealSchema = z
  .strictObject({
    version: z.literal(1),
    sealer_pk: hex64,
    epoch: count,
    record_count: count,
    first_seq: seq.nullable(),
    last_seq: seq.nullable(),
    merkle_root: hex64,
    prev_epoch_hash: hex64,
    sealed_at: z.iso.datetime(),
    custodian_pk: hex64.optional(),
    seal_hash: hex64,
    signature: hex128,
  })
  // Seqs are gapless per writer, so an epoch's records are exactly first_seq..last_seq.
  .superRefine((seal, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (seal.record_count === 0) {
      if (seal.first_seq !== null || seal.last_seq !== null) issue('first_seq', 'must be null in an empty epoch');
      if (seal.merkle_root !== EMPTY_ROOT_HEX) issue('merkle_root', 'must be the empty-tree root in an empty epoch');
    } else if (seal.first_seq === null || seal.last_seq === null) {
      issue('first_seq', `first_seq and last_seq are required when record_count is ${seal.record_count}`);
    } else if (seal.last_seq - seal.first_seq + 1 !== seal.record_count) {
      issue(
        'record_count',
        `${seal.record_count} does not equal the seqs ${seal.first_seq}..${seal.last_seq} (${seal.last_seq - seal.first_seq + 1})`,
      );
    }
  });

// Compile-time proof that the schema's output is the shared interface.
const _schemaMatchesInterface = (parsed: z.output<typeof sealSchema>): Seal => parsed;

function unsignedPart(seal: UnsignedSeal | Seal): UnsignedSeal {
  const { seal_hash: _hash, signature: _signature, ...unsigned } = seal as Seal;
  return unsigned;
}

/** SHA-256 hex of the UTF-8 of JCS(seal without seal_hash and signature). */
export function sealHash(seal: UnsignedSeal): string {
  return sha256Hex(canonicalJson(unsignedPart(seal)));
}

export interface SealInput {
  epoch: number;
  /** This sealer's records of the epoch, in any order; only seq and record_hash are read. */
  records: readonly Pick<ProofRecord, 'seq' | 'record_hash'>[];
  prevSealHash: string;
  /** ISO 8601 UTC; core reads no clock. */
  sealedAt: string;
  /**
   * Whose records and chain the seal covers, when not the signing key's own: a custodial seal, signed by the
   * central store's node key for a worker gone for good (docs/protocol.md §12).
   */
  writerPk?: string;
}

/** Who signed a seal: the custodian of a custodial seal, else the writer itself. */
export const sealSignerOf = (seal: Pick<Seal, 'sealer_pk' | 'custodian_pk'>): string =>
  seal.custodian_pk ?? seal.sealer_pk;

/** `custodial` when the central store sealed the writer's epoch with its own key, `writer` when the writer did. */
export const sealKindOf = (seal: Pick<Seal, 'custodian_pk'>): 'writer' | 'custodial' =>
  seal.custodian_pk === undefined ? 'writer' : 'custodial';

/** Builds, signs and validates a seal; `tree` turns the seq-ordered leaves into the root. */
function sealOver(secretKey: string, input: SealInput, tree: (leaves: Uint8Array[]) => Uint8Array): Seal {
  const { publicKey } = keyPairFromSecret(secretKey);
  const sorted = [...input.records].sort((a, b) => a.seq - b.seq);
  // A seal asserts first_seq..last_seq with nothing missing; refuse to sign a gap or a duplicate.
  for (let i = 1; i < sorted.length; i++) {
    const previous = (sorted[i - 1] as { seq: number }).seq;
    const current = (sorted[i] as { seq: number }).seq;
    if (current !== previous + 1) {
      throw new TypeError(
        current === previous ? `two records share seq ${current}` : `seqs ${previous + 1}..${current - 1} are missing`,
      );
    }
  }
  return signSeal(secretKey, publicKey, {
    epoch: input.epoch,
    count: sorted.length,
    firstSeq: sorted[0]?.seq ?? null,
    root: tree(sorted.map(recordLeaf)),
    prevSealHash: input.prevSealHash,
    sealedAt: input.sealedAt,
    writerPk: input.writerPk,
  });
}

interface SealFacts {
  epoch: number;
  count: number;
  firstSeq: number | null;
  root: Uint8Array;
  prevSealHash: string;
  sealedAt: string;
  /** SealInput.writerPk: set for a custodial seal. */
  writerPk?: string | undefined;
}

function signSeal(secretKey: string, publicKey: string, facts: SealFacts): Seal {
  const unsigned: UnsignedSeal = {
    version: 1,
    sealer_pk: facts.writerPk ?? publicKey,
    epoch: facts.epoch,
    record_count: facts.count,
    first_seq: facts.count === 0 ? null : facts.firstSeq,
    last_seq: facts.count === 0 || facts.firstSeq === null ? null : facts.firstSeq + facts.count - 1,
    merkle_root: bytesToHex(facts.root),
    prev_epoch_hash: facts.prevSealHash,
    sealed_at: facts.sealedAt,
    ...(facts.writerPk !== undefined && facts.writerPk !== publicKey ? { custodian_pk: publicKey } : {}),
  };
  const sealHashHex = sealHash(unsigned);
  const seal: Seal = { ...unsigned, seal_hash: sealHashHex, signature: signMessage(secretKey, sealHashHex) };
  const checked = sealSchema.safeParse(seal);
  if (!checked.success) throw new TypeError(`cannot seal: ${describeZodIssue(checked.error, 'seal')}`);
  return seal;
}

/** An epoch's leaves as a store streams them for sealing: seqs firstSeq.. without a gap, leaf hashes packed. */
export interface PackedEpochLeaves {
  /** null when the epoch has no records. */
  firstSeq: number | null;
  /** Leaf hashes (leafHash of each record_hash) in seq order, 32 bytes each. */
  leaves: Uint8Array;
}

/** What a store hands a sealer once it has built an epoch's tree (ProofStore.sealEpoch): enough to sign. */
export interface EpochTree {
  /** Records in the epoch; seqs firstSeq..firstSeq + count - 1 without a gap. */
  count: number;
  /** null when the epoch has no records. */
  firstSeq: number | null;
  /** MTH over the records' leaf hashes in seq order (EMPTY_ROOT when there are none). */
  root: Uint8Array;
}

/**
 * The seal of a tree a store built itself, streaming the leaves (ProofStore.sealEpoch): byte for byte the
 * seal createSealWithLevels makes over the epoch's records, with nothing per record in memory.
 */
export function createSealOverTree(secretKey: string, input: Omit<SealInput, 'records'> & { tree: EpochTree }): Seal {
  const { publicKey } = keyPairFromSecret(secretKey);
  const { count, firstSeq, root } = input.tree;
  if (!Number.isSafeInteger(count) || count < 0 || count > 0 !== (firstSeq !== null)) {
    throw new TypeError(`cannot seal: ${count} records with first seq ${firstSeq}`);
  }
  return signSeal(secretKey, publicKey, {
    epoch: input.epoch,
    count,
    firstSeq,
    root,
    prevSealHash: input.prevSealHash,
    sealedAt: input.sealedAt,
    writerPk: input.writerPk,
  });
}

/**
 * Seals one epoch of the key's own records. Throws TypeError when the seqs have a gap or a duplicate or
 * an input field is malformed: such a seal could never pass checkSeal / checkSealCoversRecords.
 */
export function createSeal(secretKey: string, input: SealInput): Seal {
  return sealOver(secretKey, input, merkleRoot);
}

/**
 * createSeal plus the tree levels (merkleLevels of the seq-ordered leaves), for a store that keeps the
 * tree for O(log n) proofs without hashing a large epoch twice. Added beside the planned API.
 */
export function createSealWithLevels(secretKey: string, input: SealInput): { seal: Seal; levels: Uint8Array[] } {
  let levels: Uint8Array[] = [];
  const seal = sealOver(secretKey, input, (leaves) => {
    levels = merkleLevels(leaves);
    return levels[levels.length - 1] as Uint8Array;
  });
  return { seal, levels };
}

/** Shape, then seal_hash, then the signer's signature (sealSignerOf); every failure is `invalid_seal`. */
export function checkSeal(value: unknown): Check<Seal> {
  const parsed = sealSchema.safeParse(value);
  if (!parsed.success) return fail('invalid_seal', describeZodIssue(parsed.error, 'seal'));
  const seal = parsed.data;
  if (sealHash(seal) !== seal.seal_hash) return fail('invalid_seal', 'seal_hash does not match the seal');
  if (!verifySignature(sealSignerOf(seal), seal.seal_hash, seal.signature)) {
    const key = checkPublicKey(sealSignerOf(seal));
    return fail('invalid_seal', key.ok ? 'signature does not verify' : `signature does not verify: ${key.detail}`);
  }
  return pass(seal);
}

const label = (record: ProofRecord): string => `record ${record.id} (seq ${record.seq})`;

/**
 * Records diagnosed after a root mismatch. Diagnosis runs checkRecord per record (a signature check
 * each), so it is bounded: a failing 1M-record epoch must not cost minutes in a request.
 */
const DIAGNOSE_LIMIT = 10_000;

/** Why the root differs, naming the first record (in seq order) that fails its own hash or signature. */
function diagnoseRootMismatch(sorted: readonly ProofRecord[]): string {
  const head = 'merkle root over the records does not match the seal';
  for (const record of sorted.slice(0, DIAGNOSE_LIMIT)) {
    const checked = checkRecord(record);
    if (!checked.ok) return `${head}; ${label(record)}: ${checked.detail}`;
  }
  return sorted.length > DIAGNOSE_LIMIT
    ? `${head} (the first ${DIAGNOSE_LIMIT} records are intact; run a store audit)`
    : `${head}, though every record is intact (the seal was made over other records)`;
}

/**
 * Whether `seal` covers exactly `records`, the records a store holds for (seal.sealer_pk, seal.epoch):
 * same writer and epoch, seqs first_seq..last_seq each once, and the same Merkle root over their
 * record_hash values in seq order. Failures are `seal_mismatch` naming the record or seq.
 * Coverage is by record_hash: a record whose content was edited but whose record_hash was left alone is
 * still covered, and only checkRecord catches it; callers run checkSeal and checkRecord as well.
 */
export function checkSealCoversRecords(seal: Seal, records: readonly ProofRecord[]): Check<void> {
  const mismatch = (detail: string) => fail('seal_mismatch', `epoch ${seal.epoch}: ${detail}`);
  for (const record of records) {
    if (record.address?.pk !== seal.sealer_pk) return mismatch(`${label(record)} was written by another key`);
    if (record.address.epoch !== seal.epoch) {
      return mismatch(`${label(record)} belongs to epoch ${record.address.epoch}`);
    }
  }
  const sorted = [...records].sort((a, b) => a.seq - b.seq);
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1] as ProofRecord, sorted[i] as ProofRecord];
    if (a.seq === b.seq) return mismatch(`records ${a.id} and ${b.id} share seq ${a.seq}`);
  }
  const first = seal.first_seq;
  const last = seal.last_seq;
  if (first === null || last === null) {
    const extra = sorted[0];
    return extra === undefined ? pass(undefined) : mismatch(`the seal covers no records, but ${label(extra)} exists`);
  }
  const outside = sorted.find((record) => record.seq < first || record.seq > last);
  if (outside !== undefined) return mismatch(`${label(outside)} is outside the sealed seqs ${first}..${last}`);
  // All seqs are distinct and within first..last, so the first position that disagrees marks a gap.
  for (let expected = first, i = 0; expected <= last; expected++, i++) {
    const record = sorted[i];
    if (record === undefined || record.seq !== expected) {
      return mismatch(
        `seq ${expected} is missing: the seal covers ${seal.record_count} records, ${records.length} held`,
      );
    }
  }
  if (sorted.length !== seal.record_count) {
    return mismatch(`the seal covers ${seal.record_count} records, ${records.length} held`);
  }
  let root: string;
  try {
    root = bytesToHex(merkleRoot(sorted.map(recordLeaf)));
  } catch {
    const bad = sorted.find((record) => !isHex(record.record_hash, 32));
    return mismatch(`${bad === undefined ? 'a record' : label(bad)} has a malformed record_hash`);
  }
  if (root !== seal.merkle_root) {
    return mismatch(diagnoseRootMismatch(sorted));
  }
  return pass(undefined);
}

export interface SealCheckProblem {
  epoch: number;
  problem: string;
}

/** More missing epochs than this in one gap are summarised in one problem, so output stays bounded. */
const MAX_LISTED_GAP = 100;

/** seal_hash as recomputed, so an edited seal breaks the next link even if its seal_hash was left alone. */
function actualHash(seal: Seal): string {
  try {
    return sealHash(seal);
  } catch {
    return seal.seal_hash;
  }
}

/**
 * Chain problems in ONE sealer's seals (any order; sorted here by epoch): the earliest links to genesis,
 * each next prev_epoch_hash equals the recomputed hash of the seal before it, no epoch between them lacks
 * a seal, no epoch has two. An edit to the latest seal has no next link: checkSeal catches it. Returns
 * every problem found; empty means the chain is intact.
 */
export function checkSealChain(seals: readonly Seal[]): SealCheckProblem[] {
  const problems: SealCheckProblem[] = [];
  const add = (epoch: number, problem: string) => problems.push({ epoch, problem });
  // Grouped by epoch, so a second seal for an epoch is one problem and does not also break the next link.
  const sorted = [...seals].sort((a, b) => a.epoch - b.epoch);
  const byEpoch = new Map<number, Seal[]>();
  for (const seal of sorted) byEpoch.set(seal.epoch, [...(byEpoch.get(seal.epoch) ?? []), seal]);
  // The earliest seal names the sealer; any other key in the list is a problem.
  const sealer = sorted[0]?.sealer_pk;
  let previous: { epoch: number; hashes: string[] } | undefined;
  for (const [epoch, group] of byEpoch) {
    if (group.length > 1) add(epoch, `epoch ${epoch} has more than one seal`);
    for (const seal of group) {
      if (seal.sealer_pk !== sealer) add(epoch, `epoch ${epoch}: seal is by ${seal.sealer_pk}, not ${sealer}`);
    }
    if (previous === undefined) {
      for (const seal of group.filter((s) => s.prev_epoch_hash !== GENESIS_PREV_HASH)) {
        add(
          epoch,
          `epoch ${epoch}: the sealer's earliest seal must chain to genesis (64 zeros), not ${seal.prev_epoch_hash}`,
        );
      }
    } else if (epoch > previous.epoch + 1) {
      const gap = epoch - previous.epoch - 1;
      for (let e = previous.epoch + 1; e < epoch && e <= previous.epoch + MAX_LISTED_GAP; e++) {
        add(e, `epoch ${e} has no seal`);
      }
      if (gap > MAX_LISTED_GAP) {
        const from = previous.epoch + MAX_LISTED_GAP + 1;
        add(from, `epochs ${from}..${epoch - 1} have no seal`);
      }
      // The link points at a missing seal: there is nothing to compare it with.
    } else {
      const { hashes, epoch: before } = previous;
      for (const seal of group) {
        if (!hashes.includes(seal.prev_epoch_hash)) {
          add(epoch, `epoch ${epoch}: prev_epoch_hash does not match the seal of epoch ${before}`);
        }
      }
    }
    previous = { epoch, hashes: group.map(actualHash) };
  }
  return problems;
}
