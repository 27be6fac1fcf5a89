/**
 * The openEO processes this back-end implements (docs/protocol.md §16.5), on in-memory cubes. `load_collection`
 * is the only one that reads: it asks the environment (activities/imagery), which searches the catalog and
 * reads the scenes' COG windows. `save_result` marks the value to answer with and its format.
 */
import {
  appendLabel,
  dimIndex,
  dimsOfType,
  dropDimension,
  isCube,
  makeCube,
  onlyDim,
  sameLabel,
  selectLabels,
  shapeOf,
  slicesAlong,
  stridesOf,
  withData,
  type Cube,
  type Dimension,
  type Label,
} from './cube.js';
import { transformBox, transformer } from './crs.js';
import { OpenEoError } from './errors.js';
import {
  geoJsonPolygons,
  parseBoundingBox,
  parseSpatialExtent,
  parseTemporalInterval,
  type Rings,
  type SpatialExtent,
} from './extent.js';
import { Callback, type ProcessImpl } from './graph.js';
import { pixelsInside } from './polygons.js';
import {
  add,
  and,
  arrayElement,
  divide,
  eq,
  gt,
  gte,
  linearScaleRange,
  lt,
  lte,
  multiply,
  neq,
  normalizedDifference,
  not,
  or,
  reduceRows,
  reducer,
  subtract,
  type Statistic,
} from './math.js';
import { COLLECTION_ID, SENTINEL2_BAND_NAMES, sentinel2Band } from './sentinel2.js';
import { Field, FieldArray, toField } from './values.js';

/** What `load_collection` asks of the environment, checked and normalised. */
export interface LoadRequest {
  collection: string;
  extent: SpatialExtent;
  /** [startMs, endMs), either open. */
  temporal: [number | null, number | null];
  /** Band names in the order asked (all bands when `load_collection` named none). */
  bands: string[];
  /** Metadata filters by property name (`eo:cloud_cover`). */
  properties: Record<string, Callback>;
}

export interface OpenEoEnv {
  loadCollection(request: LoadRequest): Promise<Cube>;
}

/** The output formats `save_result` writes (docs/protocol.md §16.6), by lower-case name. */
export const OUTPUT_FORMATS = { gtiff: 'GTiff', png: 'PNG', json: 'JSON' } as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[keyof typeof OUTPUT_FORMATS];

/** The value `save_result` leaves: what to answer with, and how. */
export interface SavedResult {
  kind: 'save_result';
  data: unknown;
  format: OutputFormat;
  options: Record<string, unknown>;
}

export const isSavedResult = (value: unknown): value is SavedResult =>
  typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'save_result';

const invalid = (process: string, parameter: string, reason: string) =>
  new OpenEoError(
    'ProcessParameterInvalid',
    `The value passed for parameter '${parameter}' in process '${process}' is invalid: ${reason}`,
  );

function cubeArg(process: string, value: unknown, parameter = 'data'): Cube {
  if (!isCube(value)) throw invalid(process, parameter, 'expected a data cube');
  return value;
}

function callbackArg(process: string, value: unknown, parameter: string): Callback {
  if (!(value instanceof Callback)) throw invalid(process, parameter, 'expected a process graph (callback)');
  return value;
}

/** A callback's answer for n positions: a Field of n values, or a plain value for all of them. */
function fieldResult(process: string, value: unknown, n: number): Float64Array {
  if (value instanceof Field) {
    if (value.length !== n)
      throw new OpenEoError('Internal', `${process}: the callback answered ${value.length} values`);
    return value.values;
  }
  if (value === null || typeof value === 'number' || typeof value === 'boolean') {
    return new Float64Array(n).fill(toField(value));
  }
  throw invalid(process, 'reducer', 'the callback must compute a number, a boolean or no-data for each value');
}

// --- load_collection -------------------------------------------------------------------------------------------

