/**
 * Which pixels a polygon covers: those whose centre lies inside it (even-odd over all its rings, as OGC Simple
 * Features and openEO's aggregate_spatial define it), found by scanlines over the rows the polygon spans and a
 * binary search of each span's columns, so the work grows with the rows and pixels covered, not with the image.
 */

/** The first index of ascending `xs` whose value is at least `v`. */
function lowerBound(xs: readonly number[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Positions `row × xs.length + column` of the pixel centres (`xs` ascending, `ys` in any order) inside the polygon
 * whose rings are given in the same CRS; a centre on the left edge is inside, on the right edge outside.
 */
export function pixelsInside(
  rings: readonly (readonly number[])[][],
  xs: readonly number[],
  ys: readonly number[],
): number[] {
  let minY = Infinity;
  let maxY = -Infinity;
  for (const ring of rings) {
    for (const p of ring) {
      minY = Math.min(minY, p[1]!);
      maxY = Math.max(maxY, p[1]!);
    }
  }
  const inside: number[] = [];
  const crossings: number[] = [];
  for (let r = 0; r < ys.length; r++) {
    const yc = ys[r]!;
    if (!(yc >= minY && yc <= maxY)) continue;
    crossings.length = 0;
    for (const ring of rings) {
      for (let i = 0; i + 1 < ring.length; i++) {
        const ax = ring[i]![0]!;
        const ay = ring[i]![1]!;
        const bx = ring[i + 1]![0]!;
        const by = ring[i + 1]![1]!;
        if (ay <= yc !== by <= yc) crossings.push(ax + ((yc - ay) * (bx - ax)) / (by - ay));
      }
    }
    crossings.sort((a, b) => a - b);
    for (let k = 0; k + 1 < crossings.length; k += 2) {
      const to = lowerBound(xs, crossings[k + 1]!);
      for (let c = lowerBound(xs, crossings[k]!); c < to; c++) inside.push(r * xs.length + c);
    }
  }
  return inside;
}
