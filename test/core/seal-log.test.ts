import assert from 'node:assert/strict';
import { sha256Hex } from '../../core/hash.js';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { keyPairFromSecret } from '../../core/identity.js';
import { leafHash, merkleRoot } from '../../core/merkle/tree.js';
import { GENESIS_PREV_HASH, type Seal } from '../../core/proof-types.js';
import { createSeal } from '../../core/seal.js';
import {
  checkSealHead,
  sealConsistencyProof,
  sealInclusionIssue,
  sealInclusionProof,
  sealLeafHash,
  sealLogAppend,
  sealLogFrontier,
  sealLogLeaves,
  sealLogNodeKey,
  signSealHead,
  verifySealConsistency,
} from '../../core/seal-log.js';

const sealer = keyPairFromSecret('3'.repeat(64));
const node = keyPairFromSecret('5'.repeat(64));

function chain(n: number, firstEpoch = 7): Seal[] {
  const seals: Seal[] = [];
  let prev = GENESIS_PREV_HASH;
  for (let i = 0; i < n; i++) {
    const seal = createSeal(sealer.secretKey, {
      epoch: firstEpoch + i,
      records: [],
      prevSealHash: prev,
      sealedAt: '2026-01-01T00:00:00.000Z',
    });
    seals.push(seal);
    prev = seal.seal_hash;
  }
  return seals;
}

const leavesOf = (n: number) => Array.from({ length: n }, (_, i) => sealLeafHash(sha256Hex(String(i))));

describe('seal log (docs/protocol.md §15.4)', () => {
  it('is the RFC 9162 tree of the tagged seal hashes: its root is MTH over the leaves', () => {
    for (let n = 1; n <= 17; n++) {
      const leaves = leavesOf(n);
      const head = signSealHead(node.secretKey, { sealerPk: sealer.publicKey, firstEpoch: 0, leaves });
      assert.equal(head.root_hash, bytesToHex(merkleRoot(leaves)));
    }
  });

  it('tags its leaves, so a seal leaf is not the record leaf of the same 32 bytes', () => {
    const hash = sha256Hex('x');
    assert.notEqual(bytesToHex(sealLeafHash(hash)), bytesToHex(leafHash(hexToBytes(hash))));
  });

  it('proves every seal at its epoch, and no seal at another epoch or in another head', () => {
    const seals = chain(13);
    const log = { sealerPk: sealer.publicKey, ...sealLogLeaves(seals) };
    const head = signSealHead(node.secretKey, log);
    assert.equal(checkSealHead(head).ok, true);
    for (const [i, seal] of seals.entries()) {
      const proof = sealInclusionProof(log.leaves, i, seals.length);
      assert.equal(sealInclusionIssue(seal, head, proof), undefined, `epoch ${seal.epoch}`);
      // The same path offered for the neighbouring epoch's seal fails: the index comes from the epoch.
      const other = seals[(i + 1) % seals.length] as Seal;
      assert.notEqual(sealInclusionIssue(other, head, proof), undefined);
      assert.notEqual(sealInclusionIssue(seal, head, { ...proof, leaf_index: (i + 1) % seals.length }), undefined);
    }
    const smaller = signSealHead(node.secretKey, log, 5);
    assert.match(
      sealInclusionIssue(seals[2] as Seal, smaller, sealInclusionProof(log.leaves, 2, 13)) ?? '',
      /tree_size/,
    );
  });

  it('proves every smaller head consistent with every larger one, and refuses a changed node or root', () => {
    for (let n = 1; n <= 20; n++) {
      const leaves = leavesOf(n);
      const rootN = merkleRoot(leaves);
      for (let m = 1; m <= n; m++) {
        const rootM = merkleRoot(leaves.slice(0, m));
        const proof = sealConsistencyProof(leaves, m, n).map(hexToBytes);
        assert.equal(verifySealConsistency(m, n, rootM, rootN, proof), true, `${m} → ${n}`);
        const forked = sealLeafHash(sha256Hex('fork'));
        assert.equal(verifySealConsistency(m, n, merkleRoot([...leaves.slice(0, m - 1), forked]), rootN, proof), false);
        if (proof.length > 0) {
          const changed = proof.map((p, i) => (i === proof.length - 1 ? sealLeafHash(bytesToHex(p)) : p));
          assert.equal(verifySealConsistency(m, n, rootM, rootN, changed), false, `${m} → ${n} changed`);
        }
      }
    }
  });

  it('holds two heads of one size with two roots inconsistent (an equivocation)', () => {
    const leaves = leavesOf(6);
    const fork = [...leaves.slice(0, 5), sealLeafHash(sha256Hex('other'))];
    assert.equal(verifySealConsistency(6, 6, merkleRoot(leaves), merkleRoot(fork), []), false);
  });

  it('refuses a head whose size or signature was changed', () => {
    const head = signSealHead(node.secretKey, { sealerPk: sealer.publicKey, firstEpoch: 3, leaves: leavesOf(4) });
    assert.equal(checkSealHead({ ...head, tree_size: 5 }).ok, false);
    assert.equal(checkSealHead({ ...head, signature: '0'.repeat(128) }).ok, false);
    assert.equal(checkSealHead({ ...head, extra: 1 }).ok, false);
  });

  it('gives from its stored nodes, appended a few leaves at a time, the heads and proofs the leaves give', () => {
    const leaves = leavesOf(37);
    const stored = new Map<string, Uint8Array>();
    const nodes = { node: (l: number, i: number) => stored.get(sealLogNodeKey(l, i)) ?? assert.fail(`no ${l}:${i}`) };
    let size = 0;
    for (const step of [1, 1, 3, 2, 8, 5, 17]) {
      const frontier = new Map(sealLogFrontier(size).map((k) => [sealLogNodeKey(k.level, k.index), true]));
      const prior = {
        node: (l: number, i: number) => (frontier.has(sealLogNodeKey(l, i)) ? nodes.node(l, i) : assert.fail()),
      };
      for (const n of sealLogAppend(size, leaves.slice(size, size + step), prior)) {
        stored.set(sealLogNodeKey(n.level, n.index), n.hash);
      }
      size += step;
      const log = { sealerPk: sealer.publicKey, firstEpoch: 7 };
      assert.deepEqual(
        signSealHead(node.secretKey, { ...log, leaves: nodes, size }),
        signSealHead(node.secretKey, { ...log, leaves: leaves.slice(0, size) }),
      );
      for (let i = 0; i < size; i++) {
        assert.deepEqual(sealInclusionProof(nodes, i, size), sealInclusionProof(leaves, i, size));
        assert.deepEqual(sealConsistencyProof(nodes, i + 1, size), sealConsistencyProof(leaves, i + 1, size));
      }
    }
  });
});
