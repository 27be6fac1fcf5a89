/**
 * Ed25519 identity: key pairs, signing and verification (docs/protocol.md §10 "Keys and signatures").
 *
 * Wire forms: public key 64 lowercase hex, signature 128 lowercase hex, secret key a 64-hex seed
 * (a 128-hex seed‖pk is also accepted on input, as GEIANT tools and libsodium emit it).
 *
 * Verification policy — every verifier in Geofabric must give the same answer on the vectors in
 * `vectors/ed25519/`, otherwise one component accepts what another rejects:
 *   1. Public keys are checked once per key (result cached): the encoding must be canonical
 *      (y < p, and not x = 0 with the sign bit set), decode to a curve point, and not be of small
 *      order (order dividing 8). A small-order key "verifies" signatures on messages nobody signed.
 *      Mixed-order keys (prime-order part plus torsion) are not rejected: they still bind a signer.
 *   2. S must be canonical (S < L), so signatures are not malleable.
 *   3. Otherwise OpenSSL's cofactorless check applies ([S]B = R + [k]A with R compared by its
 *      encoding, so a non-canonical R fails), which is what `node:crypto` runs on the hot path.
 * Outcome on the 12 speccheck cases ("Taming the many EdDSAs"), asserted in test/core/identity.test.ts:
 *   0 reject (small-order A)       4 reject (cofactored-only)   8 reject (non-canonical R)
 *   1 reject (small-order A)       5 reject (cofactored-only)   9 reject (non-canonical R)
 *   2 accept (mixed A, small R)    6 reject (S >= L)           10 reject (non-canonical A)
 *   3 accept (mixed A and R)       7 reject (S >= L)           11 reject (non-canonical A; OpenSSL alone accepts)
 * node:crypto is not the same on every Node: on Node 24 it also refuses a small-order R (case 2), which Node 20
 * and 22 accept, so a refusal with such an R is decided again by step 3 alone (holdsWithSmallOrderR).
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  getRandomValues,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { fail, pass, type Check } from './check.js';
import { bytesToHex, hexToBytes, isHex } from './hex.js';

export interface KeyPair {
  /** 64 lowercase hex. */
  publicKey: string;
  /** 64 lowercase hex seed. */
  secretKey: string;
}

// DER prefixes that wrap a raw 32-byte Ed25519 key (RFC 8410) so node:crypto can import it.
const SPKI_PREFIX = hexToBytes('302a300506032b6570032100');
const PKCS8_PREFIX = hexToBytes('302e020100300506032b657004220420');

const P = 2n ** 255n - 19n;
const L = 2n ** 252n + 27742317777372353535851937790883648493n;

/** A Map that forgets its oldest entry past `limit`: per-key caches must not grow with attacker input. */
class BoundedCache<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly limit: number) {}

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  set(key: string, value: V): void {
    if (this.map.size >= this.limit) {
      const oldest = this.map.keys().next();
      if (!oldest.done) this.map.delete(oldest.value);
    }
    this.map.set(key, value);
  }
}

const CACHE_LIMIT = 10_000;
const keyChecks = new BoundedCache<Check<string>>(CACHE_LIMIT);
const keyObjects = new BoundedCache<KeyObject>(CACHE_LIMIT);
// A node signs with a handful of keys; importing one costs about a millisecond here, signing far less.
const privateKeys = new BoundedCache<KeyObject>(64);
const keyPairs = new BoundedCache<KeyPair>(64);

const concat = (a: Uint8Array, b: Uint8Array): Uint8Array => {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
};

const littleEndian = (bytes: Uint8Array): bigint => {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i] ?? 0);
  return n;
};

const toBytes = (message: string | Uint8Array): Uint8Array =>
  typeof message === 'string' ? new TextEncoder().encode(message) : message;

function seedToPrivateKey(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.from(concat(PKCS8_PREFIX, seed)), format: 'der', type: 'pkcs8' });
}

