import { fail, pass, type Check } from './check.js';

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
export const MAX_POSITIONS = 10_000;
/**
 * Edge pairs the polygon test may compare per request. A 10 000-vertex circle needs about 20 000 and a
 * winding coastline far fewer than this; only adversarial shapes (stars, dense spirals) reach it, and
 * they fail instead of costing seconds of CPU. The budget caps the work at tens of milliseconds.
 */
export const MAX_EDGE_PAIRS = 2_000_000;

const TYPE_NAMES: ReadonlySet<string> = new Set(GEOJSON_TYPES);
const GEOMETRY_TYPES: ReadonlySet<string> = new Set(GEOJSON_TYPES.slice(0, 7));

type Json = Record<string, unknown>;
/** A failure detail "path: reason", or null when the value passed. */
type Problem = string | null;
interface Budget {
  positions: number;
  edgePairs: number;
}

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isGeoJsonLike = (value: unknown): value is Json =>
  isRecord(value) && typeof value.type === 'string' && TYPE_NAMES.has(value.type);

const childPath = (path: string, key: string): string =>
  /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

const describe = (value: unknown): string =>
  typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? typeof value);

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
  const found: Array<{ path: string; value: object }> = [];
  let tooDeep: string | null = null;
  const visit = (value: unknown, path: string, depth: number): void => {
    if (tooDeep !== null || typeof value !== 'object' || value === null) return;
    if (isGeoJsonLike(value)) {
      found.push({ path, value });
      return;
    }
    if (depth >= MAX_PAYLOAD_DEPTH) {
      tooDeep = path;
      return;
    }
    if (Array.isArray(value)) value.forEach((item, i) => visit(item, `${path}[${i}]`, depth + 1));
    else for (const [key, item] of Object.entries(value)) visit(item, childPath(path, key), depth + 1);
  };
  visit(payload, '$', 0);
  return { found, tooDeep };
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

interface Point {
  x: number;
  y: number;
}
/** A ring reduced to its distinct consecutive vertices, closed (last equals first), with original indices. */
interface Ring {
  points: Point[];
  indices: number[];
}
interface Segment {
  a: Point;
  b: Point;
  ring: number;
  /** Position of the edge within its ring, 0 … count-1. */
  index: number;
  count: number;
}

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

function reduceRing(positions: number[][]): Ring {
  const points: Point[] = [];
  const indices: number[] = [];
  positions.forEach(([x, y], i) => {
    const previous = points[points.length - 1];
    // Repeated positions are legal GeoJSON; kept, they would be zero-length edges "touching" their neighbours.
    if (previous && previous.x === x && previous.y === y) return;
    points.push({ x: x!, y: y! });
    indices.push(i);
  });
  return { points, indices };
}

/**
 * Every pair of edges of the polygon whose bounding boxes overlap, found by sorting on x and sweeping.
 * The worst case stays O(n²) (a star whose spokes all overlap), so the pairs compared are counted
 * against the request's budget, the loop is allocation-free, and only pairs that may be in contact
 * reach the exact classification.
 */
