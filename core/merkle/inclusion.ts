/**
 * RFC 9162 inclusion proofs (section 2.1.3): generation from stored tree levels and verification.
 *
 * Verification treats every input as hostile: indices, sizes, the proof length and every hash length
 * are checked before any hashing, so a malformed proof fails with a precise reason and costs nothing.
 * Arithmetic avoids 32-bit bitwise operators so any safe-integer tree size is handled exactly.
 */
import { HASH_BYTES, merkleLevels, nodeHash } from './tree.js';

export class MerkleError extends Error {
  override name = 'MerkleError';

  constructor(readonly reason: string) {
    super(reason);
  }
}

const isIndex = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

const shown = (value: unknown): string => (typeof value === 'number' ? String(value) : typeof value);

function checkIndexAndSize(leafIndex: number, treeSize: number): void {
  if (!isIndex(leafIndex)) {
    throw new MerkleError(`leaf index must be a non-negative safe integer, got ${shown(leafIndex)}`);
  }
  if (!isIndex(treeSize)) {
    throw new MerkleError(`tree size must be a non-negative safe integer, got ${shown(treeSize)}`);
  }
  if (leafIndex >= treeSize) throw new MerkleError(`leaf index ${leafIndex} is not below tree size ${treeSize}`);
}

function checkHash(bytes: unknown, what: string): void {
  if (!(bytes instanceof Uint8Array)) throw new MerkleError(`${what} is ${typeof bytes}, not ${HASH_BYTES} bytes`);
  if (bytes.length !== HASH_BYTES) throw new MerkleError(`${what} is ${bytes.length} bytes, not ${HASH_BYTES}`);
}

const half = (n: number): number => Math.floor(n / 2);
const isOdd = (n: number): boolean => n % 2 === 1;

/**
 * Number of hashes in the audit path of `leafIndex` in a tree of `treeSize`: the RFC 9162 2.1.3.2 loop
 * run without hashing, so the length check and the verifier can never disagree.
 */
function auditPathLength(leafIndex: number, treeSize: number): number {
  let fn = leafIndex;
  let sn = treeSize - 1;
  let length = 0;
  while (sn > 0) {
    length++;
    if (!isOdd(fn) && fn === sn) {
      // The last node of its level has no right sibling: it rises until it is a right child.
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    }
    fn = half(fn);
    sn = half(sn);
  }
  return length;
}

/** Checks stored levels have the sizes the leaf count implies (before any slicing); returns the tree size. */
function checkLevels(levels: readonly Uint8Array[]): number {
  if (!Array.isArray(levels) || levels.length === 0) throw new MerkleError('tree has no levels');
  const leaves = levels[0];
  if (!(leaves instanceof Uint8Array) || leaves.length % HASH_BYTES !== 0) {
    throw new MerkleError(`level 0 is not a whole number of ${HASH_BYTES}-byte hashes`);
  }
  let count = leaves.length / HASH_BYTES;
  const treeSize = count;
  for (let level = 1; level < levels.length; level++) {
    if (count === 1) throw new MerkleError(`level ${level} lies above the root`);
    count = count === 0 ? 1 : Math.ceil(count / 2); // the empty tree stores EMPTY_ROOT as level 1
    const bytes = levels[level];
    if (!(bytes instanceof Uint8Array) || bytes.length !== count * HASH_BYTES) {
      throw new MerkleError(`level ${level} should hold ${count} hashes`);
    }
  }
  if (count !== 1) throw new MerkleError(`last level holds ${count} hashes, not the root alone`);
  return treeSize;
}

/**
 * Audit path of `leafIndex`, leaf level first, sliced from levels stored by `merkleLevels`: one sibling
 * per level where the node has one (an odd last node is promoted and contributes nothing). O(log n).
 */
export function inclusionProofFromLevels(levels: readonly Uint8Array[], leafIndex: number): Uint8Array[] {
  const treeSize = checkLevels(levels);
  checkIndexAndSize(leafIndex, treeSize);
  const proof: Uint8Array[] = [];
  let index = leafIndex;
  for (let level = 0; level < levels.length - 1; level++) {
    const nodes = levels[level] as Uint8Array;
    const sibling = isOdd(index) ? index - 1 : index + 1;
    if (sibling * HASH_BYTES < nodes.length) {
      // Plain Uint8Array copies (a Buffer's slice would be a view), so no caller can alter the stored tree.
      const hash = new Uint8Array(HASH_BYTES);
      hash.set(nodes.subarray(sibling * HASH_BYTES, (sibling + 1) * HASH_BYTES));
      proof.push(hash);
    }
    index = half(index);
  }
  return proof;
}

/** Convenience for small trees: builds all levels, then slices. */
export function inclusionProof(leaves: readonly Uint8Array[], leafIndex: number): Uint8Array[] {
  checkIndexAndSize(leafIndex, leaves.length);
  return inclusionProofFromLevels(merkleLevels(leaves), leafIndex);
}

/** The root implied by a leaf and its audit path (RFC 9162 section 2.1.3.2); throws MerkleError. */
export function rootFromInclusionProof(
  leafIndex: number,
  treeSize: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
): Uint8Array {
  checkIndexAndSize(leafIndex, treeSize);
  checkHash(leafHash, 'leaf hash');
  if (!Array.isArray(proof)) throw new MerkleError('proof must be an array of hashes');
  const needed = auditPathLength(leafIndex, treeSize);
  if (proof.length !== needed) {
    throw new MerkleError(
      `proof has ${proof.length} hashes; tree size ${treeSize} at index ${leafIndex} needs ${needed}`,
    );
  }
  proof.forEach((p, i) => checkHash(p, `hash ${i}`));

  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = leafHash;
  for (const p of proof) {
    if (isOdd(fn) || fn === sn) {
      r = nodeHash(p, r);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  // Guaranteed by the length check; kept because it is the RFC's final condition.
  if (sn !== 0) throw new MerkleError('proof ends before the root');
  return r;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}

/** Throws MerkleError unless `proof` shows `leafHash` at `leafIndex` in the tree of `treeSize` with `root`. */
export function verifyInclusion(
  leafIndex: number,
  treeSize: number,
  leafHash: Uint8Array,
  proof: readonly Uint8Array[],
  root: Uint8Array,
): void {
  checkIndexAndSize(leafIndex, treeSize);
  checkHash(root, 'root');
  const computed = rootFromInclusionProof(leafIndex, treeSize, leafHash, proof);
  if (!equalBytes(computed, root)) throw new MerkleError('root mismatch');
}
