/**
 * Answers of the swarm routes (`/v1/models`, `/v1/chat/completions`, `/svc/*`) for the API reference. Where a
 * view is large and changes with the swarm (status, marketplace, stats) the top-level fields are named and the
 * rest is left open rather than guessed; tests parse real answers with these.
 */
import { z } from 'zod';
import { inferencePayloadSchema } from '../../activities/inference/inference-record.js';
import { WORKER_TIERS } from '../../core/tiers.js';
import { TOOL_IDS } from '../../core/tool-registry.js';

const open = z.looseObject({});

/** OpenAI's model object with the registry's facts (`GET /v1/models/{id}`). */
export const modelObjectSchema = z.object({
  id: z.string(),
  object: z.literal('model'),
  created: z.int(),
  owned_by: z.enum(['backbone', 'geofabric-swarm']),
  family: z.string(),
  parameters: z.string(),
  context_length: z.int(),
  min_hardware_tier: z.int().nullable(),
  price_per_token: z.number(),
  default: z.boolean(),
});

export const modelListSchema = z.object({
  object: z.literal('list'),
  data: z.array(modelObjectSchema),
});

/** OpenAI's chat.completion with Geofabric's `svc` object (api/routes/chat-response.ts). */
export const chatCompletionSchema = z.looseObject({
  id: z.string(),
  object: z.literal('chat.completion'),
  created: z.int(),
  model: z.string(),
  choices: z.array(
    z.looseObject({
      index: z.int(),
      message: z.looseObject({ role: z.literal('assistant'), content: z.string().nullable() }),
      finish_reason: z.string().nullable(),
    }),
  ),
  usage: z.object({ prompt_tokens: z.int(), completion_tokens: z.int(), total_tokens: z.int() }),
  svc: z
    .looseObject({
      job_id: z.string(),
      worker_pk: z.string(),
      provider: z.enum(['worker', 'backbone']),
      model: z.string(),
      h3_cell: z.string(),
      proof_record_id: z.string(),
      epoch: z.int(),
      cost: z.number(),
    })
    .describe(
      'job_id, worker_pk, provider, model, requested_model, h3_cell, proof_record_id, epoch, cost, cold_start, latency_ms, fallback_reason, usage_estimated, tool_calls, and locations when svc.locations asked for them',
    ),
});

export const swarmStatusSchema = z.looseObject({
  version: z.string(),
  epoch: z.int(),
  now: z.string(),
  workers: z.looseObject({ registered: z.int(), online: z.int(), relays_online: z.int() }),
  local_worker: open.nullable(),
  models: z.array(z.string()),
  default_model: z.string(),
  jobs_last_hour: z.unknown(),
  backbone: z.looseObject({ configured: z.boolean(), model: z.string(), reachable: z.boolean().nullable() }),
  earnings: open.optional().describe('Swarm earnings per hardware tier per day over the last week'),
});

export const marketplaceSchema = z.object({
  models: z.array(
    z.looseObject({
      id: z.string(),
      default: z.boolean(),
      workers_online: z.int(),
      cells: z.array(z.string()),
      warm: z.boolean(),
      state: z.enum(['warm', 'cold', 'backbone', 'offline']),
    }),
  ),
  backbone: open,
});

const recentInferenceSchema = inferencePayloadSchema
  .pick({
    job_id: true,
    step_id: true,
    provider: true,
    model: true,
    requested_model: true,
    worker_pk: true,
    tokens_in: true,
    tokens_out: true,
    latency_ms: true,
    cold_start: true,
    fallback_reason: true,
    cost: true,
    epoch: true,
    job_hash: true,
    h3_cell: true,
  })
  .extend({ record_id: z.string(), at: z.string() })
  // The public view leaves out what identifies a job (its id is a capability) or finds it.
  .partial({ job_id: true, step_id: true, job_hash: true, record_id: true });

export const recentInferencesSchema = z.object({
  view: z.enum(['operator', 'public']),
  limit: z.int(),
  count: z.int(),
  entries: z.array(recentInferenceSchema),
});

export const inferenceStatsSchema = z.looseObject({
  hours: z.int(),
  since: z.string(),
  buckets: z
    .array(open)
    .describe('One per hour, oldest first: counts, tokens, latency percentiles, by provider and model'),
  totals: open,
});

export const publicWorkerSchema = z.object({
  pk: z.string(),
  h3_cell: z.string(),
  models: z.array(z.string()),
  tools: z.array(z.enum(TOOL_IDS)),
  hardware_tier: z.int(),
  relay: z.boolean(),
  version: z.string(),
  trust_tier: z.enum(WORKER_TIERS),
  jobs_completed: z.int(),
  jobs_failed: z.int(),
  registered_at: z.string(),
  last_seen: z.string(),
  online: z.boolean(),
});

export const workerListSchema = z.object({ workers: z.array(publicWorkerSchema), total: z.int(), online: z.int() });

export const registeredWorkerSchema = publicWorkerSchema.extend({ hardware: open, heartbeat_seq: z.int() });

export const heartbeatResponseSchema = z.object({
  pk: z.string(),
  seq: z.int(),
  trust_tier: z.enum(WORKER_TIERS),
  online: z.boolean(),
  next_heartbeat_within_s: z.int(),
});

export const leaveResponseSchema = z.object({
  pk: z.string(),
  seq: z.int(),
  online: z.literal(false),
  left_at: z.string(),
});

export const earningsSchema = z.object({
  worker_pk: z.string(),
  days: z.int(),
  from: z.string(),
  to: z.string(),
  balance_credits: z.number(),
  unsettled_credits: z.number(),
  by_day: z.array(
    z.object({ day: z.string(), credits: z.number(), entries: z.int(), hardware_tier: z.int().nullable() }),
  ),
  settlements: z.array(
    z.object({
      id: z.string(),
      tx_hash: z.string().nullable(),
      ledger: z.int().nullable(),
      status: z.string(),
      credits: z.number(),
      at: z.string(),
    }),
  ),
});
