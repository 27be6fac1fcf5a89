import assert from 'node:assert/strict';
import { cellArea } from 'h3-js';
import {
  cellInCrs,
  coveringWindow,
  epsgFromGeoKeys,
  insideMask,
  proj4Definition,
  resampleIndex,
  type Grid,
} from '../../../activities/imagery/cell-raster.js';
import { cellWindow } from '../../../activities/imagery/cog-reader.js';
import { ROME_CELL } from '../../helpers/cog-fixture.js';

const grid = (over: Partial<Grid> = {}): Grid => ({
  epsg: 32633,
  originX: 0,
  originY: 100,
  resX: 10,
  resY: -10,
  width: 10,
  height: 10,
  ...over,
});

describe('imagery: cell geometry on raster grids', () => {
  it('takes the EPSG code from the GeoKeys and supports WGS 84 and its UTM zones only', () => {
    assert.equal(epsgFromGeoKeys({ ProjectedCSTypeGeoKey: 32633 }), 32633);
    assert.equal(epsgFromGeoKeys({ ProjectedCSTypeGeoKey: 32733 }), 32733);
    assert.equal(epsgFromGeoKeys({ GeographicTypeGeoKey: 4326 }), 4326);
    assert.match(String(epsgFromGeoKeys({ ProjectedCSTypeGeoKey: 3857 })), /unsupported image CRS EPSG:3857/);
    assert.match(String(epsgFromGeoKeys(null)), /no EPSG code/);
    assert.match(proj4Definition(32733)!, /\+zone=33 \+south/);
  });

  it('projects the cell to UTM with its area preserved (within 1 %)', () => {
    const ring = cellInCrs(ROME_CELL, 32633);
    assert.equal(ring.length, 6);
    let twiceArea = 0;
    for (let i = 0; i < ring.length; i++) {
      const [x1, y1] = ring[i]!;
      const [x2, y2] = ring[(i + 1) % ring.length]!;
      twiceArea += x1 * y2 - x2 * y1;
    }
    const area = Math.abs(twiceArea) / 2;
    assert.ok(Math.abs(area / cellArea(ROME_CELL, 'm2') - 1) < 0.01, `${area}`);
  });

  it('covers a polygon with whole pixels, clipped to the image, or nothing when outside', () => {
    assert.deepEqual(
      coveringWindow(grid(), [
        [2.5, 3.2],
        [6.1, 3.2],
        [6.1, 8.9],
      ]),
      [2, 3, 7, 9],
    );
    assert.deepEqual(
      coveringWindow(grid(), [
        [-5, -5],
        [20, 20],
      ]),
      [0, 0, 10, 10],
    );
    assert.equal(
      coveringWindow(grid(), [
        [11, 11],
        [12, 12],
      ]),
      null,
    );
  });

  it('marks exactly the pixels whose centres lie inside the polygon', () => {
    // A right triangle with legs of 4 pixels: centres (c + 0.5, r + 0.5) with x < y inside.
    const mask = insideMask(
      [
        [0, 0],
        [0, 4],
        [4, 4],
      ],
      [0, 0, 4, 4],
    );
    assert.deepEqual([...mask], [0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0]);
  });

  it('maps each 10 m pixel to the 20 m pixel under its centre', () => {
    const fine = grid({ width: 4, height: 2 });
    const coarse = grid({ resX: 20, resY: -20, width: 2, height: 1 });
    const index = resampleIndex(fine, [0, 0, 4, 2], coarse, [0, 0, 2, 1]);
    assert.deepEqual([...index], [0, 0, 1, 1, 0, 0, 1, 1]);
    const partial = resampleIndex(fine, [0, 0, 4, 2], coarse, [1, 0, 2, 1]);
    assert.deepEqual([...partial], [-1, -1, 0, 0, -1, -1, 0, 0]);
  });

  it('finds the Rome cell in a 10 m UTM grid with about its area in pixels', () => {
    const utm = grid({ originX: 288_000, originY: 4_645_000, width: 1300, height: 1300 });
    const area = cellWindow(ROME_CELL, utm)!;
    const inside = area.inside.reduce((sum, v) => sum + v, 0);
    assert.ok(Math.abs(inside / (cellArea(ROME_CELL, 'm2') / 100) - 1) < 0.01, String(inside));
  });
});
