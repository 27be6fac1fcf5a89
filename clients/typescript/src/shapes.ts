/**
 * The shapes the server's verifier holds records, seals and delegation certificates to (docs/protocol.md §10.5,
 * §10.7, §2.6), written out without its schema library: the same fields, no more and no fewer, the same types,
 * ranges, timestamps and H3 cells, so a signed but malformed part fails here exactly when it fails there.
 */
type Obj = Record<string, unknown>;

export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
export const isHex64 = (v: unknown): v is string => typeof v === 'string' && HEX64.test(v);
export const isHex128 = (v: unknown): v is string => typeof v === 'string' && HEX128.test(v);
/** A safe integer of at least `min`: the only integers JSON numbers carry exactly. */
export const isIndex = (v: unknown, min = 0): v is number => Number.isSafeInteger(v) && (v as number) >= min;

/** Exactly these keys (optional ones may be absent), nothing else. */
function hasKeys(value: Obj, required: readonly string[], optional: readonly string[] = []): boolean {
  for (const key of required) if (!Object.hasOwn(value, key)) return false;
  return Object.keys(value).every((key) => required.includes(key) || optional.includes(key));
}

// ---- H3 cells: 15 lowercase hex digits that H3 calls a valid cell (mode 1, base cell < 122, digits 0–6 up to
// the resolution and 7 after it, no deleted k-axis subsequence under a pentagon). ----

const PENTAGON_BASE_CELLS = new Set([4, 14, 24, 38, 49, 58, 63, 72, 83, 97, 107, 117]);

export function isCell(value: unknown): value is string {
  if (typeof value !== 'string' || !/^[0-9a-f]{15}$/.test(value)) return false;
  const h = BigInt(`0x${value}`);
  if (((h >> 59n) & 0xfn) !== 1n || ((h >> 56n) & 0x7n) !== 0n) return false;
  const base = Number((h >> 45n) & 0x7fn);
  if (base >= 122) return false;
  const res = Number((h >> 52n) & 0xfn);
  let leading = true;
  for (let r = 1; r <= 15; r++) {
    const digit = Number((h >> BigInt((15 - r) * 3)) & 7n);
    if (r > res) {
      if (digit !== 7) return false;
      continue;
    }
    if (digit === 7) return false;
    if (leading && digit !== 0) {
      leading = false;
      if (digit === 1 && PENTAGON_BASE_CELLS.has(base)) return false;
    }
  }
  return true;
}

/** The resolution of a valid cell. */
export const cellResolution = (cell: string): number => Number((BigInt(`0x${cell}`) >> 52n) & 0xfn);

/** The parent of a valid cell at a coarser (or its own) resolution: the resolution set, finer digits 7. */
function cellParent(cell: string, res: number): string {
  let h = BigInt(`0x${cell}`);
  h = (h & ~(0xfn << 52n)) | (BigInt(res) << 52n);
  for (let r = res + 1; r <= 15; r++) h |= 7n << BigInt((15 - r) * 3);
  return h.toString(16).padStart(15, '0');
}

/** True when valid cell `cell` lies inside one of the valid cells `ancestors` (or is one): H3 containment. */
export function cellCovered(ancestors: readonly string[], cell: string): boolean {
  const res = cellResolution(cell);
  return ancestors.some((a) => {
    const r = cellResolution(a);
    return r <= res && cellParent(cell, r) === a;
  });
}

// ---- timestamps: RFC 3339 with seconds, as the server's schemas accept them ----

const DATE =
  '(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))';
const TIME = '(?:[01]\\d|2[0-3]):[0-5]\\d:[0-5]\\d(?:\\.\\d+)?';
/** A record's `written_at`, a seal's `sealed_at`: UTC (`Z`). */
const UTC_TIMESTAMP = new RegExp(`^${DATE}T${TIME}Z$`);
/** A certificate's window, a request's `created_at`: `Z` or an offset. */
const TIMESTAMP = new RegExp(`^${DATE}T${TIME}(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$`);

export const isUtcTimestamp = (v: unknown): v is string => typeof v === 'string' && UTC_TIMESTAMP.test(v);
export const isTimestamp = (v: unknown): v is string => typeof v === 'string' && TIMESTAMP.test(v);

/** Days from 1970-01-01 to a proleptic Gregorian date (year 0 included). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

/**
 * The milliseconds of a timestamp of the certificate form (`isTimestamp`), fractions beyond the millisecond cut
 * off, as the server reads it; NaN for any other value (no local times, no other formats).
 */
