import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import {
  checkPublicKey,
  generateKeyPair,
  keyPairFromSecret,
  signMessage,
  verifySignature,
  verifySignatureAsync,
} from '../../core/identity.js';

const VECTORS = resolve(import.meta.dirname, '../fixtures/vectors/ed25519');
const readVectors = (name: string): unknown => JSON.parse(readFileSync(resolve(VECTORS, name), 'utf8'));
const fromHex = (hex: string): Uint8Array => new Uint8Array(Buffer.from(hex, 'hex'));

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

// RFC 8032 section 7.1, TEST 1 (empty message).
const RFC_SEED = '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60';
const RFC_PK = 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a';
const RFC_SIG =
  'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b';

describe('Ed25519 identity', () => {
  describe('key pairs', () => {
    it('generates distinct 64-hex key pairs that round-trip through their seed', () => {
      const a = generateKeyPair();
      const b = generateKeyPair();
      assert.match(a.publicKey, /^[0-9a-f]{64}$/);
      assert.match(a.secretKey, /^[0-9a-f]{64}$/);
      assert.notEqual(a.secretKey, b.secretKey);
      assert.deepEqual(keyPairFromSecret(a.secretKey), a);
      assert.ok(checkPublicKey(a.publicKey).ok);
    });

    it('derives the RFC 8032 public key from its seed', () => {
      assert.deepEqual(keyPairFromSecret(RFC_SEED), { publicKey: RFC_PK, secretKey: RFC_SEED });
    });

    it('accepts seed‖pk and returns the bare seed', () => {
      assert.deepEqual(keyPairFromSecret(RFC_SEED + RFC_PK), { publicKey: RFC_PK, secretKey: RFC_SEED });
    });

    it('rejects seed‖pk whose public key half belongs to another seed', () => {
      const other = generateKeyPair();
      assert.throws(() => keyPairFromSecret(RFC_SEED + other.publicKey), TypeError);
      assert.throws(() => signMessage(RFC_SEED + other.publicKey, 'x'), TypeError);
    });

    it('rejects secrets of the wrong length or alphabet with a TypeError', () => {
      for (const bad of ['', RFC_SEED.slice(2), RFC_SEED + '00', RFC_SEED.toUpperCase(), 'zz'.repeat(32)]) {
        assert.throws(() => keyPairFromSecret(bad), TypeError, JSON.stringify(bad));
      }
    });
  });

  describe('sign and verify', () => {
    it('reproduces the RFC 8032 signature of the empty message', () => {
      assert.equal(signMessage(RFC_SEED, ''), RFC_SIG);
      assert.equal(signMessage(RFC_SEED, new Uint8Array()), RFC_SIG);
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG), true);
    });

    it('signs strings as their UTF-8 bytes', () => {
      const { publicKey, secretKey } = generateKeyPair();
      const text = 'Roma — 861e8050fffffff ✓';
      const sig = signMessage(secretKey, text);
      assert.match(sig, /^[0-9a-f]{128}$/);
      assert.equal(sig, signMessage(secretKey, new TextEncoder().encode(text)));
      assert.equal(verifySignature(publicKey, text, sig), true);
      assert.equal(verifySignature(publicKey, new TextEncoder().encode(text), sig), true);
    });

    it('rejects a tampered message, a tampered signature and another key', () => {
      const alice = generateKeyPair();
      const bob = generateKeyPair();
      const sig = signMessage(alice.secretKey, 'pay 10');
      assert.equal(verifySignature(alice.publicKey, 'pay 100', sig), false);
      const flipped = (parseInt(sig[0] ?? '0', 16) ^ 1).toString(16) + sig.slice(1);
      assert.equal(verifySignature(alice.publicKey, 'pay 10', flipped), false);
      assert.equal(verifySignature(bob.publicKey, 'pay 10', sig), false);
    });

    it('returns false instead of throwing on malformed input', () => {
      const asAny = (v: unknown) => v as string;
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG.toUpperCase()), false);
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG.slice(0, 126)), false);
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG + '00'), false);
      assert.equal(verifySignature(RFC_PK.slice(2), '', RFC_SIG), false);
      assert.equal(verifySignature(asAny(null), '', RFC_SIG), false);
      assert.equal(verifySignature(RFC_PK, asAny(42), RFC_SIG), false);
      assert.equal(verifySignature(RFC_PK, '', asAny(undefined)), false);
    });

    it('answers the same off the event loop (verifySignatureAsync), never rejecting', async () => {
      const asAny = (v: unknown) => v as string;
      assert.equal(await verifySignatureAsync(RFC_PK, '', RFC_SIG), true);
      assert.equal(await verifySignatureAsync(RFC_PK, 'x', RFC_SIG), false);
      assert.equal(await verifySignatureAsync(RFC_PK, '', RFC_SIG.toUpperCase()), false);
      assert.equal(await verifySignatureAsync(asAny(null), '', RFC_SIG), false);
      assert.equal(await verifySignatureAsync(RFC_PK, asAny(42), RFC_SIG), false);
      assert.equal(await verifySignatureAsync(RFC_PK, '', asAny(undefined)), false);
    });

    it('rejects a non-canonical S (S + L, or exactly L) of an otherwise valid signature', () => {
      const s = BigInt('0x' + Buffer.from(RFC_SIG.slice(64), 'hex').reverse().toString('hex'));
      const sPlusL = Buffer.from((s + L).toString(16).padStart(64, '0'), 'hex')
        .reverse()
        .toString('hex');
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG.slice(0, 64) + sPlusL), false);
      const exactlyL = Buffer.from(L.toString(16).padStart(64, '0'), 'hex').reverse().toString('hex');
      assert.equal(verifySignature(RFC_PK, '', RFC_SIG.slice(0, 64) + exactlyL), false);
    });
  });

  describe('checkPublicKey', () => {
    const reason = (pk: unknown): string => {
      const result = checkPublicKey(pk);
      assert.equal(result.ok, false);
      return result.ok ? '' : `${result.error}: ${result.detail}`;
    };

    it('rejects non-strings and anything but 64 lowercase hex', () => {
      assert.match(reason(42), /invalid_public_key: .*string/);
      assert.match(reason(RFC_PK.toUpperCase()), /64 lowercase hex/);
      assert.match(reason(RFC_PK.slice(2)), /64 lowercase hex/);
    });

    it('rejects y >= p', () => {
      assert.match(reason('edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'), /y >= p/);
    });

    it('rejects x = 0 with the sign bit set', () => {
      assert.match(reason('0100000000000000000000000000000000000000000000000000000000000080'), /x = 0/);
    });

    it('rejects a y with no point on the curve', () => {
      assert.match(reason('0200000000000000000000000000000000000000000000000000000000000000'), /not a point/);
    });

    it('rejects all eight points of the torsion subgroup as small order', () => {
      assert.equal(ED25519_TORSION_SUBGROUP.length, 8);
      for (const pk of ED25519_TORSION_SUBGROUP) assert.match(reason(pk), /small-order/, pk);
    });

    it('caches the answer per key', () => {
      assert.equal(checkPublicKey(RFC_PK), checkPublicKey(RFC_PK));
      assert.deepEqual(checkPublicKey(RFC_PK), { ok: true, value: RFC_PK });
    });
  });

  describe('speccheck cases (vectors/ed25519/speccheck-cases.json)', () => {
    interface SpeccheckCase {
      message: string;
      pub_key: string;
      signature: string;
    }
    const cases = readVectors('speccheck-cases.json') as SpeccheckCase[];

    // Our policy: reject small-order and non-canonical A (once per key) and S >= L; otherwise
    // OpenSSL's cofactorless equation with R compared by its encoding.
    const EXPECTED: { accept: boolean; why: string }[] = [
      /*  0 */ { accept: false, why: 'small-order A (and small-order R, S = 0)' },
      /*  1 */ { accept: false, why: 'small-order A (mixed-order R)' },
      /*  2 */ { accept: true, why: 'mixed-order A, small-order R: the cofactorless equation holds' },
      /*  3 */ { accept: true, why: 'mixed-order A and R: both equations hold' },
      /*  4 */ { accept: false, why: 'only the cofactored equation holds' },
      /*  5 */ { accept: false, why: 'only the cofactored equation holds (pre-reduced scalar)' },
      /*  6 */ { accept: false, why: 'S >= L (L <= S < 2L)' },
      /*  7 */ { accept: false, why: 'S >= L (S >= 2L)' },
      /*  8 */ { accept: false, why: 'non-canonical R (x = 0 with the sign bit)' },
      /*  9 */ { accept: false, why: 'non-canonical R (x = 0 with the sign bit)' },
      /* 10 */ { accept: false, why: 'non-canonical A (x = 0 with the sign bit)' },
      /* 11 */ { accept: false, why: 'non-canonical A; OpenSSL alone would accept, our key check rejects' },
    ];

    it('holds all twelve cases', () => {
      assert.equal(cases.length, EXPECTED.length);
    });

    cases.forEach((c, i) => {
      const expected = EXPECTED[i];
      if (expected === undefined) return;
      it(`case ${i}: ${expected.accept ? 'accept' : 'reject'} — ${expected.why}`, async () => {
        assert.equal(verifySignature(c.pub_key, fromHex(c.message), c.signature), expected.accept);
        assert.equal(await verifySignatureAsync(c.pub_key, fromHex(c.message), c.signature), expected.accept, 'async');
      });
    });

    it('rejects the keys of cases 0, 1, 10 and 11 in checkPublicKey itself', () => {
      for (const i of [0, 1, 10, 11]) assert.equal(checkPublicKey(cases[i]?.pub_key).ok, false, `case ${i}`);
    });
  });

  describe('Wycheproof EdDSA (vectors/ed25519/wycheproof-ed25519_test.json)', () => {
    interface WycheproofFile {
      numberOfTests: number;
      testGroups: {
        publicKey: { pk: string };
        tests: {
          tcId: number;
          comment: string;
          msg: string;
          sig: string;
          result: 'valid' | 'invalid' | 'acceptable';
        }[];
      }[];
    }
    const file = readVectors('wycheproof-ed25519_test.json') as WycheproofFile;
    const all = file.testGroups.flatMap((group) => group.tests.map((test) => ({ pk: group.publicKey.pk, ...test })));

    // No Wycheproof group uses a small-order or non-canonical key, so no case conflicts with our
    // key policy; "acceptable" does not occur in this file (asserted, so a new file gets a look).
    it('has every case accounted for and no small-order keys', () => {
      assert.equal(all.length, file.numberOfTests);
      assert.equal(all.filter((t) => t.result === 'acceptable').length, 0);
      for (const group of file.testGroups) assert.ok(checkPublicKey(group.publicKey.pk).ok, group.publicKey.pk);
    });

    for (const t of all) {
      it(`tcId ${t.tcId} (${t.result})${t.comment ? `: ${t.comment}` : ''}`, async () => {
        assert.equal(verifySignature(t.pk, fromHex(t.msg), t.sig), t.result === 'valid');
        assert.equal(await verifySignatureAsync(t.pk, fromHex(t.msg), t.sig), t.result === 'valid', 'async');
      });
    }
  });
});
