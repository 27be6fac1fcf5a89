import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { MerkleError, inclusionProof, inclusionProofFromLevels, verifyInclusion } from '../../core/merkle/inclusion.js';
import { leafHash, merkleLevels, merkleRoot } from '../../core/merkle/tree.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(100);
const tally = new CaseTally('property', 'merkle');

const sha = (...parts: Uint8Array[]): Uint8Array =>
  new Uint8Array(createHash('sha256').update(Buffer.concat(parts)).digest());
const largestPowerOfTwoBelow = (n: number): number => 2 ** Math.floor(Math.log2(n - 1));

/** RFC 9162 section 2.1.1 MTH over leaf hashes, recursively: the reference the iterative tree must equal. */
function referenceRoot(leaves: readonly Uint8Array[]): Uint8Array {
  if (leaves.length === 1) return leaves[0] as Uint8Array;
  const k = largestPowerOfTwoBelow(leaves.length);
  return sha(Uint8Array.of(1), referenceRoot(leaves.slice(0, k)), referenceRoot(leaves.slice(k)));
}

/** RFC 9162 section 2.1.3.1 PATH(m, D[n]), leaf level first, with the side each sibling sits on. */
function referencePath(m: number, leaves: readonly Uint8Array[]): { hash: Uint8Array; side: 'L' | 'R' }[] {
  if (leaves.length <= 1) return [];
  const k = largestPowerOfTwoBelow(leaves.length);
  return m < k
    ? [...referencePath(m, leaves.slice(0, k)), { hash: referenceRoot(leaves.slice(k)), side: 'R' }]
    : [...referencePath(m - k, leaves.slice(k)), { hash: referenceRoot(leaves.slice(0, k)), side: 'L' }];
}

/** The sides of PATH(m, D[n]) alone: two (index, size) pairs with the same sides verify the same hashes. */
function pathShape(m: number, n: number): string {
  if (n <= 1) return '';
  const k = largestPowerOfTwoBelow(n);
  return m < k ? `${pathShape(m, k)}R` : `${pathShape(m - k, n - k)}L`;
}

/** 1..70 distinct leaf hashes (distinct, so that moving a proof to another index cannot coincide). */
const leafSets = fc
  .uniqueArray(fc.uint8Array({ minLength: 32, maxLength: 32 }), {
    minLength: 1,
    maxLength: 70,
    selector: (bytes) => Buffer.from(bytes).toString('hex'),
  })
  .map((records) => records.map(leafHash));

/** A leaf set and one of its indices. */
const leafAndIndex = leafSets.chain((leaves) => fc.tuple(fc.constant(leaves), fc.nat(leaves.length - 1)));

const flipBit = (bytes: Uint8Array, bit: number): Uint8Array => {
  const out = bytes.slice();
  out[bit >> 3] = (out[bit >> 3] as number) ^ (1 << (bit & 7));
  return out;
};

const rejects = (run: () => void) => assert.throws(run, MerkleError);

