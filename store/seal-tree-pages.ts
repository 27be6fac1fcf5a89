/**
 * How both proof-store adapters keep a seal's tree: `merkleLevels` cut into pages of SEAL_PAGE_NODES nodes,
 * keyed (sealer, epoch, level, page), so an inclusion proof reads one small page per level instead of the
 * epoch's records (O(log n) for a million-record epoch).
 */
import { ServiceError } from '../core/errors.js';
import { bytesToHex } from '../core/hex.js';
import { HASH_BYTES } from '../core/merkle/tree.js';
import type { ProofRecord, Seal } from '../core/proof-types.js';
import type { EpochTree } from '../core/seal.js';

/** 256 nodes = 8 KiB per page: a few database pages, and 3,900 pages for a million-record epoch's leaves. */
export const SEAL_PAGE_NODES = 256;
const PAGE_BYTES = SEAL_PAGE_NODES * HASH_BYTES;

export interface SealTreePage {
  level: number;
  page: number;
  nodes: Uint8Array;
}

/** Node counts per level of a tree of `leaves` leaves, as `merkleLevels` lays it out (empty: [0, 1]). */
function levelSizes(leaves: number): number[] {
  if (leaves === 0) return [0, 1];
  const sizes = [leaves];
  for (let n = leaves; n > 1;) sizes.push((n = Math.ceil(n / 2)));
  return sizes;
}

/**
 * Refuses levels that are not a tree of `seal.record_count` leaves ending in `seal.merkle_root`: a store
 * must not keep a tree whose proofs could never verify. Shape and root only; that the leaves are the
 * records' is the caller's check (`checkSealCoversRecords`) before it puts the seal.
 */
export function checkSealLevels(seal: Seal, levels: readonly Uint8Array[]): void {
  const bad = (detail: string) => new ServiceError('invalid_seal', `tree of epoch ${seal.epoch}: ${detail}`);
  const sizes = levelSizes(seal.record_count);
  if (!Array.isArray(levels) || levels.length !== sizes.length) {
    throw bad(`${sizes.length} levels expected for ${seal.record_count} records, got ${levels?.length}`);
  }
  sizes.forEach((size, level) => {
    const bytes = levels[level];
    if (!(bytes instanceof Uint8Array) || bytes.length !== size * HASH_BYTES) {
      throw bad(`level ${level} should hold ${size} hashes`);
    }
  });
  if (bytesToHex(levels[levels.length - 1] as Uint8Array) !== seal.merkle_root) {
    throw bad('the top level is not the seal merkle_root');
  }
}

/**
 * Refuses a seal `sign` returned in ProofStore.sealEpoch unless it is the seal of the tree the store just built
 * for (pk, epoch): the same writer, epoch, count, seqs and root (invalid_seal), as checkSealLevels does for
 * levels handed to putSeal.
 */
export function checkSealOverTree(seal: Seal, pk: string, epoch: number, tree: EpochTree): void {
  const lastSeq = tree.firstSeq === null ? null : tree.firstSeq + tree.count - 1;
  if (
    seal?.sealer_pk !== pk ||
    seal.epoch !== epoch ||
    seal.record_count !== tree.count ||
    seal.first_seq !== tree.firstSeq ||
    seal.last_seq !== lastSeq ||
    seal.merkle_root !== bytesToHex(tree.root)
  ) {
    throw new ServiceError(
      'invalid_seal',
      `the seal of epoch ${epoch} is not over the tree of writer ${pk}'s ${tree.count} records in that epoch`,
    );
  }
}

/** The pages to store; each `nodes` is a view into `levels` (copy it if the store keeps the buffer). */
export function* sealTreePages(levels: readonly Uint8Array[]): Generator<SealTreePage> {
  for (let level = 0; level < levels.length; level++) {
    const bytes = levels[level] as Uint8Array;
    for (let page = 0; page * PAGE_BYTES < bytes.length; page++) {
      yield { level, page, nodes: bytes.subarray(page * PAGE_BYTES, (page + 1) * PAGE_BYTES) };
    }
  }
}

export interface PathNode {
  level: number;
  page: number;
  /** Byte offset of the node in its page. */
  offset: number;
}

/**
 * Where the audit path of `leafIndex` lies in the pages, leaf level first: the sibling at each level where
 * the node has one (an odd last node is promoted and contributes nothing) — `inclusionProofFromLevels`
 * without the levels in memory.
 */
export function auditPathNodes(treeSize: number, leafIndex: number): PathNode[] {
  const sizes = levelSizes(treeSize);
  const out: PathNode[] = [];
  let index = leafIndex;
  for (let level = 0; level < sizes.length - 1; level++) {
    const sibling = index % 2 === 1 ? index - 1 : index + 1;
    if (sibling < (sizes[level] as number)) {
      out.push({
        level,
        page: Math.floor(sibling / SEAL_PAGE_NODES),
        offset: (sibling % SEAL_PAGE_NODES) * HASH_BYTES,
      });
    }
    index = Math.floor(index / 2);
  }
  return out;
}

/** Reads the path from pages fetched by the adapter (`pageKey(level, page)` → nodes); copies each hash. */
export function auditPathFromPages(nodes: readonly PathNode[], pages: ReadonlyMap<string, Uint8Array>): Uint8Array[] {
  return nodes.map(({ level, page, offset }) => {
    const bytes = pages.get(pageKey(level, page));
    if (bytes === undefined || bytes.length < offset + HASH_BYTES) {
      throw new Error(`seal tree page ${level}/${page} is missing or short: the stored tree is damaged`);
    }
    // A plain Uint8Array copy: drivers hand out Buffers, whose slice() is a view, not a copy.
    return new Uint8Array(bytes.subarray(offset, offset + HASH_BYTES));
  });
}

export const pageKey = (level: number, page: number): string => `${level}/${page}`;

/**
 * The record's leaf index in its seal: seqs in a sealed epoch are first_seq..last_seq without a gap (the
 * seal schema), so it is seq − first_seq. A record outside that range is not in the tree: seal_mismatch.
 */
export function leafIndexInSeal(seal: Seal, record: Pick<ProofRecord, 'id' | 'seq'>): number {
  const index = seal.first_seq === null ? -1 : record.seq - seal.first_seq;
  if (index < 0 || index >= seal.record_count) {
    const range = seal.first_seq === null ? 'none' : `${seal.first_seq}..${seal.last_seq}`;
    throw new ServiceError(
      'seal_mismatch',
      `record ${record.id} (seq ${record.seq}) is not among the sealed seqs of epoch ${seal.epoch} (${range})`,
    );
  }
  return index;
}