export function timestampMs(value: unknown): number {
  if (!isTimestamp(value)) return NaN;
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|([+-])(\d\d):(\d\d))$/.exec(value)!;
  const [, y, mo, d, h, mi, s, fraction, , sign, oh, om] = m;
  const ms = Number(`${fraction ?? ''}000`.slice(0, 3));
  const offset = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const minutes = daysFromCivil(Number(y), Number(mo), Number(d)) * 1440 + Number(h) * 60 + Number(mi) - offset;
  return minutes * 60_000 + Number(s) * 1000 + ms;
}

// ---- records (docs/protocol.md §2.6) ----

/** Each collection and the payload types its records may carry. */
const COLLECTION_PAYLOAD_TYPES: Readonly<Record<string, readonly string[]>> = {
  inference: ['hive/inference'],
  tile: ['tile/vector', 'tile/raster'],
  compute_job: ['compute/job'],
  imagery: [
    'imagery/ndvi',
    'imagery/cloud_mask',
    'imagery/scene_search',
    'imagery/atmospheric_correction',
    'imagery/flood_classify',
    'imagery/band_math',
    'imagery/openeo_result',
    'imagery/openeo_tile',
  ],
  breadcrumb: ['gns/breadcrumb'],
  telemetry: ['iot/telemetry'],
};

const RECORD_KEYS = [
  'version',
  'id',
  'address',
  'collection_type',
  'payload_type',
  'payload',
  'seq',
  'written_at',
  'record_hash',
  'signature',
];

/** Why `record` is not a proof record's shape (before its hash and signature are checked), or undefined. */
export function recordShapeIssue(record: unknown): string | undefined {
  if (!isObj(record) || !hasKeys(record, RECORD_KEYS)) return `has not exactly the fields ${RECORD_KEYS.join(', ')}`;
  if (record.version !== 1) return 'version must be 1';
  if (typeof record.id !== 'string' || !/^[A-Za-z0-9_.:-]{1,128}$/.test(record.id)) return 'id is malformed';
  const address = record.address;
  if (!isObj(address) || !hasKeys(address, ['h3_cell', 'epoch', 'pk'])) return 'address has not h3_cell, epoch, pk';
  if (!isCell(address.h3_cell) || !isIndex(address.epoch) || !isHex64(address.pk)) return 'address is malformed';
  const types = Object.hasOwn(COLLECTION_PAYLOAD_TYPES, record.collection_type as string)
    ? COLLECTION_PAYLOAD_TYPES[record.collection_type as string]!
    : undefined;
  if (types === undefined || !types.includes(record.payload_type as string)) {
    return 'payload_type does not belong to collection_type';
  }
  if (!isIndex(record.seq, 1)) return 'seq is malformed';
  if (!isUtcTimestamp(record.written_at)) return 'written_at is not an ISO 8601 UTC timestamp';
  if (!isHex64(record.record_hash) || !isHex128(record.signature)) return 'record_hash or signature is malformed';
  return undefined;
}

// ---- seals (docs/protocol.md §10.7, §12) ----

const SEAL_KEYS = [
  'version',
  'sealer_pk',
  'epoch',
  'record_count',
  'first_seq',
  'last_seq',
  'merkle_root',
  'prev_epoch_hash',
  'sealed_at',
  'seal_hash',
  'signature',
];

/** Why `seal` is not a seal's shape (before its hash and signature are checked), or undefined. */
export function sealShapeIssue(seal: unknown, emptyRoot: string): string | undefined {
  if (!isObj(seal) || !hasKeys(seal, SEAL_KEYS, ['custodian_pk'])) return 'has not the fields of a seal';
  if (seal.version !== 1 || !isHex64(seal.sealer_pk) || !isIndex(seal.epoch)) return 'malformed';
  const count = seal.record_count;
  if (!isIndex(count)) return 'record_count is malformed';
  const seqOrNull = (v: unknown) => v === null || isIndex(v, 1);
  if (!seqOrNull(seal.first_seq) || !seqOrNull(seal.last_seq)) return 'seqs are malformed';
  if (!isHex64(seal.merkle_root) || !isHex64(seal.prev_epoch_hash)) return 'hashes are malformed';
  if (!isUtcTimestamp(seal.sealed_at)) return 'sealed_at is not an ISO 8601 UTC timestamp';
  if ('custodian_pk' in seal && !isHex64(seal.custodian_pk)) return 'custodian_pk is malformed';
  if (!isHex64(seal.seal_hash) || !isHex128(seal.signature)) return 'seal_hash or signature is malformed';
  if (count === 0) {
    if (seal.first_seq !== null || seal.last_seq !== null || seal.merkle_root !== emptyRoot) {
      return 'an empty epoch has null seqs and the empty root';
    }
  } else if (seal.first_seq === null || seal.last_seq === null) {
    return 'first_seq and last_seq are required';
  } else if ((seal.last_seq as number) - (seal.first_seq as number) + 1 !== count) {
    return 'record_count is not the seq range';
  }
  return undefined;
}

