import { cellToBoundary } from 'h3-js';
import proj4 from 'proj4';

/**
 * The geometry between an H3 cell and a north-up raster grid: the image CRS from its GeoKeys, the cell
 * polygon in pixel space, the pixel window covering it and the mask of pixels whose centres lie inside.
 *
 * Supported CRSs: WGS 84 (EPSG:4326) and WGS 84 / UTM (EPSG:326xx north, 327xx south), which covers
 * Sentinel-2 L2A. The cell's edges are drawn straight between its projected vertices; at the resolutions a
 * pixel read accepts, the gap to H3's true edges is far below a 10 m pixel. Cells crossing the antimeridian
 * are not handled in EPSG:4326 grids.
 */

export interface Grid {
  /** e.g. 32633 */
  epsg: number;
  /** Upper-left corner of pixel (0, 0) in CRS units. */
  originX: number;
  originY: number;
  /** Pixel size in CRS units; resY is negative for north-up images. */
  resX: number;
  resY: number;
  width: number;
  height: number;
}

/** [x0, y0, x1, y1) in pixels, the order geotiff's `readRasters({ window })` takes. */
export type PixelWindow = [number, number, number, number];

export const windowWidth = (w: PixelWindow) => w[2] - w[0];
export const windowHeight = (w: PixelWindow) => w[3] - w[1];

/** The EPSG code from a GeoTIFF's GeoKeys, or a reason it has none we can use. */
export function epsgFromGeoKeys(keys: Record<string, unknown> | null): number | string {
  const projected = keys?.ProjectedCSTypeGeoKey;
  const geographic = keys?.GeographicTypeGeoKey;
  const code = typeof projected === 'number' ? projected : typeof geographic === 'number' ? geographic : undefined;
  if (code === undefined) return 'the image has no EPSG code in its GeoKeys';
  return proj4Definition(code) === null ? `unsupported image CRS EPSG:${code}` : code;
}

/** proj4 definition of a supported EPSG code, written out so no global registry is involved. */
export function proj4Definition(epsg: number): string | null {
  if (epsg === 4326) return '+proj=longlat +datum=WGS84 +no_defs';
  if (epsg >= 32601 && epsg <= 32660) return `+proj=utm +zone=${epsg - 32600} +datum=WGS84 +units=m +no_defs`;
  if (epsg >= 32701 && epsg <= 32760) return `+proj=utm +zone=${epsg - 32700} +south +datum=WGS84 +units=m +no_defs`;
  return null;
}

/** The cell's vertices (open ring) in the CRS of `epsg`, as [x, y]. */
export function cellInCrs(cell: string, epsg: number): [number, number][] {
  const def = proj4Definition(epsg);
  if (def === null) throw new RangeError(`unsupported CRS EPSG:${epsg}`);
  const ring = cellToBoundary(cell, true).slice(0, -1) as [number, number][];
  if (epsg === 4326) return ring;
  const converter = proj4('+proj=longlat +datum=WGS84 +no_defs', def);
  return ring.map((p) => converter.forward(p) as [number, number]);
}

/** CRS coordinates → fractional pixel coordinates of `grid`. */
export const toPixel = (grid: Grid, [x, y]: [number, number]): [number, number] => [
  (x - grid.originX) / grid.resX,
  (y - grid.originY) / grid.resY,
];

/** The smallest window of whole pixels covering `polygon` (pixel space), clipped to the image; null if outside. */
export function coveringWindow(grid: Grid, polygon: readonly [number, number][]): PixelWindow | null {
  const xs = polygon.map((p) => p[0]);
  const ys = polygon.map((p) => p[1]);
  const x0 = Math.max(0, Math.floor(Math.min(...xs)));
  const y0 = Math.max(0, Math.floor(Math.min(...ys)));
  const x1 = Math.min(grid.width, Math.ceil(Math.max(...xs)));
  const y1 = Math.min(grid.height, Math.ceil(Math.max(...ys)));
  return x1 > x0 && y1 > y0 ? [x0, y0, x1, y1] : null;
}

/**
 * 1 for each pixel of `window` whose centre lies inside `polygon` (pixel space, even-odd rule), row-major.
 * A scanline fill: per row, the polygon's edge crossings at the pixel-centre line bound the inside spans.
 */
export function insideMask(polygon: readonly [number, number][], window: PixelWindow): Uint8Array {
  const [x0, y0, x1, y1] = window;
  const width = x1 - x0;
  const mask = new Uint8Array(width * (y1 - y0));
  const crossings: number[] = [];
  for (let row = y0; row < y1; row++) {
    const yc = row + 0.5;
    crossings.length = 0;
    for (let i = 0; i < polygon.length; i++) {
      const [ax, ay] = polygon[i]!;
      const [bx, by] = polygon[(i + 1) % polygon.length]!;
      if (ay <= yc !== by <= yc) crossings.push(ax + ((yc - ay) * (bx - ax)) / (by - ay));
    }
    crossings.sort((a, b) => a - b);
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      // Pixel centres c + 0.5 in [left, right).
      const from = Math.max(x0, Math.ceil(crossings[k]! - 0.5));
      const to = Math.min(x1, Math.ceil(crossings[k + 1]! - 0.5));
      if (to > from) mask.fill(1, (row - y0) * width + (from - x0), (row - y0) * width + (to - x0));
    }
  }
  return mask;
}

/**
 * For a window of `fine` pixels, the index into a window of `coarse` pixels holding each fine pixel's
 * centre (e.g. 10 m red pixels → 20 m SCL pixels), or −1 where the coarse window does not cover it.
 */
export function resampleIndex(
  fine: Grid,
  fineWindow: PixelWindow,
  coarse: Grid,
  coarseWindow: PixelWindow,
): Int32Array {
  const [fx0, fy0, fx1, fy1] = fineWindow;
  const [cx0, cy0, cx1, cy1] = coarseWindow;
  const coarseWidth = cx1 - cx0;
  const cols = new Int32Array(fx1 - fx0);
  for (let c = fx0; c < fx1; c++) {
    const x = fine.originX + (c + 0.5) * fine.resX;
    const cc = Math.floor((x - coarse.originX) / coarse.resX);
    cols[c - fx0] = cc >= cx0 && cc < cx1 ? cc - cx0 : -1;
  }
  const index = new Int32Array(cols.length * (fy1 - fy0));
  for (let r = fy0; r < fy1; r++) {
    const y = fine.originY + (r + 0.5) * fine.resY;
    const cr = Math.floor((y - coarse.originY) / coarse.resY);
    const rowBase = cr >= cy0 && cr < cy1 ? (cr - cy0) * coarseWidth : -1;
    const out = (r - fy0) * cols.length;
    for (let i = 0; i < cols.length; i++) index[out + i] = rowBase < 0 || cols[i]! < 0 ? -1 : rowBase + cols[i]!;
  }
  return index;
}

/** The CRS extent of a pixel window, as the four corners in pixel space of another grid (same CRS). */
export function windowIn(from: Grid, window: PixelWindow, to: Grid): [number, number][] {
  const corner = (c: number, r: number): [number, number] =>
    toPixel(to, [from.originX + c * from.resX, from.originY + r * from.resY]);
  return [
    corner(window[0], window[1]),
    corner(window[2], window[1]),
    corner(window[2], window[3]),
    corner(window[0], window[3]),
  ];
}
