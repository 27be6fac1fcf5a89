/**
 * Small Cloud-Optimized-GeoTIFF-like fixtures built in memory: a minimal tiled GeoTIFF writer (geotiff's
 * own writer makes one strip, which a window read would fetch whole) and a Sentinel-2-like scene over the
 * Rome cell 861e8050fffffff in UTM 33N with known digital numbers per region:
 *
 * - vegetation inside the cell (red 2000, nir 5000: NDVI 0.6 with the −1000 offset, 3/7 without);
 * - a cloud band over the north of the cell (red 7000, nir 7200, SCL 9), its edge on the 20 m grid so every
 *   10 m pixel shares its SCL pixel's region;
 * - a no-data sliver at the cell's west vertex (DN 0, SCL 0);
 * - bare ground beyond the cell's circumcircle (red 3000, nir 3300), which a bounding-box read would see.
 */
import { cellToLatLng, cellToBoundary } from 'h3-js';
import proj4 from 'proj4';

export interface TiffGrid {
  epsg: number;
  originX: number;
  originY: number;
  /** Pixel size in CRS units (square pixels, north up). */
  pixelSize: number;
  width: number;
  height: number;
}

const SHORT = 3;
const LONG = 4;
const DOUBLE = 12;

/** A little-endian tiled GeoTIFF, uncompressed, one band of UInt8 or UInt16, tiles of `tileSize`. */
export function writeTiledGeoTiff(grid: TiffGrid, data: Uint8Array | Uint16Array, tileSize = 128): Uint8Array {
  const bytesPerSample = data.BYTES_PER_ELEMENT;
  const across = Math.ceil(grid.width / tileSize);
  const down = Math.ceil(grid.height / tileSize);
  const tileBytes = tileSize * tileSize * bytesPerSample;
  const geographic = grid.epsg === 4326;
  const geoKeys = [
    1,
    1,
    0,
    3,
    1024,
    0,
    1,
    geographic ? 2 : 1,
    1025,
    0,
    1,
    1,
    geographic ? 2048 : 3072,
    0,
    1,
    grid.epsg,
  ];
  const entries: [tag: number, type: number, values: number[]][] = [
    [256, LONG, [grid.width]],
    [257, LONG, [grid.height]],
    [258, SHORT, [bytesPerSample * 8]],
    [259, SHORT, [1]],
    [262, SHORT, [1]],
    [277, SHORT, [1]],
    [284, SHORT, [1]],
    [322, LONG, [tileSize]],
    [323, LONG, [tileSize]],
    [324, LONG, new Array<number>(across * down).fill(0)], // patched below
    [325, LONG, new Array<number>(across * down).fill(tileBytes)],
    [339, SHORT, [1]],
    [33550, DOUBLE, [grid.pixelSize, grid.pixelSize, 0]],
    [33922, DOUBLE, [0, 0, 0, grid.originX, grid.originY, 0]],
    [34735, SHORT, geoKeys],
  ];
  const size = (type: number) => (type === SHORT ? 2 : type === LONG ? 4 : 8);
  const ifdBytes = 2 + entries.length * 12 + 4;
  let extra = 8 + ifdBytes;
  const placed = entries.map(([tag, type, values]) => {
    const bytes = values.length * size(type);
    const at = bytes > 4 ? extra : -1;
    if (bytes > 4) extra += bytes + (bytes % 2);
    return { tag, type, values, at };
  });
  const dataStart = extra;
  const tileOffsets = placed.find((p) => p.tag === 324)!.values;
  for (let t = 0; t < across * down; t++) tileOffsets[t] = dataStart + t * tileBytes;

  const out = new Uint8Array(dataStart + across * down * tileBytes);
  const view = new DataView(out.buffer);
  out.set([0x49, 0x49]);
  view.setUint16(2, 42, true);
  view.setUint32(4, 8, true);
  view.setUint16(8, entries.length, true);
  const put = (offset: number, type: number, value: number) => {
    if (type === SHORT) view.setUint16(offset, value, true);
    else if (type === LONG) view.setUint32(offset, value, true);
    else view.setFloat64(offset, value, true);
  };
  placed.forEach(({ tag, type, values, at }, i) => {
    const entry = 10 + i * 12;
    view.setUint16(entry, tag, true);
    view.setUint16(entry + 2, type, true);
    view.setUint32(entry + 4, values.length, true);
    if (at < 0) values.forEach((v, k) => put(entry + 8 + k * size(type), type, v));
    else {
      view.setUint32(entry + 8, at, true);
      values.forEach((v, k) => put(at + k * size(type), type, v));
    }
  });
  for (let ty = 0; ty < down; ty++) {
    for (let tx = 0; tx < across; tx++) {
      const base = dataStart + (ty * across + tx) * tileBytes;
      for (let r = 0; r < tileSize; r++) {
        const row = ty * tileSize + r;
        if (row >= grid.height) break;
        for (let c = 0; c < tileSize; c++) {
          const col = tx * tileSize + c;
          if (col >= grid.width) break;
          const value = data[row * grid.width + col]!;
          if (bytesPerSample === 1) out[base + r * tileSize + c] = value;
          else view.setUint16(base + (r * tileSize + c) * 2, value, true);
        }
      }
    }
  }
  return out;
}