describe('property: Merkle trees and inclusion proofs (RFC 9162)', () => {
  after(() => tally.print());

  it('root equals the recursive RFC 9162 MTH, and every leaf has a proof that verifies against it', () => {
    fc.assert(
      fc.property(leafSets, (leaves) => {
        tally.add('every-proof-verifies', 'merkle');
        const root = merkleRoot(leaves);
        assert.deepEqual(root, referenceRoot(leaves));
        const levels = merkleLevels(leaves);
        assert.deepEqual(levels[levels.length - 1], root);
        leaves.forEach((leaf, i) => {
          const proof = inclusionProofFromLevels(levels, i);
          assert.deepEqual(
            proof,
            referencePath(i, leaves).map((p) => p.hash),
          );
          assert.deepEqual(inclusionProof(leaves, i), proof);
          verifyInclusion(i, leaves.length, leaf, proof, root);
        });
      }),
      fcParams(RUNS),
    );
  });

  it('rejects a proof after any single-bit flip of the leaf, of any proof hash or of the root', () => {
    const target = leafAndIndex.chain(([leaves, index]) => {
      const proofLength = inclusionProofFromLevels(merkleLevels(leaves), index).length;
      const where = fc.oneof(
        fc.constant({ kind: 'leaf' as const, at: 0 }),
        fc.constant({ kind: 'root' as const, at: 0 }),
        ...(proofLength > 0 ? [fc.nat(proofLength - 1).map((at) => ({ kind: 'proof' as const, at }))] : []),
      );
      return fc.tuple(fc.constant(leaves), fc.constant(index), where, fc.nat(255));
    });
    fc.assert(
      fc.property(target, ([leaves, index, where, bit]) => {
        tally.add(`bit-flip-${where.kind}`, 'merkle');
        const root = merkleRoot(leaves);
        const proof = inclusionProof(leaves, index);
        const leaf = leaves[index] as Uint8Array;
        if (where.kind === 'leaf')
          rejects(() => verifyInclusion(index, leaves.length, flipBit(leaf, bit), proof, root));
        if (where.kind === 'root')
          rejects(() => verifyInclusion(index, leaves.length, leaf, proof, flipBit(root, bit)));
        if (where.kind === 'proof') {
          const bent = proof.map((hash, i) => (i === where.at ? flipBit(hash, bit) : hash));
          rejects(() => verifyInclusion(index, leaves.length, leaf, bent, root));
        }
      }),
      fcParams(RUNS * 3),
    );
  });

  it('rejects the proof under any other leaf index', () => {
    const moved = leafAndIndex
      .filter(([leaves]) => leaves.length > 1)
      .chain(([leaves, index]) =>
        fc.tuple(
          fc.constant(leaves),
          fc.constant(index),
          fc.nat(leaves.length - 2).map((j) => (j >= index ? j + 1 : j)),
        ),
      );
    fc.assert(
      fc.property(moved, ([leaves, index, other]) => {
        tally.add('other-index', 'merkle');
        const proof = inclusionProof(leaves, index);
        rejects(() => verifyInclusion(other, leaves.length, leaves[index] as Uint8Array, proof, merkleRoot(leaves)));
      }),
      fcParams(RUNS),
    );
  });

  it('rejects the proof under another tree size exactly when the size changes the audit path', () => {
    // The root does not commit to the size (RFC 9162: the signed tree head does); a seal's record_count
    // binds it, and verifyProofBundle refuses any other size (test/property/proof-record.test.ts).
    const resized = leafAndIndex.chain(([leaves, index]) =>
      fc.tuple(
        fc.constant(leaves),
        fc.constant(index),
        fc.integer({ min: index + 1, max: 2 * leaves.length + 2 }).filter((m) => m !== leaves.length),
      ),
    );
    fc.assert(
      fc.property(resized, ([leaves, index, size]) => {
        const proof = inclusionProof(leaves, index);
        const verify = () => verifyInclusion(index, size, leaves[index] as Uint8Array, proof, merkleRoot(leaves));
        const sameShape = pathShape(index, size) === pathShape(index, leaves.length);
        tally.add(sameShape ? 'other-size-same-path' : 'other-size-rejected', 'merkle');
        if (sameShape) verify();
        else rejects(verify);
      }),
      fcParams(RUNS * 2),
    );
  });

  it('refuses malformed indices, sizes and hashes with MerkleError, never another error', () => {
    const junk = fc.oneof(
      fc.integer({ min: -5, max: -1 }),
      fc.double({ noInteger: true }),
      fc.constantFrom(NaN, Infinity, -Infinity, 2 ** 53, Number.MAX_VALUE),
      fc.string({ maxLength: 3 }),
      fc.constant(null),
    );
    fc.assert(
      fc.property(leafAndIndex, junk, fc.nat(3), ([leaves, index], bad, which) => {
        tally.add('malformed-input', 'merkle');
        const root = merkleRoot(leaves);
        const proof = inclusionProof(leaves, index);
        const leaf = leaves[index] as Uint8Array;
        const args: Parameters<typeof verifyInclusion> = [index, leaves.length, leaf, proof, root];
        if (which === 0) args[0] = bad as number;
        if (which === 1) args[1] = bad as number;
        if (which === 2) args[2] = (typeof bad === 'number' ? new Uint8Array(31) : bad) as Uint8Array;
        if (which === 3) args[3] = [...proof, new Uint8Array(32)];
        rejects(() => verifyInclusion(...args));
      }),
      fcParams(RUNS),
    );
  });
});
