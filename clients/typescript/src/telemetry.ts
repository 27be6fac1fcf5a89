/**
 * Telemetry readings as receipts carry them (docs/protocol.md §2.10): the statement a device signs per reading,
 * the quantity registry (each quantity's one unit and plausible range), the rule that makes a stored reading count
 * as evidence, and the fusion recomputed with one vote per principal, in the server's order of operations so the
 * doubles agree bit for bit.
 */
import { canonicalize } from './jcs.js';
import { sha256Hex, sign, verify } from './crypto.js';
import { isHex64, isObj } from './shapes.js';

type Obj = Record<string, unknown>;

/** The quantities a device may report: the one unit (UCUM) and the plausible range, inclusive. */
export const QUANTITIES: Readonly<Record<string, { unit: string; min: number; max: number }>> = {
  air_temperature: { unit: 'Cel', min: -90, max: 60 },
  relative_humidity: { unit: '%', min: 0, max: 100 },
  pm2_5: { unit: 'ug/m3', min: 0, max: 1000 },
  pm10: { unit: 'ug/m3', min: 0, max: 2000 },
  no2: { unit: 'ug/m3', min: 0, max: 2000 },
  rainfall: { unit: 'mm', min: 0, max: 500 },
  water_level: { unit: 'm', min: -50, max: 200 },
  soil_moisture: { unit: '%', min: 0, max: 100 },
};

export const READING_STATEMENT_TYPE = 'geofabric/telemetry-reading';

export interface ReadingFields {
  device_pk: string;
  h3_cell: string;
  quantity: string;
  value: number;
  unit: string;
  /** Normalised: `new Date(sent).toISOString()`. */
  observed_at: string;
}

/** What a device signs for one reading: JCS of its fields with the domain tag. */
export const readingStatement = (r: ReadingFields): string =>
  canonicalize({
    type: READING_STATEMENT_TYPE,
    device_pk: r.device_pk,
    h3_cell: r.h3_cell,
    quantity: r.quantity,
    value: r.value,
    unit: r.unit,
    observed_at: r.observed_at,
  });

/** The device's signature over a reading (`readings[i].signature` of `POST /v1/telemetry`). */
export const signReading = (secretKey: string, r: ReadingFields): string => sign(secretKey, readingStatement(r));

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const leap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;

/** True for the form `toISOString` writes (UTC, milliseconds) of a real instant: how `observed_at` is stored. */
export function isNormalisedInstant(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{3}Z$/.exec(value);
  if (m === null) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return false;
  return d >= 1 && d <= (mo === 2 && leap(y) ? 29 : DAYS_IN_MONTH[mo - 1]!);
}

export const telemetryRecordId = (devicePk: string, quantity: string, observedAt: string): string =>
  `telemetry:${sha256Hex(canonicalize([devicePk, quantity, observedAt]))}`;

/**
 * The trusted writers a fusion output names (docs/protocol.md §2.10): ascending distinct node keys, at least one;
 * undefined writers for an output without the field (the job record's writer alone), an issue for a malformed one.
 */
export function trustedWritersOf(output: unknown): { writers?: string[]; issue?: string } {
  const named = isObj(output) ? output.trusted_writers : undefined;
  if (named === undefined) return {};
  const ok =
    Array.isArray(named) &&
    named.length > 0 &&
    named.every((pk, i) => isHex64(pk) && (i === 0 || (named[i - 1] as string) < pk));
  return ok ? { writers: named as string[] } : { issue: 'trusted_writers must be ascending distinct node keys' };
}

export interface ProvenReading extends ReadingFields {
  principal_pk: string;
}

/**
 * Why a record (its hash and writer signature already checked) is not a reading that counts as evidence, or the
 * reading: an `iot/telemetry` record of payload version 2 written by one of `writers` (the fusion output's
 * `trusted_writers`, or without them the job record's writer),
 * addressed by the device's cell, plausible for its quantity, `observed_at` normalised, signed by its device, its
 * id derived from device, quantity and instant.
 */
export function provenReading(record: Obj, writers: readonly string[]): ProvenReading | string {
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
  const address = record.address as Obj;
  if (!writers.includes(address.pk as string)) {
    return writers.length === 1
      ? `record ${id}: was written by ${String(address.pk)}, not the node ${writers[0]}`
      : `record ${id}: was written by ${String(address.pk)}, not one of the fusion's trusted writers`;
  }
  if (address.h3_cell !== h3_cell) return `record ${id}: is not addressed by its device's cell`;
  if (!isHex64(principal_pk)) return `record ${id}: names no principal key`;
  if (!isNormalisedInstant(observed_at)) return `record ${id}: observed_at is not normalised`;
  const q = QUANTITIES[quantity]!;
  if (unit !== q.unit || !Number.isFinite(value) || value < q.min || value > q.max) {
    return `record ${id}: ${quantity} ${value} ${unit} is not plausible`;
  }
  const reading = { device_pk, h3_cell, quantity, value, unit, observed_at, principal_pk };
  if (!verify(device_pk, readingStatement(reading), device_signature)) {
    return `record ${id}: the device signature is not ${device_pk}'s over the reading`;
  }
  if (record.id !== telemetryRecordId(device_pk, quantity, observed_at)) {
    return `record ${id}: its id is not derived from its device, quantity and instant`;
  }
  return reading;
}

// ---- the fusion (docs/protocol.md §2.10) ----

const MAD_SCALE = 1.4826;
const MAD_CUTOFF = 3;

export interface FusionReading {
  device_pk: string;
  principal_pk: string;
  value: number;
  record_id: string;
  record_hash: string;
}

function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function groups<T>(items: readonly T[], key: (item: T) => string): [string, T[]][] {
  const by = new Map<string, T[]>();
  for (const item of items) {
    const list = by.get(key(item));
    if (list) list.push(item);
    else by.set(key(item), [item]);
  }
  return [...by.entries()].sort(([a], [b]) => byCodeUnits(a, b));
}

/**
 * The fused numbers a verifier compares: per device the median of its readings, per principal (voter) the median
 * of its devices (a device votes for the principal of its first reading in record-id order), the median of the
 * voters, MAD rejection of voters, mean and stderr of the kept ones; `merkleRoot` of the record hashes in
 * record-id order.
 */
export function fuse(
  readings: readonly FusionReading[],
  merkleRoot: (recordHashes: string[]) => string,
): Record<'value' | 'mean' | 'stderr' | 'voter_count' | 'device_count' | 'reading_count' | 'merkle_root', unknown> {
  if (readings.length === 0) throw new RangeError('no readings to fuse');
  const sorted = [...readings].sort((a, b) => byCodeUnits(a.record_id, b.record_id));
  const devices = groups(sorted, (r) => r.device_pk).map(([, list]) => ({
    principal_pk: list[0]!.principal_pk,
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
    merkle_root: merkleRoot(sorted.map((r) => r.record_hash)),
  };
}
