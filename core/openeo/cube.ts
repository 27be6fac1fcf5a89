/**
 * The data of openEO process graphs (docs/protocol.md §16): raster and vector data cubes held in memory, and the
 * values a callback (a reducer, `apply`'s process) sees. A cube is one Float64Array in row-major order over its
 * dimensions, the last one varying fastest; NaN is no-data. Pure: the loader (activities/imagery) fills cubes,
 * the processes (core/openeo/processes.ts) transform them.
 */
import { OpenEoError } from './errors.js';

export type Label = string | number;
export type DimensionType = 'spatial' | 'temporal' | 'bands' | 'geometry' | 'other';

export interface Dimension {
  name: string;
  type: DimensionType;
  /** Spatial dimensions: which axis. */
  axis?: 'x' | 'y';
  labels: Label[];
  /** Spatial dimensions: pixel size in CRS units (negative for a y axis whose labels go down). */
  step?: number;
  /** Spatial and geometry dimensions: EPSG code. */
  crs?: number;
}

/** What the collection says about a band (STAC `eo:bands`), carried with the band's label. */
export interface BandInfo {
  name: string;
  common_name?: string;
  /** Micrometres. */
  center_wavelength?: number;
}

export interface Cube {
  readonly kind: 'cube';
  readonly dims: readonly Dimension[];
  readonly data: Float64Array;
  /** Metadata of the labels of the `bands` dimension, by label. */
  readonly bands: ReadonlyMap<string, BandInfo>;
  /** GeoJSON geometries of the `geometry` dimension, one per label (vector cubes). */
  readonly geometries?: readonly object[];
}

export function makeCube(
  dims: readonly Dimension[],
  data: Float64Array,
  bands: ReadonlyMap<string, BandInfo> = new Map(),
  geometries?: readonly object[],
): Cube {
  const size = dims.reduce((n, d) => n * d.labels.length, 1);
  if (data.length !== size) throw new RangeError(`cube data holds ${data.length} values for ${size} positions`);
  return geometries === undefined
    ? { kind: 'cube', dims, data, bands }
    : { kind: 'cube', dims, data, bands, geometries };
}

export const isCube = (value: unknown): value is Cube =>
  typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'cube';

export const shapeOf = (cube: Cube): number[] => cube.dims.map((d) => d.labels.length);

/** Row-major strides of a shape. */
export function stridesOf(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) strides[i] = strides[i + 1]! * shape[i + 1]!;
  return strides;
}

/** The index of a dimension by name, or `DimensionNotAvailable`. */
export function dimIndex(cube: Cube, name: string): number {
  const index = cube.dims.findIndex((d) => d.name === name);
  if (index < 0) {
    throw new OpenEoError(
      'DimensionNotAvailable',
      `the data cube has no dimension "${name}" (it has ${cube.dims.map((d) => d.name).join(', ') || 'none'})`,
    );
  }
  return index;
}

/** The dimensions of a type; spatial ones by axis when `axis` is given. */
export const dimsOfType = (cube: Cube, type: DimensionType, axis?: 'x' | 'y'): number[] =>
  cube.dims.flatMap((d, i) => (d.type === type && (axis === undefined || d.axis === axis) ? [i] : []));

/** The one dimension of a type, or `exception` naming what is missing or ambiguous. */
export function onlyDim(cube: Cube, type: DimensionType, exception: string): number {
  const found = dimsOfType(cube, type);
  if (found.length !== 1) {
    throw new OpenEoError(
      exception,
      found.length === 0
        ? `the data cube has no dimension of type ${type}`
        : `the data cube has ${found.length} dimensions of type ${type}`,
    );
  }
  return found[0]!;
}

/**
 * Keeps, along dimension `axis`, the label positions `keep` (in that order): the cube restricted, its other
 * dimensions unchanged.
 */
export function selectLabels(cube: Cube, axis: number, keep: readonly number[]): Cube {
  const shape = shapeOf(cube);
  const inner = shape.slice(axis + 1).reduce((n, s) => n * s, 1);
  const outer = shape.slice(0, axis).reduce((n, s) => n * s, 1);
  const n = shape[axis]!;
  const data = new Float64Array(outer * keep.length * inner);
  for (let o = 0; o < outer; o++) {
    for (let k = 0; k < keep.length; k++) {
      const from = (o * n + keep[k]!) * inner;
      data.set(cube.data.subarray(from, from + inner), (o * keep.length + k) * inner);
    }
  }
  const dims = cube.dims.map((d, i) => (i === axis ? { ...d, labels: keep.map((j) => d.labels[j]!) } : d));
  const geometries =
    cube.geometries && cube.dims[axis]?.type === 'geometry' ? keep.map((j) => cube.geometries![j]!) : cube.geometries;
  return makeCube(dims, data, cube.bands, geometries);
}

/**
 * The values along dimension `axis` for every position of the other dimensions: `rows[j][o]` is label j's value at
 * output position o, the output positions being the cube's positions without that dimension, in row-major order.
 */
export function slicesAlong(cube: Cube, axis: number): Float64Array[] {
  const shape = shapeOf(cube);
  const inner = shape.slice(axis + 1).reduce((n, s) => n * s, 1);
  const outer = shape.slice(0, axis).reduce((n, s) => n * s, 1);
  const n = shape[axis]!;
  const rows = Array.from({ length: n }, () => new Float64Array(outer * inner));
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < n; j++) {
      const from = (o * n + j) * inner;
      rows[j]!.set(cube.data.subarray(from, from + inner), o * inner);
    }
  }
  return rows;
}

/** The cube without dimension `axis`, holding `data` (one value per remaining position). */
export function dropDimension(cube: Cube, axis: number, data: Float64Array): Cube {
  const dims = cube.dims.filter((_, i) => i !== axis);
  const bands = cube.dims[axis]!.type === 'bands' ? new Map<string, BandInfo>() : cube.bands;
  const geometries = cube.dims[axis]!.type === 'geometry' ? undefined : cube.geometries;
  return makeCube(dims, data, bands, geometries);
}

/** Adds a label at the end of dimension `axis` whose values are `values` (one per position of the other dimensions). */
export function appendLabel(cube: Cube, axis: number, label: Label, values: Float64Array): Cube {
  const rows = slicesAlong(cube, axis);
  rows.push(values);
  const shape = shapeOf(cube);
  const inner = shape.slice(axis + 1).reduce((n, s) => n * s, 1);
  const outer = shape.slice(0, axis).reduce((n, s) => n * s, 1);
  const n = rows.length;
  const data = new Float64Array(outer * n * inner);
  for (let o = 0; o < outer; o++) {
    for (let j = 0; j < n; j++) data.set(rows[j]!.subarray(o * inner, (o + 1) * inner), (o * n + j) * inner);
  }
  const dims = cube.dims.map((d, i) => (i === axis ? { ...d, labels: [...d.labels, label] } : d));
  return makeCube(dims, data, cube.bands, cube.geometries);
}

/** The cube with other values at the same positions (an element-wise result). */
export const withData = (cube: Cube, data: Float64Array): Cube =>
  makeCube(cube.dims, data, cube.bands, cube.geometries);

/** Labels compare equal: numbers within a relative 1e-9 (coordinates), anything else strictly. */
export function sameLabel(a: Label, b: Label): boolean {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a));
  return a === b;
}
