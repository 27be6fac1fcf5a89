/**
 * An imagery step recomputed from the bytes its record lists (docs/protocol.md §15.4). The step's own code runs
 * again (computeNdvi, computeFlood: the one function from an asset's bytes to the answer), with the COG bytes
 * served from the re-fetched, hash-checked ranges (recorded-bytes.ts) instead of the network, and the scene's
 * catalog facts (item id and date, processing baseline, catalog offset flag, cloud cover) as the record states
 * them: they are the catalog's metadata, not derived from pixels. The answer's `processingMs` is a measurement
 * of the original run and is carried over, not recomputed.
 */
import type { ImageOperation } from '../../core/imagery-operations.js';
import { computeCloudMask } from './cloud-mask.js';
import type { CogOptions } from './cog-reader.js';
import { computeFlood } from './flood.js';
import { computeNdvi } from './ndvi.js';
import { RecordedBytesClient } from './recorded-bytes.js';
import { modelNotUsed } from './run-operation.js';
import type { Scene } from './stac-item.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The re-fetched bytes of the assets, by href: [offset, bytes] pieces. */
export type FetchedBytes = ReadonlyMap<string, readonly { offset: number; bytes: Uint8Array }[]>;

export type ImageRecomputation =
  /** The step's output as recomputed (`note`: a read that fell back, for the logs of whoever investigates). */
  | { kind: 'output'; output: Obj; note?: string }
  /** The computation itself refused (it asked for bytes the record does not list, another grid …). */
  | { kind: 'failure'; failure: string }
  /** Not derived from bytes (a metadata estimate, a model's answer …): why. */
  | { kind: 'not_recomputable'; why: string };

/** Imagery operations recomputed from bytes, and how (the other operations are not derived from pixels). */
export const RECOMPUTED_OPERATIONS: Partial<
  Record<ImageOperation, (payload: Obj, output: Obj, request: Obj, bytes: FetchedBytes) => Promise<ImageRecomputation>>
> = {
  ndvi: recomputeNdvi,
  flood_classify: recomputeFlood,
  cloud_mask: recomputeCloudMask,
};

const cogFrom = (bytes: FetchedBytes): CogOptions => ({
  timeoutMs: 0,
  userAgent: '',
  origins: new Set(),
  client: (href) => new RecordedBytesClient(href, bytes.get(href) ?? []),
});

const hrefOf = (payload: Obj, band: string): string | undefined => {
  const asset = (payload.assets as unknown[]).find((a) => isObj(a) && a.band === band) as Obj | undefined;
  return typeof asset?.href === 'string' ? asset.href : undefined;
};

const text = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** A scene as the record states its catalog facts; `bands` are the recorded assets' URLs. */
function recordedScene(
  id: unknown,
  datetime: unknown,
  baseline: unknown,
  offsetByCatalog: unknown,
  cloudCover: unknown,
  bands: Scene['bands'],
  classShares: unknown,
): Scene {
  const when = text(datetime) ?? '';
  return {
    id: text(id) ?? '',
    datetime: when,
    datetimeMs: Date.parse(when),
    cloudCover: typeof cloudCover === 'number' ? cloudCover : null,
    thumbnail: null,
    bands,
    processingBaseline: text(baseline),
    offsetAppliedByCatalog: offsetByCatalog === true,
    platform: null,
    classShares: isObj(classShares) ? (classShares as Scene['classShares']) : {},
    cloudShadowPercent: null,
  };
}

/**
 * The step's output with the recomputed result in it: the output is the activity's answer (activities/imagery/
 * index.ts processImage) as the step runner keeps it, so its other fields (the record id) are the recorded ones.
 */
const stepOutput = (operation: string, cell: string, result: Obj, recorded: Obj): Obj => ({
  ...recorded,
  operation,
  h3_cell: cell,
  result: { ...result, processingMs: (recorded.result as Obj | undefined)?.processingMs },
});

