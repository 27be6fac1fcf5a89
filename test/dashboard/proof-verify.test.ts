/**
 * The dashboard's in-page proof checker (dashboard/proof-verify.js) against the server's verifier
 * (core/proof-bundle.ts): the same verdict on real bundles of every leaf of trees of 1 to 13 records, on
 * tampered bundles, and the same canonical JSON. It runs on Node's WebCrypto, the API the browser gives it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { generateKeyPair } from '../../core/identity.js';
import { inclusionProofFromLevels } from '../../core/merkle/inclusion.js';
import { verifyProofBundle } from '../../core/proof-bundle.js';
import { signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { createSealWithLevels } from '../../core/seal.js';
import { forge, SMALL_ORDER } from '../helpers/small-order.js';

interface PathStep {
  level: number;
  side: 'left' | 'right';
  sibling: string;
  result: string;
}
interface Verdict {
  verdict: 'verified' | 'failed' | 'pending';
  problems: string[];
  checks: { name: string; ok: boolean | null; detail: string }[];
  path: null | {
    leaf_index: number;
    tree_size: number;
    leaf: string;
    steps: PathStep[];
    root: string;
    sealed_root: string;
  };
}
interface ProofVerify {
  canonicalJson(value: unknown): string;
  verifyBundle(bundle: unknown, expectedId?: string, nodePk?: string): Promise<Verdict>;
  verifyEd25519(pk: string, message: string | Uint8Array, signature: string): Promise<boolean>;
  publicKeyIssue(pk: unknown): string | undefined;
}

// A plain browser module, loaded as the page loads it (no types: it is JavaScript with JSDoc).
const modulePath = pathToFileURL(resolve(import.meta.dirname, '../../dashboard/proof-verify.js')).href;
const page = (await import(modulePath)) as ProofVerify;

const writer = generateKeyPair();
const EPOCH = 7000;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

interface Bundle {
  record: ProofRecord;
  seal: Seal | null;
  proof: { leaf_index: number; tree_size: number; hashes: string[] } | null;
}

/**
 * An epoch of `size` signed records, sealed; `bundle(i)` is what `GET /store/proof/:id` answers for record i. With
 * `custodian`, the epoch is sealed by that key for the writer (a custodial seal, docs/protocol.md §12.3).
 */
function sealedEpoch(size: number, custodian?: { secretKey: string }) {
  const records = Array.from({ length: size }, (_, i) =>
    signRecord(writer.secretKey, {
      version: 1,
      id: `inference:job-${size}-${i}:ask`,
      address: { h3_cell: '861e8050fffffff', epoch: EPOCH, pk: writer.publicKey },
      collection_type: 'inference',
      payload_type: 'hive/inference',
      payload: { model: 'tinyllama', tokens_in: 10 + i, tokens_out: 2 * i, note: 'Città — “quoted” \u2028' },
      seq: i + 1,
      written_at: new Date(Date.UTC(2026, 9, 1, 12, 0, i)).toISOString(),
    }),
  );
  const { seal, levels } = createSealWithLevels(custodian?.secretKey ?? writer.secretKey, {
    ...(custodian ? { writerPk: writer.publicKey } : {}),
    epoch: EPOCH,
    records,
    prevSealHash: GENESIS_PREV_HASH,
    sealedAt: '2026-10-01T13:01:00.000Z',
  });
  const bundle = (i: number): Bundle => ({
    record: records[i]!,
    seal,
    proof: { leaf_index: i, tree_size: size, hashes: inclusionProofFromLevels(levels, i).map(bytesToHex) },
  });
  return { records, seal, bundle };
}

/** A deep copy to tamper with. */
const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

