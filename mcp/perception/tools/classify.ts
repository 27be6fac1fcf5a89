/**
 * `perception_classify` (docs/protocol.md §4.2): model inference over an H3 cell on a GPU inference endpoint
 * (`CLASSIFY_URL`). Without an endpoint the tool is still listed and answers `not_configured`.
 *
 * The endpoint protocol (Geofabric classify v1), small enough to put in front of any model server:
 *
 *   POST {CLASSIFY_URL}/v1/classify        content-type: application/json
 *   { "h3_cell": "851e8053fffffff", "model": "prithvi-flood", "task": "flood_detection",
 *     "bbox": [west, south, east, north],              WGS84 degrees, the cell boundary's bounds
 *     "geometry": { "type": "Polygon", ... } }         the cell boundary, [lng, lat], ring closed
 *
 *   200 { "model": string, "task": string (the task asked for),
 *         "flood_fraction": number 0..1                share of the cell classified as flood water;
 *                                                      required when task is flood_detection
 *         "classes"?: { [label]: number 0..1 }         share of the cell per class label
 *         "confidence"?: number 0..1, "scene_id"?: string, "acquired_at"?: ISO 8601,
 *         "model_version"?: string, "inference_ms"?: number ≥ 0 }
 *   4xx { "error": code, "detail"?: text }            the endpoint refuses the request (e.g. unknown_model)
 *   5xx                                                the endpoint failed
 *
 * Tool errors: 4xx → `classify_rejected` with the endpoint's code and detail; 5xx, unreachable or an answer
 * outside the protocol → `upstream_unavailable`; no answer in time → `upstream_timeout`. Fields beyond the
 * protocol are dropped, so the breadcrumb and the agent see only what was validated.
 *
 * Tasks: `flood_detection` only (e.g. Prithvi fine-tuned on Sen1Floods11); others are planned.
 */
import { z } from 'zod';
import { cellPolygon } from '../../../activities/imagery/stac-client.js';
import { cellArgument } from '../../shared/structured.js';
import { cellToolCoaz, ToolError, type PerceptionTool } from '../tool-def.js';
import { fetchUpstreamJson } from './upstream-fetch.js';

export const CLASSIFY_TASKS = ['flood_detection'] as const;
export const DEFAULT_CLASSIFY_MODEL = 'prithvi-flood';

export const classifyInputSchema = {
  h3_cell: cellArgument('the cell to classify'),
  model: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'must be a model name (letters, digits, . _ : / -; at most 128)')
    .optional()
    .default(DEFAULT_CLASSIFY_MODEL)
    .describe(`model name on the inference endpoint (default ${DEFAULT_CLASSIFY_MODEL})`)
    .meta({ examples: [DEFAULT_CLASSIFY_MODEL] }),
  task: z
    .enum(CLASSIFY_TASKS)
    .optional()
    .default('flood_detection')
    .describe('inference task; flood_detection is supported')
    .meta({ examples: ['flood_detection'] }),
};
type ClassifyArgs = z.infer<z.ZodObject<typeof classifyInputSchema>>;

const share = z.number().finite().min(0).max(1);

/** A 200 answer of the classify protocol. */
export const classifyResponseSchema = z
  .object({
    model: z.string().min(1).max(256),
    task: z.string(),
    flood_fraction: share.optional(),
    classes: z.record(z.string().min(1).max(64), share).optional(),
    confidence: share.optional(),
    scene_id: z.string().max(256).optional(),
    acquired_at: z.iso.datetime({ offset: true }).optional(),
    model_version: z.string().max(128).optional(),
    inference_ms: z.number().finite().min(0).optional(),
  })
  .refine((r) => r.task !== 'flood_detection' || r.flood_fraction !== undefined, {
    message: 'flood_fraction is required for flood_detection',
    path: ['flood_fraction'],
  });
export type ClassifyResponse = z.infer<typeof classifyResponseSchema>;

export interface ClassifyDeps {
  /** Endpoint root (`CLASSIFY_URL`); undefined → the tool answers `not_configured`. */
  classifyUrl: string | undefined;
  timeoutMs: number;
}

export type ClassifyResult = ClassifyResponse & { h3_cell: string; data_source: string };

/** [west, south, east, north] of the cell boundary. */
export function cellBbox(cell: string): [number, number, number, number] {
  const ring = cellPolygon(cell).coordinates[0]!;
  const lngs = ring.map((p) => p[0]!);
  const lats = ring.map((p) => p[1]!);
  return [Math.min(...lngs), Math.min(...lats), Math.max(...lngs), Math.max(...lats)];
}

export function createClassifyTool(deps: ClassifyDeps): PerceptionTool {
  const root = deps.classifyUrl?.replace(/\/+$/, '');
  const host = root === undefined ? undefined : new URL(root).host;
  const name = `the inference endpoint at ${host}`;

  const tool: PerceptionTool<typeof classifyInputSchema> = {
    name: 'perception_classify',
    title: 'Classify an H3 cell with a geospatial model',
    description:
      'Runs a geospatial foundation model over an H3 cell on a GPU inference endpoint; task flood_detection ' +
      'returns the flooded share of the cell. Needs CLASSIFY_URL; without it the tool answers not_configured.',
    inputSchema: classifyInputSchema,
    facet: 'perception',
    cellOf: (args) => args.h3_cell,
    coaz: cellToolCoaz({ model: 'params.model', task: 'params.task' }),
    async run(args: ClassifyArgs, context): Promise<ClassifyResult> {
      if (root === undefined || host === undefined) {
        throw new ToolError('not_configured', 'perception_classify needs a GPU inference endpoint: set CLASSIFY_URL');
      }
      const answer = await fetchUpstreamJson({
        name,
        url: `${root}/v1/classify`,
        method: 'POST',
        body: {
          h3_cell: args.h3_cell,
          model: args.model,
          task: args.task,
          bbox: cellBbox(args.h3_cell),
          geometry: cellPolygon(args.h3_cell),
        },
        timeoutMs: deps.timeoutMs,
        ...(context.signal ? { signal: context.signal } : {}),
      });
      if (answer.status >= 400 && answer.status < 500) {
        const body = (answer.json ?? {}) as { error?: unknown; detail?: unknown };
        const code = typeof body.error === 'string' ? body.error.slice(0, 64) : `HTTP ${answer.status}`;
        const detail = typeof body.detail === 'string' ? `: ${body.detail.slice(0, 200)}` : '';
        throw new ToolError('classify_rejected', `${name} refused the request (${code})${detail}`);
      }
      if (!answer.ok) throw new ToolError('upstream_unavailable', `${name} answered HTTP ${answer.status}`);
      const parsed = classifyResponseSchema.safeParse(answer.json);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.map(String).join('.') || 'body';
        throw new ToolError('upstream_unavailable', `malformed answer from ${name}: ${where}: ${issue?.message}`);
      }
      if (parsed.data.task !== args.task) {
        throw new ToolError('upstream_unavailable', `${name} answered task ${parsed.data.task}, not ${args.task}`);
      }
      return { ...parsed.data, h3_cell: args.h3_cell, data_source: host };
    },
  };
  // Widened for PerceptionTool[] lists: cellOf's argument type is what keeps the typed tool from widening itself.
  return tool as PerceptionTool;
}
