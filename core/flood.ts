/**
 * Flood classification arithmetic (docs/protocol.md §2.5 flood_classify): water by the modified normalised
 * difference water index MNDWI = (green − swir) / (green + swir) > 0 on Sentinel-2 L2A B03 (green, 10 m) and
 * B11 (SWIR 1.6 µm, 20 m, taken from the 20 m pixel under each 10 m pixel's centre: nearest neighbour). Pure:
 * callers bring the pixels, the resampling index and the keep mask (cell and scene classification).
 */

/** Per-pixel water classes of one scene over one window: 0 not valid, 1 dry, 2 water. */
export const NOT_VALID = 0;
export const DRY = 1;
export const WATER = 2;

export interface WaterMask {
  /** One class per pixel of the 10 m window, row-major. */
  classes: Uint8Array;
  validPixels: number;
  waterPixels: number;
  /** Pixels kept by the cell and SCL mask but with a no-data DN (0) or a reflectance sum ≤ 0. */
  droppedPixels: number;
}

/**
 * The water class of every pixel whose `keep` byte is 1: reflectance = max(0, DN + offset) (as NDVI), DN 0 is
 * no data, a pixel whose reflectances sum to 0 has no index. MNDWI > 0 ⇔ green > swir, so the ratio is
 * never divided out; a pixel at exactly 0 is dry. `swirIndex[i]` is the index into `swir` of pixel i's
 * 20 m pixel, or −1 where none covers it (not valid).
 */
export function waterMask(
  green: ArrayLike<number>,
  swir: ArrayLike<number>,
  swirIndex: Int32Array,
  keep: Uint8Array,
  offset: number,
): WaterMask {
  if (green.length !== keep.length || swirIndex.length !== keep.length) {
    throw new RangeError(`band and mask sizes differ: ${green.length}, ${swirIndex.length}, ${keep.length}`);
  }
  const classes = new Uint8Array(keep.length);
  let validPixels = 0;
  let waterPixels = 0;
  let droppedPixels = 0;
  for (let i = 0; i < keep.length; i++) {
    if (keep[i] !== 1) continue;
    const at = swirIndex[i]!;
    const greenDn = green[i]!;
    const swirDn = at < 0 ? 0 : swir[at]!;
    const g = Math.max(0, greenDn + offset);
    const s = Math.max(0, swirDn + offset);
    if (greenDn === 0 || swirDn === 0 || g + s <= 0) {
      droppedPixels++;
      continue;
    }
    validPixels++;
    if (g > s) {
      classes[i] = WATER;
      waterPixels++;
    } else classes[i] = DRY;
  }
  return { classes, validPixels, waterPixels, droppedPixels };
}

export interface FloodChange {
  /** Pixels valid in both scenes. */
  comparedPixels: number;
  /** Of those, water now and dry in the reference. */
  newWaterPixels: number;
  /** newWaterPixels / comparedPixels; null when no pixel is valid in both. */
  floodFraction: number | null;
}

/** New water: pixels valid in both scenes that are water now and were dry in the reference (same pixel grid). */
export function floodChange(now: Uint8Array, reference: Uint8Array): FloodChange {
  if (now.length !== reference.length) throw new RangeError('the two water masks differ in size');
  let comparedPixels = 0;
  let newWaterPixels = 0;
  for (let i = 0; i < now.length; i++) {
    if (now[i] === NOT_VALID || reference[i] === NOT_VALID) continue;
    comparedPixels++;
    if (now[i] === WATER && reference[i] === DRY) newWaterPixels++;
  }
  return {
    comparedPixels,
    newWaterPixels,
    floodFraction: comparedPixels === 0 ? null : newWaterPixels / comparedPixels,
  };
}

/** Fractions are reported to 6 decimals (a resolution-6 cell has ~360 000 pixels). */
export const roundFraction = (value: number): number => Math.round(value * 1e6) / 1e6;
