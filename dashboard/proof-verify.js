// @ts-check
/**
 * Verifies a proof bundle (`GET /store/proof/:id`) in the browser, trusting nothing the server computed: the
 * same checks as core/proof-bundle.ts `verifyProofBundle`, with WebCrypto only (SHA-256 and Ed25519).
 *
 *  1. record_hash = SHA-256(UTF-8(JCS(record without record_hash and signature)));
 *  2. the writer's Ed25519 signature over the UTF-8 of record_hash (hex text), by address.pk;
 *  3. seal_hash   = SHA-256(UTF-8(JCS(seal without seal_hash and signature)));
 *  4. the sealer's Ed25519 signature over the UTF-8 of seal_hash, by sealer_pk; a custodial seal (with
 *     `custodian_pk`, docs/protocol.md §12.3) is signed by its custodian instead, and is trusted only when the
 *     custodian is the node: with `nodePk` it must equal it, else the check names the custodian to compare;
 *  5. the seal is the writer's seal of the record's epoch, and proof.tree_size is its record_count;
 *  6. RFC 9162 inclusion: leaf = SHA-256(0x00 ‖ record_hash bytes), node = SHA-256(0x01 ‖ left ‖ right), the
 *     audit path walked from leaf_index in a tree of tree_size (section 2.1.3.2), ending at merkle_root.
 *
 * A record without a seal is `pending` (its epoch is not sealed yet), not failed. Works in Node ≥ 20 too
 * (globalThis.crypto), which is how the unit test compares it with the server's verifier.
 */

const HASH_BYTES = 32;
const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
/** The order of the Ed25519 group: a signature's S must be below it (the server refuses the rest too). */
const ED25519_L = 2n ** 252n + 27742317777372353535851937790883648493n;
const encoder = new TextEncoder();

/** Deepest nesting of arrays and objects serialised, as the server refuses deeper (core/canonical-json.ts). */
const MAX_DEPTH = 1000;

/**
 * RFC 8785 (JCS): keys sorted by UTF-16 code units at every level, no whitespace, strings and numbers as
 * JSON.stringify writes them. Values come from JSON.parse, so only JSON types occur.
 * @param {unknown} value
 * @param {number} [depth]
 * @returns {string}
 */
