/**
 * `POST /openeo/1.2/result` (docs/protocol.md §16.5–16.7): a process graph run synchronously. The graph is checked
 * before anything runs (gate 4: processes implemented, parameters, bounds); gate 2 resolves the jurisdiction of
 * the cells its extents cover and gate 3 checks a delegation against them. It runs on the imagery catalog with at
 * most SYNC_MAX_SAMPLES values loaded (ProcessGraphComplexity beyond) and within the request's `budget`
 * (PaymentRequired beyond). The result file is a signed proof record (its SHA-256, the scenes, every byte range
 * read with its hash, the graph's hash, the cost), named in `x-svc-record`; `OpenEO-Costs` states the cost.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { ImageryActivities } from '../../activities/imagery/index.js';
import { OPENEO_MEDIA_TYPES, runOpenEoGraph } from '../../activities/imagery/openeo-run.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { pass } from '../../core/check.js';
import { sha256Hex } from '../../core/hash.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import {
  extentCells,
  extentRecordCell,
  parseBoundingBox,
  parseSpatialExtent,
  type Box,
} from '../../core/openeo/extent.js';
import { checkProcessGraph, type ProcessGraph, type Registry } from '../../core/openeo/graph.js';
import { PROCESS_IMPLEMENTATIONS, type OpenEoEnv } from '../../core/openeo/processes.js';
import type { RequestParts } from '../../core/gates/request-scope.js';
import type { RouteSpec } from '../route-spec.js';
import { OPENEO_BASE, OPENEO_TAG, openEoRoute } from './discovery.js';
import { encodePng } from './png.js';
import { authenticationOf, openEoSignature, type OpenEoSignature } from './signed.js';
import { DEFINITIONS_BY_ID } from './process-definitions.js';

/**
 * The values (x × y × t × bands) one synchronous request may load: 4 million, 32 MB of cube, e.g. a 10 × 10 km
 * field at 10 m in two bands on twenty dates. Beyond it the answer is ProcessGraphComplexity.
 */
export const SYNC_MAX_SAMPLES = 4_000_000;

export const REGISTRY: Registry<OpenEoEnv> = {
  definitions: DEFINITIONS_BY_ID,
  implementations: PROCESS_IMPLEMENTATIONS,
};

export const resultRequestSchema = z.looseObject({
  process: z.looseObject({
    id: z.string().optional(),
    process_graph: z.record(z.string(), z.unknown()).describe('The process graph (openEO API 1.2.0)'),
  }),
  budget: z.number().positive().nullable().optional().describe('The most this request may cost, in credits'),
  plan: z.string().nullable().optional(),
  log_level: z.string().optional(),
});

