import {
  bandMathStats,
  type BandMathStats,
  type BandName,
  type BandPixels,
  type ParsedExpression,
} from '../../core/band-math.js';
import { baselineOffset, isSclMasked } from '../../core/ndvi.js';
import { sentinel2Band } from '../../core/openeo/sentinel2.js';
import { imageProcess } from '../../core/step-types/image-process.js';
import type { AssetRead } from './asset-client.js';
import {
  coveringWindow,
  resampleIndex,
  windowHeight,
  windowIn,
  windowWidth,
  type Grid,
  type PixelWindow,
} from './cell-raster.js';
import { cellWindow, ImageDataError, openCog, sameGrid, type CogOptions, type OpenCog } from './cog-reader.js';
import { MAX_WINDOW_MEGAPIXELS, schemeOf } from './ndvi-pixels.js';
import type { Scene } from './stac-item.js';

/**
 * band_math by pixels (docs/protocol.md §2.5): an expression of Sentinel-2 bands (core/band-math.ts) over the cell's
 * pixels on the 10 m grid. The 20 m bands and the scene classification are brought onto it by nearest neighbour
 * as flood_classify does, the classification masks the pixel as for NDVI, and the band values carry NDVI's
 * baseline offset. There is no metadata estimate: a scene without the named bands over HTTP(S) is a failure.
 */
export interface BandMathResult {
  method: 'pixels';
  expression: string;
  /** The bands the expression reads. */
  bands: BandName[];
  sceneId: string;
  datetime: string;
  h3Cell: string;
  cloudCover: number | null;
  /** Over the valid pixels; null when none is valid. Percentiles by nearest rank. */
  mean: number | null;
  min: number | null;
  max: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
  validPixels: number;
  /** Pixels of the cell masked by the scene classification (cloud, shadow, cirrus, no-data, saturated). */
  maskedPixels: number;
  /** Pixels kept by the mask without a value (a band's DN 0, a division by zero). */
  droppedPixels: number;
  cellPixels: number;
  processingBaseline: string | null;
  offsetApplied: boolean;
  description: string;
  /** Every window read (each band, and the classification), in megapixels. */
  megapixels: number;
  cost: number;
  processingMs: number;
}

export interface BandMathOutcome {
  result: BandMathResult;
  /** The proof record payload (without record id). */
  payload: Record<string, unknown>;
}

/** One window read, as the record lists it. */
interface BandRead {
  band: BandName | 'SCL';
  asset: string;
  read: AssetRead;
  crs: string;
  window: PixelWindow;
}

export interface PixelBandMath {
  stats: BandMathStats;
  crs: string;
  window: PixelWindow;
  width: number;
  height: number;
  cellPixels: number;
  sclMaskedPixels: number;
  sclUsed: boolean;
  megapixels: number;
  reads: BandRead[];
}

const isHttp = (href: string | undefined): href is string => href !== undefined && /^https?:\/\//i.test(href);

/** Bands read at 10 m; the others are 20 m. */
const TEN_METRE = new Set<BandName>(['B02', 'B03', 'B04', 'B08']);

/** The item asset of `band` (Earth Search names, or catalogs keyed by band code) and its href. */
function bandAsset(scene: Scene, band: BandName): { asset: string; href: string } | undefined {
  const keys = sentinel2Band(band)?.assets ?? [band];
  const all = { ...scene.assets, ...scene.bands } as Record<string, string | undefined>;
  const asset = keys.find((key) => all[key] !== undefined);
  return asset === undefined ? undefined : { asset, href: all[asset]! };
}

/** The hrefs of the bands, or why the scene cannot give them (an ImageDataError: 422 imagery_unavailable). */
function bandAssets(scene: Scene, bands: readonly BandName[]): Record<string, { asset: string; href: string }> {
  const found: Record<string, { asset: string; href: string }> = {};
  const missing: string[] = [];
  for (const band of bands) {
    const asset = bandAsset(scene, band);
    if (asset === undefined) missing.push(band);
    else if (!isHttp(asset.href)) {
      throw new ImageDataError(`the ${band} asset is not reachable over HTTP(S) (${schemeOf(asset.href)} URL)`);
    } else found[band] = asset;
  }
  if (missing.length > 0) throw new ImageDataError(`scene ${scene.id} lists no ${missing.join(', ')} asset`);
  return found;
}