const loadCollection: ProcessImpl<OpenEoEnv> = (args, env) => {
  if (args.id !== COLLECTION_ID) {
    throw new OpenEoError('CollectionNotFound', `Collection '${String(args.id)}' does not exist.`);
  }
  const extent = parseSpatialExtent(args.spatial_extent, 'load_collection', 'spatial_extent');
  const temporal = parseTemporalInterval(args.temporal_extent, 'load_collection', 'temporal_extent');
  let bands = SENTINEL2_BAND_NAMES;
  if (args.bands !== null && args.bands !== undefined) {
    if (!Array.isArray(args.bands) || args.bands.length === 0) {
      throw invalid('load_collection', 'bands', 'expected a non-empty array of band names');
    }
    bands = args.bands.map((name) => {
      const found = typeof name === 'string' ? sentinel2Band(name) : undefined;
      if (!found) {
        throw invalid(
          'load_collection',
          'bands',
          `unknown band ${JSON.stringify(name)} (${SENTINEL2_BAND_NAMES.join(', ')})`,
        );
      }
      return found.name;
    });
    if (new Set(bands).size !== bands.length) throw invalid('load_collection', 'bands', 'a band is named twice');
  }
  const properties: Record<string, Callback> = {};
  if (args.properties !== null && args.properties !== undefined) {
    if (typeof args.properties !== 'object' || Array.isArray(args.properties)) {
      throw invalid('load_collection', 'properties', 'expected an object of property filters');
    }
    for (const [name, filter] of Object.entries(args.properties as Record<string, unknown>)) {
      if (name !== 'eo:cloud_cover') {
        throw invalid('load_collection', 'properties', `only eo:cloud_cover can be filtered (not ${name})`);
      }
      properties[name] = callbackArg('load_collection', filter, 'properties');
    }
  }
  return env.loadCollection({ collection: COLLECTION_ID, extent, temporal, bands, properties });
};

// --- filters ---------------------------------------------------------------------------------------------------

function spatialAxes(process: string, cube: Cube): { x: number; y: number; crs: number } {
  const [x] = dimsOfType(cube, 'spatial', 'x');
  const [y] = dimsOfType(cube, 'spatial', 'y');
  if (x === undefined || y === undefined) {
    throw new OpenEoError('DimensionMissing', `${process}: the data cube has no spatial dimensions x and y`);
  }
  return { x, y, crs: cube.dims[x]!.crs ?? 4326 };
}

const filterBbox: ProcessImpl<OpenEoEnv> = (args) => {
  const cube = cubeArg('filter_bbox', args.data);
  const { x, y, crs } = spatialAxes('filter_bbox', cube);
  const box = parseBoundingBox(args.extent, 'filter_bbox', 'extent');
  const [w, s, e, n] = transformBox(box, 4326, crs);
  const keepX = cube.dims[x]!.labels.flatMap((l, i) => ((l as number) >= w! && (l as number) <= e! ? [i] : []));
  const keepY = cube.dims[y]!.labels.flatMap((l, i) => ((l as number) >= s! && (l as number) <= n! ? [i] : []));
  return selectLabels(selectLabels(cube, x, keepX), y, keepY);
};

const filterTemporal: ProcessImpl<OpenEoEnv> = (args) => {
  const cube = cubeArg('filter_temporal', args.data);
  let axis: number;
  if (args.dimension === null || args.dimension === undefined) {
    axis = onlyDim(cube, 'temporal', 'DimensionNotAvailable');
  } else {
    axis = dimIndex(cube, String(args.dimension));
    if (cube.dims[axis]!.type !== 'temporal') {
      throw new OpenEoError('DimensionNotAvailable', `the dimension "${String(args.dimension)}" is not temporal`);
    }
  }
  const [start, end] = parseTemporalInterval(args.extent, 'filter_temporal', 'extent');
  const keep = cube.dims[axis]!.labels.flatMap((label, i) => {
    const t = Date.parse(String(label));
    return (start === null || t >= start) && (end === null || t < end) ? [i] : [];
  });
  return selectLabels(cube, axis, keep);
};

const filterBands: ProcessImpl<OpenEoEnv> = (args) => {
  const cube = cubeArg('filter_bands', args.data);
  const axis = onlyDim(cube, 'bands', 'DimensionMissing');
  const names = Array.isArray(args.bands) ? args.bands : [];
  const ranges = Array.isArray(args.wavelengths) ? args.wavelengths : [];
  if (names.length === 0 && ranges.length === 0) {
    throw new OpenEoError('BandFilterParameterMissing', 'filter_bands needs bands or wavelengths.');
  }
  const labels = cube.dims[axis]!.labels;
  const keep: number[] = [];
  const take = (i: number) => {
    if (!keep.includes(i)) keep.push(i);
  };
  for (const name of names) {
    labels.forEach((label, i) => {
      if (label === name || cube.bands.get(String(label))?.common_name === name) take(i);
    });
  }
  for (const range of ranges) {
    if (!Array.isArray(range) || range.length !== 2 || !range.every((v) => typeof v === 'number')) {
      throw invalid('filter_bands', 'wavelengths', 'each range is [min, max] in micrometres');
    }
    labels.forEach((label, i) => {
      const w = cube.bands.get(String(label))?.center_wavelength;
      if (w !== undefined && w >= (range[0] as number) && w <= (range[1] as number)) take(i);
    });
  }
  return selectLabels(cube, axis, keep);
};

