/**
 * Satellite imagery (docs/protocol.md §1.2, §2.5): Sentinel-2 L2A scenes from a STAC catalog, NDVI from the scenes'
 * Cloud-Optimized GeoTIFFs (or their metadata), cloud cover, and the L2A correction statement. Every
 * processing writes an `imagery` proof record: HTTP serves queue it (`record`, batched, random id), the
 * `processImage` activity awaits it (`write`, id from job and step, so a retry never writes twice).
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Check } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { checkCell } from '../../core/h3-cell.js';
import type { ImageOperation } from '../../core/imagery-operations.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import { originSet } from '../safe-fetch.js';
import {
  parseDateParam,
  QUERY_WINDOW,
  referenceWindow,
  resolveWindow,
  widenHint,
  type WindowParams,
} from './date-window.js';
import { imageryPayloadSchema } from './imagery-record.js';
import { stepRecordId } from '../../core/proof-record.js';
import type { NdviResult } from './ndvi.js';
import { checkOperation, runOperation, type OperationInput, type Outcome } from './run-operation.js';
import { createComputationCache } from './computation-cache.js';
import { createCubeLoader } from './openeo-cube.js';
import { createStacClient } from './stac-client.js';
import type { SceneSummary } from './stac-item.js';

export interface ImageryConfig {
  /** STAC API root, e.g. https://earth-search.aws.element84.com/v1 */
  stacUrl: string;
  collection: string;
  /** Per upstream request (STAC search, each COG range read). */
  timeoutMs: number;
  /**
   * Origins band assets may be fetched from besides the catalog's own (IMAGERY_ASSET_ORIGINS plus, for the
   * default catalog, its documented asset host); redirects must stay among them too.
   */
  assetOrigins?: readonly string[] | undefined;
  userAgent: string;
  /** CLASSIFY_URL: flood_classify with a `model` classifies on this classify v1 endpoint; unset: MNDWI only. */
  classifyUrl?: string | undefined;
  classifyTimeoutMs?: number | undefined;
  /** Pixel computations kept in memory (computation-cache.ts); default DEFAULT_COMPUTATION_CACHE_ENTRIES. */
  cacheEntries?: number | undefined;
}

export interface ImageryDeps {
  config: ImageryConfig;
  proofs: ProofWriter;
  clock: () => number;
  logger?: Logger;
}

/** A query as the HTTP layer validated it: dates as epoch ms, absent → defaults (to = now, from = to − 30 d). */
export interface ImageryQuery {
  cell: string;
  fromMs?: number;
  toMs?: number;
  cloud?: number;
  limit?: number;
  /** How this caller names the window's ends (default: the query's `from`/`to`), for a `no_scenes` detail. */
  windowParams?: WindowParams;
  /** flood_classify: the reference window (both ends required), epoch ms. */
  reference?: { fromMs: number; toMs: number };
  /** flood_classify: the model to classify with (used when a classify endpoint is configured). */
  model?: string;
  /** band_math: the expression (core/band-math.ts). */
  expression?: string;
}

export interface ScenesResult {
  h3Cell: string;
  from: string;
  to: string;
  cloud: number;
  limit: number;
  count: number;
  scenes: SceneSummary[];
  recordId: string;
}

/** `POST /v1/imagery/process` and the activity answer with this envelope. */
export interface ProcessResponse {
  operation: ImageOperation;
  h3_cell: string;
  result: Record<string, unknown>;
  cost: number;
  record_id: string;
}

/** An `image_process` step as the compound-job engine schedules it. */
export const imageStepSchema = z.object({
  job_id: z.string().min(1).max(128),
  step_id: z.string().min(1).max(128),
  operation: z.string(),
  h3_cell: z.string(),
  date_from: z.string().optional(),
  date_to: z.string().optional(),
  reference_from: z.string().optional(),
  reference_to: z.string().optional(),
  model: z.string().min(1).max(256).optional(),
  expression: z.string().optional(),
});
export type ImageStep = z.input<typeof imageStepSchema>;

const unwrap = <T>(check: Check<T>): T => {
  if (!check.ok) throw new ServiceError(check.error, check.detail);
  return check.value;
};