/** A 20 m grid subdivided into the 10 m pixels of the same tile (Sentinel-2 grids share their origin). */
const halved = (grid: Grid): Grid => ({
  ...grid,
  resX: grid.resX / 2,
  resY: grid.resY / 2,
  width: grid.width * 2,
  height: grid.height * 2,
});

const megapixelsOf = (window: PixelWindow) => (windowWidth(window) * windowHeight(window)) / 1e6;

/**
 * Reads the expression's bands over the cell and computes its statistics with `offset` (core/ndvi
 * `baselineOffset`). The output grid is the first 10 m band's, or the first band's halved when the expression
 * names only 20 m bands. Throws when the pixels cannot be read; a band's other reads are cancelled with it.
 */
export async function readBandMathPixels(
  cell: string,
  parsed: ParsedExpression,
  scene: Scene,
  offset: number,
  options: CogOptions,
): Promise<PixelBandMath> {
  const assets = bandAssets(scene, parsed.bands);
  const scl = isHttp(scene.bands.scl) ? scene.bands.scl : null;
  const abort = new AbortController();
  try {
    return await readAll(cell, parsed, assets, scl, offset, options, abort.signal);
  } catch (error) {
    abort.abort();
    throw error;
  }
}

async function readAll(
  cell: string,
  parsed: ParsedExpression,
  assets: Record<string, { asset: string; href: string }>,
  sclHref: string | null,
  offset: number,
  options: CogOptions,
  signal: AbortSignal,
): Promise<PixelBandMath> {
  const [scl, ...opened] = await Promise.all([
    sclHref === null ? null : openCog(sclHref, options, signal),
    ...parsed.bands.map((band) => openCog(assets[band]!.href, options, signal)),
  ]);
  const cogs = parsed.bands.map((band, i) => ({ band, cog: opened[i] as OpenCog }));
  const first = cogs[0]!.cog.grid;
  if (cogs.some(({ cog }) => cog.grid.epsg !== first.epsg) || (scl && scl.grid.epsg !== first.epsg)) {
    throw new ImageDataError('the bands are not in one CRS');
  }
  const fine = cogs.find(({ band }) => TEN_METRE.has(band));
  const grid = fine ? fine.cog.grid : halved(first);
  const area = cellWindow(cell, grid);
  if (!area) throw new ImageDataError('the cell lies outside the scene image');
  const { window, inside } = area;
  const fineMp = megapixelsOf(window);
  if (fineMp > MAX_WINDOW_MEGAPIXELS) {
    throw new ImageDataError(
      `the cell needs a ${fineMp.toFixed(1)} MP window, above the ${MAX_WINDOW_MEGAPIXELS} MP limit`,
    );
  }
  // Each band on the output grid is read over that window; another grid (20 m) over the window covering it,
  // each output pixel taking the pixel under its centre.
  const windowOf = (cog: OpenCog, band: string): PixelWindow => {
    if (sameGrid(cog.grid, grid)) return window;
    const covering = coveringWindow(cog.grid, windowIn(grid, window, cog.grid));
    if (!covering) throw new ImageDataError(`the ${band} band does not cover the cell`);
    return covering;
  };
  const plans = cogs.map(({ band, cog }) => ({ band, cog, window: windowOf(cog, band) }));
  const sclWindow = scl && coveringWindow(scl.grid, windowIn(grid, window, scl.grid));
  const [sclData, ...data] = await Promise.all([
    scl && sclWindow ? scl.read(sclWindow) : null,
    ...plans.map(({ cog, window: w }) => cog.read(w)),
  ]);

  const bands: Partial<Record<BandName, BandPixels>> = {};
  plans.forEach(({ band, cog, window: w }, i) => {
    bands[band] = { data: data[i]!, index: w === window ? null : resampleIndex(grid, window, cog.grid, w) };
  });
  const keep = inside.slice();
  let cellPixels = 0;
  let sclMaskedPixels = 0;
  const sclIndex = scl && sclWindow ? resampleIndex(grid, window, scl.grid, sclWindow) : null;
  for (let i = 0; i < keep.length; i++) {
    if (keep[i] !== 1) continue;
    cellPixels++;
    if (scl === null) continue;
    // A pixel takes the class of the 20 m SCL pixel under its centre; no SCL pixel → no data.
    const at = sclIndex ? sclIndex[i]! : -1;
    if (at < 0 || !sclData || isSclMasked(sclData[at]!)) {
      keep[i] = 0;
      sclMaskedPixels++;
    }
  }
  const crs = (cog: OpenCog) => `EPSG:${cog.grid.epsg}`;
  const reads: BandRead[] = plans.map(({ band, cog, window: w }) => ({
    band,
    asset: assets[band]!.asset,
    read: cog.summary(),
    crs: crs(cog),
    window: w,
  }));
  if (scl && sclWindow)
    reads.push({ band: 'SCL', asset: 'scl', read: scl.summary(), crs: crs(scl), window: sclWindow });
  return {
    stats: bandMathStats(parsed, bands, keep, offset),
    crs: `EPSG:${grid.epsg}`,
    window,
    width: windowWidth(window),
    height: windowHeight(window),
    cellPixels,
    sclMaskedPixels,
    sclUsed: scl !== null,
    megapixels: reads.reduce((sum, { window: w }) => sum + megapixelsOf(w), 0),
    reads,
  };
}