function publicKeyOfSeed(seed: Uint8Array): string {
  const spki = createPublicKey(seedToPrivateKey(seed)).export({ format: 'der', type: 'spki' });
  return bytesToHex(new Uint8Array(spki.subarray(spki.length - 32)));
}

/** The 32-byte seed of a secret key given as seed or seed‖pk; throws TypeError on anything else. */
function parseSecret(secretKeyHex: string): Uint8Array {
  if (!isHex(secretKeyHex, 32) && !isHex(secretKeyHex, 64)) {
    throw new TypeError(
      'secret key must be 64 lowercase hex (seed) or 128 lowercase hex (seed followed by public key)',
    );
  }
  const seed = hexToBytes(secretKeyHex.slice(0, 64));
  if (secretKeyHex.length === 128 && publicKeyOfSeed(seed) !== secretKeyHex.slice(64)) {
    throw new TypeError('secret key: the public key half does not belong to the seed half');
  }
  return seed;
}

export function keyPairFromSecret(secretKeyHex: string): KeyPair {
  const cached = keyPairs.get(secretKeyHex);
  if (cached !== undefined) return { ...cached };
  const seed = parseSecret(secretKeyHex);
  const pair = { publicKey: publicKeyOfSeed(seed), secretKey: bytesToHex(seed) };
  keyPairs.set(secretKeyHex, pair);
  return { ...pair };
}

export function generateKeyPair(): KeyPair {
  return keyPairFromSecret(bytesToHex(getRandomValues(new Uint8Array(32))));
}

function decidePublicKey(pk: string): Check<string> {
  const bytes = hexToBytes(pk);
  const signBit = ((bytes[31] ?? 0) & 0x80) !== 0;
  const yBytes = bytes.slice();
  yBytes[31] = (yBytes[31] ?? 0) & 0x7f;
  if (littleEndian(yBytes) >= P) return fail('invalid_public_key', 'public key is not a canonical encoding (y >= p)');
  let point;
  try {
    // Decoded without the sign bit, so the only failure left is "no x for this y"; negation keeps the order.
    point = ed25519.Point.fromBytes(yBytes, false);
  } catch {
    return fail('invalid_public_key', 'public key is not a point on Ed25519');
  }
  if (signBit && point.x === 0n) {
    return fail('invalid_public_key', 'public key is not a canonical encoding (x = 0 with the sign bit set)');
  }
  if (point.isSmallOrder()) return fail('invalid_public_key', 'public key is a small-order point');
  return pass(pk);
}

/** Validates a public key once; the answer is cached because the request path calls this per request. */
export function checkPublicKey(pk: unknown): Check<string> {
  if (typeof pk !== 'string') return fail('invalid_public_key', 'public key must be a string');
  if (!isHex(pk, 32)) return fail('invalid_public_key', 'public key must be 64 lowercase hex characters');
  let result = keyChecks.get(pk);
  if (result === undefined) {
    result = decidePublicKey(pk);
    keyChecks.set(pk, result);
  }
  return result;
}

function publicKeyObject(pk: string): KeyObject {
  let key = keyObjects.get(pk);
  if (key === undefined) {
    key = createPublicKey({ key: Buffer.from(concat(SPKI_PREFIX, hexToBytes(pk))), format: 'der', type: 'spki' });
    keyObjects.set(pk, key);
  }
  return key;
}

/** S < L. L = 2^252 + δ, so only a top byte of exactly 0x10 needs the full comparison (hot path). */
function isCanonicalScalar(s: Uint8Array): boolean {
  const top = s[31] ?? 0xff;
  if (top !== 0x10) return top < 0x10;
  return littleEndian(s) < L;
}

/** Signs the UTF-8 bytes of a string (or the given bytes); returns 128 lowercase hex. */
export function signMessage(secretKeyHex: string, message: string | Uint8Array): string {
  let key = privateKeys.get(secretKeyHex);
  if (key === undefined) {
    key = seedToPrivateKey(parseSecret(secretKeyHex));
    privateKeys.set(secretKeyHex, key);
  }
  return bytesToHex(new Uint8Array(sign(null, toBytes(message), key)));
}