/** A class per pixel (row-major), from a function of the pixel centre in CRS coordinates. */
export function classify(grid: TiffGrid, classOf: (x: number, y: number) => number): Uint8Array {
  const out = new Uint8Array(grid.width * grid.height);
  for (let r = 0; r < grid.height; r++) {
    const y = grid.originY - (r + 0.5) * grid.pixelSize;
    for (let c = 0; c < grid.width; c++)
      out[r * grid.width + c] = classOf(grid.originX + (c + 0.5) * grid.pixelSize, y);
  }
  return out;
}

/** A band from per-pixel classes and a value per class. */
export function bandOf(classes: Uint8Array, values: readonly number[], bits: 8 | 16): Uint8Array | Uint16Array {
  const out = bits === 8 ? new Uint8Array(classes.length) : new Uint16Array(classes.length);
  for (let i = 0; i < classes.length; i++) out[i] = values[classes[i]!]!;
  return out;
}

export const VEGETATION = { red: 2000, nir: 5000 } as const;
export const CLOUD = { red: 7000, nir: 7200 } as const;
export const OUTSIDE = { red: 3000, nir: 3300 } as const;

/** NDVI of digital numbers with a BOA offset, as core/ndvi computes it. */
export const ndviOf = (dn: { red: number; nir: number }, offset: number): number =>
  (dn.nir + offset - (dn.red + offset)) / (dn.nir + offset + (dn.red + offset));

export const ROME_CELL = '861e8050fffffff';
const UTM33N = '+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs';

/** The cell's centre and circumradius in UTM 33N. */
export function romeCellInUtm() {
  const toUtm = proj4('+proj=longlat +datum=WGS84 +no_defs', UTM33N);
  const [lat, lng] = cellToLatLng(ROME_CELL);
  const [cx, cy] = toUtm.forward([lng, lat]) as [number, number];
  const radius = Math.max(
    ...cellToBoundary(ROME_CELL, true).map((p) => {
      const [x, y] = toUtm.forward(p) as [number, number];
      return Math.hypot(x - cx, y - cy);
    }),
  );
  return { cx, cy, radius };
}

export interface SceneFiles {
  red: Uint8Array;
  nir: Uint8Array;
  scl: Uint8Array;
  grid: TiffGrid;
  sclGrid: TiffGrid;
}

/**
 * The Rome scene: a `size`×`size` image of `pixelSize` m pixels centred on the cell (SCL at twice the pixel
 * size, same origin). The default (10 m, 1280 px, 128 px tiles) leaves margins around the cell, so a
 * windowed read fetches well under the whole file.
 */
