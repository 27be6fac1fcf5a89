import { cellToBoundary, cellToLatLng } from 'h3-js';

/**
 * An H3 cell's outline as planar [lng, lat] rings, and whether it meets a polygon drawn the same way: how a cell
 * is judged by every country it touches (core/jurisdiction.ts `touchedJurisdictions`, docs/security.md "The
 * fifth gate"). Pure and deterministic.
 *
 * Border data (country-coder, us-atlas) is read as planar [lng, lat] polygons, the way country-coder's own point
 * lookup reads it; a cell's edges are great-circle arcs, so each edge is cut into pieces of at most
 * MAX_PIECE_DEGREES along the arc before it is compared: the planar piece then stays within a few hundred metres
 * of the arc, finer than the border data itself. A cell across the antimeridian is unwrapped into continuous
 * longitudes and compared in each 360° frame it reaches; a cell around a pole is closed through the pole.
 * Touching counts as meeting (a shared edge or vertex), so a doubt refuses rather than allows.
 */

export type Point = readonly [lng: number, lat: number];
export type Ring = readonly Point[];
/** A polygon's rings, outer first then holes, as GeoJSON draws them. */
export type PolygonRings = readonly Ring[];

export interface Bbox {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** A cell's outline in one longitude frame, its edges filed by latitude band so a border edge meets few. */
export interface FootprintRing {
  ring: Ring;
  bbox: Bbox;
  /** Indexes of the ring's edges (edge i runs from vertex i-1 to vertex i) meeting each of BANDS latitude bands. */
  bands: number[][];
}

/** A cell's outline, once per longitude frame it reaches (two for a cell across the antimeridian). */
export interface Footprint {
  rings: FootprintRing[];
}

/**
 * Longest planar piece of a cell edge, in degrees of arc (~110 km): the piece then strays from the arc by at
 * most a few hundred metres below 70° of latitude, less than the border data's own generalisation.
 */
export const MAX_PIECE_DEGREES = 1;

/** Latitude bands a footprint ring's edges are filed in. */
const BANDS = 32;

const RAD = Math.PI / 180;

export function bboxOf(rings: readonly Ring[]): Bbox {
  let minX = Infinity;
  let minY = Infinity;
  let maxX = -Infinity;
  let maxY = -Infinity;
  for (const ring of rings) {
    for (const [x, y] of ring) {
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
  }
  return { minX, minY, maxX, maxY };
}

export const bboxesMeet = (a: Bbox, b: Bbox): boolean =>
  a.minX <= b.maxX && b.minX <= a.maxX && a.minY <= b.maxY && b.minY <= a.maxY;

type Vec3 = [number, number, number];

const toVec = (lat: number, lng: number): Vec3 => [
  Math.cos(lat * RAD) * Math.cos(lng * RAD),
  Math.cos(lat * RAD) * Math.sin(lng * RAD),
  Math.sin(lat * RAD),
];

const toLatLng = ([x, y, z]: Vec3): [number, number] => [Math.atan2(z, Math.hypot(x, y)) / RAD, Math.atan2(y, x) / RAD];

/** The points of the arc from a to b (a included, b not), at most MAX_PIECE_DEGREES apart. */
function arcPoints(a: [number, number], b: [number, number]): [number, number][] {
  const va = toVec(a[0], a[1]);
  const vb = toVec(b[0], b[1]);
  const dot = Math.min(1, Math.max(-1, va[0] * vb[0] + va[1] * vb[1] + va[2] * vb[2]));
  const angle = Math.acos(dot);
  const pieces = Math.max(1, Math.ceil(angle / RAD / MAX_PIECE_DEGREES));
  const points: [number, number][] = [a];
  const sin = Math.sin(angle);
  for (let i = 1; i < pieces; i++) {
    const t = i / pieces;
    const wa = Math.sin((1 - t) * angle) / sin;
    const wb = Math.sin(t * angle) / sin;
    points.push(toLatLng([wa * va[0] + wb * vb[0], wa * va[1] + wb * vb[1], wa * va[2] + wb * vb[2]]));
  }
  return points;
}

/** Longitude difference folded into (-180, 180]. */
const lngStep = (from: number, to: number): number => {
  let d = to - from;
  while (d > 180) d -= 360;
  while (d <= -180) d += 360;
  return d;
};

/** The cell's outline in continuous longitudes, each 360° frame it reaches, with bounding boxes. */
export function cellFootprint(cell: string): Footprint {
  const boundary = cellToBoundary(cell); // [lat, lng], counter-clockwise
  const dense = boundary.flatMap((vertex, i) =>
    arcPoints(vertex as [number, number], boundary[(i + 1) % boundary.length] as [number, number]),
  );
  const ring: [number, number][] = [];
  let lng = dense[0]![1];
  for (const [i, [lat, next]] of dense.entries()) {
    if (i > 0) lng += lngStep(dense[i - 1]![1], next);
    ring.push([lng, lat]);
  }
  const first = ring[0]!;
  const winding = lng + lngStep(dense[dense.length - 1]![1], dense[0]![1]) - first[0];
  if (Math.abs(winding) > 180) {
    // The outline goes once around a pole: close it through that pole, so the ring covers the polar cap.
    const pole = cellToLatLng(cell)[0] >= 0 ? 90 : -90;
    ring.push([first[0] + winding, first[1]], [first[0] + winding, pole], [first[0], pole]);
  }
  const bbox = bboxOf([ring]);
  const bands = bandEdges(ring, bbox);
  const rings: Footprint['rings'] = [];
  for (const shift of [-360, 0, 360]) {
    if (bbox.maxX + shift < -180 || bbox.minX + shift > 180) continue;
    const moved: Ring = shift === 0 ? ring : ring.map(([x, y]) => [x + shift, y] as const);
    rings.push({ ring: moved, bbox: { ...bbox, minX: bbox.minX + shift, maxX: bbox.maxX + shift }, bands });
  }
  return { rings };
}

/** The latitude band of y within the bbox, clamped to the bands. */
const bandOf = (y: number, bbox: Bbox): number =>
  Math.min(BANDS - 1, Math.max(0, Math.floor(((y - bbox.minY) / (bbox.maxY - bbox.minY || 1)) * BANDS)));

function bandEdges(ring: Ring, bbox: Bbox): number[][] {
  const bands: number[][] = Array.from({ length: BANDS }, () => []);
  for (let m = 0, n = ring.length - 1; m < ring.length; n = m++) {
    const low = bandOf(Math.min(ring[n]![1], ring[m]![1]), bbox);
    const high = bandOf(Math.max(ring[n]![1], ring[m]![1]), bbox);
    for (let b = low; b <= high; b++) bands[b]!.push(m);
  }
  return bands;
}

/** Even-odd point in polygon over all its rings (holes included), as country-coder's own lookup decides. */
export function pointInRings(rings: readonly Ring[], [px, py]: Point): boolean {
  let inside = false;
  for (const ring of rings) {
    for (let j = 0, k = ring.length - 1; j < ring.length; k = j++) {
      const [xj, yj] = ring[j]!;
      const [xk, yk] = ring[k]!;
      if (yj > py !== yk > py && px < ((xk - xj) * (py - yj)) / (yk - yj) + xj) inside = !inside;
    }
  }
  return inside;
}

const orient = (ax: number, ay: number, bx: number, by: number, cx: number, cy: number): number =>
  Math.sign((bx - ax) * (cy - ay) - (by - ay) * (cx - ax));

const within = (a: number, b: number, c: number): boolean => Math.min(a, b) <= c && c <= Math.max(a, b);

/** Whether segments p1p2 and q1q2 meet, touching and overlapping included. */
function segmentsMeet(p1: Point, p2: Point, q1: Point, q2: Point): boolean {
  const d1 = orient(q1[0], q1[1], q2[0], q2[1], p1[0], p1[1]);
  const d2 = orient(q1[0], q1[1], q2[0], q2[1], p2[0], p2[1]);
  const d3 = orient(p1[0], p1[1], p2[0], p2[1], q1[0], q1[1]);
  const d4 = orient(p1[0], p1[1], p2[0], p2[1], q2[0], q2[1]);
  if (d1 !== d2 && d3 !== d4 && d1 * d2 <= 0 && d3 * d4 <= 0) return true;
  const on = (d: number, a: Point, b: Point, c: Point) =>
    d === 0 && within(a[0], b[0], c[0]) && within(a[1], b[1], c[1]);
  return on(d1, q1, q2, p1) || on(d2, q1, q2, p2) || on(d3, p1, p2, q1) || on(d4, p1, p2, q2);
}

/** Whether any edge of the footprint ring meets any edge of `other`. */
function edgesMeet({ ring, bbox, bands }: FootprintRing, other: Ring): boolean {
  for (let j = 0, k = other.length - 1; j < other.length; k = j++) {
    const q1 = other[k]!;
    const q2 = other[j]!;
    const minY = Math.min(q1[1], q2[1]);
    const maxY = Math.max(q1[1], q2[1]);
    // Most border edges lie far from a cell: skip them on their bounding box.
    if (Math.max(q1[0], q2[0]) < bbox.minX || Math.min(q1[0], q2[0]) > bbox.maxX || maxY < bbox.minY) continue;
    if (minY > bbox.maxY) continue;
    const high = bandOf(maxY, bbox);
    for (let b = bandOf(minY, bbox); b <= high; b++) {
      for (const m of bands[b]!) {
        if (segmentsMeet(ring[m === 0 ? ring.length - 1 : m - 1]!, ring[m]!, q1, q2)) return true;
      }
    }
  }
  return false;
}

/**
 * Whether a cell outline (one frame of a Footprint) and a polygon share any point: their edges meet, or one lies
 * inside the other. A cell inside one of the polygon's holes does not meet it.
 */
export function ringMeetsPolygon(footprint: FootprintRing, polygon: PolygonRings, polygonBbox: Bbox): boolean {
  const { ring, bbox } = footprint;
  if (!bboxesMeet(bbox, polygonBbox)) return false;
  // A vertex of either inside the other meets; else they meet only where their edges do. (When no edges meet,
  // the cell lies wholly inside the polygon, or in a hole, or outside it, or the polygon wholly inside the cell:
  // the two vertex tests tell which.) The vertex tests come first: they are cheaper and usually decide.
  if (pointInRings(polygon, ring[0]!) || (polygon[0] !== undefined && pointInRings([ring], polygon[0][0]!))) {
    return true;
  }
  return polygon.some((other) => edgesMeet(footprint, other));
}

/** Whether the cell's footprint meets the polygon in any frame. */
export const footprintMeets = (footprint: Footprint, polygon: PolygonRings, polygonBbox: Bbox): boolean =>
  footprint.rings.some((ring) => ringMeetsPolygon(ring, polygon, polygonBbox));
