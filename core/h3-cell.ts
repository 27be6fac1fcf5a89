import { cellToLatLng, cellToParent, getResolution, isValidCell } from 'h3-js';
import { fail, pass, type Check } from './check.js';
import { shownValue } from './shown-value.js';

/** Default job cell: resolution 6 over Rome (docs/protocol.md §2.1 "a cell over Rome"). */
export const DEFAULT_JOB_CELL = '861e8050fffffff';
/** Default perception cell: resolution 5 over Rome. */
export const DEFAULT_PERCEPTION_CELL = '851e8053fffffff';

// h3-js also accepts upper case and some malformed strings; Geofabric's wire form is 15 lowercase hex digits.
const CELL_TEXT = /^[0-9a-f]{15}$/;

export function isCell(value: unknown): value is string {
  return typeof value === 'string' && CELL_TEXT.test(value) && isValidCell(value);
}

export function checkCell(value: unknown, where: string): Check<string> {
  return isCell(value) ? pass(value) : fail('invalid_cell', `${where} is not a valid H3 cell: ${shownValue(value)}`);
}

/** True when `cell` lies inside `ancestor` (or is it): H3 containment, never string equality. */
export function cellContains(ancestor: string, cell: string): boolean {
  const res = getResolution(ancestor);
  const cellRes = getResolution(cell);
  return res <= cellRes && (res === cellRes ? ancestor === cell : cellToParent(cell, res) === ancestor);
}

/** True when `cell` lies inside at least one of `ancestors`. */
export const cellCoveredBy = (ancestors: readonly string[], cell: string): boolean => cellCover(ancestors)(cell);

/**
 * A containment test against many ancestors: a set lookup of the cell's parent at each resolution the
 * ancestors use (at most 16), so checking n cells against m ancestors is O(n + m), not O(n × m).
 */
export function cellCover(ancestors: readonly string[]): (cell: string) => boolean {
  const set = new Set(ancestors);
  const resolutions = [...new Set(ancestors.map((a) => getResolution(a)))].sort((a, b) => a - b);
  return (cell) => {
    if (set.has(cell)) return true;
    const res = getResolution(cell);
    for (const r of resolutions) {
      if (r >= res) return false;
      if (set.has(cellToParent(cell, r))) return true;
    }
    return false;
  };
}

export function cellCentroid(cell: string): { lat: number; lng: number } {
  const [lat, lng] = cellToLatLng(cell);
  return { lat, lng };
}

export const cellResolution = (cell: string): number => getResolution(cell);
