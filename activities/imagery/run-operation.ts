import { fail, pass, type Check } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { IMAGE_OPERATIONS, type ImageOperation } from '../../core/imagery-operations.js';
import { baselineOffset } from '../../core/ndvi.js';
import type { PayloadType } from '../../core/proof-types.js';
import { computeCloudMask } from './cloud-mask.js';
import type { ComputationCache } from './computation-cache.js';
import { ImageDataError, publicReadFailure, type CogOptions } from './cog-reader.js';
import { computeFlood } from './flood.js';
import { classifyFloodByModel, type ModelEndpoint } from './flood-model.js';
import { stacInterval, type DateWindow } from './date-window.js';
import { computeNdvi } from './ndvi.js';
import type { SceneSearch, StacClient } from './stac-client.js';
import { httpLinks, leastCloudy, sceneSummary, type Scene } from './stac-item.js';

/** Scene search defaults: every scene (cloud ≤ 100 %), ten of them. */
export const DEFAULT_CLOUD = 100;
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
/** Candidates fetched when one scene is chosen (the catalog sorts them clearest first). */
const CANDIDATES = 100;

/** `operation` → an image_process operation, or 400 invalid_operation saying what exists. */
export function checkOperation(value: unknown): Check<ImageOperation> {
  if (typeof value === 'string' && (IMAGE_OPERATIONS as readonly string[]).includes(value)) {
    return pass(value as ImageOperation);
  }
  return fail(
    'invalid_operation',
    `operation must be one of ${IMAGE_OPERATIONS.join(', ')}; got ${JSON.stringify(value)}`,
  );
}

export interface OperationInput {
  operation: ImageOperation;
  cell: string;
  window: DateWindow;
  /** Appended to a `no_scenes` detail: how the caller widens the window (date-window.ts widenHint). */
  widen?: string;
  /** scene_search only. */
  cloud?: number;
  limit?: number;
  /** flood_classify only: the window of the reference (dry) scene, chosen like the current one. */
  reference?: DateWindow;
  /** flood_classify only: classify with this model on the classify endpoint, when one is configured. */
  model?: string;
}

/** One processing, before it is recorded: its payload lacks only the record-level fields. */
export interface Outcome {
  payloadType: PayloadType;
  result: Record<string, unknown>;
  cost: number;
  payload: Record<string, unknown>;
}

export interface OperationDeps {
  stac: StacClient;
  catalog: { url: string; collection: string };
  cog: CogOptions;
  clock: () => number;
  /** The classify v1 endpoint (CLASSIFY_URL) for flood_classify with a `model`; undefined: MNDWI only. */
  classify?: ModelEndpoint | undefined;
  /** A metadata fallback; `detail` (logs only) says what failed when a read did. */
  onFallback?: (reason: string, context: { cell: string; sceneId: string; detail?: string | undefined }) => void;
  /** Pixel computations already made, by operation, cell and scenes (computation-cache.ts); none: every run reads. */
  cache?: ComputationCache | undefined;
}

/** `compute` through the cache when there is one: by `inputs`, kept unless a read failed. */
function computed<T>(
  deps: OperationDeps,
  inputs: { operation: ImageOperation; cell: string; scene: Scene; reference?: Scene | null },
  compute: () => Promise<{ value: T; keep: boolean }>,
): Promise<T> {
  return deps.cache ? deps.cache.run(inputs, compute) : compute().then((outcome) => outcome.value);
}

/**
 * Runs one operation: the STAC search, the scene choice, the computation. ndvi, flood_classify (and its
 * reference window) and atmospheric_correction use the least cloudy scene of the window (ties → newest); cloud_mask the newest
 * (it describes the current sky); scene_search lists scenes newest first.
 */