export function romeScene(options: { pixelSize?: number; size?: number; tileSize?: number } = {}): SceneFiles {
  const pixelSize = options.pixelSize ?? 10;
  const size = options.size ?? 1280;
  const { cx, cy, radius } = romeCellInUtm();
  const step = pixelSize * 2;
  const originX = Math.round(cx / step) * step - (size / 2) * pixelSize;
  const originY = Math.round(cy / step) * step + (size / 2) * pixelSize;
  // Region edges on the SCL grid, so a 10 m pixel and the 20 m SCL pixel under its centre always agree.
  const cloudEdgeY = originY - Math.round((originY - (cy + 1500)) / step) * step;
  const noDataEdgeX = originX + Math.round((cx - radius + 400 - originX) / step) * step;
  // Classes: 0 no data, 1 outside the cell's circumcircle, 2 cloud, 3 vegetation.
  const r2 = (radius + 30) ** 2;
  const classOf = (x: number, y: number): number => {
    if (x < noDataEdgeX) return 0;
    if ((x - cx) ** 2 + (y - cy) ** 2 > r2) return 1;
    return y > cloudEdgeY ? 2 : 3;
  };
  const grid: TiffGrid = { epsg: 32633, originX, originY, pixelSize, width: size, height: size };
  const sclGrid: TiffGrid = { ...grid, pixelSize: step, width: size / 2, height: size / 2 };
  const tileSize = options.tileSize ?? 128;
  const classes = classify(grid, classOf);
  return {
    red: writeTiledGeoTiff(grid, bandOf(classes, [0, OUTSIDE.red, CLOUD.red, VEGETATION.red], 16), tileSize),
    nir: writeTiledGeoTiff(grid, bandOf(classes, [0, OUTSIDE.nir, CLOUD.nir, VEGETATION.nir], 16), tileSize),
    scl: writeTiledGeoTiff(sclGrid, bandOf(classify(sclGrid, classOf), [0, 5, 9, 4], 8), tileSize),
    grid,
    sclGrid,
  };
}

/** Uniform vegetation in EPSG:4326 (0.0001° pixels) over the cell's bounding box plus a margin. */
export function romeSceneWgs84(): { red: Uint8Array; nir: Uint8Array; grid: TiffGrid } {
  const grid: TiffGrid = { epsg: 4326, originX: 12.47, originY: 41.91, pixelSize: 0.0001, width: 1100, height: 900 };
  return {
    red: writeTiledGeoTiff(grid, new Uint16Array(grid.width * grid.height).fill(VEGETATION.red)),
    nir: writeTiledGeoTiff(grid, new Uint16Array(grid.width * grid.height).fill(VEGETATION.nir)),
    grid,
  };
}

/** The byte offset of pixel (col, row) of a tiled little-endian UInt16 GeoTIFF written by writeTiledGeoTiff. */
export function pixelOffset(tiff: Uint8Array, col: number, row: number): number {
  const view = new DataView(tiff.buffer, tiff.byteOffset, tiff.byteLength);
  const ifd = view.getUint32(4, true);
  const tag = (id: number) => {
    for (let i = 0; i < view.getUint16(ifd, true); i++) {
      const at = ifd + 2 + i * 12;
      if (view.getUint16(at, true) === id) return { count: view.getUint32(at + 4, true), at: at + 8 };
    }
    throw new Error(`no tag ${id}`);
  };
  const width = view.getUint32(tag(256).at, true);
  const tileSize = view.getUint32(tag(322).at, true);
  const offsets = tag(324);
  const across = Math.ceil(width / tileSize);
  const index = Math.floor(row / tileSize) * across + Math.floor(col / tileSize);
  const table = offsets.count === 1 ? offsets.at : view.getUint32(offsets.at, true);
  const tileStart = view.getUint32(table + index * 4, true);
  return tileStart + ((row % tileSize) * tileSize + (col % tileSize)) * 2;
}
