// @ts-check
/**
 * What the receipt checker (receipt-verify.js) holds a receipt's parts to, as the server's verifier does
 * (docs/protocol.md §2.6, §2.10, §10.5, §10.7): the exact fields of records, seals and delegation certificates,
 * H3 cells, timestamps, the telemetry quantity registry, the rule that makes a stored reading count as evidence,
 * and the fusion recomputed with one vote per principal in the server's order of operations (so the doubles
 * agree). Plain JavaScript with no imports beyond the page's own modules, so Node's tests load it as the page does.
 */
import { canonicalJson, sha256Hex } from './proof-verify.js';

/** @typedef {Record<string, any>} Obj */

/** @param {unknown} v @returns {v is Obj} */
export const isObj = (v) => typeof v === 'object' && v !== null && !Array.isArray(v);
/** @param {unknown} v @returns {v is string} */
export const isHex64 = (v) => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
/** @param {unknown} v @returns {v is string} */
export const isHex128 = (v) => typeof v === 'string' && /^[0-9a-f]{128}$/.test(v);
/** A safe integer of at least `min`. @param {unknown} v @param {number} [min] @returns {v is number} */
export const isIndex = (v, min = 0) => Number.isSafeInteger(v) && /** @type {number} */ (v) >= min;

/** Exactly these keys (optional ones may be absent), nothing else. @param {Obj} value @param {string[]} required @param {string[]} [optional] */
function hasKeys(value, required, optional = []) {
  for (const key of required) if (!Object.hasOwn(value, key)) return false;
  return Object.keys(value).every((key) => required.includes(key) || optional.includes(key));
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

/** Why `head` is not a seal log head's shape, or undefined. @param {unknown} head @returns {string | undefined} */
export function headShapeIssue(head) {
  if (!isObj(head) || !hasKeys(head, HEAD_KEYS)) return 'has not the fields of a head';
  if (head.version !== 1 || !isHex64(head.sealer_pk) || !isHex64(head.signer_pk)) return 'malformed';
  if (!isIndex(head.first_epoch) || !isIndex(head.tree_size, 1)) return 'first_epoch or tree_size is malformed';
  if (!isHex64(head.root_hash) || !isHex64(head.head_hash) || !isHex128(head.signature)) return 'hashes are malformed';
  return undefined;
}

/** Why `proof` is not an inclusion proof's shape, or undefined. @param {unknown} proof @returns {string | undefined} */
export function proofShapeIssue(proof) {
  if (!isObj(proof) || !hasKeys(proof, ['leaf_index', 'tree_size', 'hashes'])) return 'has not the fields of a proof';
  if (!isIndex(proof.leaf_index) || !isIndex(proof.tree_size, 1)) return 'leaf_index or tree_size is malformed';
  if (!Array.isArray(proof.hashes) || proof.hashes.length > 64 || !proof.hashes.every(isHex64)) {
    return 'hashes are malformed';
  }
  return undefined;
}

// ---- H3 cells: 15 lowercase hex digits that H3 calls a valid cell ----

const PENTAGON_BASE_CELLS = new Set([4, 14, 24, 38, 49, 58, 63, 72, 83, 97, 107, 117]);

/**
 * Mode 1, base cell below 122, digits 0–6 up to the resolution and 7 after it, no deleted k-axis subsequence under
 * a pentagon: H3's isValidCell. @param {unknown} value @returns {value is string}
 */
export function isCell(value) {
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

/** @param {string} cell */
const cellResolution = (cell) => Number((BigInt(`0x${cell}`) >> 52n) & 0xfn);

/** The parent of a valid cell at a resolution no finer than its own. @param {string} cell @param {number} res */
function cellParent(cell, res) {
  let h = BigInt(`0x${cell}`);
  h = (h & ~(0xfn << 52n)) | (BigInt(res) << 52n);
  for (let r = res + 1; r <= 15; r++) h |= 7n << BigInt((15 - r) * 3);
  return h.toString(16).padStart(15, '0');
}

/** True when valid cell `cell` lies inside one of the valid cells `ancestors` (or is one). @param {string[]} ancestors @param {string} cell */
export function cellCovered(ancestors, cell) {
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
const UTC_TIMESTAMP = new RegExp(`^${DATE}T${TIME}Z$`);
const TIMESTAMP = new RegExp(`^${DATE}T${TIME}(?:Z|[+-](?:[01]\\d|2[0-3]):[0-5]\\d)$`);

/** A record's written_at, a seal's sealed_at (`Z`). @param {unknown} v @returns {v is string} */
export const isUtcTimestamp = (v) => typeof v === 'string' && UTC_TIMESTAMP.test(v);
/** A certificate's window, a request's created_at (`Z` or an offset). @param {unknown} v @returns {v is string} */
export const isTimestamp = (v) => typeof v === 'string' && TIMESTAMP.test(v);

/** Days from 1970-01-01 to a proleptic Gregorian date. @param {number} year @param {number} month @param {number} day */
function daysFromCivil(year, month, day) {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

/**
 * The milliseconds of a timestamp of the certificate form, fractions beyond the millisecond cut off, as the server
 * reads it; NaN for anything else (no local times, no other formats: browsers' Date.parse differ there).
 * @param {unknown} value
 */
export function timestampMs(value) {
  if (!isTimestamp(value)) return NaN;
  const m = /** @type {RegExpExecArray} */ (
    /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|([+-])(\d\d):(\d\d))$/.exec(value)
  );
  const [, y, mo, d, h, mi, s, fraction, , sign, oh, om] = m;
  const ms = Number(`${fraction ?? ''}000`.slice(0, 3));
  const offset = sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const minutes = daysFromCivil(Number(y), Number(mo), Number(d)) * 1440 + Number(h) * 60 + Number(mi) - offset;
  return minutes * 60_000 + Number(s) * 1000 + ms;
}

// ---- records, seals, certificates ----

/** @type {Record<string, string[]>} */
const COLLECTION_PAYLOAD_TYPES = {
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

/** Why `record` is not a proof record's shape (before its hash and signature are checked). @param {unknown} record */
export function recordShapeIssue(record) {
  if (!isObj(record) || !hasKeys(record, RECORD_KEYS)) return `has not exactly the fields ${RECORD_KEYS.join(', ')}`;
  if (record.version !== 1) return 'version must be 1';
  if (typeof record.id !== 'string' || !/^[A-Za-z0-9_.:-]{1,128}$/.test(record.id)) return 'id is malformed';
  const address = record.address;
  if (!isObj(address) || !hasKeys(address, ['h3_cell', 'epoch', 'pk'])) return 'address has not h3_cell, epoch, pk';
  if (!isCell(address.h3_cell) || !isIndex(address.epoch) || !isHex64(address.pk)) return 'address is malformed';
  const types = Object.hasOwn(COLLECTION_PAYLOAD_TYPES, record.collection_type)
    ? COLLECTION_PAYLOAD_TYPES[record.collection_type]
    : undefined;
  if (types === undefined || !types.includes(record.payload_type))
    return 'payload_type does not belong to collection_type';
  if (!isIndex(record.seq, 1)) return 'seq is malformed';
  if (!isUtcTimestamp(record.written_at)) return 'written_at is not an ISO 8601 UTC timestamp';
  if (!isHex64(record.record_hash) || !isHex128(record.signature)) return 'record_hash or signature is malformed';
  return undefined;
}

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

/** Why `seal` is not a seal's shape (before its hash and signature are checked). @param {unknown} seal @param {string} emptyRoot */
export function sealShapeIssue(seal, emptyRoot) {
  if (!isObj(seal) || !hasKeys(seal, SEAL_KEYS, ['custodian_pk'])) return 'has not the fields of a seal';
  if (seal.version !== 1 || !isHex64(seal.sealer_pk) || !isIndex(seal.epoch)) return 'malformed';
  const count = seal.record_count;
  if (!isIndex(count)) return 'record_count is malformed';
  const seqOrNull = (/** @type {unknown} */ v) => v === null || isIndex(v, 1);
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
  } else if (seal.last_seq - seal.first_seq + 1 !== count) {
    return 'record_count is not the seq range';
  }
  return undefined;
}

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
/** @param {unknown} v @param {number} max @returns {v is string[]} */
const names = (v, max) => Array.isArray(v) && v.length <= max && v.every((s) => typeof s === 'string' && s.length > 0);

/** Why `cert` is not a certificate's shape (before its signature is checked). @param {unknown} cert */
export function certShapeIssue(cert) {
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

// ---- telemetry (docs/protocol.md §2.10) ----

/** The quantities a device may report: the one unit (UCUM) and the plausible range, inclusive. */
/** @type {Record<string, { unit: string, min: number, max: number }>} */
export const QUANTITIES = {
  air_temperature: { unit: 'Cel', min: -90, max: 60 },
  relative_humidity: { unit: '%', min: 0, max: 100 },
  pm2_5: { unit: 'ug/m3', min: 0, max: 1000 },
  pm10: { unit: 'ug/m3', min: 0, max: 2000 },
  no2: { unit: 'ug/m3', min: 0, max: 2000 },
  rainfall: { unit: 'mm', min: 0, max: 500 },
  water_level: { unit: 'm', min: -50, max: 200 },
  soil_moisture: { unit: '%', min: 0, max: 100 },
};

/**
 * What a device signs for one reading: JCS of its fields with the domain tag.
 * @param {{ device_pk: string, h3_cell: string, quantity: string, value: number, unit: string, observed_at: string }} r
 */
export const readingStatement = (r) =>
  canonicalJson({
    type: 'geofabric/telemetry-reading',
    device_pk: r.device_pk,
    h3_cell: r.h3_cell,
    quantity: r.quantity,
    value: r.value,
    unit: r.unit,
    observed_at: r.observed_at,
  });

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** The form toISOString writes (UTC, milliseconds) of a real instant: how observed_at is stored. @param {unknown} value @returns {value is string} */
export function isNormalisedInstant(value) {
  if (typeof value !== 'string') return false;
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{3}Z$/.exec(value);
  if (m === null) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return false;
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  return d >= 1 && d <= (mo === 2 && leap ? 29 : DAYS_IN_MONTH[mo - 1]);
}

/**
 * The trusted writers a fusion output names (docs/protocol.md §2.10): ascending distinct node keys, at least one;
 * undefined writers for an output without the field (the job record's writer alone), an issue for a malformed one.
 * @param {unknown} output @returns {{ writers?: string[], issue?: string }}
 */
export function trustedWritersOf(output) {
  const named = isObj(output) ? output.trusted_writers : undefined;
  if (named === undefined) return {};
  const ok =
    Array.isArray(named) && named.length > 0 && named.every((pk, i) => isHex64(pk) && (i === 0 || named[i - 1] < pk));
  return ok ? { writers: named } : { issue: 'trusted_writers must be ascending distinct node keys' };
}

/**
 * Why a record (its hash and writer signature already checked) is not a reading that counts as evidence, or the
 * reading: an `iot/telemetry` record of payload version 2 written by one of `writers` (the fusion output's
 * `trusted_writers`, or without them the job record's writer),
 * addressed by the device's cell, plausible for its quantity, `observed_at` normalised, signed by its device
 * (`verify`, the page's Ed25519 under the key policy), its id derived from device, quantity and instant.
 * @param {Obj} record @param {readonly string[]} writers
 * @param {(pk: string, message: string, signature: string) => Promise<boolean>} verify
 * @returns {Promise<string | { device_pk: string, h3_cell: string, quantity: string, value: number, unit: string, observed_at: string, principal_pk: string }>}
 */
export async function provenReading(record, writers, verify) {
  const id = String(record.id);
  if (record.payload_type !== 'iot/telemetry') return `record ${id}: is ${String(record.payload_type)}`;
  const p = record.payload;
  if (!isObj(p)) return `record ${id}: is not a telemetry reading`;
  const { device_pk, h3_cell, quantity, value, unit, observed_at, device_signature, principal_pk } = p;
  if (typeof device_pk !== 'string' || typeof h3_cell !== 'string' || typeof unit !== 'string') {
    return `record ${id}: is not a telemetry reading`;
  }
  if (typeof quantity !== 'string' || !Object.hasOwn(QUANTITIES, quantity)) {
    return `record ${id}: is not a telemetry reading`;
  }
  if (typeof value !== 'number' || typeof observed_at !== 'string') return `record ${id}: is not a telemetry reading`;
  if (typeof device_signature !== 'string' || typeof principal_pk !== 'string') {
    return `record ${id}: is not a version-2 reading, which its device signed on its own`;
  }
  if (!writers.includes(record.address.pk)) {
    return writers.length === 1
      ? `record ${id}: was written by ${record.address.pk}, not the node ${writers[0]}`
      : `record ${id}: was written by ${record.address.pk}, not one of the fusion's trusted writers`;
  }
  if (record.address.h3_cell !== h3_cell) return `record ${id}: is not addressed by its device's cell`;
  if (!isHex64(principal_pk)) return `record ${id}: names no principal key`;
  if (!isNormalisedInstant(observed_at)) return `record ${id}: observed_at is not normalised`;
  const q = QUANTITIES[quantity];
  if (unit !== q.unit || !Number.isFinite(value) || value < q.min || value > q.max) {
    return `record ${id}: ${quantity} ${value} ${unit} is not plausible`;
  }
  const reading = { device_pk, h3_cell, quantity, value, unit, observed_at, principal_pk };
  if (!(await verify(device_pk, readingStatement(reading), device_signature))) {
    return `record ${id}: the device signature is not ${device_pk}'s over the reading`;
  }
  const derived = `telemetry:${await sha256Hex(canonicalJson([device_pk, quantity, observed_at]))}`;
  if (record.id !== derived) return `record ${id}: its id is not derived from its device, quantity and instant`;
  return reading;
}

/** @param {number[]} values */
function median(values) {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** @param {string} a @param {string} b */
const byCodeUnits = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Groups by key, the groups in ascending key order.
 * @template T @param {T[]} items @param {(item: T) => string} key @returns {[string, T[]][]}
 */
function groups(items, key) {
  /** @type {Map<string, T[]>} */
  const by = new Map();
  for (const item of items) {
    const list = by.get(key(item));
    if (list) list.push(item);
    else by.set(key(item), [item]);
  }
  return [...by.entries()].sort(([a], [b]) => byCodeUnits(a, b));
}

const MAD_SCALE = 1.4826;
const MAD_CUTOFF = 3;

/**
 * The fused numbers a verifier compares: per device the median of its readings, per principal (voter) the median
 * of its devices (a device votes for the principal of its first reading in record-id order), the median of the
 * voters, MAD rejection of voters, mean and stderr of the kept ones; `merkleRoot` of the record hashes in
 * record-id order.
 * @param {{ device_pk: string, principal_pk: string, value: number, record_id: string, record_hash: string }[]} readings
 * @param {(recordHashes: string[]) => Promise<string>} merkleRoot
 * @returns {Promise<Record<string, unknown>>}
 */
export async function fuse(readings, merkleRoot) {
  if (readings.length === 0) throw new RangeError('no readings to fuse');
  const sorted = [...readings].sort((a, b) => byCodeUnits(a.record_id, b.record_id));
  const devices = groups(sorted, (r) => r.device_pk).map(([, list]) => ({
    principal_pk: list[0].principal_pk,
    value: median(list.map((r) => r.value)),
    reading_count: list.length,
  }));
  const voters = groups(devices, (d) => d.principal_pk).map(([, list]) => ({
    value: median(list.map((d) => d.value)),
    device_count: list.length,
    reading_count: list.reduce((sum, d) => sum + d.reading_count, 0),
  }));
  const value = median(voters.map((v) => v.value));
  const mad = median(voters.map((v) => Math.abs(v.value - value)));
  const threshold = MAD_CUTOFF * MAD_SCALE * mad;
  const kept = voters.filter((v) => Math.abs(v.value - value) <= threshold);
  const n = kept.length;
  const mean = kept.reduce((sum, v) => sum + v.value, 0) / n;
  const variance = n > 1 ? kept.reduce((sum, v) => sum + (v.value - mean) ** 2, 0) / (n - 1) : null;
  return {
    value,
    mean,
    stderr: variance === null ? null : Math.sqrt(variance / n),
    voter_count: n,
    device_count: kept.reduce((sum, v) => sum + v.device_count, 0),
    reading_count: kept.reduce((sum, v) => sum + v.reading_count, 0),
    merkle_root: await merkleRoot(sorted.map((r) => r.record_hash)),
  };
}