export function canonicalJson(value, depth = 0) {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('non-finite number');
    return JSON.stringify(value);
  }
  if (typeof value === 'object' && depth >= MAX_DEPTH) throw new TypeError(`nests deeper than ${MAX_DEPTH} levels`);
  if (Array.isArray(value))
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item, depth + 1))).join(',')}]`;
  if (typeof value === 'object') {
    const record = /** @type {Record<string, unknown>} */ (value);
    const keys = Object.keys(record)
      .filter((k) => record[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k], depth + 1)}`).join(',')}}`;
  }
  throw new TypeError(`${typeof value} is not representable in JSON`);
}

/** @param {string} hex */
export function hexToBytes(hex) {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/** @param {Uint8Array} bytes */
export function bytesToHex(bytes) {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** @param {Uint8Array} data */
async function sha256(data) {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', /** @type {BufferSource} */ (data)));
}

/** @param {string} text */
export async function sha256Hex(text) {
  return bytesToHex(await sha256(encoder.encode(text)));
}

/** RFC 9162 leaf hash of a record: SHA-256(0x00 ‖ the 32 bytes of record_hash). @param {string} recordHashHex */
export async function leafHash(recordHashHex) {
  const input = new Uint8Array(1 + HASH_BYTES);
  input[0] = 0x00;
  input.set(hexToBytes(recordHashHex), 1);
  return sha256(input);
}

/** RFC 9162 interior node: SHA-256(0x01 ‖ left ‖ right). @param {Uint8Array} left @param {Uint8Array} right */
export async function nodeHash(left, right) {
  const input = new Uint8Array(1 + 2 * HASH_BYTES);
  input[0] = 0x01;
  input.set(left, 1);
  input.set(right, 1 + HASH_BYTES);
  return sha256(input);
}

const half = (/** @type {number} */ n) => Math.floor(n / 2);
const isOdd = (/** @type {number} */ n) => n % 2 === 1;

/**
 * How many hashes the audit path of `leafIndex` in a tree of `treeSize` has (RFC 9162 2.1.3.2 without hashing).
 * @param {number} leafIndex @param {number} treeSize
 */
export function auditPathLength(leafIndex, treeSize) {
  let fn = leafIndex;
  let sn = treeSize - 1;
  let length = 0;
  while (sn > 0) {
    length++;
    if (!isOdd(fn) && fn === sn) {
      while (!isOdd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    }
    fn = half(fn);
    sn = half(sn);
  }
  return length;
}

/**
 * @typedef {{ level: number, side: 'left' | 'right', sibling: string, result: string }} PathStep
 *   `side` is where the sibling sits: `left` means node = H(0x01 ‖ sibling ‖ running).
 */

/**
 * Walks the audit path from the leaf to the root (RFC 9162 2.1.3.2). The side of each sibling follows from
 * the leaf index and the tree size alone: an odd index, or the last node of its level, has its sibling on
 * the left. A last node without a sibling rises unchanged, which is why the path may be shorter than the height.
 * @param {number} leafIndex @param {number} treeSize @param {Uint8Array} leaf @param {string[]} path
 * @returns {Promise<{ steps: PathStep[], root: string }>}
 */
export async function walkInclusion(leafIndex, treeSize, leaf, path) {
  const needed = auditPathLength(leafIndex, treeSize);
  if (path.length !== needed) {
    throw new Error(`proof has ${path.length} hashes; tree size ${treeSize} at index ${leafIndex} needs ${needed}`);
  }
  let fn = leafIndex;
  let sn = treeSize - 1;
  let running = leaf;
  let level = 0;
  /** @type {PathStep[]} */
  const steps = [];
  for (const hex of path) {
    const sibling = hexToBytes(hex);
    /** @type {'left' | 'right'} */
    let side;
    if (isOdd(fn) || fn === sn) {
      side = 'left';
      running = await nodeHash(sibling, running);
      if (!isOdd(fn)) {
        while (!isOdd(fn) && fn !== 0) {
          fn = half(fn);
          sn = half(sn);
          level++;
        }
      }
    } else {
      side = 'right';
      running = await nodeHash(running, sibling);
    }
    steps.push({ level, side, sibling: hex, result: bytesToHex(running) });
    fn = half(fn);
    sn = half(sn);
    level++;
  }
  return { steps, root: bytesToHex(running) };
}

const ED25519_P = 2n ** 255n - 19n;
/** @param {bigint} base @param {bigint} exponent */
function powP(base, exponent) {
  let result = 1n;
  let b = ((base % ED25519_P) + ED25519_P) % ED25519_P;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % ED25519_P;
    b = (b * b) % ED25519_P;
  }
  return result;
}
const ED25519_D = (((-121665n * powP(121666n, ED25519_P - 2n)) % ED25519_P) + ED25519_P) % ED25519_P;
const SQRT_M1 = powP(2n, (ED25519_P - 1n) / 4n);
/** The canonical encodings of the eight points of small order (the torsion subgroup). */
const SMALL_ORDER = new Set([
  '0100000000000000000000000000000000000000000000000000000000000000',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
  '0000000000000000000000000000000000000000000000000000000000000080',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
  'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
  '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
  '0000000000000000000000000000000000000000000000000000000000000000',
  'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
]);

/**
 * Why `pk` is not a key the server accepts (docs/protocol.md §10.1), or undefined: 64 lowercase hex, a canonical
 * encoding (y < p, not x = 0 with the sign bit set) of a curve point not of small order. WebCrypto checks none of
 * this: under a small-order key, a "signature" verifies on messages nobody signed.
 * @param {unknown} pk
 */
export function publicKeyIssue(pk) {
  if (typeof pk !== 'string' || !HEX64.test(pk)) return 'must be 64 lowercase hex';
  const point = decodePoint(pk);
  if (typeof point === 'string') return point;
  if (SMALL_ORDER.has(pk)) return 'is a small-order point';
  return undefined;
}

/**
 * The curve point a 64-hex encoding names, as [x, y], or why it names none (not canonical, not on the curve).
 * @param {string} hex @returns {[bigint, bigint] | string}
 */
function decodePoint(hex) {
  const bytes = hexToBytes(hex);
  let y = 0n;
  for (let i = 31; i >= 0; i--) y = (y << 8n) | BigInt(/** @type {number} */ (bytes[i]));
  const sign = y >> 255n;
  y &= (1n << 255n) - 1n;
  if (y >= ED25519_P) return 'is not a canonical encoding (y >= p)';
  const u = (y * y - 1n + ED25519_P) % ED25519_P;
  const v = (ED25519_D * y * y + 1n) % ED25519_P;
  let x = (u * powP(v, 3n) * powP(u * powP(v, 7n), (ED25519_P - 5n) / 8n)) % ED25519_P;
  if ((v * x * x - u) % ED25519_P !== 0n) {
    x = (x * SQRT_M1) % ED25519_P;
    if ((v * x * x - u) % ED25519_P !== 0n) return 'is not a point on the curve';
  }
  if (x === 0n && sign === 1n) return 'is not a canonical encoding (x = 0 with the sign bit set)';
  if ((x & 1n) !== sign) x = ED25519_P - x;
  return [x, y];
}

/** @typedef {[bigint, bigint, bigint, bigint]} Extended  (X, Y, Z, T) with x = X/Z, y = Y/Z, xy = T/Z */
/** @param {bigint} a */
const modP = (a) => ((a % ED25519_P) + ED25519_P) % ED25519_P;
/** RFC 8032 §5.1.4's addition, complete on this curve (doubling too). @param {Extended} p @param {Extended} q @returns {Extended} */
function addPoints([x1, y1, z1, t1], [x2, y2, z2, t2]) {
  const a = modP((y1 - x1) * (y2 - x2));
  const b = modP((y1 + x1) * (y2 + x2));
  const c = modP(2n * ED25519_D * t1 * t2);
  const d = modP(2n * z1 * z2);
  const [e, f, g, h] = [b - a, d - c, d + c, b + a];
  return [modP(e * f), modP(g * h), modP(f * g), modP(e * h)];
}
/** [n]P by double-and-add (public inputs only: not constant-time). @param {bigint} n @param {Extended} point @returns {Extended} */
function multiply(n, point) {
  /** @type {Extended} */
  let result = [0n, 1n, 1n, 0n];
  for (let base = point; n > 0n; n >>= 1n, base = addPoints(base, base)) {
    if (n & 1n) result = addPoints(result, base);
  }
  return result;
}
/** @param {Extended} point */
function encodePoint([x, y, z]) {
  const zInv = powP(z, ED25519_P - 2n);
  const n = modP(y * zInv) | ((modP(x * zInv) & 1n) << 255n);
  return bytesToHex(Uint8Array.from({ length: 32 }, (_, i) => Number((n >> BigInt(8 * i)) & 0xffn)));
}
const BASE_POINT = /** @type {[bigint, bigint]} */ (
  decodePoint('5866666666666666666666666666666666666666666666666666666666666666')
);

/**
 * The server's step 3 by itself (the cofactorless equation [S]B = R + [k]A, R compared by its encoding), for a
 * signature WebCrypto refused whose R is of small order: some runtimes' Ed25519 (Node 24's, for one) refuse such an
 * R whatever the equation says, while the server's policy accepts it (core/identity.ts holdsWithSmallOrderR).
 * @param {string} pkHex @param {Uint8Array} data @param {Uint8Array} signature @param {bigint} s
 */
async function holdsWithSmallOrderR(pkHex, data, signature, s) {
  const rHex = bytesToHex(signature.subarray(0, 32));
  const a = decodePoint(pkHex);
  if (!SMALL_ORDER.has(rHex) || typeof a === 'string') return false;
  const input = new Uint8Array(64 + data.length);
  input.set(signature.subarray(0, 32));
  input.set(hexToBytes(pkHex), 32);
  input.set(data, 64);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-512', input));
  let k = 0n;
  for (let i = 63; i >= 0; i--) k = (k << 8n) | BigInt(/** @type {number} */ (digest[i]));
  k %= ED25519_L;
  const [bx, by] = BASE_POINT;
  const [ax, ay] = a;
  const sB = multiply(s, [bx, by, 1n, modP(bx * by)]);
  const minusKA = multiply(k, [modP(-ax), ay, 1n, modP(-ax * ay)]);
  return encodePoint(addPoints(sB, minusKA)) === rHex;
}

/**
 * Ed25519 (RFC 8032, pure) over the UTF-8 of `message`, by WebCrypto, under the server's key policy
 * (publicKeyIssue) and with S < L. Throws when the browser has no Ed25519.
 * @param {string} pkHex @param {string | Uint8Array} message @param {string} signatureHex
 */
export async function verifyEd25519(pkHex, message, signatureHex) {
  if (publicKeyIssue(pkHex) !== undefined || !HEX128.test(signatureHex)) return false;
  const signature = hexToBytes(signatureHex);
  // S little-endian must be below L (a malleated signature adds L); the server's verifier refuses it too.
  let s = 0n;
  for (let i = 63; i >= 32; i--) s = (s << 8n) | BigInt(/** @type {number} */ (signature[i]));
  if (s >= ED25519_L) return false;
  let key;
  try {
    key = await crypto.subtle.importKey('raw', hexToBytes(pkHex), { name: 'Ed25519' }, false, ['verify']);
  } catch (error) {
    if (error instanceof Error && error.name === 'NotSupportedError') throw error;
    return false; // not a point on the curve
  }
  const data = typeof message === 'string' ? encoder.encode(message) : message;
  if (await crypto.subtle.verify({ name: 'Ed25519' }, key, signature, /** @type {BufferSource} */ (data))) return true;
  return holdsWithSmallOrderR(pkHex, data, signature, s);
}

/**
 * The object without `fields`, as a null-prototype copy: a `__proto__` key that JSON.parse made a field stays one
 * (assigned on a plain `{}` it would set the prototype instead and drop out of the hash).
 * @param {Record<string, unknown>} object @param {string[]} fields
 */
export function without(object, fields) {
  /** @type {Record<string, unknown>} */
  const rest = Object.create(null);
  for (const [k, v] of Object.entries(object)) if (!fields.includes(k)) rest[k] = v;
  return rest;
}

const isObject = (/** @type {unknown} */ v) => typeof v === 'object' && v !== null && !Array.isArray(v);
const isIndex = (/** @type {unknown} */ v) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * @typedef {{ name: string, ok: boolean | null, detail: string }} Check  `ok: null` = not applicable yet
 * @typedef {{
 *   verdict: 'verified' | 'failed' | 'pending',
 *   problems: string[],
 *   checks: Check[],
 *   path: null | { leaf_index: number, tree_size: number, leaf: string, steps: PathStep[], root: string, sealed_root: string },
 * }} Verdict
 */

/**
 * Every check of the bundle; `verified` only when all pass. `expectedId` is the id that was asked for: a valid
 * proof of another record proves nothing about it. `nodePk`, when known, is the only key trusted to sign a
 * custodial seal.
 * @param {unknown} bundle @param {string} [expectedId] @param {string} [nodePk]
 * @returns {Promise<Verdict>}
 */
export async function verifyBundle(bundle, expectedId, nodePk) {
  /** @type {Check[]} */
  const checks = [];
  const check = (/** @type {string} */ name, /** @type {boolean | null} */ ok, /** @type {string} */ detail) =>
    checks.push({ name, ok, detail });
  /** @type {Verdict['path']} */
  let path = null;
  const done = (/** @type {Verdict['verdict'] | null} */ forced) => {
    const problems = checks.filter((c) => c.ok === false).map((c) => `${c.name}: ${c.detail}`);
    const verdict = forced ?? (problems.length === 0 ? 'verified' : 'failed');
    return { verdict: problems.length > 0 ? 'failed' : verdict, problems, checks, path };
  };

  if (!isObject(bundle)) {
    check('bundle', false, 'the answer is not a proof bundle');
    return done(null);
  }
  const b = /** @type {Record<string, unknown>} */ (bundle);
  const record = /** @type {Record<string, any>} */ (b.record);
  if (!isObject(record) || !isObject(record.address) || typeof record.id !== 'string') {
    check('record', false, 'missing or malformed');
    return done(null);
  }
  if (expectedId !== undefined) {
    check(
      'record id',
      record.id === expectedId,
      record.id === expectedId
        ? record.id
        : `the answer is record ${JSON.stringify(record.id)}, not ${JSON.stringify(expectedId)}`,
    );
  }
  const recordHashOk = typeof record.record_hash === 'string' && HEX64.test(record.record_hash);
  if (!recordHashOk) {
    check('record hash', false, 'record_hash must be 64 lowercase hex');
  } else {
    const recomputed = await sha256Hex(canonicalJson(without(record, ['record_hash', 'signature'])));
    check(
      'record hash',
      recomputed === record.record_hash,
      recomputed === record.record_hash
        ? `SHA-256 of the canonical record is ${recomputed}`
        : `the record hashes to ${recomputed}, not its record_hash ${record.record_hash}: its content was changed`,
    );
    const signed = await verifyEd25519(String(record.address.pk), record.record_hash, String(record.signature));
    check(
      'record signature',
      signed,
      signed ? `Ed25519 by the writer ${record.address.pk}` : `the writer's signature does not verify`,
    );
  }

  const seal = /** @type {Record<string, any> | null} */ (b.seal ?? null);
  if (seal === null) {
    check('seal', null, `epoch ${record.address.epoch} is not sealed yet`);
    return done('pending');
  }
  if (!isObject(seal) || typeof seal.seal_hash !== 'string' || !HEX64.test(seal.seal_hash)) {
    check('seal', false, 'missing or malformed seal');
    return done(null);
  }
  const sealHash = await sha256Hex(canonicalJson(without(seal, ['seal_hash', 'signature'])));
  check(
    'seal hash',
    sealHash === seal.seal_hash,
    sealHash === seal.seal_hash
      ? `SHA-256 of the canonical seal is ${sealHash}`
      : `the seal hashes to ${sealHash}, not ${seal.seal_hash}`,
  );
  // A custodial seal (docs/protocol.md §12.3): the node sealed the epoch of a worker gone for good.
  const custodial = 'custodian_pk' in seal;
  const signer = custodial ? seal.custodian_pk : seal.sealer_pk;
  const sealSigned =
    typeof signer === 'string' && (await verifyEd25519(signer, seal.seal_hash, String(seal.signature)));
  check(
    'seal signature',
    sealSigned,
    sealSigned
      ? custodial
        ? `Ed25519 custodial by ${signer}`
        : `Ed25519 by the sealer ${seal.sealer_pk}`
      : custodial
        ? `the custodian's signature does not verify`
        : `the sealer's signature does not verify`,
  );
  if (custodial && sealSigned) {
    // Any key can sign a seal naming itself custodian: only the node's is trusted.
    const pinned = typeof nodePk === 'string' && nodePk !== '';
    check(
      'custodian',
      pinned ? signer === nodePk : true,
      pinned
        ? signer === nodePk
          ? `custodial by ${signer}, the node`
          : `custodial by ${signer}, not by the node ${nodePk}`
        : `custodial by ${signer}: check that it is your node's key`,
    );
  }
  const sameWriter = seal.sealer_pk === record.address.pk && seal.epoch === record.address.epoch;
  check(
    'seal covers the record',
    sameWriter,
    sameWriter
      ? `the writer's seal of epoch ${seal.epoch}`
      : `seal is of sealer ${seal.sealer_pk} epoch ${seal.epoch}, not the record's writer and epoch`,
  );

  const proof = isObject(b.proof) ? /** @type {Record<string, any>} */ (b.proof) : null;
  if (proof === null || !isIndex(proof.leaf_index) || !isIndex(proof.tree_size)) {
    check('inclusion path', false, 'leaf_index and tree_size must be integers');
  } else if (
    !Array.isArray(proof.hashes) ||
    !proof.hashes.every((/** @type {unknown} */ h) => typeof h === 'string' && HEX64.test(h))
  ) {
    check('inclusion path', false, 'hashes must be 64-hex strings');
  } else if (proof.tree_size !== seal.record_count) {
    check(
      'inclusion path',
      false,
      `tree_size ${proof.tree_size} differs from the seal's record_count ${seal.record_count}`,
    );
  } else if (proof.leaf_index >= proof.tree_size) {
    check('inclusion path', false, `leaf index ${proof.leaf_index} is not below tree size ${proof.tree_size}`);
  } else if (!recordHashOk || typeof seal.merkle_root !== 'string' || !HEX64.test(seal.merkle_root)) {
    check('inclusion path', false, 'record_hash and merkle_root must be 64 lowercase hex');
  } else {
    const leaf = await leafHash(record.record_hash);
    try {
      const walked = await walkInclusion(proof.leaf_index, proof.tree_size, leaf, proof.hashes);
      path = {
        leaf_index: proof.leaf_index,
        tree_size: proof.tree_size,
        leaf: bytesToHex(leaf),
        ...walked,
        sealed_root: seal.merkle_root,
      };
      const ok = walked.root === seal.merkle_root;
      check(
        'inclusion path',
        ok,
        ok
          ? `${walked.steps.length} steps from leaf ${proof.leaf_index} of ${proof.tree_size} to the sealed root`
          : `the path ends at ${walked.root}, not the sealed root ${seal.merkle_root}`,
      );
    } catch (error) {
      check('inclusion path', false, error instanceof Error ? error.message : String(error));
    }
  }
  return done(null);
}
