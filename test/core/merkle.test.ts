import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import {
  inclusionProof,
  inclusionProofFromLevels,
  MerkleError,
  rootFromInclusionProof,
  verifyInclusion,
} from '../../core/merkle/inclusion.js';
import { EMPTY_ROOT, HASH_BYTES, leafHash, merkleLevels, merkleRoot, nodeHash } from '../../core/merkle/tree.js';

// transparency-dev/merkle's inclusion vectors, copied in with their licence (test/fixtures/vectors/README.md).
const VECTORS = resolve(import.meta.dirname, '../fixtures/vectors/merkle/inclusion');

interface Vector {
  file: string;
  leafIdx: number;
  treeSize: number;
  root: Uint8Array;
  leafHash: Uint8Array;
  proof: Uint8Array[];
  desc: string;
  wantErr: boolean;
}

const b64 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, 'base64'));
// Indices come as JSON numbers (or strings in some suites); 2^64-1 arrives as an unsafe number and must be refused.
const num = (value: unknown): number => (typeof value === 'string' ? Number(value) : (value as number));

function listJson(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listJson(path);
    return entry.name.endsWith('.json') ? [path] : [];
  });
}

function loadVectors(): Vector[] {
  return listJson(VECTORS)
    .sort()
    .map((path) => {
      const raw = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      return {
        file: relative(VECTORS, path),
        leafIdx: num(raw.leafIdx),
        treeSize: num(raw.treeSize),
        root: b64(raw.root as string),
        leafHash: b64(raw.leafHash as string),
        proof: ((raw.proof as string[] | null) ?? []).map(b64),
        desc: raw.desc as string,
        wantErr: raw.wantErr as boolean,
      };
    });
}

const sha256 = (...parts: Uint8Array[]): Uint8Array => {
  const h = createHash('sha256');
  for (const part of parts) h.update(part);
  return new Uint8Array(h.digest());
};
const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex');

/** Leaf i of a test tree: the leaf hash of a record hash derived from i. */
const leafOf = (i: number): Uint8Array => leafHash(sha256(new TextEncoder().encode(`record ${i}`)));
const leavesOf = (n: number): Uint8Array[] => Array.from({ length: n }, (_, i) => leafOf(i));

const largestPowerOfTwoBelow = (n: number): number => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};

/** RFC 9162 section 2.1.1 MTH, written recursively as the RFC states it (leaves are leaf hashes). */
function referenceRoot(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leaves[0] as Uint8Array;
  const k = largestPowerOfTwoBelow(leaves.length);
  return sha256(Uint8Array.of(1), referenceRoot(leaves.slice(0, k)), referenceRoot(leaves.slice(k)));
}

/** RFC 9162 section 2.1.3.1 PATH(m, D[n]), recursively: leaf level first. */
function referencePath(m: number, leaves: Uint8Array[]): Uint8Array[] {
  if (leaves.length <= 1) return [];
  const k = largestPowerOfTwoBelow(leaves.length);
  return m < k
    ? [...referencePath(m, leaves.slice(0, k)), referenceRoot(leaves.slice(k))]
    : [...referencePath(m - k, leaves.slice(k)), referenceRoot(leaves.slice(0, k))];
}