// --- callbacks over cubes --------------------------------------------------------------------------------------

/** A one-node reducer the cube processes compute natively: `mean`, `min`, `max`, `median` of `data`. */
function nativeStatistic(callback: Callback): { statistic: Statistic; ignoreNoData: boolean } | null {
  const node = callback.single;
  if (!node || !['mean', 'min', 'max', 'median'].includes(node.process_id)) return null;
  const args = node.arguments ?? {};
  const data = args.data as { from_parameter?: unknown } | undefined;
  if (data?.from_parameter !== 'data' || Object.keys(args).some((k) => k !== 'data' && k !== 'ignore_nodata')) {
    return null;
  }
  if (args.ignore_nodata !== undefined && typeof args.ignore_nodata !== 'boolean') return null;
  return { statistic: node.process_id as Statistic, ignoreNoData: args.ignore_nodata !== false };
}

const reduceDimension: ProcessImpl<OpenEoEnv> = async (args) => {
  const cube = cubeArg('reduce_dimension', args.data);
  const callback = callbackArg('reduce_dimension', args.reducer, 'reducer');
  const axis = dimIndex(cube, String(args.dimension));
  const rows = slicesAlong(cube, axis);
  const positions = shapeOf(cube).reduce((n, size, i) => (i === axis ? n : n * size), 1);
  const native = nativeStatistic(callback);
  const data = native
    ? reduceRows(rows, positions, native.statistic, native.ignoreNoData)
    : fieldResult(
        'reduce_dimension',
        await callback.call({ data: new FieldArray(cube.dims[axis]!.labels, rows, positions), context: args.context }),
        positions,
      );
  return dropDimension(cube, axis, data);
};

const apply: ProcessImpl<OpenEoEnv> = async (args) => {
  const cube = cubeArg('apply', args.data);
  const callback = callbackArg('apply', args.process, 'process');
  const result = await callback.call({ x: new Field(cube.data), context: args.context });
  return withData(cube, fieldResult('apply', result, cube.data.length));
};

/** The one band of the bands dimension named `name` or with that common name. */
function bandIndex(cube: Cube, axis: number, name: unknown, exception: string): number {
  const labels = cube.dims[axis]!.labels;
  const byName = labels.findIndex((l) => l === name);
  if (byName >= 0) return byName;
  const byCommon = labels.flatMap((l, i) => (cube.bands.get(String(l))?.common_name === name ? [i] : []));
  if (byCommon.length !== 1) {
    throw new OpenEoError(exception, `no single band is named or has the common name ${JSON.stringify(name)}`);
  }
  return byCommon[0]!;
}

const ndvi: ProcessImpl<OpenEoEnv> = (args) => {
  const cube = cubeArg('ndvi', args.data);
  const axis = onlyDim(cube, 'bands', 'DimensionAmbiguous');
  const nirAt = bandIndex(cube, axis, args.nir, 'NirBandAmbiguous');
  const redAt = bandIndex(cube, axis, args.red, 'RedBandAmbiguous');
  const rows = slicesAlong(cube, axis);
  const nir = rows[nirAt]!;
  const red = rows[redAt]!;
  const out = new Float64Array(nir.length);
  for (let i = 0; i < out.length; i++) out[i] = (nir[i]! - red[i]!) / (nir[i]! + red[i]!);
  if (args.target_band === null || args.target_band === undefined) return dropDimension(cube, axis, out);
  const target = String(args.target_band);
  if (cube.dims[axis]!.labels.includes(target)) {
    throw new OpenEoError('BandExists', `A band with the name ${target} exists already.`);
  }
  return appendLabel(cube, axis, target, out);
};

/** Whether two dimensions' labels are the same (spatial coordinates within a hair). */
const sameLabels = (a: Dimension, b: Dimension) =>
  a.labels.length === b.labels.length && a.labels.every((l, i) => sameLabel(l, b.labels[i]!));

