import { cellToLatLng } from 'h3-js';
import { fail, pass, type Check } from '../../core/check.js';
import { integerParam } from '../../core/query-params.js';
import { isQuantity, QUANTITIES, QUANTITY_NAMES } from '../../core/telemetry.js';
import { parseDateParam } from '../../activities/imagery/date-window.js';
import type { StoredReading, TelemetryActivities, TelemetryQuery } from '../../activities/telemetry/index.js';
import { route } from '../route-spec.js';
import {
  telemetryBatchSchema,
  telemetryCollectionSchema,
  telemetryIngestSchema,
  telemetryQueryDocs,
  telemetryRefusedSchema,
  type TelemetryBatchBody,
} from '../schemas/telemetry.js';
import { zodCheck } from '../schemas/zod-check.js';

interface IngestInput {
  batch: TelemetryBatchBody;
}

interface ListInput {
  query: TelemetryQuery;
  proof: boolean;
}

export const DEFAULT_TELEMETRY_LIMIT = 100;
export const MAX_TELEMETRY_LIMIT = 1000;

/**
 * IoT telemetry (docs/protocol.md §2.10). `POST /v1/telemetry`: a batch signed by the device key, through all
 * gates like a compute request (the device is the requester; its cell is `h3_cell`). Each reading is checked
 * alone: 200 when all are accepted, 207 when some are refused, 422 `readings_refused` when none is; the body
 * lists both. `GET /v1/telemetry`: readings of a cell as a GeoJSON FeatureCollection, one Point (the device
 * cell's centroid) per reading, SensorThings names in the properties.
 */
export const telemetryRoutes = (telemetry: TelemetryActivities) => [
  route<IngestInput>({
    method: 'POST',
    path: '/v1/telemetry',
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => {
      const batch = zodCheck(telemetryBatchSchema, body);
      return batch.ok ? pass({ batch: batch.value }) : batch;
    },
    handler: async (ctx, { batch }, gates) => {
      // The voter of the device's readings (docs/protocol.md §2.10): the human principal gate 3 traced the
      // device to, else the device itself.
      const authority = gates.authority;
      const result = await telemetry.ingest({
        devicePk: batch.requester_pk,
        cell: batch.h3_cell,
        readings: batch.readings,
        principalPk: authority.kind === 'delegated' ? authority.grant.human_principal_pk : batch.requester_pk,
      });
      const body = {
        device_pk: batch.requester_pk,
        h3_cell: batch.h3_cell,
        accepted_count: result.accepted.length,
        refused_count: result.refused.length,
        ...result,
      };
      if (result.accepted.length === 0) {
        ctx.status = 422;
        ctx.body = { error: 'readings_refused', detail: 'no reading of the batch was accepted', ...body };
        return;
      }
      ctx.status = result.refused.length === 0 ? 200 : 207;
      ctx.body = body;
    },
    docs: {
      summary: 'Ingest a signed batch of sensor readings',
      description:
        'The body is signed by the device key like a compute request (X-Idn-Signature over the JCS of the body ' +
        'without `signature`; `requester_pk` is the device key, `h3_cell` its cell); each reading carries the ' +
        "device's signature over its reading statement. Each reading is checked alone (its signature, known " +
        'quantity, its unit, plausible range, at most 5 minutes ahead, an epoch the proof store ' +
        'still accepts) and each accepted one becomes an `iot/telemetry` proof record; the same reading sent ' +
        'again is stored once (`duplicate`). 200: all accepted; 207: some refused; 422: none accepted.',
      tags: ['Telemetry'],
      body: telemetryBatchSchema,
      responses: {
        200: { description: 'Every reading accepted', schema: telemetryIngestSchema },
        207: {
          description: 'Some readings accepted, the others refused with a code each',
          schema: telemetryIngestSchema,
        },
        422: { description: 'No reading accepted (`readings_refused`)', schema: telemetryRefusedSchema },
      },
      errors: ['invalid_request', 'readings_refused', 'storage_full'],
    },
  }),
  route<ListInput>({
    method: 'GET',
    path: '/v1/telemetry',
    auth: 'public',
    cors: { expose: [] },
    facets: [],
    preflight: ({ query }) => listQuery(query),
    handler: async (ctx, { query, proof }) => {
      const page = await telemetry.list(query);
      ctx.type = 'application/geo+json';
      ctx.body = {
        type: 'FeatureCollection',
        features: page.readings.map((reading) => feature(reading, proof)),
        next_cursor: page.nextCursor,
      };
    },
    docs: {
      summary: 'Sensor readings of a cell, as GeoJSON',
      description:
        'Readings of devices in the cell (H3 containment), optionally of one quantity and a phenomenon-time ' +
        'window, oldest epoch first. Each Feature is a Point at the centroid of the device cell (its polygon is ' +
        '`h3_cell`) with SensorThings properties. `limit` counts stored records scanned, so a filtered page may ' +
        'hold fewer; follow `next_cursor` until null.',
      tags: ['Telemetry'],
      query: telemetryQueryDocs,
      responses: {
        200: {
          description: 'A GeoJSON FeatureCollection',
          schema: telemetryCollectionSchema,
          contentTypes: ['application/geo+json'],
        },
      },
      errors: ['cell_required', 'unknown_quantity', 'invalid_date', 'invalid_limit'],
    },
  }),
];