async function recomputeNdvi(
  payload: Obj,
  output: Obj,
  _request: Obj,
  bytes: FetchedBytes,
): Promise<ImageRecomputation> {
  if (payload.method !== 'pixels') {
    return {
      kind: 'not_recomputable',
      why: `the NDVI was estimated from the scene's metadata, not read from pixels (${String(payload.fallback_reason)})`,
    };
  }
  const result = (output.result ?? {}) as Obj;
  const scl = hrefOf(payload, 'scl');
  const scene = recordedScene(
    payload.item_id,
    payload.item_datetime,
    payload.processing_baseline,
    payload.catalog_offset_applied,
    result.cloudCover,
    { red: hrefOf(payload, 'red'), nir: hrefOf(payload, 'nir'), ...(scl ? { scl } : {}) },
    payload.class_shares,
  );
  let fallback: string | undefined;
  const outcome = await computeNdvi(scene, String(payload.h3_cell), {
    cog: cogFrom(bytes),
    clock: () => 0,
    onFallback: (reason, detail) => (fallback = detail ?? reason),
  });
  const recomputed = stepOutput('ndvi', String(payload.h3_cell), outcome.result as unknown as Obj, output);
  return fallback === undefined
    ? { kind: 'output', output: recomputed }
    : { kind: 'output', output: recomputed, note: fallback };
}

async function recomputeFlood(
  payload: Obj,
  output: Obj,
  request: Obj,
  bytes: FetchedBytes,
): Promise<ImageRecomputation> {
  if (payload.method !== 'pixels') {
    return {
      kind: 'not_recomputable',
      why: `classified by the model ${String(payload.model)} on ${String(payload.endpoint)}`,
    };
  }
  const result = (output.result ?? {}) as Obj;
  const hasReference = typeof payload.reference_item_id === 'string';
  if (hasReference && !('reference_processing_baseline' in payload)) {
    return { kind: 'not_recomputable', why: "the record does not state the reference scene's processing baseline" };
  }
  const bands = (prefix: string) => ({
    green: hrefOf(payload, `${prefix}green`),
    swir16: hrefOf(payload, `${prefix}swir16`),
    scl: hrefOf(payload, `${prefix}scl`),
  });
  const scene = recordedScene(
    payload.item_id,
    payload.item_datetime,
    payload.processing_baseline,
    payload.catalog_offset_applied,
    result.cloud_cover,
    bands(''),
    null,
  );
  const reference = hasReference
    ? recordedScene(
        payload.reference_item_id,
        result.reference_datetime,
        payload.reference_processing_baseline,
        payload.reference_catalog_offset_applied,
        null,
        bands('reference_'),
        null,
      )
    : null;
  try {
    const outcome = await computeFlood(scene, reference, String(payload.h3_cell), {
      cog: cogFrom(bytes),
      clock: () => 0,
    });
    const computed = outcome.result as unknown as Obj;
    if (typeof request.model === 'string')
      computed.description = String(computed.description) + modelNotUsed(request.model);
    return { kind: 'output', output: stepOutput('flood_classify', String(payload.h3_cell), computed, output) };
  } catch (error) {
    return { kind: 'failure', failure: (error as Error).message };
  }
}

async function recomputeCloudMask(
  payload: Obj,
  output: Obj,
  _request: Obj,
  bytes: FetchedBytes,
): Promise<ImageRecomputation> {
  const href = hrefOf(payload, 'scl');
  if (href === undefined) {
    return {
      kind: 'not_recomputable',
      why: `no scene classification pixel was read (${String(payload.fallback_reason)}): the answer is the catalog's cloud cover`,
    };
  }
  const result = (output.result ?? {}) as Obj;
  const scene = recordedScene(
    payload.item_id,
    payload.item_datetime,
    null,
    false,
    result.cloudCover,
    { scl: href },
    null,
  );
  let failure: string | undefined;
  const outcome = await computeCloudMask(scene, String(payload.h3_cell), {
    cog: cogFrom(bytes),
    clock: () => 0,
    onReadFailure: (detail) => (failure = detail),
  });
  const recomputed = stepOutput('cloud_mask', String(payload.h3_cell), outcome.result as unknown as Obj, output);
  return failure === undefined
    ? { kind: 'output', output: recomputed }
    : { kind: 'output', output: recomputed, note: failure };
}
