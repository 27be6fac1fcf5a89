import { fail, pass, type Check } from './check.js';
import { shownValue } from './shown-value.js';
import { checkEdges, checkHoles, reduceRing, type Budget, type Problem, type Ring } from './polygon-topology.js';

export { MAX_EDGE_PAIRS } from './polygon-topology.js';

/**
 * Gate 4, geometry pre-flight: every GeoJSON object (RFC 7946) anywhere in a request is validated
 * before compute is dispatched, so workers never see malformed or self-intersecting shapes.
 *
 * What is checked: positions are 2 or 3 finite numbers with longitude in [-180, 180] and latitude in
 * [-90, 90]; a LineString has at least 2 positions; Polygon rings are closed, have at least 4 positions
 * and 3 distinct ones, and do not self-intersect (non-adjacent edges may not meet, adjacent edges may
 * not fold back over each other); rings of one polygon may touch at a point but not cross or share an
 * edge, and each hole lies inside the exterior ring. Not checked: holes nested inside other holes,
 * MultiPolygon members overlapping each other, winding order (RFC 7946 says parsers must not reject
 * on it). Geometry is planar in longitude/latitude with floating-point orientation tests.
 *
 * Empty `coordinates` are accepted for Multi* types (a collection of nothing) but not for Point,
 * LineString or Polygon, whose definitions require content.
 */

export const GEOJSON_TYPES = [
  'Point',
  'MultiPoint',
  'LineString',
  'MultiLineString',
  'Polygon',
  'MultiPolygon',
  'GeometryCollection',
  'Feature',
  'FeatureCollection',
] as const;
export type GeoJsonType = (typeof GEOJSON_TYPES)[number];

/** How deep findGeoJson walks a payload; deeper payloads are refused rather than half-checked. */
export const MAX_PAYLOAD_DEPTH = 32;
/** Nesting of GeometryCollections and Features within one GeoJSON object (RFC 7946 discourages it). */
export const MAX_GEOJSON_NESTING = 8;
/** Positions checked per request (or per checkGeoJson call). */
export const MAX_POSITIONS = 5_000;

const TYPE_NAMES: ReadonlySet<string> = new Set(GEOJSON_TYPES);
const GEOMETRY_TYPES: ReadonlySet<string> = new Set(GEOJSON_TYPES.slice(0, 7));

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isGeoJsonLike = (value: unknown): value is Json =>
  isRecord(value) && typeof value.type === 'string' && TYPE_NAMES.has(value.type);

const childPath = (path: string, key: string): string =>
  /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

// Bounded: a position's "number" may be a 100,000-level array, which JSON.stringify cannot write.
const describe = (value: unknown): string => (typeof value === 'number' ? String(value) : shownValue(value));

/** Validates one Geometry, Feature or FeatureCollection. `path` names it in failure details. */
export function checkGeoJson(value: unknown, path = '$'): Check<void> {
  const problem = checkObject(value, path, { positions: 0, edgePairs: 0 }, 0);
  return problem === null ? pass(undefined) : fail('invalid_geometry', problem);
}

/**
 * The GeoJSON objects in a payload, in document order: objects whose `type` is a GeoJSON type name.
 * The walk does not descend into what it collects, nor below MAX_PAYLOAD_DEPTH.
 */
export function findGeoJson(payload: unknown): Array<{ path: string; value: object }> {
  return walkPayload(payload).found;
}

/** Gate 4: validates every GeoJSON object in the payload; the value is how many were checked. */
export function checkPayloadGeometry(payload: unknown): Check<number> {
  const { found, tooDeep } = walkPayload(payload);
  if (tooDeep !== null) {
    return fail(
      'invalid_request',
      `${tooDeep}: the payload nests deeper than ${MAX_PAYLOAD_DEPTH} levels, below which geometry is not checked`,
    );
  }
  const budget: Budget = { positions: 0, edgePairs: 0 };
  for (const { path, value } of found) {
    const problem = checkObject(value, path, budget, 0);
    if (problem !== null) return fail('invalid_geometry', problem);
  }
  return pass(found.length);
}

function walkPayload(payload: unknown): { found: Array<{ path: string; value: object }>; tooDeep: string | null } {
  const walk: Walk = { found: [], tooDeep: null, trail: [] };
  visitPayload(payload, 0, walk);
  return { found: walk.found, tooDeep: walk.tooDeep };
}

/** The walk keeps the keys leading to the current value, and writes a path only for what it reports. */
interface Walk {
  found: Array<{ path: string; value: object }>;
  tooDeep: string | null;
  trail: Array<string | number>;
}