function listQuery(query: Record<string, string | string[] | undefined>): Check<ListInput> {
  const cell = query.cell;
  if (cell === undefined) return fail('cell_required', 'cell is required (an H3 cell)');
  if (typeof cell !== 'string') return fail('invalid_cell', 'cell must be given once');
  const quantity = query.quantity;
  if (quantity !== undefined && !isQuantity(quantity)) {
    return fail('unknown_quantity', `quantity must be one of ${QUANTITY_NAMES.join(', ')}`);
  }
  const from = parseDateParam(query.from, 'from', 'start');
  if (!from.ok) return from;
  const to = parseDateParam(query.to, 'to', 'end');
  if (!to.ok) return to;
  if (from.value !== undefined && to.value !== undefined && from.value > to.value) {
    return fail('invalid_date', 'from is after to');
  }
  const limit = integerParam(
    query.limit,
    'limit',
    { min: 1, max: MAX_TELEMETRY_LIMIT, fallback: DEFAULT_TELEMETRY_LIMIT },
    'invalid_limit',
  );
  if (!limit.ok) return limit;
  const cursor = query.cursor;
  if (cursor !== undefined && typeof cursor !== 'string') return fail('invalid_request', 'cursor must be given once');
  return pass({
    query: {
      cell,
      quantity,
      fromMs: from.value,
      toMs: to.value === undefined ? undefined : to.value + 1,
      limit: limit.value,
      cursor,
    },
    proof: query.proof === '1' || query.proof === 'true',
  });
}

/** One reading as a GeoJSON Feature with SensorThings Observation names. */
function feature({ record, payload }: StoredReading, proof: boolean) {
  const [lat, lng] = cellToLatLng(record.address.h3_cell);
  const quantity = QUANTITIES[payload.quantity];
  return {
    type: 'Feature',
    id: record.id,
    geometry: { type: 'Point', coordinates: [lng, lat] },
    properties: {
      h3_cell: record.address.h3_cell,
      device_pk: payload.device_pk,
      observedProperty: { name: payload.quantity, definition: quantity.description },
      unitOfMeasurement: { name: quantity.unit, symbol: quantity.symbol, definition: 'http://unitsofmeasure.org/ucum' },
      phenomenonTime: payload.observed_at,
      resultTime: record.written_at,
      result: payload.value,
      epoch: record.address.epoch,
      record_hash: record.record_hash,
      writer_pk: record.address.pk,
      ...(proof ? { record } : {}),
    },
  };
}
