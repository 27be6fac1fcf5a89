/**
 * The tiles covering a cell and its neighbourhood (`GET /v1/tiles/grid`): the cells of `gridDisk(cell,
 * rings)` mapped to the tiles holding their centroids, one entry per distinct tile. Each tile names a
 * representative cell whose own tile is that tile, so a URL built from it fetches exactly that tile.
 */
import { gridDiskDistances } from 'h3-js';
import { cellTile, type TileXY } from './tile-coords.js';

export const MAX_GRID_RINGS = 10;

export interface GridTile extends TileXY {
  /** The first cell (centre first, then ring by ring) whose centroid lies in this tile. */
  cell: string;
}

/** Distinct tiles at `zoom` of the cell and its `rings` rings, nearest ring first. */
export function gridTiles(cell: string, rings: number, zoom: number): GridTile[] {
  if (!Number.isSafeInteger(rings) || rings < 0 || rings > MAX_GRID_RINGS) {
    throw new RangeError(`rings must be an integer 0..${MAX_GRID_RINGS}: ${rings}`);
  }
  const tiles = new Map<string, GridTile>();
  for (const ring of gridDiskDistances(cell, rings)) {
    // h3-js lists a ring in no documented order; sorting keeps the answer stable across versions.
    for (const member of [...ring].sort()) {
      const { x, y } = cellTile(member, zoom);
      const key = `${x}/${y}`;
      if (!tiles.has(key)) tiles.set(key, { x, y, cell: member });
    }
  }
  return [...tiles.values()];
}
