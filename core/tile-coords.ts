/**
 * Slippy-map (XYZ, Web Mercator, EPSG:3857) tile arithmetic: which tile holds a point, a tile's bounds,
 * and where a point falls in a tile's pixels. Pure: the tile proxy, the grid and the annotator share it, so
 * a tile a client is sent for a cell is always the tile the annotator draws on.
 */
import { cellCentroid } from './h3-cell.js';

/** Web Mercator stops here: beyond ±85.0511° the projection's y leaves the square world map. */
export const MAX_MERCATOR_LAT = 85.0511287798066;
/** The pixel size XYZ coordinates refer to; 512 px (retina) tiles scale by their width / 256. */
export const TILE_SIZE = 256;

export interface TileXY {
  x: number;
  y: number;
}

export interface TileBounds {
  west: number;
  south: number;
  east: number;
  north: number;
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * The point's position in tile units at `zoom`: integer part = tile, fraction = place within it.
 * Latitudes past the Mercator limit clamp to the top or bottom row; longitude 180 is the last column.
 */
export function worldPosition(lat: number, lng: number, zoom: number): TileXY {
  const n = 2 ** zoom;
  const phi = (clamp(lat, -MAX_MERCATOR_LAT, MAX_MERCATOR_LAT) * Math.PI) / 180;
  const x = ((lng + 180) / 360) * n;
  const y = ((1 - Math.asinh(Math.tan(phi)) / Math.PI) / 2) * n;
  return { x, y };
}

/** The tile at `zoom` that contains the point. */
export function tileAt(lat: number, lng: number, zoom: number): TileXY {
  const n = 2 ** zoom;
  const { x, y } = worldPosition(lat, lng, zoom);
  return { x: clamp(Math.floor(x), 0, n - 1), y: clamp(Math.floor(y), 0, n - 1) };
}

/** The tile at `zoom` that contains the cell's centroid (docs/protocol.md §2.4: the tile of a cell). */
export function cellTile(cell: string, zoom: number): TileXY {
  const { lat, lng } = cellCentroid(cell);
  return tileAt(lat, lng, zoom);
}

/** The tile's edges in degrees. */
export function tileBounds(x: number, y: number, zoom: number): TileBounds {
  const n = 2 ** zoom;
  const lngOf = (tx: number) => (tx / n) * 360 - 180;
  const latOf = (ty: number) => (Math.atan(Math.sinh(Math.PI * (1 - (2 * ty) / n))) * 180) / Math.PI;
  return { west: lngOf(x), east: lngOf(x + 1), north: latOf(y), south: latOf(y + 1) };
}

/**
 * The pixel of the point within tile (x, y, zoom) of `size` pixels, or null when the point lies outside
 * that tile. Pixels are integers 0..size-1, origin top-left, as image libraries address them.
 */
export function pixelInTile(
  lat: number,
  lng: number,
  tile: TileXY & { zoom: number },
  size: number = TILE_SIZE,
): TileXY | null {
  if (Math.abs(lat) > MAX_MERCATOR_LAT) return null;
  const world = worldPosition(lat, lng, tile.zoom);
  const px = Math.floor((world.x - tile.x) * size);
  const py = Math.floor((world.y - tile.y) * size);
  return px >= 0 && px < size && py >= 0 && py < size ? { x: px, y: py } : null;
}
