import { floodChange, roundFraction, waterMask, type WaterMask } from '../../core/flood.js';
import { baselineOffset, isSclMasked } from '../../core/ndvi.js';
import { imageCost } from '../../core/pricing.js';
import type { AssetRead } from './asset-client.js';
import { coveringWindow, resampleIndex, windowHeight, windowIn, windowWidth, type PixelWindow } from './cell-raster.js';
import { cellWindow, ImageDataError, openCog, sameGrid, type CogOptions, type OpenCog } from './cog-reader.js';
import { MAX_WINDOW_MEGAPIXELS, schemeOf } from './ndvi-pixels.js';
import type { Scene } from './stac-item.js';

/**
 * flood_classify by pixels (docs/protocol.md §2.5): MNDWI water over the cell from B03 (green, 10 m) and B11
 * (swir16, 20 m, nearest neighbour onto the 10 m grid), masked by the scene classification like NDVI; with a
 * reference scene, the share of pixels valid in both that are water now and were dry then. Unlike NDVI there
 * is no metadata fallback: scene-wide class shares say nothing about new water in one cell, so a scene whose
 * bands cannot be read is a failure (`imagery_unavailable`), not an estimate.
 */
export interface FloodResult {
  method: 'mndwi';
  scene_id: string;
  datetime: string;
  h3_cell: string;
  cloud_cover: number | null;
  /** Water pixels / valid pixels of the cell; null when no pixel is valid. */
  water_fraction: number | null;
  /** Pixels of the cell that got a water class. */
  valid_pixels: number;
  /** Pixels of the cell masked by the scene classification (cloud, shadow, cirrus, no-data, saturated). */
  masked_pixels: number;
  /** Pixels kept by the mask but without data in a band (DN 0) or with no index (reflectances sum to 0). */
  dropped_pixels: number;
  cell_pixels: number;
  reference_scene_id: string | null;
  reference_datetime: string | null;
  /** New water / pixels valid in both scenes; null without a reference (or with no pixel valid in both). */
  flood_fraction: number | null;
  compared_pixels: number | null;
  processing_baseline: string | null;
  offset_applied: boolean;
  description: string;
  megapixels: number;
  cost: number;
  processingMs: number;
}

interface SceneWater {
  mask: WaterMask;
  cellPixels: number;
  sclMaskedPixels: number;
  offsetApplied: boolean;
  offsetReason: string;
  gridKey: OpenCog['grid'];
  window: PixelWindow;
  crs: string;
  /** 10 m window + 20 m windows read, in megapixels. */
  megapixels: number;
  assets: { band: string; read: AssetRead }[];
}

const isHttp = (href: string | undefined): href is string => href !== undefined && /^https?:\/\//i.test(href);

/** The green, swir16 and scl URLs, or why the scene has none we can read. */
function floodAssets(scene: Scene): { green: string; swir: string; scl: string } {
  const { green, swir16: swir, scl } = scene.bands;
  if (!green || !swir || !scl) {
    throw new ImageDataError(`scene ${scene.id} lists no green (B03), swir16 (B11) and scl assets`);
  }
  for (const href of [green, swir, scl]) {
    if (!isHttp(href)) throw new ImageDataError(`the band assets are not reachable over HTTP(S) (${schemeOf(href)})`);
  }
  return { green, swir, scl };
}

async function readSceneWater(scene: Scene, cell: string, options: CogOptions, signal: AbortSignal) {
  const hrefs = floodAssets(scene);
  const offset = baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog);
  const [green, swir, scl] = await Promise.all([
    openCog(hrefs.green, options, signal),
    openCog(hrefs.swir, options, signal),
    openCog(hrefs.scl, options, signal),
  ]);
  if (swir.grid.epsg !== green.grid.epsg || scl.grid.epsg !== green.grid.epsg) {
    throw new ImageDataError('the green, swir16 and scl bands are not in one CRS');
  }
  const area = cellWindow(cell, green.grid);
  if (!area) throw new ImageDataError('the cell lies outside the scene image');
  const { window, inside } = area;
  const fineMp = (windowWidth(window) * windowHeight(window)) / 1e6;
  if (fineMp > MAX_WINDOW_MEGAPIXELS) {
    throw new ImageDataError(
      `the cell needs a ${fineMp.toFixed(1)} MP window, above the ${MAX_WINDOW_MEGAPIXELS} MP limit`,
    );
  }
  const swirWindow = coveringWindow(swir.grid, windowIn(green.grid, window, swir.grid));
  const sclWindow = coveringWindow(scl.grid, windowIn(green.grid, window, scl.grid));
  if (!swirWindow || !sclWindow) throw new ImageDataError('the swir16 or scl band does not cover the cell');
  const [greenData, swirData, sclData] = await Promise.all([
    green.read(window),
    swir.read(swirWindow),
    scl.read(sclWindow),
  ]);
  // Nearest neighbour: each 10 m pixel takes the 20 m pixel under its centre, for B11 and for SCL alike.
  const swirIndex = resampleIndex(green.grid, window, swir.grid, swirWindow);
  const sclIndex = resampleIndex(green.grid, window, scl.grid, sclWindow);
  const keep = inside.slice();
  let cellPixels = 0;
  let sclMaskedPixels = 0;
  for (let i = 0; i < keep.length; i++) {
    if (keep[i] !== 1) continue;
    cellPixels++;
    const at = sclIndex[i]!;
    if (at < 0 || isSclMasked(sclData[at]!)) {
      keep[i] = 0;
      sclMaskedPixels++;
    }
  }
  const coarseMp = (w: PixelWindow) => (windowWidth(w) * windowHeight(w)) / 1e6;
  return {
    mask: waterMask(greenData, swirData, swirIndex, keep, offset.offset),
    cellPixels,
    sclMaskedPixels,
    offsetApplied: offset.offset !== 0,
    offsetReason: offset.reason,
    gridKey: green.grid,
    window,
    crs: `EPSG:${green.grid.epsg}`,
    megapixels: fineMp + coarseMp(swirWindow) + coarseMp(sclWindow),
    assets: [
      { band: 'green', read: green.summary() },
      { band: 'swir16', read: swir.summary() },
      { band: 'scl', read: scl.summary() },
    ],
  } satisfies SceneWater;
}

