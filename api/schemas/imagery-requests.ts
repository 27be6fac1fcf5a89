import { z } from 'zod';
import { parseBandExpression } from '../../core/band-math.js';
import { fail, pass, type Check } from '../../core/check.js';
import type { ImageOperation } from '../../core/imagery-operations.js';
import { integerIn } from '../../core/query-params.js';
import { parseDateParam, referenceWindow } from '../../activities/imagery/date-window.js';
import type { ImageryQuery } from '../../activities/imagery/index.js';
import { MAX_LIMIT, checkOperation } from '../../activities/imagery/run-operation.js';
import { zodCheck } from './zod-check.js';

/**
 * Requests of `/v1/imagery/*` (docs/protocol.md §4.1). Gate 2 has already refused a malformed `cell` (query) or
 * `h3_cell` (body); these checks add presence, dates (`invalid_date`), `cloud` (`invalid_cloud`, 0–100)
 * and `limit` (`invalid_limit`, integer 1–100). A repeated query parameter is refused, not guessed at.
 */
type Query = Record<string, string | string[] | undefined>;

const DECIMAL = /^\d+(\.\d+)?$/;

function requireCell(query: Query): Check<string> {
  const cell = query.cell;
  if (cell === undefined || cell === '') {
    return fail('cell_required', 'the cell query parameter (an H3 cell index) is required');
  }
  // A valid string by now (gate 2); anything else was refused there.
  return pass(cell as string);
}

function dates(from: unknown, to: unknown, names: [string, string]): Check<{ fromMs?: number; toMs?: number }> {
  const fromMs = parseDateParam(from, names[0], 'start');
  if (!fromMs.ok) return fromMs;
  const toMs = parseDateParam(to, names[1], 'end');
  if (!toMs.ok) return toMs;
  if (fromMs.value !== undefined && toMs.value !== undefined && fromMs.value > toMs.value) {
    return fail('invalid_date', `${names[0]} is after ${names[1]}`);
  }
  return pass({
    ...(fromMs.value === undefined ? {} : { fromMs: fromMs.value }),
    ...(toMs.value === undefined ? {} : { toMs: toMs.value }),
  });
}

const cloudOf = (value: unknown): Check<number | undefined> => {
  if (value === undefined) return pass(undefined);
  const n = typeof value === 'string' && DECIMAL.test(value) ? Number(value) : typeof value === 'number' ? value : NaN;
  return Number.isFinite(n) && n >= 0 && n <= 100
    ? pass(n)
    : fail('invalid_cloud', `cloud must be a number of percent from 0 to 100, got ${JSON.stringify(value)}`);
};

const limitOf = (value: unknown): Check<number | undefined> => {
  if (value === undefined) return pass(undefined);
  // A query string (`?limit=5`) or a JSON number (`process` body).
  const n = typeof value === 'number' ? value : (integerIn(value, 1, MAX_LIMIT) ?? NaN);
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_LIMIT
    ? pass(n)
    : fail('invalid_limit', `limit must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(value)}`);
};

/** GET /v1/imagery/scenes?cell&from&to&cloud&limit */
export function scenesQuery(query: Query): Check<ImageryQuery> {
  const cell = requireCell(query);
  if (!cell.ok) return cell;
  const window = dates(query.from, query.to, ['from', 'to']);
  if (!window.ok) return window;
  const cloud = cloudOf(query.cloud);
  if (!cloud.ok) return cloud;
  const limit = limitOf(query.limit);
  if (!limit.ok) return limit;
  return pass({
    cell: cell.value,
    ...window.value,
    ...(cloud.value === undefined ? {} : { cloud: cloud.value }),
    ...(limit.value === undefined ? {} : { limit: limit.value }),
  });
}

/** GET /v1/imagery/ndvi?cell&from&to */
export function ndviQuery(query: Query): Check<ImageryQuery> {
  const cell = requireCell(query);
  if (!cell.ok) return cell;
  const window = dates(query.from, query.to, ['from', 'to']);
  return window.ok ? pass({ cell: cell.value, ...window.value }) : window;
}

const processBodySchema = z.strictObject({
  operation: z.string(),
  h3_cell: z.string(),
  date_from: z.unknown().optional(),
  date_to: z.unknown().optional(),
  /** flood_classify only: the reference (dry) window. */
  reference_from: z.unknown().optional(),
  reference_to: z.unknown().optional(),
  /** flood_classify only: a classify-endpoint model. */
  model: z.string().min(1).max(256).optional(),
  /** band_math only: the expression, parsed below so a refusal names what is wrong. */
  expression: z.unknown().optional(),
  /** scene_search only. */
  cloud: z.unknown().optional(),
  limit: z.unknown().optional(),
});

export interface ProcessInput {
  operation: ImageOperation;
  query: ImageryQuery;
}

/** POST /v1/imagery/process {operation, h3_cell, date_from?, date_to?, cloud?, limit?, reference_from?, reference_to?, model?, expression?} */
export function processBody(body: unknown): Check<ProcessInput> {
  const shape = zodCheck(processBodySchema, body);
  if (!shape.ok) return shape;
  const b = shape.value;
  const operation = checkOperation(b.operation);
  if (!operation.ok) return operation;
  const window = dates(b.date_from, b.date_to, ['date_from', 'date_to']);
  if (!window.ok) return window;
  const cloud = cloudOf(b.cloud);
  if (!cloud.ok) return cloud;
  const limit = limitOf(b.limit);
  if (!limit.ok) return limit;
  if ((cloud.value !== undefined || limit.value !== undefined) && operation.value !== 'scene_search') {
    return fail('invalid_request', 'cloud and limit apply to the scene_search operation only');
  }
  const reference = referenceWindow(b.reference_from, b.reference_to, ['reference_from', 'reference_to']);
  if (!reference.ok) return reference;
  if (reference.value !== undefined && operation.value !== 'flood_classify') {
    return fail('invalid_request', 'reference_from and reference_to apply to the flood_classify operation only');
  }
  if (b.model !== undefined && operation.value !== 'flood_classify') {
    return fail('invalid_request', 'model applies to the flood_classify operation only');
  }
  if (operation.value === 'band_math') {
    const parsed = parseBandExpression(b.expression);
    if (!parsed.ok) return parsed;
  } else if (b.expression !== undefined) {
    return fail('invalid_request', 'expression applies to the band_math operation only');
  }
  return pass({
    operation: operation.value,
    query: {
      cell: b.h3_cell,
      ...window.value,
      windowParams: { from: 'date_from', to: 'date_to' },
      ...(cloud.value === undefined ? {} : { cloud: cloud.value }),
      ...(limit.value === undefined ? {} : { limit: limit.value }),
      ...(reference.value === undefined ? {} : { reference: reference.value }),
      ...(b.model === undefined ? {} : { model: b.model }),
      ...(operation.value === 'band_math' ? { expression: b.expression as string } : {}),
    },
  });
}