/**
 * The expression over `cell` in `scene`. Every window read is priced by the image_process step type's one price
 * function (core/step-types/image-process.ts), for an HTTP run and a step alike.
 */
export async function computeBandMath(
  scene: Scene,
  cell: string,
  expression: { text: string; parsed: ParsedExpression },
  deps: { cog: CogOptions; clock: () => number },
): Promise<BandMathOutcome> {
  const started = deps.clock();
  const offset = baselineOffset(scene.processingBaseline, scene.offsetAppliedByCatalog);
  const pixels = await readBandMathPixels(cell, expression.parsed, scene, offset.offset, deps.cog);
  const { stats } = pixels;
  const cost = imageProcess.price({ megapixels: pixels.megapixels });
  const bandList = expression.parsed.bands.join(', ');
  const description =
    `${expression.text} over ${stats.validPixels} valid pixels of the cell (${bandList || 'no band'}; 20 m bands by ` +
    `nearest neighbour onto the 10 m grid), read by HTTP range requests from a ${pixels.width}×${pixels.height} ` +
    `window in ${pixels.crs}; ` +
    (pixels.sclUsed
      ? `${pixels.sclMaskedPixels} of the cell's ${pixels.cellPixels} pixels masked by the scene classification (cloud, shadow, cirrus, no-data)`
      : 'no scene classification band readable over HTTP(S): clouds are not masked') +
    `; band values are digital numbers (reflectance × 10 000), ${offset.reason}.`;
  const result: BandMathResult = {
    method: 'pixels',
    expression: expression.text,
    bands: expression.parsed.bands,
    sceneId: scene.id,
    datetime: scene.datetime,
    h3Cell: cell,
    cloudCover: scene.cloudCover,
    mean: stats.mean,
    min: stats.min,
    max: stats.max,
    p10: stats.p10,
    p50: stats.p50,
    p90: stats.p90,
    validPixels: stats.validPixels,
    maskedPixels: pixels.sclMaskedPixels,
    droppedPixels: stats.droppedPixels,
    cellPixels: pixels.cellPixels,
    processingBaseline: scene.processingBaseline,
    offsetApplied: offset.offset !== 0,
    description,
    megapixels: pixels.megapixels,
    cost,
    processingMs: Math.max(0, deps.clock() - started),
  };
  const payload = {
    method: result.method,
    expression: expression.text,
    bands: expression.parsed.bands,
    processing_baseline: scene.processingBaseline,
    catalog_offset_applied: scene.offsetAppliedByCatalog,
    boa_offset: offset.offset,
    offset_applied: result.offsetApplied,
    raster: {
      crs: pixels.crs,
      window: pixels.window,
      width: pixels.width,
      height: pixels.height,
      cell_pixels: pixels.cellPixels,
      scl_masked_pixels: pixels.sclMaskedPixels,
      dropped_pixels: stats.droppedPixels,
      valid_pixels: stats.validPixels,
    },
    assets: pixels.reads.map(({ band, asset, read, crs, window }) => ({
      band,
      asset,
      href: read.href,
      sha256: read.sha256,
      bytes_read: read.bytesRead,
      requests: read.requests,
      ranges: read.ranges,
      crs,
      window,
    })),
    megapixels: pixels.megapixels,
    cost,
  };
  return { result, payload };
}