export async function runOperation(deps: OperationDeps, input: OperationInput): Promise<Outcome> {
  const started = deps.clock();
  if (input.operation === 'flood_classify' && input.model !== undefined && deps.classify !== undefined) {
    const { result, payload } = await classifyFloodByModel(deps.classify, input.cell, input.model, deps.clock);
    return {
      payloadType: 'imagery/flood_classify',
      result,
      cost: result.cost,
      payload: {
        version: 1,
        operation: input.operation,
        h3_cell: input.cell,
        catalog: deps.catalog,
        search: { datetime: stacInterval(input.window), cloud: null, limit: 0 },
        item_id: result.scene_id,
        item_datetime: result.datetime,
        ...payload,
        result,
      },
    };
  }
  const search: SceneSearch =
    input.operation === 'scene_search'
      ? {
          cell: input.cell,
          window: input.window,
          cloud: input.cloud ?? DEFAULT_CLOUD,
          limit: input.limit ?? DEFAULT_LIMIT,
          order: 'newest',
        }
      : input.operation === 'cloud_mask'
        ? { cell: input.cell, window: input.window, limit: 1, order: 'newest' }
        : { cell: input.cell, window: input.window, limit: CANDIDATES, order: 'clearest' };
  const scenes = await deps.stac.search(search);
  const common = {
    version: 1,
    operation: input.operation,
    h3_cell: input.cell,
    catalog: deps.catalog,
    search: { datetime: stacInterval(input.window), cloud: search.cloud ?? null, limit: search.limit },
  };

  if (input.operation === 'scene_search') {
    const result = {
      h3Cell: input.cell,
      from: new Date(input.window.fromMs).toISOString(),
      to: new Date(input.window.toMs).toISOString(),
      cloud: search.cloud!,
      limit: search.limit,
      count: scenes.length,
      scenes: scenes.map(sceneSummary),
    };
    return {
      payloadType: 'imagery/scene_search',
      result,
      cost: 0,
      payload: {
        ...common,
        item_id: null,
        item_datetime: null,
        method: 'catalog',
        item_ids: scenes.map((s) => s.id),
        assets: [],
        megapixels: 0,
        cost: 0,
        result,
      },
    };
  }

  const scene = input.operation === 'cloud_mask' ? scenes[0] : leastCloudy(scenes);
  if (!scene) {
    throw new ServiceError(
      'no_scenes',
      `no ${deps.catalog.collection} scene intersects cell ${input.cell} between ` +
        `${new Date(input.window.fromMs).toISOString()} and ${new Date(input.window.toMs).toISOString()}` +
        (input.widen ?? ''),
    );
  }
  const item = { item_id: scene.id, item_datetime: scene.datetime };
  const cog = { cog: deps.cog, clock: deps.clock };

  if (input.operation === 'ndvi') {
    const { result, payload } = await computed(deps, { operation: 'ndvi', cell: input.cell, scene }, async () => {
      let readFailed = false;
      const onFallback = (reason: string, detail?: string) => {
        readFailed ||= detail !== undefined;
        deps.onFallback?.(reason, { cell: input.cell, sceneId: scene.id, detail });
      };
      return { value: await computeNdvi(scene, input.cell, { ...cog, onFallback }), keep: !readFailed };
    });
    const full = { ...result, processingMs: Math.max(0, deps.clock() - started) };
    return {
      payloadType: 'imagery/ndvi',
      result: full,
      cost: result.cost,
      payload: { ...common, ...item, ...payload, result: full },
    };
  }
  if (input.operation === 'flood_classify') {
    const reference = input.reference ? await referenceScene(deps, input.cell, input.reference) : null;
    let flood;
    try {
      flood = await computed(deps, { operation: 'flood_classify', cell: input.cell, scene, reference }, async () => ({
        value: await computeFlood(scene, reference, input.cell, cog),
        keep: true,
      }));
    } catch (error) {
      // What the image is (no bands, outside the cell, another tile) is the caller's to know; what failed
      // upstream (a status, an origin) goes to the logs only, as for NDVI.
      if (error instanceof ImageDataError) throw new ServiceError('imagery_unavailable', error.message);
      deps.onFallback?.('flood_classify read failed', {
        cell: input.cell,
        sceneId: scene.id,
        detail: (error as Error).message,
      });
      throw new ServiceError('upstream_unavailable', `reading the band pixels failed: ${publicReadFailure(error)}`);
    }
    const full = { ...flood.result, processingMs: Math.max(0, deps.clock() - started) };
    if (input.model !== undefined) full.description += modelNotUsed(input.model);
    return {
      payloadType: 'imagery/flood_classify',
      result: full,
      cost: flood.result.cost,
      payload: {
        ...common,
        ...item,
        reference_search: input.reference ? { datetime: stacInterval(input.reference) } : null,
        ...flood.payload,
        result: full,
      },
    };
  }
  if (input.operation === 'cloud_mask') {
    const { result, payload } = await computed(deps, { operation: 'cloud_mask', cell: input.cell, scene }, async () => {
      let readFailed = false;
      const onReadFailure = (detail: string) => {
        readFailed = true;
        deps.onFallback?.('reading the scl band failed', { cell: input.cell, sceneId: scene.id, detail });
      };
      return { value: await computeCloudMask(scene, input.cell, { ...cog, onReadFailure }), keep: !readFailed };
    });
    const full = { ...result, processingMs: Math.max(0, deps.clock() - started) };
    return {
      payloadType: 'imagery/cloud_mask',
      result: full,
      cost: result.cost,
      payload: { ...common, ...item, ...payload, result: full },
    };
  }
  const result = atmosphericCorrection(scene, input.cell, Math.max(0, deps.clock() - started));
  return {
    payloadType: 'imagery/atmospheric_correction',
    result,
    cost: 0,
    payload: {
      ...common,
      ...item,
      method: 'catalog',
      processing_baseline: scene.processingBaseline,
      catalog_offset_applied: scene.offsetAppliedByCatalog,
      boa_offset: result.boaOffset,
      assets: [],
      megapixels: 0,
      cost: 0,
      result,
    },
  };
}