function visitPayload(value: unknown, depth: number, walk: Walk): void {
  if (walk.tooDeep !== null || typeof value !== 'object' || value === null) return;
  if (isGeoJsonLike(value)) {
    walk.found.push({ path: trailPath(walk.trail), value });
    return;
  }
  if (depth >= MAX_PAYLOAD_DEPTH) {
    walk.tooDeep = trailPath(walk.trail);
    return;
  }
  const { trail } = walk;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value)) continue; // a hole, as forEach skips it
      trail.push(i);
      visitPayload(value[i], depth + 1, walk);
      trail.pop();
    }
  } else {
    for (const key of Object.keys(value)) {
      trail.push(key);
      visitPayload((value as Json)[key], depth + 1, walk);
      trail.pop();
    }
  }
}

function trailPath(trail: ReadonlyArray<string | number>): string {
  let path = '$';
  for (const key of trail) path = typeof key === 'number' ? `${path}[${key}]` : childPath(path, key);
  return path;
}

function checkObject(value: unknown, path: string, budget: Budget, nesting: number): Problem {
  if (!isRecord(value)) return `${path}: a GeoJSON object must be a JSON object`;
  if (value.type === 'Feature') return checkFeature(value, path, budget, nesting);
  if (value.type === 'FeatureCollection') return checkFeatureCollection(value, path, budget, nesting);
  return checkGeometry(value, path, budget, nesting);
}

function checkFeatureCollection(value: Json, path: string, budget: Budget, nesting: number): Problem {
  const bbox = checkBbox(value.bbox, `${path}.bbox`);
  if (bbox !== null) return bbox;
  if (!Array.isArray(value.features)) return `${path}.features: a FeatureCollection needs a "features" array`;
  if (nesting >= MAX_GEOJSON_NESTING) return `${path}: GeoJSON nests deeper than ${MAX_GEOJSON_NESTING} levels`;
  for (const [i, member] of value.features.entries()) {
    const memberPath = `${path}.features[${i}]`;
    if (!isRecord(member) || member.type !== 'Feature') {
      return `${memberPath}: a FeatureCollection member must be a Feature`;
    }
    const problem = checkFeature(member, memberPath, budget, nesting + 1);
    if (problem !== null) return problem;
  }
  return null;
}

function checkFeature(value: Json, path: string, budget: Budget, nesting: number): Problem {
  const bbox = checkBbox(value.bbox, `${path}.bbox`);
  if (bbox !== null) return bbox;
  if (value.id !== undefined && typeof value.id !== 'string' && typeof value.id !== 'number') {
    return `${path}.id: a Feature id must be a string or a number`;
  }
  if (value.properties !== undefined && value.properties !== null && !isRecord(value.properties)) {
    return `${path}.properties: must be an object or null`;
  }
  if (value.geometry === undefined) {
    return `${path}: a Feature needs a "geometry" member (null when it has no location)`;
  }
  if (value.geometry === null) return null;
  if (nesting >= MAX_GEOJSON_NESTING) return `${path}: GeoJSON nests deeper than ${MAX_GEOJSON_NESTING} levels`;
  return checkGeometry(value.geometry, `${path}.geometry`, budget, nesting + 1);
}

function checkGeometry(value: unknown, path: string, budget: Budget, nesting: number): Problem {
  if (!isRecord(value)) return `${path}: a geometry must be a JSON object`;
  if (typeof value.type !== 'string' || !GEOMETRY_TYPES.has(value.type)) {
    return `${path}.type: ${describe(value.type)} is not a GeoJSON geometry type`;
  }
  const bbox = checkBbox(value.bbox, `${path}.bbox`);
  if (bbox !== null) return bbox;
  if (value.type === 'GeometryCollection') {
    if (!Array.isArray(value.geometries)) return `${path}.geometries: a GeometryCollection needs a "geometries" array`;
    if (nesting >= MAX_GEOJSON_NESTING) return `${path}: GeoJSON nests deeper than ${MAX_GEOJSON_NESTING} levels`;
    for (const [i, member] of value.geometries.entries()) {
      const problem = checkGeometry(member, `${path}.geometries[${i}]`, budget, nesting + 1);
      if (problem !== null) return problem;
    }
    return null;
  }
  const at = `${path}.coordinates`;
  const coordinates = value.coordinates;
  switch (value.type) {
    case 'Point':
      return checkPosition(coordinates, at, budget);
    case 'MultiPoint':
      return eachOf(coordinates, at, 'positions', (item, itemPath) => checkPosition(item, itemPath, budget));
    case 'LineString':
      return checkLineString(coordinates, at, budget);
    case 'MultiLineString':
      return eachOf(coordinates, at, 'LineStrings', (item, itemPath) => checkLineString(item, itemPath, budget));
    case 'Polygon':
      return checkPolygon(coordinates, at, budget);
    default: // MultiPolygon
      return eachOf(coordinates, at, 'Polygons', (item, itemPath) => checkPolygon(item, itemPath, budget));
  }
}

