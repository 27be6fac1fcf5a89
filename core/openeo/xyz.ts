/**
 * XYZ map tiles of a one-band openEO result (docs/protocol.md §16.10): the slippy-map tile's extent, the colour
 * maps, and the painting of a raster (the result's UTM grid) onto the tile's 256 × 256 Web Mercator pixels by
 * nearest neighbour. Pure: the service (api/openeo/services.ts) loads the raster and encodes the PNG.
 */
import type { Box } from './extent.js';
import { transformer } from './crs.js';

export const TILE_SIZE = 256;
/**
 * Zoom bounds of an XYZ service. Below 12 a tile spans more than about 10 km, a million 10 m pixels per band and
 * date: a map client zoomed out would make each tile read a region. Above 18 a 10 m pixel covers more than 16
 * tile pixels: nothing more to see.
 */
export const XYZ_MIN_ZOOM = 12;
export const XYZ_MAX_ZOOM = 18;

export const COLOR_MAPS = ['RdYlGn', 'water', 'greys'] as const;
export type ColorMap = (typeof COLOR_MAPS)[number];

export interface TileAddress {
  z: number;
  x: number;
  y: number;
}

/** Longitude and latitude (WGS 84) of a point of the Web Mercator tile grid at zoom z, in tile units. */
function lngLat(z: number, tx: number, ty: number): [number, number] {
  const n = 2 ** z;
  const lng = (tx / n) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * ty) / n))) * 180) / Math.PI;
  return [lng, lat];
}

/** The tile's WGS 84 box [west, south, east, north]. */
export function tileBox({ z, x, y }: TileAddress): Box {
  const [west, north] = lngLat(z, x, y);
  const [east, south] = lngLat(z, x + 1, y + 1);
  return [west, south, east, north];
}

/** The overlap of two WGS 84 boxes, or null when they do not overlap. */
export function intersectBoxes(a: Box, b: Box): Box | null {
  const box: Box = [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  return box[0] < box[2] && box[1] < box[3] ? box : null;
}

/** ColorBrewer RdYlGn (11 classes), red at the low end. */
const RD_YL_GN: readonly (readonly [number, number, number])[] = [
  [165, 0, 38],
  [215, 48, 39],
  [244, 109, 67],
  [253, 174, 97],
  [254, 224, 139],
  [255, 255, 191],
  [217, 239, 139],
  [166, 217, 106],
  [102, 189, 99],
  [26, 152, 80],
  [0, 104, 55],
];
/** The water mask's two colours: land (value below the range's middle) and water. */
const LAND: readonly [number, number, number] = [246, 232, 195];
const WATER: readonly [number, number, number] = [33, 102, 172];

/**
 * The RGBA of a value: RdYlGn interpolated over [min, max] (values beyond are clamped), `water` two colours split
 * at the middle of the range, `greys` black to white; no-data (NaN, ±Infinity) transparent.
 */
export function colour(
  value: number,
  map: ColorMap,
  [min, max]: readonly [number, number],
): [number, number, number, number] {
  if (!Number.isFinite(value)) return [0, 0, 0, 0];
  const t = Math.min(1, Math.max(0, (value - min) / (max - min)));
  if (map === 'water') return [...(t >= 0.5 ? WATER : LAND), 255];
  if (map === 'greys') {
    const g = Math.round(t * 255);
    return [g, g, g, 255];
  }
  const at = t * (RD_YL_GN.length - 1);
  const i = Math.min(RD_YL_GN.length - 2, Math.floor(at));
  const f = at - i;
  const [a, b] = [RD_YL_GN[i]!, RD_YL_GN[i + 1]!];
  return [0, 1, 2].map((k) => Math.round(a[k]! + (b[k]! - a[k]!) * f)).concat(255) as [number, number, number, number];
}

/** A north-up raster: the grid of rasterPlanes (core/openeo/output.ts) with its one plane. */
export interface TileRaster {
  width: number;
  height: number;
  plane: Float64Array;
  epsg: number;
  originX: number;
  originY: number;
  pixelWidth: number;
  pixelHeight: number;
}

/**
 * The tile's RGBA pixels (TILE_SIZE² × 4): each pixel takes the colour of the raster pixel under its centre;
 * transparent where the raster does not reach or holds no-data.
 */
export function paintTile(
  tile: TileAddress,
  raster: TileRaster,
  map: ColorMap,
  range: readonly [number, number],
): Buffer {
  const rgba = Buffer.alloc(TILE_SIZE * TILE_SIZE * 4);
  const toRaster = transformer(4326, raster.epsg);
  for (let j = 0; j < TILE_SIZE; j++) {
    for (let i = 0; i < TILE_SIZE; i++) {
      const [lng, lat] = lngLat(tile.z, tile.x + (i + 0.5) / TILE_SIZE, tile.y + (j + 0.5) / TILE_SIZE);
      const [px, py] = toRaster([lng, lat]);
      const c = Math.floor((px - raster.originX) / raster.pixelWidth);
      const r = Math.floor((raster.originY - py) / raster.pixelHeight);
      if (c < 0 || r < 0 || c >= raster.width || r >= raster.height) continue;
      const at = (j * TILE_SIZE + i) * 4;
      const [red, green, blue, alpha] = colour(raster.plane[r * raster.width + c]!, map, range);
      rgba[at] = red;
      rgba[at + 1] = green;
      rgba[at + 2] = blue;
      rgba[at + 3] = alpha;
    }
  }
  return rgba;
}