/** flood_classify's note for a model asked for without a classify endpoint (recompute.ts adds it too). */
export const modelNotUsed = (model: string): string =>
  ` Model ${model} not used: no classify endpoint is configured (CLASSIFY_URL).`;

/** The reference scene of flood_classify: the least cloudy of its window, as for the current scene. */
async function referenceScene(deps: OperationDeps, cell: string, window: DateWindow): Promise<Scene> {
  const scenes = await deps.stac.search({ cell, window, limit: CANDIDATES, order: 'clearest' });
  const scene = leastCloudy(scenes);
  if (!scene) {
    throw new ServiceError(
      'no_scenes',
      `no ${deps.catalog.collection} reference scene intersects cell ${cell} between ` +
        `${new Date(window.fromMs).toISOString()} and ${new Date(window.toMs).toISOString()} ` +
        '(the reference window: reference_from, reference_to)',
    );
  }
  return scene;
}

/**
 * docs/protocol.md §2.5: atmospheric_correction returns the L2A scene, which ESA's Sen2Cor already corrected to
 * bottom-of-atmosphere reflectance. Nothing is recomputed; the answer says so and gives the arithmetic a
 * client needs to turn the scene's digital numbers into reflectance.
 */
function atmosphericCorrection(scene: Scene, cell: string, processingMs: number) {
  const offset = baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog);
  return {
    sceneId: scene.id,
    datetime: scene.datetime,
    h3Cell: cell,
    cloudCover: scene.cloudCover,
    processingLevel: 'L2A',
    alreadyCorrected: true,
    processingBaseline: scene.processingBaseline,
    boaOffset: offset.offset,
    bands: httpLinks(scene.bands),
    description:
      'Sentinel-2 L2A is bottom-of-atmosphere reflectance, already atmospherically corrected by ESA (Sen2Cor); ' +
      `no correction was run. Reflectance = (DN + boaOffset) / 10000 (${offset.reason}).`,
    megapixels: 0,
    cost: 0,
    processingMs,
  };
}
