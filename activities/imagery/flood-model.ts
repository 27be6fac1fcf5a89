import { cellArea } from 'h3-js';
import { z } from 'zod';
import { ServiceError } from '../../core/errors.js';
import { roundFraction } from '../../core/flood.js';
import { imageCost } from '../../core/pricing.js';
import { readBoundedBody } from '../bounded-body.js';
import { cellPolygon } from './stac-client.js';

/** A classify answer is a few hundred bytes; a larger one is not an answer and is not read into memory. */
const MAX_CLASSIFY_BYTES = 1 << 20;

/**
 * flood_classify by a model (docs/protocol.md §2.5): when the gateway has a classify endpoint (CLASSIFY_URL, the
 * classify v1 protocol perception_classify speaks) and the request names a `model`, the endpoint classifies the
 * cell instead of MNDWI. The answer has the MNDWI result's fields; what a model does not report (pixel counts,
 * the scene datetime) is null, and `method` is `model` with the model named. Priced per megapixel like the pixel
 * method, on the cell's area at 10 m (the model's input), since no pixel read is ours to count.
 */
const share = z.number().finite().min(0).max(1);
const answerSchema = z.object({
  model: z.string().min(1).max(256),
  task: z.literal('flood_detection'),
  flood_fraction: share,
  classes: z.record(z.string().min(1).max(64), share).optional(),
  confidence: share.optional(),
  scene_id: z.string().max(256).optional(),
  acquired_at: z.iso.datetime({ offset: true }).optional(),
  model_version: z.string().max(128).optional(),
});

export interface ModelEndpoint {
  url: string;
  timeoutMs: number;
  userAgent: string;
}

/** [west, south, east, north] of the cell boundary, as classify v1 asks. */
function bbox(cell: string): [number, number, number, number] {
  const ring = cellPolygon(cell).coordinates[0]!;
  const lngs = ring.map((p) => p[0]!);
  const lats = ring.map((p) => p[1]!);
  return [Math.min(...lngs), Math.min(...lats), Math.max(...lngs), Math.max(...lats)];
}

export async function classifyFloodByModel(endpoint: ModelEndpoint, cell: string, model: string, clock: () => number) {
  const started = clock();
  const host = new URL(endpoint.url).host;
  // The deadline covers the answer's body too (activities/bounded-body.ts).
  const signal = AbortSignal.timeout(endpoint.timeoutMs);
  let res: Response;
  let json: unknown = null;
  try {
    res = await fetch(`${endpoint.url.replace(/\/+$/, '')}/v1/classify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': endpoint.userAgent },
      body: JSON.stringify({
        h3_cell: cell,
        model,
        task: 'flood_detection',
        bbox: bbox(cell),
        geometry: cellPolygon(cell),
      }),
      signal,
      redirect: 'error',
    });
    const tooLarge = () => new ServiceError('upstream_unavailable', 'the classify endpoint answered too much');
    const text = (await readBoundedBody(res, MAX_CLASSIFY_BYTES, tooLarge, signal)).toString('utf8');
    try {
      json = JSON.parse(text) as unknown;
    } catch {
      // not JSON: judged by its status below
    }
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    const timedOut = (error as Error).name === 'TimeoutError';
    throw new ServiceError(
      timedOut ? 'upstream_timeout' : 'upstream_unavailable',
      `the classify endpoint ${timedOut ? 'did not answer in time' : 'is unreachable'}`,
    );
  }
  if (res.status === 404 || res.status === 400) {
    const body = (json ?? {}) as { error?: unknown; detail?: unknown };
    const code = typeof body.error === 'string' ? body.error.slice(0, 64) : `HTTP ${res.status}`;
    throw new ServiceError('invalid_model', `the classify endpoint refused model ${model} (${code})`);
  }
  if (!res.ok) throw new ServiceError('upstream_unavailable', `the classify endpoint answered HTTP ${res.status}`);
  const parsed = answerSchema.safeParse(json);
  if (!parsed.success) throw new ServiceError('upstream_unavailable', 'malformed answer from the classify endpoint');
  const a = parsed.data;
  const classes = a.classes ?? {};
  const water =
    classes.flood_water !== undefined || classes.permanent_water !== undefined
      ? roundFraction((classes.flood_water ?? 0) + (classes.permanent_water ?? 0))
      : null;
  const megapixels = cellArea(cell, 'm2') / 100 / 1e6;
  const cost = imageCost(megapixels);
  const result = {
    method: 'model' as const,
    model: a.model,
    model_version: a.model_version ?? null,
    confidence: a.confidence ?? null,
    scene_id: a.scene_id ?? null,
    datetime: a.acquired_at ? new Date(Date.parse(a.acquired_at)).toISOString() : null,
    h3_cell: cell,
    cloud_cover: null,
    water_fraction: water,
    valid_pixels: null,
    masked_pixels: null,
    dropped_pixels: null,
    cell_pixels: null,
    reference_scene_id: null,
    reference_datetime: null,
    flood_fraction: roundFraction(a.flood_fraction),
    compared_pixels: null,
    processing_baseline: null,
    offset_applied: false,
    description:
      `Flood classification by model ${a.model} on the classify endpoint at ${host} (task flood_detection); ` +
      'water_fraction is its flood_water + permanent_water classes when it reports them.',
    megapixels,
    cost,
    processingMs: Math.max(0, clock() - started),
  };
  return { result, payload: { method: 'model', endpoint: host, model: a.model, megapixels, cost, assets: [] } };
}
