/**
 * IoT telemetry (docs/protocol.md §2.6 `Telemetry` collection, §2.10 format): the registry of quantities a
 * device may report, and the per-reading checks of `POST /v1/telemetry`. Pure: the clock and the epochs the
 * store still accepts are passed in.
 *
 * Names follow OGC SensorThings where a field has a counterpart: `quantity` is the ObservedProperty,
 * `unit` the unitOfMeasurement (a UCUM code), `observed_at` the phenomenonTime and `value` the result.
 */
import { canonicalJson } from './canonical-json.js';
import type { ErrorCode } from './errors.js';
import { epochAt, epochWindow } from './epoch.js';
import { sha256Hex } from './hash.js';

export interface Quantity {
  /** Human name (SensorThings ObservedProperty.name). */
  name: string;
  /** The one accepted unit, as a UCUM code (SensorThings unitOfMeasurement.definition names UCUM). */
  unit: string;
  /** unitOfMeasurement.symbol. */
  symbol: string;
  /** Plausible range, inclusive: a value outside it is a broken sensor, not weather. */
  min: number;
  max: number;
  description: string;
}

/** The quantity registry. Keys are the wire names of `quantity`. */
export const QUANTITIES = {
  air_temperature: {
    name: 'Air temperature',
    unit: 'Cel',
    symbol: '°C',
    min: -90,
    max: 60,
    description: 'Air temperature near the ground',
  },
  relative_humidity: {
    name: 'Relative humidity',
    unit: '%',
    symbol: '%',
    min: 0,
    max: 100,
    description: 'Relative humidity of the air',
  },
  pm2_5: {
    name: 'PM2.5',
    unit: 'ug/m3',
    symbol: 'µg/m³',
    min: 0,
    max: 1000,
    description: 'Mass concentration of particulate matter up to 2.5 µm',
  },
  pm10: {
    name: 'PM10',
    unit: 'ug/m3',
    symbol: 'µg/m³',
    min: 0,
    max: 2000,
    description: 'Mass concentration of particulate matter up to 10 µm',
  },
  no2: {
    name: 'Nitrogen dioxide',
    unit: 'ug/m3',
    symbol: 'µg/m³',
    min: 0,
    max: 2000,
    description: 'Mass concentration of NO2 in air',
  },
  rainfall: {
    name: 'Rainfall',
    unit: 'mm',
    symbol: 'mm',
    min: 0,
    max: 500,
    description: 'Precipitation accumulated since the previous reading of the device',
  },
  water_level: {
    name: 'River / water level',
    unit: 'm',
    symbol: 'm',
    min: -50,
    max: 200,
    description: 'Water surface height above the gauge datum',
  },
  soil_moisture: {
    name: 'Soil moisture',
    unit: '%',
    symbol: '%',
    min: 0,
    max: 100,
    description: 'Volumetric water content of the soil',
  },
} as const satisfies Record<string, Quantity>;

export type QuantityName = keyof typeof QUANTITIES;
export const QUANTITY_NAMES = Object.keys(QUANTITIES) as [QuantityName, ...QuantityName[]];

export const isQuantity = (value: unknown): value is QuantityName =>
  typeof value === 'string' && Object.hasOwn(QUANTITIES, value);

/** Most readings one batch may carry. */
export const MAX_READINGS_PER_BATCH = 100;
/** Readings one device may have accepted per hour (its rate window): a sample every 10 s on 2 quantities. */
export const MAX_READINGS_PER_DEVICE_HOUR = 720;
/** How far ahead of the server clock `observed_at` may be (device clocks drift). */
export const FUTURE_SKEW_MS = 5 * 60_000;

/** A reading as sent. */
export interface ReadingInput {
  quantity: string;
  value: number;
  unit: string;
  observed_at: string;
}

/** Why a reading was refused: a code of core/errors.ts and a sentence. */
export interface ReadingRefusal {
  index: number;
  code: Extract<
    ErrorCode,
    | 'unknown_quantity'
    | 'unit_mismatch'
    | 'value_out_of_range'
    | 'reading_in_future'
    | 'reading_too_old'
    | 'invalid_date'
    | 'rate_limit'
    | 'record_conflict'
  >;
  detail: string;
}

/** A reading that passed its checks, normalised: `observed_at` as ISO 8601 UTC with milliseconds. */
export interface CheckedReading {
  index: number;
  quantity: QuantityName;
  value: number;
  unit: string;
  observed_at: string;
  observedMs: number;
  /** The proof epoch of `observed_at`: the record's address. */
  epoch: number;
}