const mask: ProcessImpl<OpenEoEnv> = (args) => {
  const data = cubeArg('mask', args.data);
  const m = cubeArg('mask', args.mask, 'mask');
  const replacement = args.replacement === null || args.replacement === undefined ? NaN : toField(args.replacement);
  if (typeof args.replacement === 'string') throw invalid('mask', 'replacement', 'strings are not supported');
  const maskStrides = stridesOf(shapeOf(m));
  // For each dimension of data, the stride of the mask's dimension of that name (0: the mask lacks it).
  const strides = data.dims.map((d) => {
    const at = m.dims.findIndex((md) => md.name === d.name);
    if (at < 0) return 0;
    if (m.dims[at]!.type !== d.type || !sameLabels(m.dims[at]!, d)) {
      throw new OpenEoError('DimensionMismatch', `the mask's dimension "${d.name}" differs from the data's`);
    }
    return maskStrides[at]!;
  });
  for (const md of m.dims) {
    if (!data.dims.some((d) => d.name === md.name)) {
      throw new OpenEoError('DimensionMismatch', `the data has no dimension "${md.name}" of the mask`);
    }
  }
  const shape = shapeOf(data);
  const out = new Float64Array(data.data.length);
  const index = new Array<number>(shape.length).fill(0);
  let at = 0;
  for (let i = 0; i < out.length; i++) {
    const v = m.data[at]!;
    out[i] = !Number.isNaN(v) && v !== 0 ? replacement : data.data[i]!;
    // Next position: the last dimension fastest, the mask offset kept in step.
    for (let k = shape.length - 1; k >= 0; k--) {
      index[k]!++;
      at += strides[k]!;
      if (index[k]! < shape[k]!) break;
      at -= strides[k]! * shape[k]!;
      index[k] = 0;
    }
  }
  return withData(data, out);
};

// --- aggregate_spatial -----------------------------------------------------------------------------------------

/** Values aggregate_spatial gathers at most over all its geometries (overlaps counted each time). */
export const MAX_ZONAL_VALUES = 16_000_000;

const aggregateSpatial: ProcessImpl<OpenEoEnv> = async (args) => {
  const cube = cubeArg('aggregate_spatial', args.data);
  const callback = callbackArg('aggregate_spatial', args.reducer, 'reducer');
  const { x, y, crs } = spatialAxes('aggregate_spatial', cube);
  const geometries = geometryList(args.geometries);
  const target = args.target_dimension;
  if (target !== null && target !== undefined) {
    if (typeof target !== 'string') throw invalid('aggregate_spatial', 'target_dimension', 'expected a name');
    if (cube.dims.some((d) => d.name === target)) {
      throw new OpenEoError('TargetDimensionExists', `A dimension with the name ${target} exists already.`);
    }
  }
  const forward = transformer(4326, crs);
  const xs = cube.dims[x]!.labels as number[];
  const ys = cube.dims[y]!.labels as number[];
  const shape = shapeOf(cube);
  const strides = stridesOf(shape);
  const others = cube.dims.flatMap((_, i) => (i === x || i === y ? [] : [i]));
  // Offsets of every position of the other dimensions, in their row-major order.
  const otherCount = others.reduce((n, i) => n * shape[i]!, 1);
  const base = new Int32Array(otherCount);
  for (let o = 0; o < otherCount; o++) {
    let rest = o;
    let offset = 0;
    for (let k = others.length - 1; k >= 0; k--) {
      const dim = others[k]!;
      offset += (rest % shape[dim]!) * strides[dim]!;
      rest = Math.floor(rest / shape[dim]!);
    }
    base[o] = offset;
  }
  const native = nativeStatistic(callback);
  const withCounts = typeof target === 'string';
  let counted = 0;
  const perGeometry = otherCount * (withCounts ? 3 : 1);
  const out = new Float64Array(geometries.length * perGeometry);
  for (let g = 0; g < geometries.length; g++) {
    const pixels = geometries[g]!.polygons.flatMap((rings) =>
      pixelsInside(
        rings.map((ring) => ring.map((p) => forward([p[0]!, p[1]!]))),
        xs,
        ys,
      ),
    );
    const unique = [...new Set(pixels)];
    counted += unique.length * otherCount;
    if (counted > MAX_ZONAL_VALUES) {
      throw new OpenEoError(
        'ProcessGraphComplexity',
        `aggregate_spatial would gather more than ${MAX_ZONAL_VALUES.toLocaleString('en')} values over its ` +
          'geometries (overlapping or many geometries): use fewer or smaller ones, or a batch job instead.',
      );
    }
    const offsets = unique.map((p) => Math.floor(p / xs.length) * strides[y]! + (p % xs.length) * strides[x]!);
    const rows = offsets.map((offset) => {
      const row = new Float64Array(otherCount);
      for (let o = 0; o < otherCount; o++) row[o] = cube.data[base[o]! + offset]!;
      return row;
    });
    const values =
      unique.length === 0
        ? new Float64Array(otherCount).fill(NaN)
        : native
          ? reduceRows(rows, otherCount, native.statistic, native.ignoreNoData)
          : fieldResult(
              'aggregate_spatial',
              await callback.call({ data: new FieldArray(unique, rows, otherCount), context: args.context }),
              otherCount,
            );
    for (let o = 0; o < otherCount; o++) {
      if (!withCounts) out[g * perGeometry + o] = values[o]!;
      else {
        let valid = 0;
        for (const row of rows) if (!Number.isNaN(row[o]!)) valid++;
        out.set([values[o]!, unique.length, valid], g * perGeometry + o * 3);
      }
    }
  }
  const dims: Dimension[] = [
    { name: 'geometry', type: 'geometry', labels: geometries.map((_, i) => i), crs: 4326 },
    ...others.map((i) => cube.dims[i]!),
    ...(withCounts ? [{ name: target, type: 'other' as const, labels: ['value', 'total_count', 'valid_count'] }] : []),
  ];
  return makeCube(
    dims,
    out,
    cube.bands,
    geometries.map((g) => g.geometry),
  );
};