export function createImageryActivities(deps: ImageryDeps) {
  const { config } = deps;
  const stac = createStacClient(config);
  const operationDeps = {
    stac,
    catalog: { url: config.stacUrl, collection: config.collection },
    cog: {
      timeoutMs: config.timeoutMs,
      userAgent: config.userAgent,
      origins: originSet([config.stacUrl, ...(config.assetOrigins ?? [])]),
    },
    clock: deps.clock,
    classify:
      config.classifyUrl === undefined
        ? undefined
        : {
            url: config.classifyUrl,
            timeoutMs: config.classifyTimeoutMs ?? 60_000,
            userAgent: config.userAgent,
          },
    onFallback: (reason: string, context: { cell: string; sceneId: string }) =>
      deps.logger?.info({ ...context, reason }, 'imagery: pixels not used, answered from scene metadata'),
    // Shared by HTTP serves and image_process steps: the same scenes of a cell are read once (docs/security.md §9).
    cache: createComputationCache(config.cacheEntries),
  };

  const run = (operation: ImageOperation, query: ImageryQuery): Promise<Outcome> => {
    const window = unwrap(resolveWindow(query.fromMs, query.toMs, deps.clock()));
    const widen = widenHint(query.windowParams ?? QUERY_WINDOW, {
      from: query.fromMs === undefined,
      to: query.toMs === undefined,
    });
    const input: OperationInput = { operation, cell: query.cell, window, widen };
    if (query.cloud !== undefined) input.cloud = query.cloud;
    if (query.limit !== undefined) input.limit = query.limit;
    if (query.model !== undefined) input.model = query.model;
    if (query.expression !== undefined) input.expression = query.expression;
    if (query.reference !== undefined) {
      input.reference = unwrap(resolveWindow(query.reference.fromMs, query.reference.toMs, deps.clock()));
    }
    return runOperation(operationDeps, input);
  };

  /** HTTP serves: record off the request path under a fresh id. */
  const serve = async (operation: ImageOperation, query: ImageryQuery) => {
    const outcome = await run(operation, query);
    const id = `imagery:${randomUUID()}`;
    deps.proofs.record({
      id,
      h3_cell: query.cell,
      collection_type: 'imagery',
      payload_type: outcome.payloadType,
      payload: { ...outcome.payload, job_id: null, step_id: null },
    });
    return { outcome, id };
  };

  const cubes = createCubeLoader({
    stac,
    cog: operationDeps.cog,
    clock: deps.clock,
    onReadFailure: (detail, context) => deps.logger?.info({ ...context, detail }, 'openEO: a band read failed'),
  });

  return {
    /** openEO's `load_collection` (docs/protocol.md §16.5): cubes from the catalog's scenes. */
    cubes,
    /** The catalog's own document of the collection (openEO's `GET /collections/{id}` takes its extent). */
    catalogCollection: () => stac.collection(),
    /** Where results are recorded: the serving paths' proof writer. */
    proofs: deps.proofs,
    catalog: operationDeps.catalog,

    /** GET /v1/imagery/scenes. */
    async searchScenes(query: ImageryQuery): Promise<ScenesResult> {
      const { outcome, id } = await serve('scene_search', query);
      return { ...(outcome.result as Omit<ScenesResult, 'recordId'>), recordId: id };
    },

    /** GET /v1/imagery/ndvi. */
    async ndvi(query: ImageryQuery): Promise<NdviResult & { recordId: string }> {
      const { outcome, id } = await serve('ndvi', query);
      return { ...(outcome.result as unknown as NdviResult), recordId: id };
    },

    /** POST /v1/imagery/process. */
    async process(operation: ImageOperation, query: ImageryQuery): Promise<ProcessResponse> {
      const { outcome, id } = await serve(operation, query);
      return { operation, h3_cell: query.cell, result: outcome.result, cost: outcome.cost, record_id: id };
    },

    /**
     * The `image_process` step activity. Bad input, unknown operations and an empty window are business
     * failures (non-retryable); upstream trouble is retryable. On a retry the store returns the first
     * attempt's record, and the answer is that record's result and cost: what settlement already saw.
     */
    async processImage(input: ImageStep): Promise<ProcessResponse> {
      try {
        const parsed = imageStepSchema.safeParse(input);
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new ServiceError('invalid_request', `${issue?.path.join('.') || 'input'}: ${issue?.message}`);
        }
        const step = parsed.data;
        const operation = unwrap(checkOperation(step.operation));
        const cell = unwrap(checkCell(step.h3_cell, 'h3_cell'));
        // The step's dates come from the job step's context (core/job-steps.ts).
        const query: ImageryQuery = {
          cell,
          windowParams: { from: 'context.date_from', to: 'context.date_to' },
        };
        const fromMs = unwrap(parseDateParam(step.date_from, 'date_from', 'start'));
        const toMs = unwrap(parseDateParam(step.date_to, 'date_to', 'end'));
        if (fromMs !== undefined) query.fromMs = fromMs;
        if (toMs !== undefined) query.toMs = toMs;
        const reference = unwrap(
          referenceWindow(step.reference_from, step.reference_to, ['context.reference_from', 'context.reference_to']),
        );
        if (reference !== undefined) {
          if (operation !== 'flood_classify') {
            throw new ServiceError(
              'invalid_request',
              'a reference window applies to the flood_classify operation only',
            );
          }
          query.reference = reference;
        }
        if (step.model !== undefined) {
          if (operation !== 'flood_classify') {
            throw new ServiceError('invalid_request', 'an image_process model applies to flood_classify only');
          }
          query.model = step.model;
        }
        // band_math parses its expression where it runs (runOperation): the input may come from an older gateway.
        if (step.expression !== undefined) {
          if (operation !== 'band_math') {
            throw new ServiceError('invalid_request', 'an expression applies to the band_math operation only');
          }
          query.expression = step.expression;
        }
        const outcome = await run(operation, query);
        const record = await deps.proofs.write({
          id: stepRecordId('imagery', step.job_id, step.step_id),
          h3_cell: cell,
          collection_type: 'imagery',
          payload_type: outcome.payloadType,
          payload: { ...outcome.payload, job_id: step.job_id, step_id: step.step_id },
        });
        const stored = imageryPayloadSchema.safeParse(record.payload);
        const accounted = stored.success ? stored.data : { result: outcome.result, cost: outcome.cost };
        return { operation, h3_cell: cell, result: accounted.result, cost: accounted.cost, record_id: record.id };
      } catch (error) {
        if (!(error instanceof ServiceError)) throw error;
        if (error.status < 500) throw ApplicationFailure.nonRetryable(error.detail ?? error.code, error.code);
        throw ApplicationFailure.retryable(error.detail ?? error.code, error.code);
      }
    },
  };
}
export type ImageryActivities = ReturnType<typeof createImageryActivities>;
