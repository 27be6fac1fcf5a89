/**
 * Results as files (docs/protocol.md §16.6): a raster cube as north-up planes for GeoTIFF and PNG, any cube as
 * JSON in the form the openEO process examples use for data cubes (no-data as null).
 */
import { dimsOfType, isCube, shapeOf, stridesOf, type Cube, type Label } from './cube.js';
import { OpenEoError } from './errors.js';
import { writeGeoTiff } from './geotiff.js';

export interface RasterPlanes {
  width: number;
  height: number;
  /** Row-major, north up, one per label of the non-spatial dimension (one plane when there is none). */
  planes: Float64Array[];
  labels: string[];
  epsg: number;
  originX: number;
  originY: number;
  pixelWidth: number;
  pixelHeight: number;
}

const unsuitable = (format: string, reason: string) =>
  new OpenEoError(
    'FormatUnsuitable',
    `Data can't be transformed into the requested output format ${format}: ${reason}`,
  );

/** A raster cube as planes: x and y, plus at most one other dimension with more than one label. */
export function rasterPlanes(value: unknown, format: string): RasterPlanes {
  if (!isCube(value)) throw unsuitable(format, 'the result is not a data cube');
  const cube: Cube = value;
  const [x] = dimsOfType(cube, 'spatial', 'x');
  const [y] = dimsOfType(cube, 'spatial', 'y');
  if (x === undefined || y === undefined) throw unsuitable(format, 'the cube has no spatial dimensions x and y');
  const shape = shapeOf(cube);
  const others = cube.dims.flatMap((_, i) => (i !== x && i !== y && shape[i]! > 1 ? [i] : []));
  if (others.length > 1) {
    throw unsuitable(
      format,
      `it holds x, y and one more dimension; this cube has ${others.map((i) => cube.dims[i]!.name).join(', ')} ` +
        '(reduce one, e.g. reduce_dimension over t)',
    );
  }
  const width = shape[x]!;
  const height = shape[y]!;
  if (width === 0 || height === 0 || cube.data.length === 0) {
    throw new OpenEoError('DataCubeEmpty', 'The file format does not support storing empty data cubes.');
  }
  const strides = stridesOf(shape);
  const band = others[0];
  const count = band === undefined ? 1 : shape[band]!;
  const xs = cube.dims[x]!.labels as number[];
  const ys = cube.dims[y]!.labels as number[];
  const stepX = Math.abs(cube.dims[x]!.step ?? (width > 1 ? xs[1]! - xs[0]! : 1));
  const stepY = Math.abs(cube.dims[y]!.step ?? (height > 1 ? ys[1]! - ys[0]! : stepX));
  const ascendingY = height > 1 && ys[1]! > ys[0]!;
  const planes = Array.from({ length: count }, (_, b) => {
    const plane = new Float64Array(width * height);
    const base = band === undefined ? 0 : b * strides[band]!;
    for (let r = 0; r < height; r++) {
      const row = ascendingY ? height - 1 - r : r;
      for (let c = 0; c < width; c++) plane[r * width + c] = cube.data[base + row * strides[y]! + c * strides[x]!]!;
    }
    return plane;
  });
  return {
    width,
    height,
    planes,
    labels: band === undefined ? ['result'] : cube.dims[band]!.labels.map(String),
    epsg: cube.dims[x]!.crs ?? 4326,
    originX: xs[0]! - stepX / 2,
    originY: Math.max(ys[0]!, ys[height - 1]!) + stepY / 2,
    pixelWidth: stepX,
    pixelHeight: stepY,
  };
}

export function encodeGeoTiff(value: unknown): Uint8Array {
  const raster = rasterPlanes(value, 'GTiff');
  return writeGeoTiff({
    width: raster.width,
    height: raster.height,
    planes: raster.planes.map((p) => Float32Array.from(p)),
    descriptions: raster.labels,
    epsg: raster.epsg,
    originX: raster.originX,
    originY: raster.originY,
    pixelWidth: raster.pixelWidth,
    pixelHeight: raster.pixelHeight,
  });
}

const jsonNumber = (v: number) => (Number.isFinite(v) ? v : null);

/**
 * A result as JSON. A cube: `{ type: "datacube", order, dimensions: { name: { type, axis?, values,
 * reference_system? } }, data, nodata: null }`, data nested in `order` with no-data (and NaN, ±Infinity, which
 * JSON cannot hold) as null; a vector cube's `geometry` dimension lists its GeoJSON geometries as values. Anything
 * else as it is.
 */
export function resultJson(value: unknown): unknown {
  if (!isCube(value)) return value;
  const cube = value;
  const shape = shapeOf(cube);
  const nest = (depth: number, offset: number, stride: number): unknown => {
    if (depth === shape.length) return jsonNumber(cube.data[offset]!);
    const inner = stride / Math.max(1, shape[depth]!);
    return Array.from({ length: shape[depth]! }, (_, i) => nest(depth + 1, offset + i * inner, inner));
  };
  const dimensions: Record<
    string,
    { type: string; axis?: string; values: Label[] | object[]; reference_system?: string }
  > = {};
  for (const d of cube.dims) {
    dimensions[d.name] = {
      type: d.type,
      ...(d.axis === undefined ? {} : { axis: d.axis }),
      values: d.type === 'geometry' && cube.geometries ? [...cube.geometries] : d.labels,
      ...(d.crs === undefined ? {} : { reference_system: `EPSG:${d.crs}` }),
    };
  }
  return {
    type: 'datacube',
    order: cube.dims.map((d) => d.name),
    dimensions,
    data: shape.length === 0 ? jsonNumber(cube.data[0] ?? NaN) : nest(0, 0, cube.data.length),
    nodata: null,
  };
}
