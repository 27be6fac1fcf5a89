/**
 * The `sensor_fusion` step's method (docs/protocol.md §2.10): pure and deterministic, so a client holding the
 * same signed readings recomputes the same numbers.
 *
 * 1. Each device contributes one value: the median of its readings in the window (a chatty device counts once).
 * 2. Each voter, a principal (the human or key a device acts for, core/telemetry.ts `principal_pk`), contributes
 *    one value: the median of its devices' values (one owner's many device keys count once).
 * 3. The fused `value` is the median of the voter values.
 * 4. MAD = median of |voter value − value|; a voter farther than 3 × 1.4826 × MAD from `value` is rejected
 *    (1.4826 × MAD estimates the standard deviation of normal data; a MAD of 0 rejects every voter that
 *    differs from the median).
 * 5. `mean` and `stderr` (sample standard deviation / √n; null for one voter) of the kept voter values.
 * The inputs are named by record id (ascending) and bound by the RFC 6962 Merkle root over their record hashes
 * in that order. The median resists fewer than half of the voters being wrong, so its robustness is only as good
 * as the cost of a principal (docs/security.md).
 */
import { gridDisk } from 'h3-js';
import { fail, pass, type Check } from './check.js';
import { epochAt, epochWindow } from './epoch.js';
import { bytesToHex } from './hex.js';
import { leafHashFromHex, merkleRoot } from './merkle/tree.js';

export const MAD_SCALE = 1.4826;
export const MAD_CUTOFF = 3;
export const MAX_FUSION_RINGS = 2;
/** Longest window a step may fuse: a week of hourly epochs. */
export const MAX_FUSION_EPOCHS = 168;
export const FUSION_METHOD =
  'median of principal medians of device medians, MAD outlier rejection of principals (3 × 1.4826 × MAD)';

export interface FusionReading {
  device_pk: string;
  /** The voter the device acts for. */
  principal_pk: string;
  value: number;
  record_id: string;
  record_hash: string;
}

export interface DeviceValue {
  device_pk: string;
  principal_pk: string;
  value: number;
  reading_count: number;
}

export interface VoterValue {
  principal_pk: string;
  value: number;
  device_count: number;
  reading_count: number;
}

export interface FusionResult {
  value: number;
  mean: number;
  stderr: number | null;
  voter_count: number;
  device_count: number;
  reading_count: number;
  mad: number;
  threshold: number;
  voters: VoterValue[];
  devices: DeviceValue[];
  rejected: (VoterValue & { deviation: number })[];
  input_voter_count: number;
  input_device_count: number;
  input_reading_count: number;
  record_ids: string[];
  merkle_root: string;
}

/** The median of a non-empty list (the mean of the two middle values when even). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError('median of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Groups values by key; the groups in ascending key order. */
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
 * Fuses readings of one quantity (see the file comment); RangeError when there are none. A device is the voter of
 * the principal of its first reading in record-id order (a device delegated by two principals over the window
 * still votes once).
 */
export function fuseReadings(readings: readonly FusionReading[]): FusionResult {
  if (readings.length === 0) throw new RangeError('no readings to fuse');
  const sorted = [...readings].sort((a, b) => byCodeUnits(a.record_id, b.record_id));
  const devices: DeviceValue[] = groups(sorted, (r) => r.device_pk).map(([pk, list]) => ({
    device_pk: pk,
    principal_pk: list[0]!.principal_pk,
    value: median(list.map((r) => r.value)),
    reading_count: list.length,
  }));
  const voters: VoterValue[] = groups(devices, (d) => d.principal_pk).map(([pk, list]) => ({
    principal_pk: pk,
    value: median(list.map((d) => d.value)),
    device_count: list.length,
    reading_count: list.reduce((sum, d) => sum + d.reading_count, 0),
  }));
  const value = median(voters.map((v) => v.value));
  const mad = median(voters.map((v) => Math.abs(v.value - value)));
  const threshold = MAD_CUTOFF * MAD_SCALE * mad;
  const kept = voters.filter((v) => Math.abs(v.value - value) <= threshold);
  const rejected = voters
    .filter((v) => Math.abs(v.value - value) > threshold)
    .map((v) => ({ ...v, deviation: Math.abs(v.value - value) }));
  const keptPrincipals = new Set(kept.map((v) => v.principal_pk));
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
    mad,
    threshold,
    voters: kept,
    devices: devices.filter((d) => keptPrincipals.has(d.principal_pk)),
    rejected,
    input_voter_count: voters.length,
    input_device_count: devices.length,
    input_reading_count: readings.length,
    record_ids: sorted.map((r) => r.record_id),
    merkle_root: bytesToHex(merkleRoot(sorted.map((r) => leafHashFromHex(r.record_hash)))),
  };
}

