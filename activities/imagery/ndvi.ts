import {
  CLASS_NDVI,
  baselineOffset,
  classifyHealth,
  metadataEstimate,
  roundNdvi,
  type HealthStatus,
  type SurfaceClass,
} from '../../core/ndvi.js';
import { imageCost } from '../../core/pricing.js';
import type { AssetRead } from './asset-client.js';
import { publicReadFailure, type CogOptions } from './cog-reader.js';
import { pixelAssets, readNdviPixels, type PixelNdvi } from './ndvi-pixels.js';
import type { Scene } from './stac-item.js';

/** docs/protocol.md §2.5's NDVI result plus how it was made (method, baseline, offset, pixels read and their price). */
export interface NdviResult {
  sceneId: string;
  datetime: string;
  h3Cell: string;
  /** null when nothing honest can be said (no valid pixels and no classification shares). */
  meanNdvi: number | null;
  minNdvi: number | null;
  maxNdvi: number | null;
  healthStatus: HealthStatus | null;
  cloudCover: number | null;
  description: string;
  processingMs: number;
  method: 'pixels' | 'metadata';
  processingBaseline: string | null;
  /** Geofabric added BOA_ADD_OFFSET (−1000) to the digital numbers before computing reflectance. */
  offsetApplied: boolean;
  /** Pixels read (10 m window), in megapixels; 0 when none were read. */
  megapixels: number;
  cost: number;
  /** Pixels that produced an NDVI value; null for the metadata method. */
  validPixels: number | null;
}

export interface NdviOutcome {
  result: NdviResult;
  /** The proof record payload (without record id). */
  payload: Record<string, unknown>;
}

const CLASS_LABEL: Record<SurfaceClass, string> = {
  vegetation: 'vegetation',
  not_vegetated: 'not vegetated',
  water: 'water',
  snow_ice: 'snow/ice',
};

const assetEntry = (band: string, read: AssetRead) => ({
  band,
  href: read.href,
  sha256: read.sha256,
  bytes_read: read.bytesRead,
  requests: read.requests,
  ranges: read.ranges,
});

/**
 * NDVI of `cell` in `scene`: from the red and nir pixels when the band assets are readable over HTTP(S),
 * else (s3:// assets, a failed read, or a cell fully masked by cloud or no-data) the metadata estimate,
 * with the reason in `description` and in the record. Pixels read are charged even when every one of them
 * turned out masked: the read happened.
 */
export async function computeNdvi(
  scene: Scene,
  cell: string,
  deps: { cog: CogOptions; clock: () => number; onFallback?: (reason: string, detail?: string) => void },
): Promise<NdviOutcome> {
  const started = deps.clock();
  const offset = baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog);
  const assets = pixelAssets(scene);
  let pixels: PixelNdvi | null = null;
  let fallback: string | null = typeof assets === 'string' ? assets : null;
  let detail: string | undefined;
  if (typeof assets !== 'string') {
    try {
      pixels = await readNdviPixels(cell, assets, offset.offset, deps.cog);
      if (pixels.stats.validPixels === 0) {
        fallback =
          pixels.cellPixels === 0
            ? 'no pixel centre of the scene image falls inside the cell'
            : `every one of the cell's ${pixels.cellPixels} pixels is masked (cloud, shadow, cirrus or no-data)`;
      }
    } catch (error) {
      // The answer and the record are public: what failed and where (a status, a refused origin) is logged only.
      detail = (error as Error).message;
      fallback = `reading the band pixels failed: ${publicReadFailure(error)}`;
    }
  }
  if (fallback !== null) deps.onFallback?.(fallback, detail);

  const megapixels = pixels?.grid.megapixels ?? 0;
  const cost = imageCost(megapixels);
  const usePixels = pixels !== null && fallback === null;
  const estimate = usePixels ? null : metadataEstimate(scene.classShares);
  const stats = usePixels ? pixels!.stats : null;
  const mean = stats?.mean ?? estimate?.mean ?? null;
  const min = stats?.min ?? estimate?.min ?? null;
  const max = stats?.max ?? estimate?.max ?? null;
  const meanNdvi = mean === null ? null : roundNdvi(mean);

  let description: string;
  if (usePixels) {
    const p = pixels!;
    description =
      `NDVI over ${p.stats.validPixels} valid pixels of the cell (red B04, near-infrared B08), read by HTTP ` +
      `range requests from a ${p.grid.width}×${p.grid.height} window in ${p.grid.crs}; ` +
      (p.sclUsed
        ? `${p.sclMaskedPixels} of the cell's ${p.cellPixels} pixels masked by the scene classification (cloud, shadow, cirrus, no-data)`
        : 'no scene classification band readable over HTTP(S): clouds are not masked') +
      `; ${offset.reason}.`;
  } else {
    const why = `Pixels not used: ${fallback}.`;
    description = estimate
      ? `Estimate from scene metadata: the scene-wide (not per-cell) classification shares ` +
        (Object.keys(CLASS_NDVI) as SurfaceClass[])
          .map((k) => `${CLASS_LABEL[k]} ${estimate.shares[k]}% × ${CLASS_NDVI[k]}`)
          .join(', ') +
        `, averaged over the non-cloud surface classes. ${why}`
      : `No estimate: the scene metadata carries no surface classification shares (s2:*_percentage). ${why}`;
  }

  const result: NdviResult = {
    sceneId: scene.id,
    datetime: scene.datetime,
    h3Cell: cell,
    meanNdvi,
    minNdvi: min === null ? null : roundNdvi(min),
    maxNdvi: max === null ? null : roundNdvi(max),
    healthStatus: meanNdvi === null ? null : classifyHealth(meanNdvi),
    cloudCover: scene.cloudCover,
    description,
    processingMs: Math.max(0, deps.clock() - started),
    method: usePixels ? 'pixels' : 'metadata',
    processingBaseline: scene.processingBaseline,
    offsetApplied: usePixels && offset.offset !== 0,
    megapixels,
    cost,
    validPixels: usePixels ? pixels!.stats.validPixels : null,
  };
  const payload = {
    method: result.method,
    fallback_reason: fallback,
    processing_baseline: scene.processingBaseline,
    catalog_offset_applied: scene.offsetAppliedByCatalog,
    boa_offset: offset.offset,
    offset_applied: result.offsetApplied,
    raster: pixels && {
      crs: pixels.grid.crs,
      window: pixels.grid.window,
      width: pixels.grid.width,
      height: pixels.grid.height,
      cell_pixels: pixels.cellPixels,
      scl_masked_pixels: pixels.sclMaskedPixels,
      dropped_pixels: pixels.stats.droppedPixels,
      valid_pixels: pixels.stats.validPixels,
    },
    assets: pixels
      ? [
          assetEntry('red', pixels.assets.red),
          assetEntry('nir', pixels.assets.nir),
          ...(pixels.assets.scl ? [assetEntry('scl', pixels.assets.scl)] : []),
        ]
      : [],
    class_shares: estimate?.shares ?? null,
    megapixels,
    cost,
  };
  return { result, payload };
}