interface ResultInput {
  graph: ProcessGraph;
  graphHash: string;
  budget: number | null;
  box: Box | null;
  signed: OpenEoSignature | null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The extents a graph names (load_collection, filter_bbox, aggregate_spatial), read from the raw body. */
export function graphExtents(body: unknown): Box[] {
  const graph = isRecord(body) && isRecord(body.process) ? body.process.process_graph : undefined;
  if (!isRecord(graph)) return [];
  const boxes: Box[] = [];
  for (const node of Object.values(graph).slice(0, 64)) {
    if (!isRecord(node) || !isRecord(node.arguments)) continue;
    try {
      if (node.process_id === 'load_collection' && isRecord(node.arguments.spatial_extent)) {
        boxes.push(parseSpatialExtent(node.arguments.spatial_extent, 'load_collection', 'spatial_extent').box);
      } else if (node.process_id === 'filter_bbox' && isRecord(node.arguments.extent)) {
        boxes.push(parseBoundingBox(node.arguments.extent, 'filter_bbox', 'extent'));
      }
    } catch {
      // A malformed extent names no cell here; the process refuses it when it runs.
    }
  }
  return boxes.slice(0, 2);
}

/** Gate 2's cells: those covering each extent (the first extent's centre first). */
export const resultCells = ({ body }: RequestParts): string[] => [...new Set(graphExtents(body).flatMap(extentCells))];

export function resultRoutes(deps: { imagery: () => ImageryActivities; clock: () => number }): RouteSpec<unknown>[] {
  return [
    openEoRoute<ResultInput>({
      method: 'POST',
      path: `${OPENEO_BASE}/result`,
      auth: 'openeo',
      jsonBody: true,
      cells: resultCells,
      preflight: (parts) => {
        const { body } = parts;
        const signed = openEoSignature(parts, deps.clock());
        if (!signed.ok) return signed;
        const parsed = resultRequestSchema.safeParse(body);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          if (issue?.path[0] === 'budget') throw new OpenEoError('BudgetInvalid', 'The specified budget is invalid.');
          throw new OpenEoError(
            'ProcessGraphMissing',
            `Invalid process specified. It doesn't contain a process graph (${issue?.path.join('.') || 'body'}: ${issue?.message}).`,
          );
        }
        const graph = checkProcessGraph(parsed.data.process.process_graph, REGISTRY);
        const [box] = graphExtents(body);
        return pass({
          graph,
          graphHash: sha256Hex(canonicalJson(parsed.data.process.process_graph)),
          budget: parsed.data.budget ?? null,
          box: box ?? null,
          signed: signed.value,
        });
      },
      handler: async (ctx, input, gates) => {
        const run = await runOpenEoGraph(
          { imagery: deps.imagery(), registry: REGISTRY, encodePng, clock: deps.clock },
          {
            graph: input.graph,
            graphHash: input.graphHash,
            budget: input.budget,
            maxSamples: SYNC_MAX_SAMPLES,
            tooComplex: (samples) =>
              `The process is too complex for synchronous processing: it would load ${samples.toLocaleString('en')} ` +
              `values (x × y × t × bands), above the ${SYNC_MAX_SAMPLES.toLocaleString('en')} a synchronous request ` +
              'may load. Narrow the extent, the interval or the bands, or use a batch job instead.',
            recordId: `openeo:${randomUUID()}`,
            cell: input.box ? extentRecordCell(input.box) : gates.place!.jobCell,
            authenticatedBy: authenticationOf(gates, input.signed),
            requestId: (ctx.state.requestId as string | undefined) ?? null,
            jobId: null,
            stepId: null,
          },
        );
        ctx.set({
          'openeo-costs': String(run.cost),
          'x-svc-record': run.record.id,
          'x-svc-proof': run.sha256,
          'x-svc-cell': run.record.address.h3_cell,
          'x-svc-epoch': String(run.record.address.epoch),
          'x-svc-cost': String(run.cost),
        });
        ctx.type = run.mediaType;
        ctx.body = Buffer.from(run.bytes.buffer, run.bytes.byteOffset, run.bytes.byteLength);
      },
      docs: {
        summary: 'openEO: run a process graph and answer its result',
        description:
          'Synchronous processing: the result file in the format `save_result` names (GTiff, PNG, JSON; JSON when ' +
          'the graph ends elsewhere). At most 4 million values (x × y × t × bands) loaded. The result is a proof ' +
          'record, named in `x-svc-record` (`GET /store/proof/{record_id}`).',
        tags: [OPENEO_TAG],
        body: resultRequestSchema,
        responses: {
          200: {
            description: 'The result file',
            contentTypes: Object.values(OPENEO_MEDIA_TYPES),
            headers: {
              'OpenEO-Costs': 'The cost in credits',
              'x-svc-record': 'The id of the result’s proof record',
              'x-svc-proof': 'SHA-256 (hex) of the result bytes',
              'x-svc-cell': 'The H3 cell the record is addressed to',
              'x-svc-epoch': 'The proof epoch of the record',
              'x-svc-cost': 'The cost in credits',
            },
          },
        },
        errors: ['upstream_unavailable', 'upstream_timeout'],
        openEoErrors: [
          'ProcessGraphMissing',
          'ProcessGraphInvalid',
          'ProcessUnsupported',
          'ProcessParameterRequired',
          'ProcessParameterUnsupported',
          'ProcessParameterInvalid',
          'ProcessGraphComplexity',
          'CollectionNotFound',
          'NoDataAvailable',
          'FormatUnsuitable',
          'BudgetInvalid',
          'PaymentRequired',
          'AuthenticationRequired',
          'AuthenticationSchemeInvalid',
          'TokenInvalid',
        ],
      },
    }),
  ];
}