describe('dashboard proof checker (dashboard/proof-verify.js)', () => {
  it('writes the same canonical JSON as the server (RFC 8785)', () => {
    const values: unknown[] = [
      { b: 1, a: [true, null, 'x'], é: { z: 0.1 + 0.2, y: -0, x: 1e21, w: 1e-7 } },
      { '\u20ac': 1, '\r': 2, '1': 3, ö: 4, '\ud83d\ude00': 5, A: 6 },
      ['line\nbreak', 'tab\t', 'quote"', 'back\\slash', '\u0007', '\u2028'],
      { nested: { deeper: { deepest: [1, [2, [3, { k: 'v' }]]] } } },
      123456789012345680000,
      'plain',
    ];
    for (const value of values) assert.equal(page.canonicalJson(value), canonicalJson(value));
  });

  it('verifies every leaf of trees of 1 to 13 records, as the server does, and walks the path to the root', async () => {
    for (let size = 1; size <= 13; size++) {
      const epoch = sealedEpoch(size);
      for (let i = 0; i < size; i++) {
        const bundle = epoch.bundle(i);
        assert.equal(verifyProofBundle(bundle).verified, true);
        const verdict = await page.verifyBundle(copy(bundle), bundle.record.id);
        assert.equal(verdict.verdict, 'verified', `${size}/${i}: ${verdict.problems.join('; ')}`);
        assert.deepEqual(verdict.problems, []);
        assert.equal(verdict.path?.root, epoch.seal.merkle_root);
        assert.equal(verdict.path?.steps.length, bundle.proof!.hashes.length);
        assert.deepEqual(
          verdict.path?.steps.map((s) => s.sibling),
          bundle.proof!.hashes,
        );
      }
    }
  });

  it('puts the sibling on the left exactly where the leaf index has a 1 bit (full tree of 8)', async () => {
    const epoch = sealedEpoch(8);
    for (let i = 0; i < 8; i++) {
      const verdict = await page.verifyBundle(epoch.bundle(i));
      const sides = verdict.path!.steps.map((s) => s.side);
      const bits = [0, 1, 2].map((b) => ((i >> b) & 1 ? 'left' : 'right'));
      assert.deepEqual(sides, bits, `leaf ${i}`);
      assert.deepEqual(
        verdict.path!.steps.map((s) => s.level),
        [0, 1, 2],
      );
    }
  });

  it('names the height of a promoted last node (leaf 4 of 5 meets the root of leaves 0–3 at height 2)', async () => {
    const verdict = await page.verifyBundle(sealedEpoch(5).bundle(4));
    assert.deepEqual(
      verdict.path!.steps.map((s) => [s.level, s.side]),
      [[2, 'left']],
    );
  });

  const tamperings: [string, (b: Bundle) => void, RegExp][] = [
    [
      'a changed payload',
      (b) => ((b.record.payload as { tokens_out: number }).tokens_out += 1),
      /record hash: the record hashes to/,
    ],
    ['a changed id', (b) => (b.record.id = 'inference:other:ask'), /record id|record hash/],
    [
      'a forged signature',
      (b) => (b.record.signature = b.record.signature.replace(/^./, (c) => (c === '0' ? '1' : '0'))),
      /record signature/,
    ],
    ['another root', (b) => (b.seal!.merkle_root = 'ab'.repeat(32)), /seal hash/],
    ["the sealer's signature", (b) => (b.seal!.signature = 'cd'.repeat(64)), /seal signature/],
    ['a flipped path hash', (b) => (b.proof!.hashes[0] = 'ef'.repeat(32)), /inclusion path: the path ends at/],
    [
      'a shifted leaf index',
      (b) => (b.proof!.leaf_index = (b.proof!.leaf_index + 1) % b.proof!.tree_size),
      /inclusion path/,
    ],
    ['a path one hash short', (b) => b.proof!.hashes.pop(), /inclusion path: proof has 2 hashes/],
    ['a tree size other than the seal', (b) => (b.proof!.tree_size = 9), /tree_size 9 differs/],
    ['a seal of another epoch', (b) => (b.seal!.epoch = EPOCH + 1), /seal hash|seal covers the record/],
    [
      'a malleated record signature (S + L)',
      (b) => {
        const sig = Buffer.from(b.record.signature, 'hex');
        let s = 0n;
        for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(sig[i]!);
        s += L;
        for (let i = 32; i < 64; i++) {
          sig[i] = Number(s & 0xffn);
          s >>= 8n;
        }
        b.record.signature = sig.toString('hex');
      },
      /record signature/,
    ],
  ];
  for (const [what, tamper, reason] of tamperings) {
    it(`fails a bundle with ${what}, as the server does`, async () => {
      const bundle = copy(sealedEpoch(6).bundle(2));
      const asked = bundle.record.id;
      tamper(bundle);
      assert.equal(verifyProofBundle(bundle, asked).verified, false);
      const verdict = await page.verifyBundle(bundle, asked);
      assert.equal(verdict.verdict, 'failed');
      assert.match(verdict.problems.join('; '), reason);
    });
  }

  it('calls an unsealed record pending, and a pending record with a bad hash failed', async () => {
    const { record } = sealedEpoch(3).bundle(1);
    const pending = await page.verifyBundle(
      { record, seal: null, proof: null, verified: false, pending: true },
      record.id,
    );
    assert.equal(pending.verdict, 'pending');
    assert.deepEqual(pending.problems, []);
    const edited = copy(record);
    edited.seq = 99;
    const bad = await page.verifyBundle({ record: edited, seal: null, proof: null }, record.id);
    assert.equal(bad.verdict, 'failed');
  });

  it('verifies a custodial seal under its custodian, names it, and refuses another custodian than the node', async () => {
    const [node, rogue] = [generateKeyPair(), generateKeyPair()];
    const bundle = sealedEpoch(3, node).bundle(1);
    assert.equal(bundle.seal!.custodian_pk, node.publicKey);
    const server = verifyProofBundle(bundle, bundle.record.id);
    assert.equal(server.verified, true);
    const unpinned = await page.verifyBundle(copy(bundle), bundle.record.id);
    assert.equal(unpinned.verdict, 'verified', unpinned.problems.join('; '));
    const signature = unpinned.checks.find((c) => c.name === 'seal signature');
    assert.equal(signature?.detail, `Ed25519 custodial by ${node.publicKey}`);
    assert.match(unpinned.checks.find((c) => c.name === 'custodian')!.detail, /check that it is your node's key/);
    const pinned = await page.verifyBundle(copy(bundle), bundle.record.id, node.publicKey);
    assert.equal(pinned.verdict, 'verified');
    assert.equal(pinned.checks.find((c) => c.name === 'custodian')?.detail, `custodial by ${node.publicKey}, the node`);

    // A seal another key made naming itself custodian is well signed: only the pin tells it from the node's.
    const forged = sealedEpoch(3, rogue).bundle(1);
    const refused = await page.verifyBundle(copy(forged), forged.record.id, node.publicKey);
    assert.equal(refused.verdict, 'failed');
    assert.match(
      refused.problems.join('; '),
      new RegExp(`custodian: custodial by ${rogue.publicKey}, not by the node`),
    );
    // Naming another custodian than the signer breaks the seal hash, as on the server.
    const renamed = copy(bundle);
    renamed.seal!.custodian_pk = rogue.publicKey;
    assert.equal(verifyProofBundle(renamed).verified, false);
    assert.equal((await page.verifyBundle(renamed)).verdict, 'failed');
  });

  it('holds keys to the server’s policy: of the twelve speccheck cases it accepts 2 and 3 only', async () => {
    const cases = JSON.parse(
      readFileSync(resolve(import.meta.dirname, '../fixtures/vectors/ed25519/speccheck-cases.json'), 'utf8'),
    ) as { message: string; pub_key: string; signature: string }[];
    const accepted: number[] = [];
    for (const [i, c] of cases.entries()) {
      if (await page.verifyEd25519(c.pub_key, hexToBytes(c.message), c.signature)) accepted.push(i);
    }
    assert.deepEqual(accepted, [2, 3]);
  });

  it('refuses a record "signed" under a small-order key, which WebCrypto alone accepts', async () => {
    // Under a small-order key a signature verifies on messages nobody signed (test/helpers/small-order.ts).
    const pk = SMALL_ORDER.find((k) => k !== '0'.repeat(64))!;
    const { value: hash, signature } = forge(
      pk,
      (i) => sha256Hex(`record ${i}`),
      (h) => h,
    );
    assert.equal(await page.verifyEd25519(pk, hash, signature), false);
    assert.match(page.publicKeyIssue(pk) ?? '', /small-order/);
  });

  it('fails what is not a bundle', async () => {
    for (const value of [null, 'text', [], { record: null }, { record: { id: 'x' } }]) {
      assert.equal((await page.verifyBundle(value)).verdict, 'failed');
    }
  });
});