/** The policy checks before the curve check; undefined: rejected already. */
function verifyInputs(
  pk: string,
  message: string | Uint8Array,
  signature: string,
): { data: Uint8Array; key: KeyObject; sig: Uint8Array } | undefined {
  if (typeof message !== 'string' && !(message instanceof Uint8Array)) return undefined;
  if (!passesSignaturePolicy(pk, signature)) return undefined;
  return { data: toBytes(message), key: publicKeyObject(pk), sig: hexToBytes(signature) };
}

/**
 * The checks of the policy above that come before the curve check (128-hex signature with S < L, a 64-hex
 * key that is canonical and not of small order), for a caller that has the curve check made elsewhere (an
 * Ed25519 worker thread, store/ed25519-pool.ts).
 */
export function passesSignaturePolicy(pk: string, signature: string): boolean {
  if (!isHex(signature, 64) || !checkPublicKey(pk).ok) return false;
  return isCanonicalScalar(hexToBytes(signature.slice(64)));
}

// The canonical encodings of the eight small-order points: an R among them is one node:crypto may refuse.
const SMALL_ORDER = new Set(ED25519_TORSION_SUBGROUP);

/**
 * Step 3 of the policy by itself (the cofactorless equation, R compared by its encoding), for a signature whose
 * R is a small-order point and that node:crypto refused: Node 24's refuses such an R whatever the equation says,
 * Node 20's and 22's do not, and the policy must answer the same on every Node. False for any other R (node:crypto's
 * refusal stands), so only those eight R values ever take this slower path. The key and S checks are the caller's.
 */
export function holdsWithSmallOrderR(pk: string, message: string | Uint8Array, signature: string): boolean {
  try {
    if (!isHex(signature, 64) || !SMALL_ORDER.has(signature.slice(0, 64))) return false;
    const sig = hexToBytes(signature);
    const s = littleEndian(sig.subarray(32));
    if (s >= L) return false;
    const pkBytes = hexToBytes(pk);
    const digest = createHash('sha512').update(sig.subarray(0, 32)).update(pkBytes).update(toBytes(message)).digest();
    const k = littleEndian(new Uint8Array(digest)) % L;
    const a = ed25519.Point.fromBytes(pkBytes);
    // R' = [S]B - [k]A; multiplyUnsafe takes 0 (S = 0, k = 0), and nothing here is secret.
    const r = ed25519.Point.BASE.multiplyUnsafe(s).subtract(a.multiplyUnsafe(k));
    return bytesToHex(r.toBytes()) === signature.slice(0, 64);
  } catch {
    return false;
  }
}

/** True only for a valid signature under the policy above; never throws. */
export function verifySignature(pk: string, message: string | Uint8Array, signature: string): boolean {
  try {
    const inputs = verifyInputs(pk, message, signature);
    if (inputs === undefined) return false;
    return verify(null, inputs.data, inputs.key, inputs.sig) || holdsWithSmallOrderR(pk, inputs.data, signature);
  } catch {
    return false;
  }
}

/**
 * verifySignature, with the curve check on the libuv thread pool (node:crypto's callback form): the event loop
 * keeps serving other requests meanwhile, so on a multi-core machine JavaScript and verification run in
 * parallel. Same policy, same answers; never rejects.
 */
export function verifySignatureAsync(pk: string, message: string | Uint8Array, signature: string): Promise<boolean> {
  let inputs;
  try {
    inputs = verifyInputs(pk, message, signature);
  } catch {
    return Promise.resolve(false);
  }
  if (inputs === undefined) return Promise.resolve(false);
  const { data, key, sig } = inputs;
  return new Promise((resolve) => {
    try {
      verify(null, data, key, sig, (error, ok) =>
        resolve(error === null && (ok || holdsWithSmallOrderR(pk, data, signature))),
      );
    } catch {
      resolve(false);
    }
  });
}
