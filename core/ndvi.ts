/**
 * NDVI arithmetic for Sentinel-2 L2A (docs/protocol.md §2.5): health classes, the processing-baseline offset, the
 * per-pixel statistics over masked rasters and the scene-metadata estimate. Pure: callers bring the pixels.
 */

export const HEALTH_STATUSES = ['healthy', 'moderate', 'stressed', 'bare'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/**
 * docs/protocol.md §2.5's table. It leaves the owners of 0.4 and 0.2 open; each boundary belongs to the class above it
 * (0.6 → healthy, 0.4 → moderate, 0.2 → stressed), the same reading as "0.6 and above".
 */
export function classifyHealth(ndvi: number): HealthStatus {
  if (ndvi >= 0.6) return 'healthy';
  if (ndvi >= 0.4) return 'moderate';
  if (ndvi >= 0.2) return 'stressed';
  return 'bare';
}

/** ESA's BOA_ADD_OFFSET: from processing baseline 04.00 (January 2022) L2A digital numbers carry +1000. */
export const BOA_ADD_OFFSET = -1000;
/** L2A digital numbers are reflectance × 10 000 (BOA_QUANTIFICATION_VALUE). */
export const QUANTIFICATION = 10_000;

export interface BaselineOffset {
  /** What to add to every digital number before dividing by QUANTIFICATION: BOA_ADD_OFFSET or 0. */
  offset: number;
  /** Why, in words a client can read. */
  reason: string;
}

/** "04.00" → 400, "05.11" → 511; anything else → null (unknown baseline). */
export function baselineNumber(baseline: string | null | undefined): number | null {
  const match = /^(\d{1,2})\.(\d{1,2})$/.exec(baseline ?? '');
  return match ? Number(match[1]) * 100 + Number(match[2]) : null;
}

/**
 * The offset rule: baselines 04.00 and later need BOA_ADD_OFFSET, unless the catalog says it already
 * removed it from the pixels (Earth Search `earthsearch:boa_offset_applied: true`). An unknown or absent
 * baseline gets no offset: guessing would shift every reflectance by 0.1, so the caller must say so.
 */
export function baselineOffset(baseline: string | null | undefined, offsetAppliedByCatalog: boolean): BaselineOffset {
  const number = baselineNumber(baseline);
  if (number === null) {
    return { offset: 0, reason: 'processing baseline unknown: no BOA offset applied' };
  }
  if (number < 400) return { offset: 0, reason: `processing baseline ${baseline} predates the BOA offset` };
  if (offsetAppliedByCatalog) {
    return { offset: 0, reason: `processing baseline ${baseline}: the catalog already applied the BOA offset` };
  }
  return { offset: BOA_ADD_OFFSET, reason: `processing baseline ${baseline}: BOA offset ${BOA_ADD_OFFSET} applied` };
}

export interface NdviStats {
  /** Pixels that produced an NDVI value. */
  validPixels: number;
  /** Pixels kept by the mask but dropped as no-data (a DN of 0) or with a reflectance sum ≤ 0. */
  droppedPixels: number;
  /** null when validPixels is 0. */
  mean: number | null;
  min: number | null;
  max: number | null;
}

/**
 * NDVI = (nir − red) / (nir + red) on reflectance = (DN + offset) / 10 000, over the pixels whose `keep`
 * byte is 1. DN 0 is Sentinel-2's no-data value. Negative reflectances (dark targets after the offset) are
 * sensor noise and are clamped to 0, which keeps every NDVI in [−1, 1]; a pixel whose clamped reflectances
 * sum to 0 has no NDVI and is dropped.
 */
export function ndviStats(red: ArrayLike<number>, nir: ArrayLike<number>, keep: Uint8Array, offset: number): NdviStats {
  if (red.length !== nir.length || red.length !== keep.length) {
    throw new RangeError(`band and mask sizes differ: ${red.length}, ${nir.length}, ${keep.length}`);
  }
  let validPixels = 0;
  let droppedPixels = 0;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < keep.length; i++) {
    if (keep[i] !== 1) continue;
    const redDn = red[i]!;
    const nirDn = nir[i]!;
    const r = Math.max(0, redDn + offset);
    const n = Math.max(0, nirDn + offset);
    if (redDn === 0 || nirDn === 0 || r + n <= 0) {
      droppedPixels++;
      continue;
    }
    // The quantification divides out of the ratio; (n − r) / (n + r) on DNs equals it on reflectances.
    const value = (n - r) / (n + r);
    validPixels++;
    sum += value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return validPixels === 0
    ? { validPixels, droppedPixels, mean: null, min: null, max: null }
    : { validPixels, droppedPixels, mean: sum / validPixels, min, max };
}

/**
 * Scene classification (SCL) classes masked before NDVI: 0 no data, 1 saturated or defective, 3 cloud
 * shadow, 8 cloud medium probability, 9 cloud high probability, 10 thin cirrus. Kept: 2 dark features,
 * 4 vegetation, 5 not vegetated, 6 water, 7 unclassified, 11 snow or ice. Values above 11 are not
 * classes at all and are masked like no-data.
 */
export const SCL_MASKED = Object.freeze([0, 1, 3, 8, 9, 10] as const);
const SCL_MASK_TABLE = (() => {
  const table = new Uint8Array(256);
  for (const value of SCL_MASKED) table[value] = 1;
  table.fill(1, 12);
  return table;
})();
export const isSclMasked = (value: number): boolean => SCL_MASK_TABLE[value] !== 0; // out of range → undefined → masked
/** SCL classes counted as cloud by the cloud_mask operation (shadow is reported apart). */
export const SCL_CLOUD = Object.freeze([8, 9, 10] as const);
export const SCL_CLOUD_SHADOW = 3;

/**
 * The metadata method's typical NDVI per scene-classification class. A scene's `s2:*_percentage`
 * properties give the share of each class over the whole scene (not the cell); the estimate is the
 * share-weighted mean of these values over the four non-cloud surface classes.
 */
export const CLASS_NDVI = Object.freeze({
  vegetation: 0.7,
  not_vegetated: 0.15,
  water: -0.3,
  snow_ice: -0.05,
} as const);
export type SurfaceClass = keyof typeof CLASS_NDVI;
export type ClassShares = Partial<Record<SurfaceClass, number | null>>;

export interface MetadataEstimate {
  mean: number;
  /** The lowest and highest class value with a share above 0. */
  min: number;
  max: number;
  /** The shares used, in percent of the scene, after dropping absent ones. */
  shares: Record<SurfaceClass, number>;
}

/**
 * Σ share × class NDVI / Σ share over the surface classes present. Returns null when no surface class
 * has a share (the properties are absent, or the scene is all cloud): there is nothing honest to estimate.
 */
export function metadataEstimate(shares: ClassShares): MetadataEstimate | null {
  const used = { vegetation: 0, not_vegetated: 0, water: 0, snow_ice: 0 } satisfies Record<SurfaceClass, number>;
  let total = 0;
  let weighted = 0;
  let min = Infinity;
  let max = -Infinity;
  for (const key of Object.keys(CLASS_NDVI) as SurfaceClass[]) {
    const share = shares[key];
    if (typeof share !== 'number' || !Number.isFinite(share) || share <= 0) continue;
    used[key] = share;
    total += share;
    weighted += share * CLASS_NDVI[key];
    min = Math.min(min, CLASS_NDVI[key]);
    max = Math.max(max, CLASS_NDVI[key]);
  }
  return total === 0 ? null : { mean: weighted / total, min, max, shares: used };
}

/** NDVI values are reported to 4 decimals; the health class is that of the reported value. */
export const roundNdvi = (value: number): number => {
  const rounded = Math.round(value * 10_000) / 10_000;
  return rounded === 0 ? 0 : rounded; // never -0
};