/** The cells a step fuses over: the k-ring of `rings` around `cell`, ascending. */
export function fusionCells(cell: string, rings: number): string[] {
  if (!Number.isInteger(rings) || rings < 0 || rings > MAX_FUSION_RINGS) {
    throw new RangeError(`rings must be 0..${MAX_FUSION_RINGS}: ${rings}`);
  }
  return gridDisk(cell, rings).sort();
}

/** What a step says about its window; `job_epoch` is the epoch the job was accepted in. */
export interface WindowSpec {
  epoch?: number | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  job_epoch: number;
}

/** A fusion window: phenomenon times in [fromMs, toMs), the epochs it touches inclusive. */
export interface FusionWindow {
  fromMs: number;
  toMs: number;
  epochFrom: number;
  epochTo: number;
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

function parseBound(value: string, end: boolean): number {
  if (DATE_ONLY.test(value)) {
    const day = Date.parse(`${value}T00:00:00Z`);
    return end ? day + DAY_MS : day;
  }
  return Date.parse(value);
}

/**
 * The window of a step: `context.epoch`, else `context.date_from`/`date_to` (a date alone covers its whole UTC
 * day; a missing end is the end of the last closed epoch, a missing start the start of the end's epoch), else
 * the last closed epoch before the job's.
 */
export function fusionWindow(spec: WindowSpec, genesisMs: number, epochMs: number): Check<FusionWindow> {
  const of = (fromMs: number, toMs: number): Check<FusionWindow> => {
    if (!(toMs > fromMs)) return fail('invalid_date', 'the fusion window must end after it starts');
    if (fromMs < genesisMs) return fail('invalid_date', 'the fusion window starts before the epoch genesis');
    const window = {
      fromMs,
      toMs,
      epochFrom: epochAt(fromMs, genesisMs, epochMs),
      epochTo: epochAt(toMs - 1, genesisMs, epochMs),
    };
    if (window.epochTo - window.epochFrom + 1 > MAX_FUSION_EPOCHS) {
      return fail('invalid_request', `a fusion window covers at most ${MAX_FUSION_EPOCHS} epochs`);
    }
    return pass(window);
  };
  if (spec.epoch !== undefined) {
    if (!Number.isSafeInteger(genesisMs + (spec.epoch + 1) * epochMs))
      return fail('invalid_date', 'epoch is out of range');
    const { start, end } = epochWindow(spec.epoch, genesisMs, epochMs);
    return of(start, end);
  }
  if (spec.date_from === undefined && spec.date_to === undefined) {
    if (spec.job_epoch < 1) return fail('invalid_date', 'no epoch has closed yet: name context.epoch');
    const { start, end } = epochWindow(spec.job_epoch - 1, genesisMs, epochMs);
    return of(start, end);
  }
  const toMs =
    spec.date_to !== undefined ? parseBound(spec.date_to, true) : epochWindow(spec.job_epoch, genesisMs, epochMs).start;
  if (Number.isNaN(toMs)) return fail('invalid_date', 'context.date_to is not a date');
  const fromMs =
    spec.date_from !== undefined
      ? parseBound(spec.date_from, false)
      : toMs <= genesisMs
        ? NaN
        : epochWindow(epochAt(toMs - 1, genesisMs, epochMs), genesisMs, epochMs).start;
  if (Number.isNaN(fromMs)) return fail('invalid_date', 'context.date_from is not a date');
  return of(fromMs, toMs);
}

/** How many cell-epochs a step covers: what it is priced by. */
export const cellEpochs = (cells: number, window: FusionWindow): number =>
  cells * (window.epochTo - window.epochFrom + 1);