/** The geometries of `aggregate_spatial`: one per Feature of a collection, else the one geometry. */
function geometryList(value: unknown): { geometry: object; polygons: Rings[] }[] {
  if (typeof value !== 'object' || value === null) {
    throw invalid('aggregate_spatial', 'geometries', 'expected GeoJSON');
  }
  const record = value as Record<string, unknown>;
  const items = record.type === 'FeatureCollection' && Array.isArray(record.features) ? record.features : [record];
  return items.map((item) => {
    const geometry =
      (item as { type?: unknown; geometry?: unknown }).type === 'Feature'
        ? (item as { geometry: object }).geometry
        : item;
    const polygons = geoJsonPolygons(geometry, 'aggregate_spatial', 'geometries');
    if (polygons.length !== 1) throw invalid('aggregate_spatial', 'geometries', 'expected one geometry per feature');
    return { geometry: geometry as object, polygons: polygons[0]! };
  });
}

// --- save_result -----------------------------------------------------------------------------------------------

const saveResult: ProcessImpl<OpenEoEnv> = (args) => {
  const format = OUTPUT_FORMATS[String(args.format).toLowerCase() as keyof typeof OUTPUT_FORMATS];
  if (format === undefined) {
    throw invalid('save_result', 'format', `${String(args.format)} is not an output format here (GTiff, PNG, JSON)`);
  }
  const options = args.options ?? {};
  if (typeof options !== 'object' || Array.isArray(options))
    throw invalid('save_result', 'options', 'expected an object');
  const result: SavedResult = {
    kind: 'save_result',
    data: args.data,
    format,
    options: options as Record<string, unknown>,
  };
  return result;
};

/** The implemented processes by id (the definitions served at `GET /processes` list exactly these). */
export const PROCESS_IMPLEMENTATIONS: ReadonlyMap<string, ProcessImpl<OpenEoEnv>> = new Map<
  string,
  ProcessImpl<OpenEoEnv>
>([
  ['load_collection', loadCollection],
  ['save_result', saveResult],
  ['filter_bbox', filterBbox],
  ['filter_temporal', filterTemporal],
  ['filter_bands', filterBands],
  ['reduce_dimension', reduceDimension],
  ['apply', apply],
  ['ndvi', ndvi],
  ['normalized_difference', normalizedDifference],
  ['mask', mask],
  ['aggregate_spatial', aggregateSpatial],
  ['array_element', arrayElement],
  ['mean', reducer('mean')],
  ['median', reducer('median')],
  ['min', reducer('min')],
  ['max', reducer('max')],
  ['add', add],
  ['subtract', subtract],
  ['multiply', multiply],
  ['divide', divide],
  ['linear_scale_range', linearScaleRange],
  ['eq', eq],
  ['neq', neq],
  ['lt', lt],
  ['lte', lte],
  ['gt', gt],
  ['gte', gte],
  ['and', and],
  ['or', or],
  ['not', not],
]);

export type { Label };