export interface ReadingClock {
  nowMs: number;
  genesisMs: number;
  epochMs: number;
  /**
   * The oldest epoch the store may still accept for this writer: a writer's records never go back past its
   * latest record or seal (store/record-append.ts), so readings of older epochs are refused here already.
   */
  oldestEpoch: number;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * One reading's checks, in order: known quantity, its unit exactly, value in range, `observed_at` a timestamp
 * no more than 5 minutes ahead and in an epoch the store accepts (the open epoch, or one the writer has not
 * moved past). A reading ahead of the clock but in the next epoch is refused too: writing it would close the
 * current epoch for this node's writer.
 */
export function checkReading(
  reading: ReadingInput,
  index: number,
  clock: ReadingClock,
): CheckedReading | ReadingRefusal {
  const refuse = (code: ReadingRefusal['code'], detail: string): ReadingRefusal => ({ index, code, detail });
  if (!isQuantity(reading.quantity)) {
    return refuse('unknown_quantity', `quantity "${reading.quantity}" is not one of ${QUANTITY_NAMES.join(', ')}`);
  }
  const quantity: Quantity = QUANTITIES[reading.quantity];
  if (reading.unit !== quantity.unit) {
    return refuse(
      'unit_mismatch',
      `${reading.quantity} is reported in "${quantity.unit}" (UCUM), not "${reading.unit}"`,
    );
  }
  if (!Number.isFinite(reading.value) || reading.value < quantity.min || reading.value > quantity.max) {
    return refuse(
      'value_out_of_range',
      `${reading.quantity} ${reading.value} ${quantity.unit} is outside the plausible range ${quantity.min}..${quantity.max}`,
    );
  }
  const observedMs = ISO_8601.test(reading.observed_at) ? Date.parse(reading.observed_at) : NaN;
  if (Number.isNaN(observedMs)) return refuse('invalid_date', 'observed_at must be an ISO 8601 timestamp with zone');
  if (observedMs > clock.nowMs + FUTURE_SKEW_MS) {
    return refuse('reading_in_future', 'observed_at is more than 5 minutes ahead of the server clock');
  }
  if (observedMs < clock.genesisMs) return refuse('reading_too_old', 'observed_at is before the epoch genesis');
  const epoch = epochAt(observedMs, clock.genesisMs, clock.epochMs);
  const current = epochAt(clock.nowMs, clock.genesisMs, clock.epochMs);
  if (epoch > current) {
    return refuse(
      'reading_in_future',
      `observed_at falls in epoch ${epoch}, which has not opened yet (now ${current})`,
    );
  }
  if (epoch < clock.oldestEpoch) {
    const since = new Date(epochWindow(clock.oldestEpoch, clock.genesisMs, clock.epochMs).start).toISOString();
    return refuse(
      'reading_too_old',
      `the proof store accepts readings observed since ${since} (epoch ${clock.oldestEpoch})`,
    );
  }
  return {
    index,
    quantity: reading.quantity,
    value: reading.value,
    unit: quantity.unit,
    observed_at: new Date(observedMs).toISOString(),
    observedMs,
    epoch,
  };
}

export const isRefusal = (r: CheckedReading | ReadingRefusal): r is ReadingRefusal => 'code' in r;

/**
 * The record id of a reading: one device reports one value of a quantity at one instant, so the same reading
 * sent twice (or in two batches) gets the same id and is stored once.
 */
export const telemetryRecordId = (devicePk: string, quantity: string, observedAt: string): string =>
  `telemetry:${sha256Hex(canonicalJson([devicePk, quantity, observedAt]))}`;

/** The payload of an `iot/telemetry` record. */
export interface TelemetryPayload {
  device_pk: string;
  h3_cell: string;
  quantity: QuantityName;
  value: number;
  unit: string;
  observed_at: string;
  /** The device's signed batch: SHA-256 of its JCS (signature included) and the device's signature over it. */
  batch: { request_hash: string; signature: string };
}

const isRecordLike = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The payload of a stored record, or null when it is not a telemetry reading. */
export function telemetryPayloadOf(payload: unknown): TelemetryPayload | null {
  if (!isRecordLike(payload)) return null;
  const { device_pk, h3_cell, quantity, value, unit, observed_at, batch } = payload;
  if (typeof device_pk !== 'string' || typeof h3_cell !== 'string' || !isQuantity(quantity)) return null;
  if (typeof value !== 'number' || typeof unit !== 'string' || typeof observed_at !== 'string') return null;
  if (!isRecordLike(batch) || typeof batch.request_hash !== 'string' || typeof batch.signature !== 'string') {
    return null;
  }
  return payload as unknown as TelemetryPayload;
}
