import { isSclMasked, ndviStats, type NdviStats } from '../../core/ndvi.js';
import type { AssetRead } from './asset-client.js';
import { coveringWindow, resampleIndex, windowHeight, windowIn, windowWidth, type PixelWindow } from './cell-raster.js';
import { cellWindow, ImageDataError, openCog, sameGrid, type CogOptions } from './cog-reader.js';
import type { Scene } from './stac-item.js';

/** Largest 10 m window read for one request (a resolution-4 cell is ~18 MP): bounds memory and time. */
export const MAX_WINDOW_MEGAPIXELS = 16;

export interface PixelAssets {
  red: string;
  nir: string;
  /** Absent → no cloud mask (said so in the result). */
  scl: string | null;
}

const isHttp = (href: string | undefined): href is string => href !== undefined && /^https?:\/\//i.test(href);

/** `s3://` → `s3://`; anything without a plain scheme is not echoed. */
export const schemeOf = (href: string): string =>
  /^([a-z][a-z0-9+.-]{0,15}):/i.exec(href)?.[1]?.concat('://') ?? 'non-URL';

/** The band URLs a pixel read needs, or why the scene has none we can fetch (e.g. s3:// hrefs). */
export function pixelAssets(scene: Scene): PixelAssets | string {
  const { red, nir, scl } = scene.bands;
  if (!red || !nir) return 'the scene lists no red and nir band assets';
  if (!isHttp(red) || !isHttp(nir)) {
    return `the band assets are not reachable over HTTP(S) (${schemeOf(isHttp(red) ? nir : red)} URLs)`;
  }
  return { red, nir, scl: isHttp(scl) ? scl : null };
}

export interface GridWindow {
  crs: string;
  window: PixelWindow;
  width: number;
  height: number;
  megapixels: number;
}

export interface PixelNdvi {
  grid: GridWindow;
  /** Pixels of the window whose centre lies inside the cell. */
  cellPixels: number;
  /** Of those, masked by the scene classification (cloud, shadow, cirrus, no-data, saturated). */
  sclMaskedPixels: number;
  sclUsed: boolean;
  stats: NdviStats;
  assets: { red: AssetRead; nir: AssetRead; scl: AssetRead | null };
}

/**
 * Reads the red (B04) and near-infrared (B08) 10 m windows covering the cell, plus the 20 m scene
 * classification when available, and computes NDVI over the cell's unmasked pixels with `offset`
 * (core/ndvi `baselineOffset`). Throws when the pixels cannot be read; the caller falls back to metadata.
 */
export async function readNdviPixels(
  cell: string,
  assets: PixelAssets,
  offset: number,
  options: CogOptions,
): Promise<PixelNdvi> {
  // The bands are read concurrently; when one fails, the others' requests are cancelled with it.
  const abort = new AbortController();
  try {
    return await readAll(cell, assets, offset, options, abort.signal);
  } catch (error) {
    abort.abort();
    throw error;
  }
}

async function readAll(
  cell: string,
  assets: PixelAssets,
  offset: number,
  options: CogOptions,
  signal: AbortSignal,
): Promise<PixelNdvi> {
  const [red, nir, scl] = await Promise.all([
    openCog(assets.red, options, signal),
    openCog(assets.nir, options, signal),
    assets.scl === null ? null : openCog(assets.scl, options, signal),
  ]);
  if (!sameGrid(red.grid, nir.grid)) throw new ImageDataError('the red and nir bands are not on the same pixel grid');
  if (scl && scl.grid.epsg !== red.grid.epsg) {
    throw new ImageDataError('the scene classification band is in another CRS');
  }
  const area = cellWindow(cell, red.grid);
  if (!area) throw new ImageDataError('the cell lies outside the scene image');
  const { window, inside } = area;
  const megapixels = (windowWidth(window) * windowHeight(window)) / 1e6;
  if (megapixels > MAX_WINDOW_MEGAPIXELS) {
    throw new ImageDataError(
      `the cell needs a ${megapixels.toFixed(1)} MP window, above the ${MAX_WINDOW_MEGAPIXELS} MP limit`,
    );
  }

  const sclWindow = scl && coveringWindow(scl.grid, windowIn(red.grid, window, scl.grid));
  const [redData, nirData, sclData] = await Promise.all([
    red.read(window),
    nir.read(window),
    scl && sclWindow ? scl.read(sclWindow) : null,
  ]);

  const keep = inside.slice();
  let sclMaskedPixels = 0;
  if (scl) {
    // A 10 m pixel takes the class of the 20 m SCL pixel under its centre; no SCL pixel → no data.
    const index = sclWindow ? resampleIndex(red.grid, window, scl.grid, sclWindow) : null;
    for (let i = 0; i < keep.length; i++) {
      if (keep[i] !== 1) continue;
      const at = index ? index[i]! : -1;
      if (at < 0 || !sclData || isSclMasked(sclData[at]!)) {
        keep[i] = 0;
        sclMaskedPixels++;
      }
    }
  }
  let cellPixels = 0;
  for (let i = 0; i < inside.length; i++) cellPixels += inside[i]!;

  return {
    grid: {
      crs: `EPSG:${red.grid.epsg}`,
      window,
      width: windowWidth(window),
      height: windowHeight(window),
      megapixels,
    },
    cellPixels,
    sclMaskedPixels,
    sclUsed: scl !== null,
    stats: ndviStats(redData, nirData, keep, offset),
    assets: { red: red.summary(), nir: nir.summary(), scl: scl ? scl.summary() : null },
  };
}