function rejection(fn: () => unknown): MerkleError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof MerkleError, `expected MerkleError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected a MerkleError');
}

describe('core/merkle', () => {
  describe('RFC 9162 inclusion vectors (test/fixtures/vectors/merkle/inclusion)', () => {
    const vectors = loadVectors();

    it('finds the vector files', () => {
      assert.ok(vectors.length >= 90, `only ${vectors.length} vectors under ${VECTORS}`);
      assert.ok(vectors.some((v) => !v.wantErr));
    });

    for (const v of vectors) {
      it(`${v.file}: ${v.desc} → ${v.wantErr ? 'rejected' : 'verifies'}`, () => {
        const run = () => verifyInclusion(v.leafIdx, v.treeSize, v.leafHash, v.proof, v.root);
        if (v.wantErr) rejection(run);
        else assert.doesNotThrow(run);
      });
    }
  });

  describe('tree hashing', () => {
    it('hashes leaves and nodes with the RFC 9162 domain prefixes', () => {
      const recordHash = sha256(new TextEncoder().encode('x'));
      assert.equal(hex(leafHash(recordHash)), hex(sha256(Uint8Array.of(0), recordHash)));
      const [a, b] = [leafOf(1), leafOf(2)];
      assert.equal(hex(nodeHash(a, b)), hex(sha256(Uint8Array.of(1), a, b)));
      assert.equal(HASH_BYTES, 32);
    });

    it('uses SHA-256 of the empty string as the empty root', () => {
      assert.equal(hex(EMPTY_ROOT), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
      assert.equal(hex(merkleRoot([])), hex(EMPTY_ROOT));
    });

    it('refuses a record hash or leaf that is not 32 bytes', () => {
      assert.throws(() => leafHash(new Uint8Array(31)), /record hash must be 32 bytes, got 31 bytes/);
      assert.throws(() => merkleRoot([leafOf(0), new Uint8Array(33)]), /leaf 1 must be 32 bytes/);
    });

    for (const n of [0, 1, 2, 3, 5, 7]) {
      it(`root of ${n} leaves equals the recursive MTH`, () => {
        const leaves = leavesOf(n);
        assert.equal(hex(merkleRoot(leaves)), hex(referenceRoot(leaves)));
      });
    }

    it('never duplicates an odd node: 3 leaves and 4 leaves with the last repeated differ', () => {
      const three = leavesOf(3);
      assert.notEqual(hex(merkleRoot(three)), hex(merkleRoot([...three, three[2] as Uint8Array])));
    });

    it('builds levels whose last level is the root and whose sizes halve rounding up', () => {
      for (let n = 0; n <= 33; n++) {
        const leaves = leavesOf(n);
        const levels = merkleLevels(leaves);
        assert.equal(levels[0]?.length, n * HASH_BYTES);
        assert.equal(hex(levels[levels.length - 1] as Uint8Array), hex(referenceRoot(leaves)), `n = ${n}`);
        for (let l = 1; l < levels.length; l++) {
          const below = (levels[l - 1] as Uint8Array).length / HASH_BYTES;
          assert.equal((levels[l] as Uint8Array).length / HASH_BYTES, n === 0 ? 1 : Math.ceil(below / 2));
        }
      }
    });

    it('does not let a caller alter the input leaves through the result', () => {
      const leaves = leavesOf(2);
      const before = hex(leaves[0] as Uint8Array);
      merkleLevels(leaves)[0]?.fill(0);
      merkleRoot(leaves).fill(0);
      assert.equal(hex(leaves[0] as Uint8Array), before);
    });
  });

  describe('inclusion proofs', () => {
    it('equal the RFC PATH for every index of trees of 1..33 leaves, and verify', () => {
      for (let n = 1; n <= 33; n++) {
        const leaves = leavesOf(n);
        const levels = merkleLevels(leaves);
        const root = merkleRoot(leaves);
        for (let m = 0; m < n; m++) {
          const proof = inclusionProofFromLevels(levels, m);
          assert.deepEqual(proof.map(hex), referencePath(m, leaves).map(hex), `n = ${n}, m = ${m}`);
          assert.deepEqual(inclusionProof(leaves, m).map(hex), proof.map(hex));
          verifyInclusion(m, n, leaves[m] as Uint8Array, proof, root);
          assert.equal(hex(rootFromInclusionProof(m, n, leaves[m] as Uint8Array, proof)), hex(root));
        }
      }
    });

    it('hands out copies, so a proof cannot alter the stored tree', () => {
      const levels = merkleLevels(leavesOf(4));
      const before = levels.map(hex);
      for (const hash of inclusionProofFromLevels(levels, 1)) hash.fill(0);
      assert.deepEqual(levels.map(hex), before);
      // Levels read back from a store as Buffers: still plain copies out.
      const buffers = levels.map((level) => Buffer.from(level));
      const proof = inclusionProofFromLevels(buffers, 1);
      assert.ok(proof.every((hash) => Object.getPrototypeOf(hash) === Uint8Array.prototype));
      for (const hash of proof) hash.fill(0);
      assert.deepEqual(buffers.map(hex), before);
    });

    it('refuses an index outside the tree and malformed stored levels', () => {
      const levels = merkleLevels(leavesOf(7));
      assert.equal(
        rejection(() => inclusionProofFromLevels(levels, 7)).reason,
        'leaf index 7 is not below tree size 7',
      );
      assert.match(rejection(() => inclusionProofFromLevels(levels, -1)).reason, /leaf index must be a non-negative/);
      assert.match(rejection(() => inclusionProofFromLevels(levels, 1.5)).reason, /leaf index must be a non-negative/);
      assert.equal(
        rejection(() => inclusionProofFromLevels(merkleLevels([]), 0)).reason,
        'leaf index 0 is not below tree size 0',
      );
      assert.equal(
        rejection(() => inclusionProofFromLevels(levels.slice(0, -1), 0)).reason,
        'last level holds 2 hashes, not the root alone',
      );
      assert.equal(
        rejection(() => inclusionProofFromLevels([levels[0] as Uint8Array, new Uint8Array(64)], 0)).reason,
        'level 1 should hold 4 hashes',
      );
      assert.equal(rejection(() => inclusionProof(leavesOf(3), 3)).reason, 'leaf index 3 is not below tree size 3');
    });

    describe('tampering', () => {
      const n = 10;
      const leaves = leavesOf(n);
      const root = merkleRoot(leaves);
      const index = 3;
      const leaf = leaves[index] as Uint8Array;
      const proof = inclusionProof(leaves, index);

      it('a proof of the right length verifies untouched', () => {
        assert.equal(proof.length, 4);
        verifyInclusion(index, n, leaf, proof, root);
      });

      it('rejects a flipped bit in any proof hash as a root mismatch', () => {
        for (let i = 0; i < proof.length; i++) {
          const tampered = proof.map((h, j) => {
            const copy = h.slice();
            if (j === i) copy[7] = (copy[7] as number) ^ 0x10;
            return copy;
          });
          assert.equal(rejection(() => verifyInclusion(index, n, leaf, tampered, root)).reason, 'root mismatch');
        }
      });

      it('rejects the wrong leaf, the wrong index and the wrong root', () => {
        assert.equal(rejection(() => verifyInclusion(index, n, leafOf(99), proof, root)).reason, 'root mismatch');
        assert.equal(rejection(() => verifyInclusion(2, n, leaf, proof, root)).reason, 'root mismatch');
        assert.equal(rejection(() => verifyInclusion(index, n, leaf, proof, leafOf(0))).reason, 'root mismatch');
      });

      it('rejects a wrong tree size by length when the path length differs, by root otherwise', () => {
        assert.equal(
          rejection(() => verifyInclusion(index, 3, leaf, proof, root)).reason,
          'leaf index 3 is not below tree size 3',
        );
        assert.equal(
          rejection(() => verifyInclusion(index, 4, leaf, proof, root)).reason,
          'proof has 4 hashes; tree size 4 at index 3 needs 2',
        );
        // Sizes 10 and 11 give index 3 the same path shape, so the size is bound by the root it comes with
        // (a seal carries both): against the 11-leaf root the 10-leaf proof fails.
        const root11 = merkleRoot(leavesOf(11));
        assert.equal(rejection(() => verifyInclusion(index, 11, leaf, proof, root11)).reason, 'root mismatch');
        assert.equal(
          rejection(() => verifyInclusion(index, 0, leaf, proof, root)).reason,
          'leaf index 3 is not below tree size 0',
        );
      });

      it('checks lengths before hashing, with precise reasons', () => {
        assert.equal(
          rejection(() => verifyInclusion(index, n, leaf, proof.slice(1), root)).reason,
          'proof has 3 hashes; tree size 10 at index 3 needs 4',
        );
        assert.equal(
          rejection(() => verifyInclusion(index, n, leaf, [...proof, leafOf(5)], root)).reason,
          'proof has 5 hashes; tree size 10 at index 3 needs 4',
        );
        const short = proof.map((h, i) => (i === 2 ? h.slice(1) : h));
        assert.equal(
          rejection(() => verifyInclusion(index, n, leaf, short, root)).reason,
          'hash 2 is 31 bytes, not 32',
        );
        assert.equal(
          rejection(() => verifyInclusion(index, n, leaf.slice(0, 9), proof, root)).reason,
          'leaf hash is 9 bytes, not 32',
        );
        assert.equal(
          rejection(() => verifyInclusion(index, n, leaf, proof, new Uint8Array(0))).reason,
          'root is 0 bytes, not 32',
        );
        assert.match(rejection(() => verifyInclusion(index, 2 ** 64, leaf, proof, root)).reason, /tree size must be/);
      });
    });
  });
});
