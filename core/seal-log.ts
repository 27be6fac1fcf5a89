/**
 * The seal log (docs/protocol.md §15.4): each sealer's seals, from its first, are the leaves of an RFC 9162 Merkle
 * tree, leaf i being the seal of epoch first_epoch + i. A signed head commits to the log at one size; an inclusion
 * proof shows one seal in it and a consistency proof shows a larger head extends a smaller one, both of
 * logarithmic size, so a receipt carries a record's seal and its proof instead of every seal since the first.
 * Pure: heads carry no time, so the head of one size is the same bytes whenever its signer signs it.
 */
import { hash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import { fail, pass, type Check } from './check.js';
import { bytesToHex, hexToBytes } from './hex.js';
import { keyPairFromSecret, signMessage, verifySignature } from './identity.js';
import { rootFromInclusionProof } from './merkle/inclusion.js';
import { nodeHash } from './merkle/tree.js';
import { describeZodIssue } from './zod-issue.js';
import type { InclusionProof, Seal } from './proof-types.js';

/** Domain separation: a seal-log leaf can never be read as a record leaf (33 bytes) nor a head hash as a seal's. */
export const SEAL_LOG_LEAF_TAG = 'geofabric/seal-log/v1';
export const SEAL_HEAD_TAG = 'geofabric/seal-head/v1';

export interface UnsignedSealHead {
  version: 1;
  /** Whose seals the log holds. */
  sealer_pk: string;
  /** The epoch of leaf 0: the sealer's first seal. Leaf i is the seal of epoch first_epoch + i. */
  first_epoch: number;
  /** Seals in the log (≥ 1): epochs first_epoch .. first_epoch + tree_size - 1. */
  tree_size: number;
  /** RFC 9162 MTH over the leaves (hex). */
  root_hash: string;
  /** Who signs: the sealer itself, or the node that keeps the log (docs/protocol.md §15.4). */
  signer_pk: string;
}

export interface SealHead extends UnsignedSealHead {
  /** SHA-256 hex of UTF-8(SEAL_HEAD_TAG + "\n" + JCS(unsigned head)). */
  head_hash: string;
  /** Ed25519 by signer_pk over the UTF-8 of head_hash. */
  signature: string;
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

export const sealHeadSchema = z.strictObject({
  version: z.literal(1),
  sealer_pk: hex64,
  first_epoch: count,
  tree_size: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  root_hash: hex64,
  signer_pk: hex64,
  head_hash: hex64,
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex'),
});

export const sealProofSchema = z.strictObject({
  leaf_index: count,
  tree_size: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  hashes: z.array(hex64).max(64),
});

const sha256 = (data: Uint8Array): Uint8Array => new Uint8Array(hash('sha256', data, 'buffer'));
const LEAF_PREFIX = new Uint8Array([0x00, ...new TextEncoder().encode(SEAL_LOG_LEAF_TAG)]);

/** SHA-256(0x00 ‖ UTF-8(SEAL_LOG_LEAF_TAG) ‖ seal_hash as 32 bytes). */
export function sealLeafHash(sealHashHex: string): Uint8Array {
  const input = new Uint8Array(LEAF_PREFIX.length + 32);
  input.set(LEAF_PREFIX);
  input.set(hexToBytes(sealHashHex), LEAF_PREFIX.length);
  return sha256(input);
}

/** SHA-256 hex of UTF-8(SEAL_HEAD_TAG + "\n" + JCS(head without head_hash and signature)). */
export function sealHeadHash(head: UnsignedSealHead | SealHead): string {
  const { head_hash: _h, signature: _s, ...unsigned } = head as SealHead;
  return bytesToHex(sha256(new TextEncoder().encode(`${SEAL_HEAD_TAG}\n${canonicalJson(unsigned)}`)));
}

const largestPowerOfTwoBelow = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/**
 * A log read through its stored nodes (docs/protocol.md §15.4): node(level, index) is the MTH of the complete
 * subtree of leaves [index·2^level, (index+1)·2^level), so a head, an inclusion or a consistency proof reads
 * O(log n) nodes instead of every leaf.
 */
export interface SealLogNodes {
  node(level: number, index: number): Uint8Array;
}

/** The leaves themselves, or the stored complete subtrees over them. */
export type SealLogSource = readonly Uint8Array[] | SealLogNodes;

export const sealLogNodeKey = (level: number, index: number): string => `${level}:${index}`;

/** MTH of leaves[from, to) (RFC 9162 §2.1.1); to > from. */
function subtreeRoot(src: SealLogSource, from: number, to: number): Uint8Array {
  const width = to - from;
  if (!Array.isArray(src) && (width & (width - 1)) === 0 && from % width === 0) {
    return (src as SealLogNodes).node(Math.log2(width), from / width);
  }
  if (width === 1) return (src as readonly Uint8Array[])[from] as Uint8Array;
  const k = largestPowerOfTwoBelow(width);
  return nodeHash(subtreeRoot(src, from, from + k), subtreeRoot(src, from + k, to));
}

/** The stored nodes `read` would look up in a log: run it over a recorder first, fetch those, then run it. */
export function sealLogNodesRead(read: (src: SealLogNodes) => void): { level: number; index: number }[] {
  const seen = new Map<string, { level: number; index: number }>();
  const zero = new Uint8Array(32);
  read({
    node(level, index) {
      seen.set(sealLogNodeKey(level, index), { level, index });
      return zero;
    },
  });
  return [...seen.values()];
}

/**
 * The complete nodes appending leaves at indexes size.. completes, given the log's nodes of its first `size`
 * leaves (only its frontier is read: the complete subtrees of the binary decomposition of size).
 */
export function sealLogAppend(
  size: number,
  leaves: readonly Uint8Array[],
  prior: SealLogNodes,
): { level: number; index: number; hash: Uint8Array }[] {
  const made = new Map<string, Uint8Array>();
  const get = (level: number, index: number) => made.get(sealLogNodeKey(level, index)) ?? prior.node(level, index);
  const out: { level: number; index: number; hash: Uint8Array }[] = [];
  leaves.forEach((leaf, i) => {
    const n = size + i;
    let hashAt = leaf;
    let index = n;
    for (let level = 0; ; level++) {
      made.set(sealLogNodeKey(level, index), hashAt);
      out.push({ level, index, hash: hashAt });
      if (index % 2 === 0) break;
      hashAt = nodeHash(get(level, index - 1), hashAt);
      index = (index - 1) / 2;
    }
  });
  return out;
}

/** The frontier of a log of `size` leaves: what sealLogAppend reads of it. */
export function sealLogFrontier(size: number): { level: number; index: number }[] {
  const out: { level: number; index: number }[] = [];
  let offset = 0;
  for (let level = 52; level >= 0; level--) {
    const width = 2 ** level;
    if (size - offset >= width) {
      out.push({ level, index: offset / width });
      offset += width;
    }
  }
  return out;
}

/** RFC 9162 MTH of the first `size` leaves (size ≥ 1). */
export function sealLogRoot(src: SealLogSource, size: number): Uint8Array {
  return subtreeRoot(src, 0, size);
}

/** A sealer's seals from its first, gapless, as the leaves of its log; throws when they are not that. */
export function sealLogLeaves(seals: readonly Seal[]): { firstEpoch: number; leaves: Uint8Array[] } {
  const sorted = [...seals].sort((a, b) => a.epoch - b.epoch);
  const first = sorted[0];
  if (first === undefined) throw new TypeError('a seal log holds at least one seal');
  sorted.forEach((s, i) => {
    if (s.epoch !== first.epoch + i) throw new TypeError(`the seal log has no seal for epoch ${first.epoch + i}`);
    if (s.sealer_pk !== first.sealer_pk) throw new TypeError(`the seal log of ${first.sealer_pk} holds another's`);
  });
  return { firstEpoch: first.epoch, leaves: sorted.map((s) => sealLeafHash(s.seal_hash)) };
}

/** The signed head over the first `size` leaves of a sealer's log. */
export function signSealHead(
  secretKey: string,
  log: { sealerPk: string; firstEpoch: number; leaves: SealLogSource; size?: number },
  size: number = log.size ?? (log.leaves as readonly Uint8Array[]).length,
): SealHead {
  if (!Number.isSafeInteger(size) || size < 1 || size > (log.size ?? (log.leaves as readonly Uint8Array[]).length))
    throw new TypeError(`no head of size ${size}`);
  const unsigned: UnsignedSealHead = {
    version: 1,
    sealer_pk: log.sealerPk,
    first_epoch: log.firstEpoch,
    tree_size: size,
    root_hash: bytesToHex(subtreeRoot(log.leaves, 0, size)),
    signer_pk: keyPairFromSecret(secretKey).publicKey,
  };
  const headHash = sealHeadHash(unsigned);
  return { ...unsigned, head_hash: headHash, signature: signMessage(secretKey, headHash) };
}

/** RFC 9162 §2.1.3.1 audit path of leaf `index` in the tree of the first `size` leaves. */
export function sealInclusionProof(leaves: SealLogSource, index: number, size: number): InclusionProof {
  const path = (m: number, from: number, to: number): Uint8Array[] => {
    if (to - from === 1) return [];
    const k = largestPowerOfTwoBelow(to - from);
    return m < k
      ? [...path(m, from, from + k), subtreeRoot(leaves, from + k, to)]
      : [...path(m - k, from + k, to), subtreeRoot(leaves, from, from + k)];
  };
  return { leaf_index: index, tree_size: size, hashes: path(index, 0, size).map(bytesToHex) };
}

/** RFC 9162 §2.1.4.1 consistency proof from the first `m` leaves to the first `n` (empty when m = n). */
export function sealConsistencyProof(leaves: SealLogSource, m: number, n: number): string[] {
  const sub = (m2: number, from: number, to: number, whole: boolean): Uint8Array[] => {
    if (m2 === to - from) return whole ? [] : [subtreeRoot(leaves, from, to)];
    const k = largestPowerOfTwoBelow(to - from);
    return m2 <= k
      ? [...sub(m2, from, from + k, whole), subtreeRoot(leaves, from + k, to)]
      : [...sub(m2 - k, from + k, to, false), subtreeRoot(leaves, from, from + k)];
  };
  return sub(m, 0, n, true).map(bytesToHex);
}

const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows the tree of size `n` with root `newRoot` extends the tree of size `m`
 * with root `oldRoot`. For m = n the proof must be empty and the roots equal (two heads of one size and two
 * roots are an equivocation, never consistent).
 */
export function verifySealConsistency(
  m: number,
  n: number,
  oldRoot: Uint8Array,
  newRoot: Uint8Array,
  proof: readonly Uint8Array[],
): boolean {
  if (!(m >= 1 && m <= n)) return false;
  if (m === n) return proof.length === 0 && equal(oldRoot, newRoot);
  const path = (m & (m - 1)) === 0 ? [oldRoot, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0] as Uint8Array;
  let sr = path[0] as Uint8Array;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && equal(fr, oldRoot) && equal(sr, newRoot);
}

/** Shape, head_hash, then signer_pk's signature; every failure is `invalid_seal`. */
export function checkSealHead(value: unknown): Check<SealHead> {
  const parsed = sealHeadSchema.safeParse(value);
  if (!parsed.success) return fail('invalid_seal', describeZodIssue(parsed.error, 'head'));
  const head = parsed.data;
  if (sealHeadHash(head) !== head.head_hash) return fail('invalid_seal', 'head_hash does not match the head');
  if (!verifySignature(head.signer_pk, head.head_hash, head.signature)) {
    return fail('invalid_seal', 'the head signature does not verify');
  }
  return pass(head);
}

/**
 * Why `proof` does not show `seal` in `head`, or undefined: the leaf index is the seal's epoch less the head's
 * first epoch (never taken from the proof alone), the proof's size the head's, and the path leads to its root.
 */
export function sealInclusionIssue(seal: Seal, head: SealHead, proof: unknown): string | undefined {
  const parsed = sealProofSchema.safeParse(proof);
  if (!parsed.success) return describeZodIssue(parsed.error, 'seal_proof');
  const { leaf_index, tree_size, hashes } = parsed.data;
  if (seal.sealer_pk !== head.sealer_pk) return `the seal is by ${seal.sealer_pk}, the head's log is ${head.sealer_pk}`;
  if (leaf_index !== seal.epoch - head.first_epoch) {
    return `leaf_index ${leaf_index} is not epoch ${seal.epoch} less the head's first epoch ${head.first_epoch}`;
  }
  if (tree_size !== head.tree_size) return `tree_size ${tree_size} is not the head's ${head.tree_size}`;
  let root: Uint8Array;
  try {
    root = rootFromInclusionProof(leaf_index, tree_size, sealLeafHash(seal.seal_hash), hashes.map(hexToBytes));
  } catch (error) {
    return (error as Error).message;
  }
  return bytesToHex(root) === head.root_hash ? undefined : "the proof does not lead to the head's root";
}
