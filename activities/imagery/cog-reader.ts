import { fromCustomClient, type BaseClient, type GeoTIFFImage, type TypedArray } from 'geotiff';
import { AssetClient, type AssetRead } from './asset-client.js';
import {
  cellInCrs,
  coveringWindow,
  epsgFromGeoKeys,
  insideMask,
  toPixel,
  windowHeight,
  windowWidth,
  type Grid,
  type PixelWindow,
} from './cell-raster.js';

/**
 * Windowed reads of one band of a Cloud-Optimized GeoTIFF over HTTP range requests: the header and the
 * tiles (or strips) under the window are fetched, nothing else. Only the full-resolution image (the
 * first IFD) is read.
 */
export interface CogOptions {
  timeoutMs: number;
  userAgent: string;
  /** Origins asset requests and their redirects may reach (IMAGERY_ASSET_ORIGINS and the catalog's). */
  origins: ReadonlySet<string>;
  /**
   * Where an asset's bytes come from; default the network (AssetClient). A receipt's recomputation
   * (activities/imagery/recompute.ts) serves the bytes a record lists instead, so the step and its
   * recomputation run the same code from bytes to answer.
   */
  client?: (href: string) => CogByteClient;
}

/** A geotiff byte client that accounts for what it served (the record's `assets` entry). */
export type CogByteClient = BaseClient & { summary(): AssetRead };

/**
 * A read refused for what the image is (outside the cell, too large, mismatched grids), decided here from
 * data an allowed origin served: its message may reach the public answer. Any other failure (network,
 * status, a malformed file) reaches it only as "band data unavailable" (activities/imagery/ndvi.ts).
 */
export class ImageDataError extends Error {
  override name = 'ImageDataError';
}

/** The reason a failed read gives in the public answer and record: ImageDataError's, else a generic one. */
export const publicReadFailure = (error: unknown): string =>
  error instanceof ImageDataError ? error.message : 'band data unavailable';

export interface OpenCog {
  href: string;
  grid: Grid;
  read(window: PixelWindow): Promise<TypedArray>;
  /** Hash and byte accounting of everything read from this asset so far. */
  summary(): AssetRead;
}

/** `signal` aborts every request of this asset (the caller gives up on the read as a whole). */
export async function openCog(href: string, options: CogOptions, signal?: AbortSignal): Promise<OpenCog> {
  const client = options.client?.(href) ?? new AssetClient(href, options);
  const tiff = await fromCustomClient(client, {}, signal);
  const image: GeoTIFFImage = await tiff.getImage(0);
  if (image.getSamplesPerPixel() !== 1) throw new Error(`${href}: expected one band per file`);
  const epsg = epsgFromGeoKeys(image.getGeoKeys() as Record<string, unknown> | null);
  if (typeof epsg === 'string') throw new Error(`${href}: ${epsg}`);
  const [originX, originY] = image.getOrigin() as [number, number];
  const [resX, resY] = image.getResolution() as [number, number];
  if (!(resX > 0 && resY < 0)) throw new Error(`${href}: only north-up images are supported`);
  const grid: Grid = { epsg, originX, originY, resX, resY, width: image.getWidth(), height: image.getHeight() };
  return {
    href,
    grid,
    async read(window) {
      const rasters = (await image.readRasters({
        window,
        samples: [0],
        interleave: false,
        ...(signal ? { signal } : {}),
      })) as TypedArray[];
      const band = rasters[0];
      if (!band || band.length !== windowWidth(window) * windowHeight(window)) {
        throw new Error(`${href}: the window read returned ${band?.length ?? 0} pixels`);
      }
      return band;
    },
    summary: () => client.summary(),
  };
}

export interface CellWindow {
  window: PixelWindow;
  /** 1 where the pixel centre is inside the cell, row-major over the window. */
  inside: Uint8Array;
}

/** The window of `grid` covering the cell, and which of its pixels are inside; null when they do not meet. */
export function cellWindow(cell: string, grid: Grid): CellWindow | null {
  const polygon = cellInCrs(cell, grid.epsg).map((p) => toPixel(grid, p));
  const window = coveringWindow(grid, polygon);
  return window && { window, inside: insideMask(polygon, window) };
}

/** Two grids are the same pixel lattice (red and nir must be, to pair their pixels). */
export const sameGrid = (a: Grid, b: Grid): boolean =>
  a.epsg === b.epsg &&
  a.width === b.width &&
  a.height === b.height &&
  Math.abs(a.originX - b.originX) < 1e-3 * Math.abs(a.resX) &&
  Math.abs(a.originY - b.originY) < 1e-3 * Math.abs(a.resY) &&
  Math.abs(a.resX - b.resX) < 1e-9 * Math.abs(a.resX) &&
  Math.abs(a.resY - b.resY) < 1e-9 * Math.abs(a.resY);
