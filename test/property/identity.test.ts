import assert from 'node:assert/strict';
import fc from 'fast-check';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { checkPublicKey, keyPairFromSecret, signMessage, verifySignature } from '../../core/identity.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(100);
const tally = new CaseTally('property', 'identity');

const seeds = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex);
const messages = fc.oneof(fc.string({ maxLength: 200 }), fc.uint8Array({ maxLength: 300 }));

const flipHexBit = (hex: string, bit: number): string => {
  const bytes = hexToBytes(hex);
  bytes[bit >> 3] = (bytes[bit >> 3] as number) ^ (1 << (bit & 7));
  return bytesToHex(bytes);
};
const bytesOf = (message: string | Uint8Array): Uint8Array =>
  typeof message === 'string' ? new TextEncoder().encode(message) : message;

describe('property: Ed25519 identity (core/identity.ts)', () => {
  after(() => tally.print());

  it('verifies what it signs, for any key and message, string or bytes', () => {
    fc.assert(
      fc.property(seeds, messages, (seed, message) => {
        tally.add('sign-verify', 'ed25519');
        const key = keyPairFromSecret(seed);
        assert.equal(checkPublicKey(key.publicKey).ok, true);
        const signature = signMessage(key.secretKey, message);
        assert.match(signature, /^[0-9a-f]{128}$/);
        assert.equal(verifySignature(key.publicKey, message, signature), true);
        // The same bytes, as bytes: a string message is its UTF-8.
        assert.equal(verifySignature(key.publicKey, bytesOf(message), signature), true);
        // The 128-hex seed‖pk form signs identically (Ed25519 is deterministic).
        assert.equal(signMessage(`${seed}${key.publicKey}`, message), signature);
      }),
      fcParams(RUNS),
    );
  });

  it('rejects any single-bit flip of the message, the signature or the public key', () => {
    const cases = fc.tuple(
      seeds,
      messages,
      fc.oneof(
        fc.nat(511).map((bit) => ({ part: 'signature' as const, bit })),
        fc.nat(255).map((bit) => ({ part: 'public key' as const, bit })),
        fc.nat(8 * 300 - 1).map((bit) => ({ part: 'message' as const, bit })),
      ),
    );
    fc.assert(
      fc.property(cases, ([seed, message, flip]) => {
        const key = keyPairFromSecret(seed);
        const bytes = bytesOf(message);
        const signature = signMessage(key.secretKey, bytes);
        if (flip.part === 'message') {
          fc.pre(bytes.length > 0);
          const bent = bytes.slice();
          const bit = flip.bit % (8 * bytes.length);
          bent[bit >> 3] = (bent[bit >> 3] as number) ^ (1 << (bit & 7));
          tally.add('bit-flip-message', 'ed25519');
          assert.equal(verifySignature(key.publicKey, bent, signature), false);
        } else if (flip.part === 'signature') {
          tally.add('bit-flip-signature', 'ed25519');
          assert.equal(verifySignature(key.publicKey, bytes, flipHexBit(signature, flip.bit)), false);
        } else {
          tally.add('bit-flip-public-key', 'ed25519');
          assert.equal(verifySignature(flipHexBit(key.publicKey, flip.bit), bytes, signature), false);
        }
      }),
      fcParams(RUNS * 3),
    );
  });

  it("rejects another key's signature", () => {
    fc.assert(
      fc.property(fc.uniqueArray(seeds, { minLength: 2, maxLength: 2 }), messages, ([a, b], message) => {
        tally.add('other-key', 'ed25519');
        const signature = signMessage(a as string, message);
        assert.equal(verifySignature(keyPairFromSecret(b as string).publicKey, message, signature), false);
      }),
      fcParams(RUNS),
    );
  });

  it('answers false, never throws, for arbitrary keys, messages and signatures', () => {
    const text = fc.oneof(
      fc.anything(),
      fc.string({ maxLength: 130 }),
      fc.stringMatching(/^[0-9a-fA-F]{64}$/),
      fc.stringMatching(/^[0-9a-fA-F]{128}$/),
    );
    fc.assert(
      fc.property(text, fc.oneof(fc.anything(), messages), text, (pk, message, signature) => {
        tally.add('hostile-input', 'ed25519');
        const result = verifySignature(pk as string, message as string, signature as string);
        assert.equal(typeof result, 'boolean');
        // A random 64-hex "key" with a random signature never verifies (2^-128 chance aside).
        assert.equal(result, false);
        const key = checkPublicKey(pk);
        if (!key.ok) assert.equal(key.error, 'invalid_public_key');
      }),
      fcParams(RUNS * 3),
    );
  });
});