/** Reads one scene's water, cancelling its other band reads when one fails. */
async function sceneWater(scene: Scene, cell: string, options: CogOptions): Promise<SceneWater> {
  const abort = new AbortController();
  try {
    return await readSceneWater(scene, cell, options, abort.signal);
  } catch (error) {
    abort.abort();
    throw error;
  }
}

const assetEntry = (sceneId: string, band: string, read: AssetRead) => ({
  band,
  scene_id: sceneId,
  href: read.href,
  sha256: read.sha256,
  bytes_read: read.bytesRead,
  requests: read.requests,
  ranges: read.ranges,
});

/**
 * Water (and, with `reference`, new water) of `cell`. Both scenes must share the 10 m pixel grid (the same
 * Sentinel-2 tile), since new water is judged pixel by pixel. Every pixel read is priced (green, swir16 and
 * scl windows of each scene), as NDVI prices its reads.
 */
export async function computeFlood(
  scene: Scene,
  reference: Scene | null,
  cell: string,
  deps: { cog: CogOptions; clock: () => number },
): Promise<{ result: FloodResult; payload: Record<string, unknown> }> {
  const started = deps.clock();
  const [now, then] = await Promise.all([
    sceneWater(scene, cell, deps.cog),
    reference ? sceneWater(reference, cell, deps.cog) : null,
  ]);
  if (then && (!sameGrid(now.gridKey, then.gridKey) || now.window.join() !== then.window.join())) {
    throw new ImageDataError(
      `the reference scene ${reference!.id} is not on the pixel grid of ${scene.id}: new water needs the same tile`,
    );
  }
  const change = then ? floodChange(now.mask.classes, then.mask.classes) : null;
  const megapixels = now.megapixels + (then?.megapixels ?? 0);
  const cost = imageCost(megapixels);
  const waterFraction = now.mask.validPixels === 0 ? null : roundFraction(now.mask.waterPixels / now.mask.validPixels);
  const floodFraction = change?.floodFraction == null ? null : roundFraction(change.floodFraction);
  const description =
    `Water by MNDWI = (B03 − B11) / (B03 + B11) > 0 over ${now.mask.validPixels} valid 10 m pixels of the cell ` +
    `(B11 20 m, nearest neighbour); ${now.sclMaskedPixels} of the cell's ${now.cellPixels} pixels masked by the ` +
    `scene classification (cloud, shadow, cirrus, no-data); ${now.offsetReason}.` +
    (change && reference
      ? ` New water against ${reference.id}: ${change.newWaterPixels} of ${change.comparedPixels} pixels valid in both scenes.`
      : ' No reference window: flood_fraction is null.');
  const result: FloodResult = {
    method: 'mndwi',
    scene_id: scene.id,
    datetime: scene.datetime,
    h3_cell: cell,
    cloud_cover: scene.cloudCover,
    water_fraction: waterFraction,
    valid_pixels: now.mask.validPixels,
    masked_pixels: now.sclMaskedPixels,
    dropped_pixels: now.mask.droppedPixels,
    cell_pixels: now.cellPixels,
    reference_scene_id: reference?.id ?? null,
    reference_datetime: reference?.datetime ?? null,
    flood_fraction: floodFraction,
    compared_pixels: change?.comparedPixels ?? null,
    processing_baseline: scene.processingBaseline,
    offset_applied: now.offsetApplied,
    description,
    megapixels,
    cost,
    processingMs: Math.max(0, deps.clock() - started),
  };
  const payload = {
    method: 'pixels',
    processing_baseline: scene.processingBaseline,
    catalog_offset_applied: scene.offsetAppliedByCatalog,
    offset_applied: now.offsetApplied,
    reference_item_id: reference?.id ?? null,
    // The reference scene's own offset inputs: a receipt's recomputation needs them (docs/protocol.md §15.4).
    reference_processing_baseline: reference?.processingBaseline ?? null,
    reference_catalog_offset_applied: reference?.offsetAppliedByCatalog ?? null,
    raster: {
      crs: now.crs,
      window: now.window,
      cell_pixels: now.cellPixels,
      scl_masked_pixels: now.sclMaskedPixels,
      valid_pixels: now.mask.validPixels,
      water_pixels: now.mask.waterPixels,
      compared_pixels: change?.comparedPixels ?? null,
      new_water_pixels: change?.newWaterPixels ?? null,
    },
    assets: [
      ...now.assets.map((a) => assetEntry(scene.id, a.band, a.read)),
      ...(then ? then.assets.map((a) => assetEntry(reference!.id, `reference_${a.band}`, a.read)) : []),
    ],
    megapixels,
    cost,
  };
  return { result, payload };
}