// ---- seal log heads and proofs (docs/protocol.md §15.4) ----

const HEAD_KEYS = [
  'version',
  'sealer_pk',
  'first_epoch',
  'tree_size',
  'root_hash',
  'signer_pk',
  'head_hash',
  'signature',
];

/** Why `head` is not a seal log head's shape (before its hash and signature are checked), or undefined. */
export function headShapeIssue(head: unknown): string | undefined {
  if (!isObj(head) || !hasKeys(head, HEAD_KEYS)) return 'has not the fields of a head';
  if (head.version !== 1 || !isHex64(head.sealer_pk) || !isHex64(head.signer_pk)) return 'malformed';
  if (!isIndex(head.first_epoch) || !isIndex(head.tree_size, 1)) return 'first_epoch or tree_size is malformed';
  if (!isHex64(head.root_hash) || !isHex64(head.head_hash) || !isHex128(head.signature)) return 'hashes are malformed';
  return undefined;
}

/** Why `proof` is not an inclusion proof's shape (leaf_index, tree_size, at most 64 hashes), or undefined. */
export function proofShapeIssue(proof: unknown): string | undefined {
  if (!isObj(proof) || !hasKeys(proof, ['leaf_index', 'tree_size', 'hashes'])) return 'has not the fields of a proof';
  if (!isIndex(proof.leaf_index) || !isIndex(proof.tree_size, 1)) return 'leaf_index or tree_size is malformed';
  if (!Array.isArray(proof.hashes) || proof.hashes.length > 64 || !proof.hashes.every(isHex64)) {
    return 'hashes are malformed';
  }
  return undefined;
}

// ---- delegation certificates (docs/protocol.md §10.5) ----

const CERT_KEYS = [
  'version',
  'agent_pk',
  'principal_pk',
  'h3_cells',
  'facets',
  'not_before',
  'not_after',
  'max_depth',
  'principal_signature',
];
const names = (v: unknown, max: number): v is string[] =>
  Array.isArray(v) && v.length <= max && v.every((s) => typeof s === 'string' && s.length > 0);

/** Why `cert` is not a certificate's shape (before its signature is checked), or undefined. */
export function certShapeIssue(cert: unknown): string | undefined {
  if (!isObj(cert) || !hasKeys(cert, CERT_KEYS, ['constraints'])) {
    return `has not exactly the fields ${CERT_KEYS.join(', ')} (and constraints)`;
  }
  if (cert.version !== 1) return 'version must be 1';
  if (!isHex64(cert.agent_pk) || !isHex64(cert.principal_pk)) return 'agent_pk and principal_pk are 64 lowercase hex';
  if (!Array.isArray(cert.h3_cells) || cert.h3_cells.length > 4096 || !cert.h3_cells.every(isCell)) {
    return 'h3_cells are at most 4096 H3 cells';
  }
  if (!names(cert.facets, 64)) return 'facets are at most 64 non-empty strings';
  if (!isTimestamp(cert.not_before) || !isTimestamp(cert.not_after)) return 'not_before and not_after are timestamps';
  if (!(timestampMs(cert.not_before) <= timestampMs(cert.not_after))) return 'not_before is after not_after';
  if (!isIndex(cert.max_depth)) return 'max_depth is an integer ≥ 0';
  const c = cert.constraints;
  if (c !== undefined && c !== null) {
    if (!isObj(c) || !hasKeys(c, [], ['max_ops_per_hour', 'allowed_tools', 'denied_tools', 'require_human_approval'])) {
      return 'constraints has unknown fields';
    }
    if (c.max_ops_per_hour !== undefined && !isIndex(c.max_ops_per_hour)) return 'max_ops_per_hour is an integer ≥ 0';
    if (c.allowed_tools !== undefined && !names(c.allowed_tools, 256)) return 'allowed_tools are names';
    if (c.denied_tools !== undefined && !names(c.denied_tools, 256)) return 'denied_tools are names';
    if (c.require_human_approval !== undefined && typeof c.require_human_approval !== 'boolean') {
      return 'require_human_approval is a boolean';
    }
  }
  if (!isHex128(cert.principal_signature)) return 'principal_signature is 128 lowercase hex';
  return undefined;
}
