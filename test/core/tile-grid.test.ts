import assert from 'node:assert/strict';
import { gridDisk } from 'h3-js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { cellTile } from '../../core/tile-coords.js';
import { gridTiles } from '../../core/tile-grid.js';

describe('tile grid (cells and rings → distinct tiles)', () => {
  it('is the cell’s own tile for rings 0', () => {
    const [only, ...rest] = gridTiles(DEFAULT_JOB_CELL, 0, 12);
    assert.deepEqual(rest, []);
    assert.deepEqual(only, { ...cellTile(DEFAULT_JOB_CELL, 12), cell: DEFAULT_JOB_CELL });
  });

  it('lists each tile once, the centre tile first, with a cell that maps to it', () => {
    for (const [rings, zoom] of [
      [1, 14],
      [3, 9],
      [10, 12],
    ] as const) {
      const tiles = gridTiles(DEFAULT_JOB_CELL, rings, zoom);
      const keys = tiles.map((t) => `${t.x}/${t.y}`);
      assert.equal(new Set(keys).size, keys.length);
      const expected = new Set(
        gridDisk(DEFAULT_JOB_CELL, rings).map((c) => Object.values(cellTile(c, zoom)).join('/')),
      );
      assert.deepEqual(new Set(keys), expected);
      assert.equal(tiles[0]!.cell, DEFAULT_JOB_CELL);
      for (const t of tiles) assert.deepEqual(cellTile(t.cell, zoom), { x: t.x, y: t.y });
    }
  });

  it('collapses a neighbourhood into one tile at low zoom', () => {
    assert.equal(gridTiles(DEFAULT_JOB_CELL, 2, 3).length, 1);
  });

  it('refuses rings outside 0..10', () => {
    assert.throws(() => gridTiles(DEFAULT_JOB_CELL, 11, 5), RangeError);
    assert.throws(() => gridTiles(DEFAULT_JOB_CELL, -1, 5), RangeError);
    assert.throws(() => gridTiles(DEFAULT_JOB_CELL, 1.5, 5), RangeError);
  });
});