function eachOf(value: unknown, path: string, what: string, check: (item: unknown, path: string) => Problem): Problem {
  if (!Array.isArray(value)) return `${path}: must be an array of ${what}`;
  for (const [i, item] of value.entries()) {
    const problem = check(item, `${path}[${i}]`);
    if (problem !== null) return problem;
  }
  return null;
}

function checkPosition(value: unknown, path: string, budget: Budget): Problem {
  if (++budget.positions > MAX_POSITIONS) {
    return `${path}: more than ${MAX_POSITIONS} positions; the geometry pre-flight checks at most ${MAX_POSITIONS} per request`;
  }
  if (!Array.isArray(value)) return `${path}: a position must be an array of 2 or 3 numbers`;
  if (value.length !== 2 && value.length !== 3) return `${path}: a position has 2 or 3 numbers, not ${value.length}`;
  for (let i = 0; i < value.length; i++) {
    const n: unknown = value[i];
    if (typeof n !== 'number' || !Number.isFinite(n)) return `${path}[${i}]: ${describe(n)} is not a finite number`;
  }
  const [lng, lat] = value as number[];
  if (lng! < -180 || lng! > 180) return `${path}[0]: longitude ${lng} is outside [-180, 180]`;
  if (lat! < -90 || lat! > 90) return `${path}[1]: latitude ${lat} is outside [-90, 90]`;
  return null;
}

function checkLineString(value: unknown, path: string, budget: Budget): Problem {
  if (!Array.isArray(value)) return `${path}: a LineString must be an array of positions`;
  if (value.length < 2) return `${path}: a LineString needs at least 2 positions, not ${value.length}`;
  return eachOf(value, path, 'positions', (item, itemPath) => checkPosition(item, itemPath, budget));
}

function checkBbox(value: unknown, path: string): Problem {
  if (value === undefined) return null;
  if (!Array.isArray(value) || (value.length !== 4 && value.length !== 6)) {
    return `${path}: a bbox must be an array of 4 or 6 numbers`;
  }
  for (const [i, n] of value.entries()) {
    if (typeof n !== 'number' || !Number.isFinite(n)) return `${path}[${i}]: ${describe(n)} is not a finite number`;
  }
  const b = value as number[];
  const d = b.length / 2;
  // [west, south, (min z,) east, north (, max z)]; west > east is legal across the antimeridian.
  const [west, south, east, north] = [b[0]!, b[1]!, b[d]!, b[d + 1]!];
  if ([west, east].some((lng) => lng < -180 || lng > 180)) return `${path}: longitudes must be within [-180, 180]`;
  if ([south, north].some((lat) => lat < -90 || lat > 90)) return `${path}: latitudes must be within [-90, 90]`;
  if (south > north) return `${path}: south ${south} is north of north ${north}`;
  if (d === 3 && b[2]! > b[5]!) return `${path}: minimum elevation ${b[2]} exceeds maximum ${b[5]}`;
  return null;
}

// ---- Polygons ----

function checkPolygon(value: unknown, path: string, budget: Budget): Problem {
  if (!Array.isArray(value)) return `${path}: a Polygon must be an array of linear rings`;
  if (value.length === 0) return `${path}: a Polygon needs at least one ring`;
  const rings: Ring[] = [];
  for (const [r, ring] of value.entries()) {
    const ringPath = `${path}[${r}]`;
    if (!Array.isArray(ring)) return `${ringPath}: a linear ring must be an array of positions`;
    const problem = eachOf(ring, ringPath, 'positions', (item, itemPath) => checkPosition(item, itemPath, budget));
    if (problem !== null) return problem;
    const positions = ring as number[][];
    if (positions.length < 4) return `${ringPath}: a linear ring needs at least 4 positions, not ${positions.length}`;
    const first = positions[0]!;
    const last = positions[positions.length - 1]!;
    if (first.length !== last.length || first.some((n, i) => n !== last[i])) {
      return `${ringPath}: the ring is not closed (its first and last positions differ)`;
    }
    const reduced = reduceRing(positions);
    if (reduced.points.length < 4) return `${ringPath}: the ring is degenerate (fewer than 3 distinct positions)`;
    rings.push(reduced);
  }
  return checkEdges(rings, path, budget) ?? checkHoles(rings, path);
}
