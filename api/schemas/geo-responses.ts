/**
 * Answers of the tile and imagery routes (docs/protocol.md §2.4, §2.5) for the API reference, from
 * activities/tiles/tile-stats.ts and activities/imagery (`ScenesResult`, `NdviResult`, `ProcessResponse`).
 */
import { z } from 'zod';
import { IMAGE_OPERATIONS } from '../../core/imagery-operations.js';
import { HEALTH_STATUSES } from '../../core/ndvi.js';
import { TILE_STYLES } from '../../core/tile-styles.js';

export const tileGridSchema = z
  .array(z.string().describe('Absolute URL of one tile'))
  .describe('The distinct tiles covering the cell and its rings, each URL naming a cell inside that tile');

const tileCounts = z.object({
  hits: z.int(),
  misses: z.int(),
  errors: z.int(),
  bytes: z.int(),
  cost: z.number(),
});

export const tileStatsSchema = z.object({
  hours: z.int(),
  since: z.string().describe('When this process started counting'),
  buckets: z.array(
    z.object({
      epoch: z.int(),
      start: z.string(),
      styles: z.object(
        Object.fromEntries(TILE_STYLES.map((s) => [s, tileCounts])) as Record<string, typeof tileCounts>,
      ),
      totals: tileCounts,
    }),
  ),
  totals: tileCounts,
});

const sceneSchema = z.looseObject({
  id: z.string(),
  datetime: z.string(),
  cloudCover: z.number().nullable(),
  thumbnail: z.string().nullable(),
  bands: z.record(z.string(), z.string()).describe('Band name → asset URL (red, nir, scl …)'),
  processingBaseline: z.string().nullable(),
  platform: z.string().nullable(),
});

export const scenesResultSchema = z.object({
  h3Cell: z.string(),
  from: z.string(),
  to: z.string(),
  cloud: z.number(),
  limit: z.int(),
  count: z.int(),
  scenes: z.array(sceneSchema),
  recordId: z.string(),
});

/** docs/protocol.md §2.5's NDVI result plus how it was made. */
export const ndviResultSchema = z.looseObject({
  sceneId: z.string(),
  datetime: z.string(),
  h3Cell: z.string(),
  meanNdvi: z.number().nullable(),
  minNdvi: z.number().nullable(),
  maxNdvi: z.number().nullable(),
  healthStatus: z.enum(HEALTH_STATUSES).nullable(),
  cloudCover: z.number().nullable(),
  description: z.string(),
  processingMs: z.number(),
  method: z.enum(['pixels', 'metadata']),
  processingBaseline: z.string().nullable(),
  offsetApplied: z.boolean(),
  megapixels: z.number(),
  cost: z.number(),
  validPixels: z.int().nullable(),
  recordId: z.string(),
});

export const processResponseSchema = z.object({
  operation: z.enum(IMAGE_OPERATIONS),
  h3_cell: z.string(),
  result: z.record(z.string(), z.unknown()).describe("The operation's result (an NDVI result for `ndvi` …)"),
  cost: z.number(),
  record_id: z.string(),
});
