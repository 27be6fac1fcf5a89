/**
 * Path and query parameters of the routes whose pre-flight checks them with plain functions rather than zod
 * (core/query-params.ts, core/tile-request.ts, api/schemas/imagery-requests.ts), written as zod for the API
 * reference only. Ranges and defaults come from the same constants the checks use, so they cannot disagree.
 */
import { z } from 'zod';
import { DEFAULT_WINDOW_DAYS } from '../../activities/imagery/date-window.js';
import { DEFAULT_LIMIT as DEFAULT_SCENES, MAX_LIMIT as MAX_SCENES } from '../../activities/imagery/run-operation.js';
import { BAND_MATH_BANDS, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH } from '../../core/band-math.js';
import { IMAGE_OPERATIONS } from '../../core/imagery-operations.js';
import { DEFAULT_STATS_HOURS, MAX_STATS_HOURS } from '../../core/query-params.js';
import { MAX_GRID_RINGS } from '../../core/tile-grid.js';
import { MAX_ZOOM, MIN_ZOOM, TILE_STYLES } from '../../core/tile-styles.js';

const cell = z.string().describe('H3 cell index (15 hex characters), e.g. 861e8050fffffff');
const date = z
  .string()
  .describe('YYYY-MM-DD (a whole UTC day) or an ISO 8601 UTC time')
  .meta({ examples: ['2026-03-01', '2026-03-01T12:00:00Z'] });

/** `?limit` of a listing: absent → `fallback`. */
export const limitQuery = (max: number, fallback: number) =>
  z.object({ limit: z.int().min(1).max(max).default(fallback).optional() });

export const hoursQuery = z.object({
  hours: z.int().min(1).max(MAX_STATS_HOURS).default(DEFAULT_STATS_HOURS).optional().describe('Hours of statistics'),
});

export const daysQuery = (max: number, fallback: number) =>
  z.object({ days: z.int().min(1).max(max).default(fallback).optional().describe('Whole UTC days, today included') });

export const ringsQuery = z.object({
  rings: z.int().min(0).max(MAX_GRID_RINGS).default(0).optional().describe('Rings of neighbouring cells (gridDisk)'),
});

const zoom = z.int().min(MIN_ZOOM).max(MAX_ZOOM);
const style = z.enum(TILE_STYLES);

export const tileParams = z.object({
  h3_cell: cell,
  zoom,
  file: z
    .string()
    .regex(/^[a-z-]+\.(png|jpg|jpeg|webp)$/)
    .describe(`{style}.{format}: style one of ${TILE_STYLES.join(', ')}; format png, jpg (or jpeg), webp`)
    .meta({ examples: ['osm-bright.png', 'satellite.jpg'] }),
});

export const gridParams = z.object({ cell, zoom, style });

export const jobIdParams = z.object({ jobId: z.string().describe('Job id (a UUID derived from the signature)') });
export const recordIdParams = z.object({ record_id: z.string().describe('Proof record id') });
export const toolIdParams = z.object({ tool_id: z.string().describe('Tool id, e.g. web-search') });
export const workerPkParams = z.object({
  pk: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .describe('Worker public key'),
});

const window = {
  from: date.optional().describe(`Start of the window; default ${DEFAULT_WINDOW_DAYS} days before \`to\``),
  to: date.optional().describe('End of the window; default now'),
};

export const scenesQueryDocs = z.object({
  cell,
  ...window,
  cloud: z.number().min(0).max(100).default(100).optional().describe('Maximum cloud cover, percent'),
  limit: z.int().min(1).max(MAX_SCENES).default(DEFAULT_SCENES).optional(),
});

export const ndviQueryDocs = z.object({ cell, ...window });

/** `POST /v1/imagery/process` (the pre-flight's own schema leaves dates and numbers to later checks). */
export const processBodyDocs = z.strictObject({
  operation: z
    .enum(IMAGE_OPERATIONS)
    .describe(
      'flood_classify: MNDWI water over the cell, and new water against the reference window; band_math: the ' +
        'statistics of `expression` over the cell',
    ),
  h3_cell: cell,
  date_from: date.optional(),
  date_to: date.optional(),
  cloud: z.number().min(0).max(100).optional().describe('scene_search only'),
  limit: z.int().min(1).max(MAX_SCENES).optional().describe('scene_search only'),
  reference_from: date.optional().describe('flood_classify only: start of the reference (dry) window'),
  reference_to: date.optional().describe('flood_classify only: end of the reference (dry) window'),
  model: z
    .string()
    .optional()
    .describe('flood_classify only: classify with this model on the classify endpoint (CLASSIFY_URL), when configured'),
  expression: z
    .string()
    .max(MAX_EXPRESSION_LENGTH)
    .optional()
    .describe(
      `band_math only, and required there: + - * /, parentheses, numbers and the bands ${BAND_MATH_BANDS.join(' ')}, ` +
        `at most ${MAX_EXPRESSION_LENGTH} characters and ${MAX_EXPRESSION_DEPTH} levels deep`,
    )
    .meta({ examples: ['(B08-B04)/(B08+B04)'] }),
});
