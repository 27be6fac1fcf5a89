/**
 * The `sensor_fusion` step's method (docs/protocol.md §2.10): pure and deterministic, so a client holding the
 * same signed readings recomputes the same numbers.
 *
 * 1. Each device contributes one value: the median of its readings in the window (a chatty device counts once).
 * 2. The fused `value` is the median of the device values.
 * 3. MAD = median of |device value − value|; a device farther than 3 × 1.4826 × MAD from `value` is rejected
 *    (1.4826 × MAD estimates the standard deviation of normal data; a MAD of 0 rejects every device that
 *    differs from the median).
 * 4. `mean` and `stderr` (sample standard deviation / √n; null for one device) of the kept device values.
 * The inputs are named by record id (ascending) and bound by the RFC 6962 Merkle root over their record hashes
 * in that order.
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
export const FUSION_METHOD = 'median-of-device-medians, MAD outlier rejection (3 × 1.4826 × MAD)';

export interface FusionReading {
  device_pk: string;
  value: number;
  record_id: string;
  record_hash: string;
}

export interface DeviceValue {
  device_pk: string;
  value: number;
  reading_count: number;
}

export interface FusionResult {
  value: number;
  mean: number;
  stderr: number | null;
  device_count: number;
  reading_count: number;
  mad: number;
  threshold: number;
  devices: DeviceValue[];
  rejected: (DeviceValue & { deviation: number })[];
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

/** Fuses readings of one quantity (see the file comment); RangeError when there are none. */
export function fuseReadings(readings: readonly FusionReading[]): FusionResult {
  if (readings.length === 0) throw new RangeError('no readings to fuse');
  const byDevice = new Map<string, number[]>();
  for (const r of readings) {
    const list = byDevice.get(r.device_pk);
    if (list) list.push(r.value);
    else byDevice.set(r.device_pk, [r.value]);
  }
  const devices: DeviceValue[] = [...byDevice.keys()]
    .sort()
    .map((pk) => ({ device_pk: pk, value: median(byDevice.get(pk)!), reading_count: byDevice.get(pk)!.length }));
  const value = median(devices.map((d) => d.value));
  const mad = median(devices.map((d) => Math.abs(d.value - value)));
  const threshold = MAD_CUTOFF * MAD_SCALE * mad;
  const kept = devices.filter((d) => Math.abs(d.value - value) <= threshold);
  const rejected = devices
    .filter((d) => Math.abs(d.value - value) > threshold)
    .map((d) => ({ ...d, deviation: Math.abs(d.value - value) }));
  const n = kept.length;
  const mean = kept.reduce((sum, d) => sum + d.value, 0) / n;
  const variance = n > 1 ? kept.reduce((sum, d) => sum + (d.value - mean) ** 2, 0) / (n - 1) : null;
  const sorted = [...readings].sort((a, b) => (a.record_id < b.record_id ? -1 : a.record_id > b.record_id ? 1 : 0));
  return {
    value,
    mean,
    stderr: variance === null ? null : Math.sqrt(variance / n),
    device_count: n,
    reading_count: kept.reduce((sum, d) => sum + d.reading_count, 0),
    mad,
    threshold,
    devices: kept,
    rejected,
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
