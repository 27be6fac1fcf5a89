/**
 * Ed25519 and SHA-256 as Geofabric uses them (docs/protocol.md §10.1): hex keys and signatures, signatures over the
 * UTF-8 of a string, and one verification policy — canonical key encoding, not small order, S < L, then the
 * cofactorless equation with R compared by its encoding.
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256, sha512 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';

const L = 2n ** 252n + 27742317777372353535851937790883648493n;

export const isHex = (value: unknown, bytes: number): value is string =>
  typeof value === 'string' && value.length === bytes * 2 && /^[0-9a-f]*$/.test(value);

export const sha256Hex = (text: string | Uint8Array): string =>
  bytesToHex(sha256(typeof text === 'string' ? utf8ToBytes(text) : text));

/** The 64-hex public key of a 64-hex seed (a 128-hex seed‖public key is accepted; its half must match). */
export function publicKeyOf(secretKey: string): string {
  const seed = seedOf(secretKey);
  const pk = bytesToHex(ed25519.getPublicKey(seed));
  if (secretKey.length === 128 && secretKey.slice(64).toLowerCase() !== pk) {
    throw new TypeError('the second half of the secret key is not its public key');
  }
  return pk;
}

function seedOf(secretKey: string): Uint8Array {
  const hex = secretKey.toLowerCase();
  if (!isHex(hex, 32) && !isHex(hex, 64)) throw new TypeError('a secret key is 64 (or 128) hex characters');
  return hexToBytes(hex.slice(0, 64));
}

export function sign(secretKey: string, message: string): string {
  return bytesToHex(ed25519.sign(utf8ToBytes(message), seedOf(secretKey)));
}

/** Why `pk` is not an acceptable key, or undefined. */
export function publicKeyIssue(pk: unknown): string | undefined {
  if (!isHex(pk, 32)) return 'must be 64 lowercase hex';
  try {
    const point = ed25519.Point.fromHex(pk); // canonical y < p; x = 0 with the sign bit set is refused
    if (point.isSmallOrder()) return 'is a small-order point';
  } catch {
    return 'is not a point on the curve';
  }
  return undefined;
}

const scalarLE = (bytes: Uint8Array): bigint => {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i] as number);
  return n;
};

/** `message`: a string (its UTF-8 is signed, as everywhere in Geofabric) or raw bytes. */
export function verify(pk: string, message: string | Uint8Array, signature: string): boolean {
  if (publicKeyIssue(pk) !== undefined || !isHex(signature, 64)) return false;
  const sig = hexToBytes(signature);
  const r = sig.subarray(0, 32);
  const s = scalarLE(sig.subarray(32));
  if (s >= L) return false;
  const A = ed25519.Point.fromHex(pk);
  const k =
    scalarLE(
      sha512(
        new Uint8Array([...r, ...hexToBytes(pk), ...(typeof message === 'string' ? utf8ToBytes(message) : message)]),
      ),
    ) % L;
  // R' = [S]B − [k]A, compared with R by encoding (cofactorless; a non-canonical R never matches).
  const sB = s === 0n ? ed25519.Point.ZERO : ed25519.Point.BASE.multiply(s);
  const kA = k === 0n ? ed25519.Point.ZERO : A.multiplyUnsafe(k);
  return bytesToHex(sB.subtract(kA).toBytes()) === bytesToHex(r);
}

export { bytesToHex, hexToBytes };
