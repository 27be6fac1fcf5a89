/**
 * RFC 9162 (Certificate Transparency v2) Merkle tree hashing, docs/protocol.md §10:
 * leaf = SHA-256(0x00 ‖ record_hash), node = SHA-256(0x01 ‖ left ‖ right), and a tree of n > 1 leaves
 * splits at the largest power of two below n, so an odd node is never duplicated (duplication would let
 * two different leaf lists share a root, CVE-2012-2459).
 *
 * Hashing uses node:crypto's one-shot `hash` (Node ≥ 20.12): it is pure computation, not I/O, and about
 * twice as fast as createHash per call, which matters at a million leaves per epoch.
 */
import { hash } from 'node:crypto';

export const HASH_BYTES = 32;

const LEAF_PREFIX = 0x00;
const NODE_PREFIX = 0x01;

// Scratch buffers reused across calls: core is synchronous, so no two hashes interleave. Buffers, so a
// hex record hash can be decoded straight into place.
const leafInput = Buffer.alloc(1 + HASH_BYTES, LEAF_PREFIX);
const nodeInput = Buffer.alloc(1 + 2 * HASH_BYTES, NODE_PREFIX);
const LOWER_HEX_64 = /^[0-9a-f]{64}$/;

function requireHash(bytes: Uint8Array, what: string): void {
  if (!(bytes instanceof Uint8Array) || bytes.length !== HASH_BYTES) {
    const length = bytes instanceof Uint8Array ? `${bytes.length} bytes` : typeof bytes;
    throw new TypeError(`${what} must be ${HASH_BYTES} bytes, got ${length}`);
  }
}

/** SHA-256 as a plain Uint8Array viewing the digest's own memory (no copy; not a Buffer, so deepEqual works). */
function sha256(data: Uint8Array): Uint8Array {
  const digest = hash('sha256', data, 'buffer');
  return new Uint8Array(digest.buffer, digest.byteOffset, digest.byteLength);
}

/** The leaf hash of a record: `recordHash` is the record_hash as 32 raw bytes, not hex text. */
export function leafHash(recordHash: Uint8Array): Uint8Array {
  requireHash(recordHash, 'record hash');
  leafInput.set(recordHash, 1);
  return sha256(leafInput);
}

/** leafHash of a record_hash given as 64 lowercase hex, decoded in place: the sealing hot path. */
export function leafHashFromHex(recordHashHex: string): Uint8Array {
  if (typeof recordHashHex !== 'string' || !LOWER_HEX_64.test(recordHashHex)) {
    throw new TypeError('record hash must be 64 lowercase hex');
  }
  leafInput.write(recordHashHex, 1, 'hex');
  return sha256(leafInput);
}

/**
 * leafHashFromHex written into `dst` at byte `offset` (no allocation beyond the digest): how a store streams an
 * epoch's record hashes straight into one packed leaf level, with no object per leaf.
 */
export function writeLeafHashFromHex(recordHashHex: string, dst: Uint8Array, offset: number): void {
  if (typeof recordHashHex !== 'string' || !LOWER_HEX_64.test(recordHashHex)) {
    throw new TypeError('record hash must be 64 lowercase hex');
  }
  leafInput.write(recordHashHex, 1, 'hex');
  dst.set(hash('sha256', leafInput, 'buffer'), offset);
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  requireHash(left, 'left hash');
  requireHash(right, 'right hash');
  nodeInput.set(left, 1);
  nodeInput.set(right, 1 + HASH_BYTES);
  return sha256(nodeInput);
}

/** MTH of the empty list: SHA-256 of the empty string. Shared: callers must not mutate it. */
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

/** Hashes the pair at `from` and `from + 32` of `src` into `dst` at `to` (no allocation beyond the digest). */
export function hashPairInto(src: Uint8Array, from: number, dst: Uint8Array, to: number): void {
  nodeInput.set(src.subarray(from, from + 2 * HASH_BYTES), 1);
  dst.set(hash('sha256', nodeInput, 'buffer'), to);
}

/** One level up: pairs hashed left to right, an odd last node promoted unchanged (RFC 9162 shape). */
function reduceLevel(src: Uint8Array, count: number, dst: Uint8Array): number {
  const pairs = Math.floor(count / 2);
  for (let i = 0; i < pairs; i++) hashPairInto(src, 2 * i * HASH_BYTES, dst, i * HASH_BYTES);
  if (count % 2 === 1) dst.set(src.subarray((count - 1) * HASH_BYTES, count * HASH_BYTES), pairs * HASH_BYTES);
  return pairs + (count % 2);
}

/** Packs leaf hashes into one buffer, checking every length before any hashing. */
function packLeaves(leaves: readonly Uint8Array[]): Uint8Array {
  const packed = new Uint8Array(leaves.length * HASH_BYTES);
  for (let i = 0; i < leaves.length; i++) {
    const leaf = leaves[i] as Uint8Array;
    requireHash(leaf, `leaf ${i}`);
    packed.set(leaf, i * HASH_BYTES);
  }
  return packed;
}

/**
 * MTH over leaf hashes (not record hashes). Bottom-up with odd-node promotion, in place in one buffer:
 * iterative, so no recursion depth limit, and the same root as RFC 9162's recursive definition.
 */
export function merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return EMPTY_ROOT.slice();
  const work = packLeaves(leaves);
  // Writing node i of the next level only overwrites nodes 2i and 2i+1 or earlier, already consumed.
  let count = leaves.length;
  while (count > 1) count = reduceLevel(work, count, work);
  return work.slice(0, HASH_BYTES);
}

/**
 * Every level of the tree as one packed buffer: level 0 holds the leaves (32 bytes each), each next
 * level ceil(previous / 2) nodes, the last level the root alone. Stored at seal time so an inclusion
 * proof is O(log n) slices. The empty tree is `[empty buffer, EMPTY_ROOT]`, so level 0 always gives
 * the tree size and the last level the root.
 */
export function merkleLevels(leaves: readonly Uint8Array[]): Uint8Array[] {
  return merkleLevelsOfPacked(packLeaves(leaves));
}

/**
 * merkleLevels over leaf hashes already packed 32 bytes each (level 0 is `packed` itself, not a copy): a
 * million-leaf tree is 64 MB of buffers in all, not a million small objects.
 */
export function merkleLevelsOfPacked(packed: Uint8Array): Uint8Array[] {
  if (!(packed instanceof Uint8Array) || packed.length % HASH_BYTES !== 0) {
    throw new TypeError(`packed leaves must be a multiple of ${HASH_BYTES} bytes`);
  }
  if (packed.length === 0) return [new Uint8Array(0), EMPTY_ROOT.slice()];
  const levels = [packed];
  let count = packed.length / HASH_BYTES;
  while (count > 1) {
    const src = levels[levels.length - 1] as Uint8Array;
    const dst = new Uint8Array(Math.ceil(count / 2) * HASH_BYTES);
    count = reduceLevel(src, count, dst);
    levels.push(dst);
  }
  return levels;
}
