import { fail, pass, type Check } from '../check.js';
import { checkCell } from '../h3-cell.js';
import { isKnownJurisdictionCode, resolveJurisdiction, type Jurisdiction } from '../jurisdiction.js';
import { isWorkerTier, WORKER_TIERS, type WorkerTier } from '../tiers.js';
import type { RequestScope } from './request-scope.js';

/** Gate 2's outcome: where the job runs, under which rules, and on which workers it may run. */
export interface JurisdictionContext {
  jobCell: string;
  jurisdiction: Jurisdiction;
  /**
   * Every distinct cell the request names (job cell first, then step cells…), each resolved: a step over
   * another country runs under that country's rules too, not only the job cell's.
   */
  places: Jurisdiction[];
  /** `x-svc-jurisdiction`: run only on workers in this jurisdiction (upper-cased code). */
  workerJurisdiction: string | null;
  /** `x-svc-min-tier`: run only on workers at this trust tier or above. */
  minWorkerTier: WorkerTier | null;
}

/**
 * Cells one request may name: the body's, path's, query's and header's, and two per step of the largest valid
 * job (32 steps). Each distinct one is resolved to a jurisdiction (country-coder, ~0.1 ms warm), before the body's
 * schema is checked, so the count is what bounds that work.
 */
export const MAX_REQUEST_CELLS = 72;

export interface JurisdictionHeaders {
  jurisdiction: string | undefined;
  minTier: string | undefined;
}

/**
 * Every cell named anywhere in the request must be a valid H3 cell; the job cell (the first one named,
 * or the route's default) resolves to a country and its regulatory frameworks.
 */
export function checkJurisdiction(
  scope: RequestScope,
  headers: JurisdictionHeaders,
  defaultCell: string | undefined,
): Check<JurisdictionContext | null> {
  if (scope.cells.length > MAX_REQUEST_CELLS) {
    return fail('invalid_request', `the request names ${scope.cells.length} cells; at most ${MAX_REQUEST_CELLS}`);
  }
  for (const { where, value } of scope.cells) {
    const cell = checkCell(value, where);
    if (!cell.ok) return cell;
  }
  let workerJurisdiction: string | null = null;
  if (headers.jurisdiction !== undefined) {
    const code = headers.jurisdiction.trim().toUpperCase();
    if (!isKnownJurisdictionCode(code)) {
      return fail(
        'invalid_jurisdiction',
        `x-svc-jurisdiction "${headers.jurisdiction}" is not a known jurisdiction code`,
      );
    }
    workerJurisdiction = code;
  }
  let minWorkerTier: WorkerTier | null = null;
  if (headers.minTier !== undefined) {
    const tier = headers.minTier.trim().toLowerCase();
    if (!isWorkerTier(tier)) {
      return fail('invalid_tier', `x-svc-min-tier must be one of ${WORKER_TIERS.join(', ')}`);
    }
    minWorkerTier = tier;
  }
  const jobCell = (scope.requestedCell?.value as string | undefined) ?? defaultCell;
  if (jobCell === undefined) return pass(null); // the route is not about a place
  const jurisdiction = resolveJurisdiction(jobCell);
  const others = new Set(scope.cells.map(({ value }) => value as string));
  others.delete(jobCell);
  const places = [jurisdiction, ...[...others].map((cell) => resolveJurisdiction(cell))];
  return pass({ jobCell, jurisdiction, places, workerJurisdiction, minWorkerTier });
}
