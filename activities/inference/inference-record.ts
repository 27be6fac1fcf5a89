/**
 * The payload of `hive/inference` proof records (docs/protocol.md §2.6: one after every inference), version 1. The
 * inference audit (docs/protocol.md §2.6: provider, model, tokens, latency, epoch, job hash) reads from it.
 *
 * Prompts and answers are customer data and proof records are public to anyone who can query the store, so
 * they appear only as SHA-256 hashes: whoever holds the text can prove it was this inference, nobody else can
 * read it. `job_hash` binds the normalized request (model asked for, messages, sampling, tools, locations).
 * A backbone answer says so: `provider: backbone`, `worker_pk: backbone` (docs/protocol.md §1.5, transparent).
 */
import { z } from 'zod';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';

/** The fixed worker marker of backbone answers (docs/protocol.md §2.3 `worker_pk`); defined in core for the ledger. */
export { BACKBONE_WORKER } from '../../core/backbone-worker.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const count = z.number().int().nonnegative();

export const inferencePayloadSchema = z.strictObject({
  version: z.literal(1),
  job_id: z.string(),
  /** The compound-job step, null for a chat completion. */
  step_id: z.string().nullable(),
  provider: z.enum(['worker', 'backbone']),
  /** The model that answered (the backbone model when the backbone served). */
  model: z.string(),
  /** The model the request named, or the default it got. */
  requested_model: z.string(),
  worker_pk: z.string(),
  tokens_in: count,
  tokens_out: count,
  /** True when the runtime did not report usage and the counts are estimates. */
  usage_estimated: z.boolean(),
  latency_ms: count,
  cold_start: z.boolean(),
  /** Why a worker model was answered by the backbone; null when not. */
  fallback_reason: z.string().nullable(),
  /** Server-side tool calls executed while answering. */
  tool_calls: count,
  prompt_sha256: hex64,
  answer_sha256: hex64,
  job_hash: hex64,
  cost: z.number().nonnegative(),
  epoch: count,
  h3_cell: z.string(),
  api_key_id: z.string().nullable(),
  /** Places the answer named (compound-job steps only: a dependent tile_render reads them). */
  locations: z.array(z.strictObject({ name: z.string(), address: z.string() })).optional(),
});
export type InferencePayload = z.infer<typeof inferencePayloadSchema>;

/** SHA-256 hex of the canonical JSON of a value (RFC 8785). */
export const jcsSha256 = (value: unknown): string => sha256Hex(canonicalJson(value));
