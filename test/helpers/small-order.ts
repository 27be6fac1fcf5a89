/**
 * Forging Ed25519 "signatures" under small-order public keys (small-order keys fail everywhere).
 * For a small-order A, a signature R‖0 with R + [k]A = 0 satisfies the cofactorless equation [S]B = R + [k]A,
 * so a verifier without a key policy (OpenSSL on its own on Node 20 and 22; Node 24's also refuses the small-order
 * R, which core/identity.ts then decides by the equation alone) accepts it; core/identity.ts must refuse the key.
 */
import assert from 'node:assert/strict';
import { createPublicKey, verify } from 'node:crypto';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { holdsWithSmallOrderR } from '../../core/identity.js';
import { sha512 } from '@noble/hashes/sha2.js';

/** The eight points of the torsion subgroup: every small-order public key. */
export const SMALL_ORDER: readonly string[] = ED25519_TORSION_SUBGROUP;

const L = 2n ** 252n + 27742317777372353535851937790883648493n;
const littleEndian = (bytes: Uint8Array): bigint => {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i]!);
  return n;
};
const fromHex = (hex: string) => new Uint8Array(Buffer.from(hex, 'hex'));

/** R‖S (S = 0) with R + [k]A = 0 for this message, or null when no small-order R fits this message. */
function forgeOnce(pk: string, message: string): string | null {
  const A = ed25519.Point.fromHex(pk);
  const m = new TextEncoder().encode(message);
  for (const r of ED25519_TORSION_SUBGROUP) {
    const k = littleEndian(sha512(new Uint8Array([...fromHex(r), ...fromHex(pk), ...m]))) % L;
    const kA = k === 0n ? ed25519.Point.ZERO : A.multiplyUnsafe(k);
    if (ed25519.Point.fromHex(r).add(kA).equals(ed25519.Point.ZERO)) return r + '00'.repeat(32);
  }
  return null;
}

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** What the curve check says without core/identity.ts's key policy: node:crypto (OpenSSL), and on a Node whose
 * node:crypto refuses a small-order R, the cofactorless equation that core/identity.ts then checks itself. */
const curveCheckAccepts = (pk: string, message: string, signature: string): boolean =>
  holdsWithSmallOrderR(pk, message, signature) ||
  verify(
    null,
    Buffer.from(message, 'utf8'),
    createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(pk, 'hex')]), format: 'der', type: 'spki' }),
    Buffer.from(signature, 'hex'),
  );

/**
 * Varies the signed thing (`make(i)`) until a forgery under `pk` exists (about one try in eight fails), and
 * checks that the curve check alone accepts it: any refusal then comes from the key check.
 */
export function forge<T>(
  pk: string,
  make: (i: number) => T,
  message: (value: T) => string,
): { value: T; signature: string } {
  for (let i = 0; i < 256; i++) {
    const value = make(i);
    const signature = forgeOnce(pk, message(value));
    if (signature !== null) {
      assert.ok(curveCheckAccepts(pk, message(value), signature), 'the curve check alone accepts the forgery');
      return { value, signature };
    }
  }
  throw new Error(`no forgery found for ${pk}`);
}
