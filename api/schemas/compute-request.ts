import { z } from 'zod';
import { STEP_TYPES } from '../../core/job-plan.js';
import { MAX_FUSION_RINGS } from '../../core/sensor-fusion.js';
import { QUANTITY_NAMES } from '../../core/telemetry.js';
import { MAX_ZOOM, MIN_ZOOM, TILE_STYLES } from '../../core/tile-styles.js';

/** Most steps a job may carry: enough for any real pipeline, small enough to plan and price instantly. */
export const MAX_STEPS = 32;
export const DEFAULT_BUDGET_CREDITS = 0.1;

const message = z.strictObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().max(100_000),
});

/** docs/protocol.md §2.2. `tools` and `max_tokens` are Geofabric additions (a job declares its required tools, docs/protocol.md §2.7). */
export const stepSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'step ids are 1-64 characters of A-Z a-z 0-9 _ . -'),
  type: z.enum(STEP_TYPES),
  // One step id, or a list of them (fan-in: the step gets every output, in this order).
  depends_on: z.union([z.string(), z.array(z.string()).min(1).max(MAX_STEPS)]).optional(),
  model: z.string().min(1).optional(),
  messages: z.array(message).max(256).optional(),
  max_tokens: z.int().min(1).max(32_768).optional(),
  operation: z.string().min(1).optional(),
  center_cell: z.string().optional(),
  zoom: z.int().min(MIN_ZOOM).max(MAX_ZOOM).optional(),
  style: z.enum(TILE_STYLES).optional(),
  // Open beyond its four named keys, so a step can carry e.g. a GeoJSON `area` (checked by gate 4).
  context: z
    .looseObject({
      h3_cell: z.string().optional(),
      epoch: z.int().min(0).optional(),
      date_from: z.iso.date().or(z.iso.datetime()).optional(),
      date_to: z.iso.date().or(z.iso.datetime()).optional(),
      reference_from: z.iso.date().or(z.iso.datetime()).optional(),
      reference_to: z.iso.date().or(z.iso.datetime()).optional(),
    })
    .optional(),
  tools: z.array(z.string().min(1).max(64)).max(16).optional(),
  // sensor_fusion (docs/protocol.md §2.10): the quantity fused (required there) and the k-ring around the cell.
  quantity: z.enum(QUANTITY_NAMES).optional(),
  rings: z.int().min(0).max(MAX_FUSION_RINGS).optional(),
});

/** docs/protocol.md §2.1, plus the optional `created_at` and `nonce` of docs/protocol.md §10 (gate 1). */
export const computeRequestSchema = z.strictObject({
  requester_pk: z.string(),
  h3_cell: z.string().optional(),
  steps: z.array(stepSchema).min(1).max(MAX_STEPS),
  budget_credits: z.number().min(0).max(1_000_000).default(DEFAULT_BUDGET_CREDITS),
  signature: z.string(),
  created_at: z.string().optional(),
  nonce: z.string().max(128).optional(),
});

export type ComputeRequest = z.infer<typeof computeRequestSchema>;
export type ComputeStep = z.infer<typeof stepSchema>;
