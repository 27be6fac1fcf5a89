/**
 * IoT telemetry (docs/protocol.md §2.6 `Telemetry` collection, §2.10 format): the registry of quantities a
 * device may report, and the per-reading checks of `POST /v1/telemetry`. Pure: the clock and the epochs the
 * store still accepts are passed in.
 *
 * Names follow OGC SensorThings where a field has a counterpart: `quantity` is the ObservedProperty,
 * `unit` the unitOfMeasurement (a UCUM code), `observed_at` the phenomenonTime and `value` the result.
 */
import { canonicalJson } from './canonical-json.js';
import { fail, pass, type Check } from './check.js';
import type { ErrorCode } from './errors.js';
import { epochAt, epochWindow } from './epoch.js';
import { sha256Hex } from './hash.js';
import { isHex } from './hex.js';
import { signMessage, verifySignature } from './identity.js';
import type { ProofRecord } from './proof-types.js';

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

/** A reading as sent: `signature` is the device's over its reading statement (readingStatement). */
export interface ReadingInput {
  quantity: string;
  value: number;
  unit: string;
  observed_at: string;
  signature: string;
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
    | 'invalid_signature'
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
  /** The device's signature over the reading statement, verified. */
  signature: string;
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

/** The fields a device signs for one reading, `observed_at` normalised (normaliseObservedAt). */
export interface ReadingFields {
  device_pk: string;
  h3_cell: string;
  quantity: string;
  value: number;
  unit: string;
  observed_at: string;
}

/** Domain tag of a reading statement: a reading signature can never be taken for a request's or a record's. */
export const READING_STATEMENT_TYPE = 'geofabric/telemetry-reading';

/**
 * What a device signs for one reading (docs/protocol.md §2.10): the JCS of its fields with the domain tag. The
 * device's signature over it travels in the stored record, so anyone can check from the record alone that the
 * device said it, whoever wrote the record. Throws CanonicalJsonError on a non-finite value.
 */
export const readingStatement = (r: ReadingFields): string =>
  canonicalJson({
    type: READING_STATEMENT_TYPE,
    device_pk: r.device_pk,
    h3_cell: r.h3_cell,
    quantity: r.quantity,
    value: r.value,
    unit: r.unit,
    observed_at: r.observed_at,
  });

/** The device's signature over a reading (128 hex): for devices, clients, tests and the conformance vectors. */
export const signReading = (secretKeyHex: string, r: ReadingFields): string =>
  signMessage(secretKeyHex, readingStatement(r));

/** `observed_at` as stored and signed: ISO 8601 UTC with milliseconds; null when not a timestamp with a zone. */
export function normaliseObservedAt(sent: string): string | null {
  const ms = ISO_8601.test(sent) ? Date.parse(sent) : NaN;
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

/** Why a reading is implausible for its quantity (unknown, other unit, not finite, out of range); null when fine. */
function implausibility(
  r: Pick<ReadingFields, 'quantity' | 'unit' | 'value'>,
): { code: 'unknown_quantity' | 'unit_mismatch' | 'value_out_of_range'; detail: string } | null {
  if (!isQuantity(r.quantity)) {
    return {
      code: 'unknown_quantity',
      detail: `quantity "${r.quantity}" is not one of ${QUANTITY_NAMES.join(', ')}`,
    };
  }
  const quantity: Quantity = QUANTITIES[r.quantity];
  if (r.unit !== quantity.unit) {
    return {
      code: 'unit_mismatch',
      detail: `${r.quantity} is reported in "${quantity.unit}" (UCUM), not "${r.unit}"`,
    };
  }
  if (typeof r.value !== 'number' || !Number.isFinite(r.value) || r.value < quantity.min || r.value > quantity.max) {
    return {
      code: 'value_out_of_range',
      detail: `${r.quantity} ${r.value} ${quantity.unit} is outside the plausible range ${quantity.min}..${quantity.max}`,
    };
  }
  return null;
}

/**
 * One reading's checks, in order: `observed_at` a timestamp with a zone, the device's signature over the reading
 * statement, known quantity, its unit exactly, value in range, `observed_at` no more than 5 minutes ahead and in an
 * epoch the store accepts (the open epoch, or one the writer has not moved past). A reading ahead of the clock but
 * in the next epoch is refused too: writing it would close the current epoch for this node's writer.
 */
export function checkReading(
  reading: ReadingInput,
  index: number,
  clock: ReadingClock,
  device: { device_pk: string; h3_cell: string },
): CheckedReading | ReadingRefusal {
  const refuse = (code: ReadingRefusal['code'], detail: string): ReadingRefusal => ({ index, code, detail });
  const observedAt = normaliseObservedAt(reading.observed_at);
  if (observedAt === null) return refuse('invalid_date', 'observed_at must be an ISO 8601 timestamp with zone');
  if (!Number.isFinite(reading.value)) {
    return refuse('value_out_of_range', `${reading.quantity} ${reading.value} is not a finite number`);
  }
  const fields = { ...device, quantity: reading.quantity, value: reading.value, unit: reading.unit };
  if (!verifySignature(device.device_pk, readingStatement({ ...fields, observed_at: observedAt }), reading.signature)) {
    return refuse(
      'invalid_signature',
      `the reading's signature is not the device's over its statement (observed_at normalised to ${observedAt}; docs/protocol.md §2.10)`,
    );
  }
  const implausible = implausibility(reading);
  if (implausible !== null) return refuse(implausible.code, implausible.detail);
  const observedMs = Date.parse(observedAt);
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
    quantity: reading.quantity as QuantityName,
    value: reading.value,
    unit: reading.unit,
    observed_at: observedAt,
    signature: reading.signature,
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

/**
 * The payload of an `iot/telemetry` record (version 2): the reading, the device's signature over its statement,
 * and the principal the writing node verified the device acts for (gate 3's human principal, or the device key
 * when it acts as its own). `principal_pk` is the writer's word, not the device's: fusion gives one vote per
 * principal (core/sensor-fusion.ts).
 */
export interface TelemetryPayload extends ReadingFields {
  quantity: QuantityName;
  device_signature: string;
  principal_pk: string;
}

/**
 * Version 1, written before readings were signed one by one: the batch's hash and signature, which cannot prove
 * the reading without the whole batch. Still listed; never fused, and no receipt verifier accepts it as an input.
 */
export interface LegacyTelemetryPayload extends ReadingFields {
  quantity: QuantityName;
  batch: { request_hash: string; signature: string };
}

const isRecordLike = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The payload of a stored record (either version), or null when it is not a telemetry reading. */
export function telemetryPayloadOf(payload: unknown): TelemetryPayload | LegacyTelemetryPayload | null {
  if (!isRecordLike(payload)) return null;
  const { device_pk, h3_cell, quantity, value, unit, observed_at, batch } = payload;
  if (typeof device_pk !== 'string' || typeof h3_cell !== 'string' || !isQuantity(quantity)) return null;
  if (typeof value !== 'number' || typeof unit !== 'string' || typeof observed_at !== 'string') return null;
  if (typeof payload.device_signature === 'string' && typeof payload.principal_pk === 'string') {
    return payload as unknown as TelemetryPayload;
  }
  if (!isRecordLike(batch) || typeof batch.request_hash !== 'string' || typeof batch.signature !== 'string') {
    return null;
  }
  return payload as unknown as LegacyTelemetryPayload;
}

/**
 * Why a telemetry record's writer is not one of the fusion's trusted writers (docs/protocol.md §2.10 rule 3); the
 * same words in every receipt verifier.
 */
export function writerIssueOf(writerPk: string, writers: readonly string[]): string | undefined {
  if (writers.includes(writerPk)) return undefined;
  return writers.length === 1
    ? `was written by ${writerPk}, not the node ${writers[0]}`
    : `was written by ${writerPk}, not one of the fusion's trusted writers`;
}

/**
 * The trusted writers a fusion step's output names (docs/protocol.md §2.10): ascending distinct node keys, at
 * least one; undefined for an output without the field (written before it existed), an issue for a malformed one.
 */
export function trustedWritersOf(output: unknown): { writers?: string[]; issue?: string } {
  const named = isRecordLike(output) ? output.trusted_writers : undefined;
  if (named === undefined) return {};
  const ok =
    Array.isArray(named) &&
    named.length > 0 &&
    named.every((pk, i) => isHex(pk, 32) && (i === 0 || (named[i - 1] as string) < pk));
  return ok ? { writers: named as string[] } : { issue: 'trusted_writers must be ascending distinct node keys' };
}

/**
 * A fusion's trusted writers (docs/protocol.md §2.10 rule 3): the node's own key and the peer node keys it is
 * configured with, ascending and distinct, as the step output names them.
 */
export function fusionWriters(keys: readonly string[]): string[] {
  return [...new Set(keys)].sort();
}

/** A version-2 payload: one whose device signature can be checked. */
export const isSignedReading = (p: TelemetryPayload | LegacyTelemetryPayload): p is TelemetryPayload =>
  'device_signature' in p;

/**
 * Whether a stored record is a reading that counts as evidence (docs/protocol.md §2.10), the one rule fusion and
 * every receipt verifier apply: an `iot/telemetry` record of payload version 2 written by one of `writers` (the
 * fusion's trusted writers: the node's own key and its peer node keys; only node keys may write telemetry),
 * addressed by the device's cell, signed by its device over the reading statement, plausible for its quantity,
 * `observed_at` normalised. The record's own hash and writer signature are the caller's to check first
 * (checkRecord).
 */
export function provenReadingOf(record: ProofRecord, writers: readonly string[]): Check<TelemetryPayload> {
  const refuse = (detail: string) => fail('invalid_request', `record ${record.id}: ${detail}`);
  if (record.payload_type !== 'iot/telemetry') return refuse(`is ${record.payload_type}, not iot/telemetry`);
  const payload = telemetryPayloadOf(record.payload);
  if (payload === null) return refuse('is not a telemetry reading');
  if (!isSignedReading(payload)) return refuse('is a version-1 reading, which its device did not sign on its own');
  const writerIssue = writerIssueOf(record.address.pk, writers);
  if (writerIssue !== undefined) return refuse(writerIssue);
  if (record.address.h3_cell !== payload.h3_cell) return refuse("is not addressed by its device's cell");
  if (!isHex(payload.principal_pk, 32)) return refuse('names no principal key');
  if (normaliseObservedAt(payload.observed_at) !== payload.observed_at) return refuse('observed_at is not normalised');
  const implausible = implausibility(payload);
  if (implausible !== null) return refuse(implausible.detail);
  if (!verifySignature(payload.device_pk, readingStatement(payload), payload.device_signature)) {
    return refuse(`the device signature is not ${payload.device_pk}'s over the reading`);
  }
  if (record.id !== telemetryRecordId(payload.device_pk, payload.quantity, payload.observed_at)) {
    return refuse('its id is not derived from its device, quantity and instant');
  }
  return pass(payload);
}
