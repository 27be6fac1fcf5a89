/**
 * Planar topology of polygon rings for gate 4: self-intersection of rings, rings crossing each other,
 * holes inside the exterior. Coordinates are longitude/latitude treated as a plane, with floating-point
 * orientation tests.
 */

/** A failure detail "path: reason", or null when the value passed. */
export type Problem = string | null;
/** Work done so far for one request, checked against the caps. */
export interface Budget {
  positions: number;
  edgePairs: number;
}

/**
 * Edge pairs the polygon test may compare per request. A 5 000-vertex circle needs about 10 000 and a
 * winding coastline far fewer than this; only adversarial shapes (stars, dense spirals) reach it, and
 * they fail instead of costing CPU. The budget caps the work at a few milliseconds (docs/security.md).
 */
export const MAX_EDGE_PAIRS = 250_000;

interface Point {
  x: number;
  y: number;
}
/** A ring reduced to its distinct consecutive vertices, closed (last equals first), with original indices. */
export interface Ring {
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

export function reduceRing(positions: number[][]): Ring {
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
export function checkEdges(rings: readonly Ring[], path: string, budget: Budget): Problem {
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
export function checkHoles(rings: readonly Ring[], path: string): Problem {
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
