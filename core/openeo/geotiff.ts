/**
 * A GeoTIFF writer for openEO results (docs/protocol.md §16.6): little-endian, uncompressed, 32-bit float samples,
 * one strip per band (planar), georeferenced by ModelPixelScale + ModelTiepoint and the EPSG code in the GeoKeys
 * (PixelIsArea: the tiepoint is the top-left corner of the top-left pixel), no-data NaN (GDAL_NODATA) and each
 * band's label as its GDAL description (GDAL_METADATA). GDAL, rasterio and geotiff.js read it.
 */

export interface GeoTiffRaster {
  width: number;
  height: number;
  /** One plane per band, row-major, `width × height` values each. */
  planes: readonly Float32Array[];
  /** A label per band (GDAL band descriptions). */
  descriptions: readonly string[];
  epsg: number;
  /** Top-left corner of the top-left pixel, in CRS units. */
  originX: number;
  originY: number;
  /** Pixel size in CRS units, both positive. */
  pixelWidth: number;
  pixelHeight: number;
}

const SHORT = 3;
const LONG = 4;
const DOUBLE = 12;
const ASCII = 2;

type Entry = [tag: number, type: number, values: number[] | string];

const escapeXml = (text: string) =>
  text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);

export function writeGeoTiff(raster: GeoTiffRaster): Uint8Array {
  const { width, height, planes, epsg } = raster;
  const bands = planes.length;
  if (bands === 0 || width <= 0 || height <= 0) throw new RangeError('a GeoTIFF needs at least one pixel and band');
  for (const plane of planes) {
    if (plane.length !== width * height) throw new RangeError('a plane does not match the raster size');
  }
  const geographic = epsg === 4326;
  const stripBytes = width * height * 4;
  const metadata =
    '<GDALMetadata>' +
    raster.descriptions
      .map((d, i) => `<Item name="DESCRIPTION" sample="${i}" role="description">${escapeXml(d)}</Item>`)
      .join('') +
    '</GDALMetadata>';
  const entries: Entry[] = [
    [256, LONG, [width]],
    [257, LONG, [height]],
    [258, SHORT, new Array<number>(bands).fill(32)],
    [259, SHORT, [1]],
    [262, SHORT, [1]],
    [273, LONG, new Array<number>(bands).fill(0)], // strip offsets, patched below
    [277, SHORT, [bands]],
    [278, LONG, [height]],
    [279, LONG, new Array<number>(bands).fill(stripBytes)],
    [284, SHORT, [2]],
    ...(bands > 1 ? [[338, SHORT, new Array<number>(bands - 1).fill(0)] as Entry] : []),
    [339, SHORT, new Array<number>(bands).fill(3)],
    [33550, DOUBLE, [raster.pixelWidth, raster.pixelHeight, 0]],
    [33922, DOUBLE, [0, 0, 0, raster.originX, raster.originY, 0]],
    // GeoKeyDirectory: version 1.1.0, 3 keys: model type, raster type (PixelIsArea), the CRS.
    [34735, SHORT, [1, 1, 0, 3, 1024, 0, 1, geographic ? 2 : 1, 1025, 0, 1, 1, geographic ? 2048 : 3072, 0, 1, epsg]],
    [42112, ASCII, metadata],
    [42113, ASCII, 'nan'],
  ];
  const size = (type: number) => (type === SHORT ? 2 : type === LONG ? 4 : type === DOUBLE ? 8 : 1);
  const count = (values: number[] | string) => (typeof values === 'string' ? values.length + 1 : values.length);
  const ifdBytes = 2 + entries.length * 12 + 4;
  let extra = 8 + ifdBytes;
  const placed = entries.map(([tag, type, values]) => {
    const bytes = count(values) * size(type);
    const at = bytes > 4 ? extra : -1;
    if (bytes > 4) extra += bytes + (bytes % 2);
    return { tag, type, values, at };
  });
  // Samples start on a 4-byte boundary.
  const dataStart = extra + ((4 - (extra % 4)) % 4);
  const offsets = placed.find((p) => p.tag === 273)!.values as number[];
  for (let b = 0; b < bands; b++) offsets[b] = dataStart + b * stripBytes;

  const out = new Uint8Array(dataStart + bands * stripBytes);
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
    view.setUint32(entry + 4, count(values), true);
    const target = at < 0 ? entry + 8 : at;
    if (at >= 0) view.setUint32(entry + 8, at, true);
    if (typeof values === 'string') {
      for (let k = 0; k < values.length; k++) out[target + k] = values.charCodeAt(k) & 0x7f;
    } else values.forEach((v, k) => put(target + k * size(type), type, v));
  });
  for (let b = 0; b < bands; b++) {
    const plane = planes[b]!;
    const base = dataStart + b * stripBytes;
    for (let i = 0; i < plane.length; i++) view.setFloat32(base + i * 4, plane[i]!, true);
  }
  return out;
}
