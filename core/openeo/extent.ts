/**
 * Spatial and temporal extents of openEO processes (`load_collection`, `filter_bbox`, `aggregate_spatial`):
 * parsed into WGS 84 boxes and polygons and epoch milliseconds, and, for gate 2, the H3 cells a box covers
 * (docs/protocol.md §16.4).
 */
import { getHexagonAreaAvg, latLngToCell, polygonToCells } from 'h3-js';
import { transformBox, epsgOf } from './crs.js';
import { OpenEoError } from './errors.js';

/** [west, south, east, north] in degrees (EPSG:4326). */
export type Box = [number, number, number, number];

/** A polygon's rings, [lng, lat] positions, outer ring first. */
export type Rings = number[][][];

export interface SpatialExtent {
  box: Box;
  /** The polygons when the extent was GeoJSON; null for a bounding box. */
  polygons: Rings[] | null;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const invalid = (process: string, parameter: string, reason: string) =>
  new OpenEoError(
    'ProcessParameterInvalid',
    `The value passed for parameter '${parameter}' in process '${process}' is invalid: ${reason}`,
  );

/** A bounding box `{ west, south, east, north, crs? }` as a WGS 84 box. */
export function parseBoundingBox(value: unknown, process: string, parameter: string): Box {
  if (!isRecord(value)) throw invalid(process, parameter, 'expected a bounding box or GeoJSON');
  const sides = ['west', 'south', 'east', 'north'].map((k) => value[k]);
  if (!sides.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw invalid(process, parameter, 'west, south, east and north must be finite numbers');
  }
  const [west, south, east, north] = sides as number[];
  if (!(west! < east!) || !(south! < north!)) {
    throw invalid(process, parameter, 'west must be below east and south below north');
  }
  const crs = value.crs === undefined || value.crs === null ? 4326 : epsgOf(value.crs, `${process}.${parameter}`);
  const box = crs === 4326 ? [west!, south!, east!, north!] : transformBox([west!, south!, east!, north!], crs, 4326);
  const [w, s, e, n] = box as Box;
  if (w < -180 || e > 180 || s < -90 || n > 90) throw invalid(process, parameter, 'the box lies outside WGS 84 bounds');
  return [w, s, e, n];
}

/** The polygons of a GeoJSON Polygon, MultiPolygon, Feature or FeatureCollection (one entry per geometry). */
export function geoJsonPolygons(value: unknown, process: string, parameter: string): Rings[][] {
  if (!isRecord(value)) throw invalid(process, parameter, 'expected GeoJSON');
  if (value.type === 'FeatureCollection') {
    if (!Array.isArray(value.features) || value.features.length === 0) {
      throw invalid(process, parameter, 'a FeatureCollection needs features');
    }
    return value.features.flatMap((f) => geoJsonPolygons(f, process, parameter));
  }
  if (value.type === 'Feature') return geoJsonPolygons(value.geometry, process, parameter);
  if (value.type === 'Polygon') return [[value.coordinates as Rings]];
  if (value.type === 'MultiPolygon') return [value.coordinates as Rings[]];
  throw invalid(process, parameter, `GeoJSON ${String(value.type)} is not supported here (Polygon, MultiPolygon)`);
}

/** The box of a set of polygons (positions checked by gate 4 already: finite, in range). */
export function boxOfPolygons(polygons: readonly Rings[]): Box {
  let [w, s, e, n] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const rings of polygons) {
    for (const [lng, lat] of rings[0] ?? []) {
      w = Math.min(w, lng!);
      e = Math.max(e, lng!);
      s = Math.min(s, lat!);
      n = Math.max(n, lat!);
    }
  }
  return [w, s, e, n];
}

/** A `load_collection` spatial extent: a bounding box, or GeoJSON polygons (their box is read, then masked). */
export function parseSpatialExtent(value: unknown, process: string, parameter: string): SpatialExtent {
  if (value === null || value === undefined) {
    throw invalid(process, parameter, 'a spatial extent is required: this back-end does not load whole collections');
  }
  if (isRecord(value) && typeof value.type === 'string') {
    const polygons = geoJsonPolygons(value, process, parameter).flat();
    const box = boxOfPolygons(polygons);
    if (!(box[0] < box[2] && box[1] < box[3])) throw invalid(process, parameter, 'the polygons cover no area');
    return { box, polygons };
  }
  return { box: parseBoundingBox(value, process, parameter), polygons: null };
}

/** A date (`2021-06-01`) or date-time with a time zone as epoch milliseconds. */
function parseInstant(value: string, process: string, parameter: string): number {
  const ok =
    /^\d{4}-\d{2}-\d{2}$/.test(value) ||
    /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})$/.test(value);
  const ms = ok ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms))
    throw invalid(process, parameter, `"${value}" is not a date or a date-time with a time zone`);
  return ms;
}

/** `[start, end]`, either null (open), as [startMs, endMs): the end is exclusive, as openEO's intervals are. */
export function parseTemporalInterval(
  value: unknown,
  process: string,
  parameter: string,
): [number | null, number | null] {
  if (!Array.isArray(value) || value.length !== 2) {
    throw invalid(process, parameter, 'expected [start, end] (either may be null)');
  }
  const [start, end] = value.map((v) => {
    if (v === null) return null;
    if (typeof v !== 'string') throw invalid(process, parameter, 'the interval bounds must be strings or null');
    return parseInstant(v, process, parameter);
  }) as [number | null, number | null];
  if (start === null && end === null) throw invalid(process, parameter, 'both bounds are null');
  if (start !== null && end !== null && !(start < end)) {
    throw new OpenEoError('TemporalExtentEmpty', `The temporal extent is empty: the start is not before the end.`);
  }
  return [start, end];
}

/** At most this many cells stand for an extent at gate 2 (its MAX_REQUEST_CELLS bounds the whole request). */
export const MAX_EXTENT_CELLS = 24;

const DEGREE_KM = 111.32;

/**
 * H3 cells covering a WGS 84 box for gate 2 (jurisdiction, delegation): its centre's cell first, then, at the
 * finest resolution at which about MAX_EXTENT_CELLS cells cover the box, the cells whose centres lie inside and
 * those of its corners. A box crossing a border therefore names both countries' cells.
 */
export function extentCells(box: Box): string[] {
  const [w, s, e, n] = box;
  const midLat = (s + n) / 2;
  const areaKm2 = Math.max(1e-6, (e - w) * DEGREE_KM * Math.cos((midLat * Math.PI) / 180) * (n - s) * DEGREE_KM);
  let res = 9;
  while (res > 0 && areaKm2 / getHexagonAreaAvg(res, 'km2') > MAX_EXTENT_CELLS) res--;
  const cells = new Set<string>([latLngToCell(midLat, (w + e) / 2, res)]);
  for (const [lat, lng] of [
    [s, w],
    [s, e],
    [n, w],
    [n, e],
  ] as const) {
    cells.add(latLngToCell(lat, lng, res));
  }
  const ring = [
    [s, w],
    [s, e],
    [n, e],
    [n, w],
    [s, w],
  ];
  for (const cell of polygonToCells(ring, res)) {
    if (cells.size >= MAX_EXTENT_CELLS + 5) break;
    cells.add(cell);
  }
  return [...cells];
}

/** The cell a result's proof record is addressed to: the centre's cell at resolution 6, like the imagery steps. */
export function extentRecordCell(box: Box): string {
  return latLngToCell((box[1] + box[3]) / 2, (box[0] + box[2]) / 2, 6);
}
