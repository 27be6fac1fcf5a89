import assert from 'node:assert/strict';
import { cellToLatLng, latLngToCell } from 'h3-js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { cellTile, pixelInTile, tileAt, tileBounds, MAX_MERCATOR_LAT } from '../../core/tile-coords.js';

/** The OSM wiki's formula (log(tan + sec)), written independently of the module's asinh form. */
function osmWikiTile(lat: number, lng: number, zoom: number) {
  const n = 2 ** zoom;
  const rad = (lat * Math.PI) / 180;
  return {
    x: Math.floor(((lng + 180) / 360) * n),
    y: Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n),
  };
}

describe('tile coordinates (slippy map, Web Mercator)', () => {
  it('puts Rome in OSM tile 10/547/380', () => {
    assert.deepEqual(tileAt(41.9028, 12.4964, 10), { x: 547, y: 380 });
    assert.deepEqual(osmWikiTile(41.9028, 12.4964, 10), { x: 547, y: 380 });
  });

  it('agrees with the OSM wiki formula over many points and zooms', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    for (let i = 0; i < 2000; i++) {
      const lat = (random() * 2 - 1) * 85;
      const lng = (random() * 2 - 1) * 179.999;
      const zoom = Math.floor(random() * 21);
      assert.deepEqual(tileAt(lat, lng, zoom), osmWikiTile(lat, lng, zoom), `${lat},${lng} z${zoom}`);
    }
  });

  it("takes a cell's tile from its centroid", () => {
    const [lat, lng] = cellToLatLng(DEFAULT_JOB_CELL);
    assert.deepEqual(cellTile(DEFAULT_JOB_CELL, 10), osmWikiTile(lat, lng, 10));
    assert.deepEqual(cellTile(DEFAULT_JOB_CELL, 0), { x: 0, y: 0 });
    const colosseum = latLngToCell(41.8902, 12.4922, 12);
    assert.deepEqual(cellTile(colosseum, 14), { x: 8760, y: 6088 });
  });

  it('clamps the poles and the antimeridian into the tile grid', () => {
    assert.deepEqual(tileAt(89.9, 0, 3), { x: 4, y: 0 });
    assert.deepEqual(tileAt(-89.9, 0, 3), { x: 4, y: 7 });
    assert.deepEqual(tileAt(0, 180, 3), { x: 7, y: 4 });
    assert.deepEqual(tileAt(0, -180, 3), { x: 0, y: 4 });
  });

  it('gives bounds that contain the tile and tile the world at zoom 0', () => {
    const world = tileBounds(0, 0, 0);
    assert.equal(world.west, -180);
    assert.equal(world.east, 180);
    assert.ok(Math.abs(world.north - MAX_MERCATOR_LAT) < 1e-9);
    assert.ok(Math.abs(world.south + MAX_MERCATOR_LAT) < 1e-9);
    const b = tileBounds(547, 380, 10);
    assert.ok(b.west < 12.4964 && 12.4964 < b.east && b.south < 41.9028 && 41.9028 < b.north);
    assert.deepEqual(tileAt(b.north - 1e-9, b.west + 1e-9, 10), { x: 547, y: 380 });
    assert.deepEqual(tileAt(b.north + 1e-9, b.west + 1e-9, 10), { x: 547, y: 379 });
  });

  it('places a point on the pixels of its tile and nowhere else', () => {
    const tile = { x: 547, y: 380, zoom: 10 };
    const b = tileBounds(547, 380, 10);
    assert.deepEqual(pixelInTile(b.north - 1e-9, b.west + 1e-9, tile), { x: 0, y: 0 });
    assert.deepEqual(pixelInTile(b.south + 1e-9, b.east - 1e-9, tile), { x: 255, y: 255 });
    assert.deepEqual(pixelInTile(b.south + 1e-9, b.east - 1e-9, tile, 512), { x: 511, y: 511 });
    const middle = pixelInTile(41.9028, 12.4964, tile)!;
    assert.ok(middle.x >= 0 && middle.x < 256 && middle.y >= 0 && middle.y < 256);
    assert.equal(pixelInTile(45.4642, 9.19, tile), null); // Milan
    assert.equal(pixelInTile(b.north + 1e-6, b.west + 1e-6, tile), null);
    assert.equal(pixelInTile(89, 0, { x: 0, y: 0, zoom: 0 }), null); // beyond Mercator
  });
});
