/**
 * `POST /v1/telemetry` and `GET /v1/telemetry` (docs/protocol.md §2.10). Field names are the wire contract;
 * their OGC SensorThings counterparts are named in each description and used in the GeoJSON answer.
 */
import { z } from 'zod';
import { MAX_READINGS_PER_BATCH, QUANTITY_NAMES } from '../../core/telemetry.js';

export const readingSchema = z.strictObject({
  quantity: z
    .string()
    .max(64)
    .describe(`SensorThings ObservedProperty: one of ${QUANTITY_NAMES.join(', ')}`),
  value: z.number().describe('SensorThings Observation.result, in `unit`'),
  unit: z.string().max(32).describe("SensorThings unitOfMeasurement: the quantity's UCUM code (e.g. Cel, ug/m3)"),
  observed_at: z.string().max(64).describe('SensorThings phenomenonTime: ISO 8601 with zone'),
  signature: z
    .string()
    .regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex')
    .describe(
      "The device's Ed25519 signature over the reading statement (docs/protocol.md §2.10): the JCS of " +
        '{type: "geofabric/telemetry-reading", device_pk, h3_cell, quantity, value, unit, observed_at}, ' +
        'observed_at normalised to ISO 8601 UTC with milliseconds',
    ),
});

export const telemetryBatchSchema = z.strictObject({
  requester_pk: z.string().describe("The device's Ed25519 public key (hex), which signs the batch"),
  h3_cell: z.string().describe("The device's H3 cell: the address of its records"),
  readings: z.array(readingSchema).min(1).max(MAX_READINGS_PER_BATCH),
  created_at: z.string().describe('ISO 8601, within 5 minutes of the server clock (gate 1)'),
  nonce: z.string().max(128).optional(),
  signature: z.string(),
});
export type TelemetryBatchBody = z.infer<typeof telemetryBatchSchema>;

const refusal = z.object({
  index: z.int().describe('Position of the reading in the batch'),
  code: z.string().describe('An error code of docs/protocol.md §7'),
  detail: z.string(),
});

export const telemetryIngestSchema = z.object({
  device_pk: z.string(),
  h3_cell: z.string(),
  accepted_count: z.int(),
  refused_count: z.int(),
  accepted: z.array(
    z.object({
      index: z.int(),
      record_id: z.string().describe('The `iot/telemetry` proof record (GET /v1/proof/{record_id})'),
      epoch: z.int().describe('Epoch of observed_at: the record address'),
      duplicate: z.boolean().describe('Already stored by an earlier send: nothing new was written'),
    }),
  ),
  refused: z.array(refusal),
});

export const telemetryRefusedSchema = telemetryIngestSchema.extend({
  error: z.literal('readings_refused'),
  detail: z.string(),
});

export const telemetryQueryDocs = z.object({
  cell: z.string().describe('H3 cell: readings of devices in it (any finer resolution)'),
  quantity: z
    .string()
    .optional()
    .describe(`One of ${QUANTITY_NAMES.join(', ')}`),
  from: z.string().optional().describe('Phenomenon time from (YYYY-MM-DD or ISO 8601 UTC), inclusive'),
  to: z.string().optional().describe('Phenomenon time to, inclusive (a date alone: its whole day)'),
  limit: z.string().optional().describe('Records scanned per page, 1–1000 (default 100)'),
  cursor: z.string().optional().describe('`next_cursor` of the previous page'),
  proof: z.string().optional().describe('`1`: each feature carries its full signed proof record'),
});

export const telemetryCollectionSchema = z.object({
  type: z.literal('FeatureCollection'),
  features: z.array(
    z.object({
      type: z.literal('Feature'),
      id: z.string().describe('The proof record id'),
      geometry: z.object({ type: z.literal('Point'), coordinates: z.array(z.number()) }).describe('Cell centroid'),
      properties: z.looseObject({
        h3_cell: z.string(),
        device_pk: z.string(),
        observedProperty: z.object({ name: z.string(), definition: z.string() }),
        unitOfMeasurement: z.object({ name: z.string(), symbol: z.string(), definition: z.string() }),
        phenomenonTime: z.string(),
        resultTime: z.string().describe('When this node recorded it'),
        result: z.number(),
        epoch: z.int(),
        record_hash: z.string(),
        writer_pk: z.string(),
      }),
    }),
  ),
  next_cursor: z.string().nullable(),
});