function checkEdges(rings: readonly Ring[], path: string, budget: Budget): Problem {
  const n = rings.reduce((sum, { points }) => sum + points.length - 1, 0);
  const ring = new Int32Array(n);
  const index = new Int32Array(n);
  const startX = new Float64Array(n);
  let k = 0;
  rings.forEach(({ points }, r) => {
    for (let i = 0; i + 1 < points.length; i++, k++) {
      ring[k] = r;
      index[k] = i;
      startX[k] = Math.min(points[i]!.x, points[i + 1]!.x);
    }
  });
  const order = new Uint32Array(n).map((_, i) => i).sort((p, q) => startX[p]! - startX[q]!);
  const ax = new Float64Array(n);
  const ay = new Float64Array(n);
  const bx = new Float64Array(n);
  const by = new Float64Array(n);
  order.forEach((e, s) => {
    const points = rings[ring[e]!]!.points;
    const a = points[index[e]!]!;
    const b = points[index[e]! + 1]!;
    ax[s] = a.x;
    ay[s] = a.y;
    bx[s] = b.x;
    by[s] = b.y;
  });
  const edgeAt = (s: number): Segment => {
    const e = order[s]!;
    const { points } = rings[ring[e]!]!;
    return {
      a: points[index[e]!]!,
      b: points[index[e]! + 1]!,
      ring: ring[e]!,
      index: index[e]!,
      count: points.length - 1,
    };
  };
  for (let i = 0; i < n; i++) {
    const x1 = ax[i]!;
    const y1 = ay[i]!;
    const x2 = bx[i]!;
    const y2 = by[i]!;
    const dx = x2 - x1;
    const dy = y2 - y1;
    const right = Math.max(x1, x2);
    const bottom = Math.min(y1, y2);
    const top = Math.max(y1, y2);
    let j = i + 1;
    for (; j < n && Math.min(ax[j]!, bx[j]!) <= right; j++) {
      const x3 = ax[j]!;
      const y3 = ay[j]!;
      const x4 = bx[j]!;
      const y4 = by[j]!;
      if ((y3 > top && y4 > top) || (y3 < bottom && y4 < bottom)) continue;
      // Same expressions as orientation(), so the exact classification sees the same signs.
      const o1 = dx * (y3 - y1) - dy * (x3 - x1);
      const o2 = dx * (y4 - y1) - dy * (x4 - x1);
      if ((o1 > 0 && o2 > 0) || (o1 < 0 && o2 < 0)) continue;
      const ex = x4 - x3;
      const ey = y4 - y3;
      const o3 = ex * (y1 - y3) - ey * (x1 - x3);
      const o4 = ex * (y2 - y3) - ey * (x2 - x3);
      if ((o3 > 0 && o4 > 0) || (o3 < 0 && o4 < 0)) continue;
      const s = edgeAt(i);
      const t = edgeAt(j);
      const problem = s.ring === t.ring ? sameRingProblem(s, t, rings, path) : crossingProblem(s, t, path);
      if (problem !== null) return problem;
    }
    budget.edgePairs += j - i - 1;
    if (budget.edgePairs > MAX_EDGE_PAIRS) {
      return `${path}: too complex to check (more than ${MAX_EDGE_PAIRS} edge pairs with overlapping extents per request); simplify the polygon`;
    }
  }
  return null;
}

function sameRingProblem(s: Segment, t: Segment, rings: readonly Ring[], path: string): Problem {
  const [lo, hi] = s.index < t.index ? [s, t] : [t, s];
  const { indices } = rings[s.ring]!;
  const wraps = lo.index === 0 && hi.index === s.count - 1;
  if (hi.index - lo.index === 1 || wraps) {
    // Adjacent edges share one vertex; they are invalid only if they run back over each other.
    const [first, second] = wraps ? [hi, lo] : [lo, hi];
    const shared = first.b;
    const folds =
      orientation(first.a, shared, second.b) === 0 &&
      (first.a.x - shared.x) * (second.b.x - shared.x) + (first.a.y - shared.y) * (second.b.y - shared.y) > 0;
    if (!folds) return null;
    return `${path}[${s.ring}]: the ring folds back on itself at edges ${edgeName(first, indices)} and ${edgeName(second, indices)}`;
  }
  if (!segmentsMeet(s, t)) return null;
  return `${path}[${s.ring}]: the ring self-intersects: edge ${edgeName(lo, indices)} meets edge ${edgeName(hi, indices)}`;
}

/** An edge named by the positions it joins, as indexed in the request. */
const edgeName = (edge: Segment, indices: readonly number[]): string =>
  `positions ${indices[edge.index]}–${indices[edge.index + 1]}`;

function crossingProblem(s: Segment, t: Segment, path: string): Problem {
  const [lo, hi] = s.ring < t.ring ? [s, t] : [t, s];
  return segmentsCross(s, t) ? `${path}[${hi.ring}]: ring ${hi.ring} crosses ring ${lo.ring}` : null;
}

