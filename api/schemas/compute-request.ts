import { z } from 'zod';
import { MAX_STEPS } from '../../core/step-types/spec.js';
import { requestStepSchema } from '../../core/step-types/index.js';

export { MAX_STEPS };
export const DEFAULT_BUDGET_CREDITS = 0.1;

/**
 * docs/protocol.md §2.2: one shape per step type (core/step-types/), discriminated on `type`. `tools` and
 * `max_tokens` are Geofabric additions (a job declares its required tools, docs/protocol.md §2.7).
 */
export const stepSchema = requestStepSchema;

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