/** Holes do not cross the exterior (checkEdges), so one point of a hole off the boundary places all of it. */
function checkHoles(rings: readonly Ring[], path: string): Problem {
  const exterior = rings[0]!.points;
  for (let r = 1; r < rings.length; r++) {
    const { points } = rings[r]!;
    const midpoints = points.slice(1).map((b, i) => ({ x: (points[i]!.x + b.x) / 2, y: (points[i]!.y + b.y) / 2 }));
    // Vertices first; a hole whose vertices all sit on the boundary is placed by an edge midpoint.
    const probe = [...points, ...midpoints].find((p) => !onRingBoundary(p, exterior));
    if (probe && !insideRing(probe, exterior)) return `${path}[${r}]: the hole lies outside the exterior ring`;
  }
  return null;
}

const orientation = (a: Point, b: Point, c: Point): number => (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x);

/** For a point collinear with segment ab: whether it lies within the segment's extent. */
const withinExtent = (p: Point, a: Point, b: Point): boolean =>
  Math.min(a.x, b.x) <= p.x && p.x <= Math.max(a.x, b.x) && Math.min(a.y, b.y) <= p.y && p.y <= Math.max(a.y, b.y);

const opposite = (u: number, v: number): boolean => (u > 0 && v < 0) || (u < 0 && v > 0);

/** Any contact at all: a crossing, a touch or an overlap. */
function segmentsMeet(s: Segment, t: Segment): boolean {
  const o1 = orientation(s.a, s.b, t.a);
  const o2 = orientation(s.a, s.b, t.b);
  const o3 = orientation(t.a, t.b, s.a);
  const o4 = orientation(t.a, t.b, s.b);
  if (opposite(o1, o2) && opposite(o3, o4)) return true;
  return (
    (o1 === 0 && withinExtent(t.a, s.a, s.b)) ||
    (o2 === 0 && withinExtent(t.b, s.a, s.b)) ||
    (o3 === 0 && withinExtent(s.a, t.a, t.b)) ||
    (o4 === 0 && withinExtent(s.b, t.a, t.b))
  );
}

/** A proper crossing or a shared stretch of positive length; touching at a single point is allowed. */
function segmentsCross(s: Segment, t: Segment): boolean {
  const o1 = orientation(s.a, s.b, t.a);
  const o2 = orientation(s.a, s.b, t.b);
  if (opposite(o1, o2) && opposite(orientation(t.a, t.b, s.a), orientation(t.a, t.b, s.b))) return true;
  if (o1 !== 0 || o2 !== 0) return false;
  // Collinear: measure the overlap along the axis the edge s spans most.
  const alongX = Math.abs(s.b.x - s.a.x) >= Math.abs(s.b.y - s.a.y);
  const [s0, s1, t0, t1] = alongX ? [s.a.x, s.b.x, t.a.x, t.b.x] : [s.a.y, s.b.y, t.a.y, t.b.y];
  return Math.min(Math.max(s0, s1), Math.max(t0, t1)) - Math.max(Math.min(s0, s1), Math.min(t0, t1)) > 0;
}

function onRingBoundary(p: Point, ring: readonly Point[]): boolean {
  for (let i = 0; i + 1 < ring.length; i++) {
    const a = ring[i]!;
    const b = ring[i + 1]!;
    if (orientation(a, b, p) === 0 && withinExtent(p, a, b)) return true;
  }
  return false;
}

/** Even-odd ray casting; `ring` is closed (last equals first). */
function insideRing(p: Point, ring: readonly Point[]): boolean {
  let inside = false;
  for (let i = 0; i + 1 < ring.length; i++) {
    const a = ring[i]!;
    const b = ring[i + 1]!;
    if (a.y > p.y !== b.y > p.y && p.x < ((b.x - a.x) * (p.y - a.y)) / (b.y - a.y) + a.x) inside = !inside;
  }
  return inside;
}
