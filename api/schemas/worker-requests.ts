import { z } from 'zod';
import { fail, pass, type Check } from '../../core/check.js';
import { checkHardwareTier } from '../../core/hardware-tier.js';
import { WORKER_MODELS } from '../../core/models.js';
import { TOOL_IDS } from '../../core/tool-registry.js';
import type { WorkerRegistration } from '../../store/worker-registry.js';
import { zodCheck } from './zod-check.js';

/**
 * Bodies of `POST /svc/workers/register` and `/svc/workers/heartbeat`. Both are signed by the worker key
 * (gate 1): `requester_pk` is the worker's identity, so a worker can only ever register or beat for itself.
 */

// semver.org's recommended expression (2.0.0), so build metadata and pre-releases are accepted as written.
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

const hardwareSchema = z.strictObject({
  platform: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'e.g. linux-x64, darwin-arm64, android-arm64'),
  gpu: z.string().trim().min(1).max(128).nullable(),
  vram_gb: z.number().min(0).max(4096),
  ram_gb: z.number().positive().max(65_536),
  cores: z.int().min(1).max(4096),
});

export const registerRequestSchema = z.strictObject({
  requester_pk: z.string(),
  h3_cell: z.string(),
  models: z.array(z.string().min(1).max(64)).max(32),
  // Only tools the registry knows (docs/protocol.md §2.7's five), so jobs that require them can match.
  tools: z.array(z.enum(TOOL_IDS)).max(TOOL_IDS.length * 2),
  hardware: hardwareSchema,
  hardware_tier: z.union([z.literal(1), z.literal(2), z.literal(3)]),
  relay: z.boolean(),
  version: z.string().max(64).regex(SEMVER, 'must be the worker software version as semver, e.g. 0.1.0'),
  // Required here (optional elsewhere): gate 1 keeps it within 5 minutes of the server clock, so a captured
  // registration cannot be replayed later to mark a worker online or to restore an old declaration.
  created_at: z.string({ error: 'required: an ISO 8601 time within 5 minutes of the server clock' }),
  nonce: z.string().max(128).optional(),
  signature: z.string(),
});

/**
 * `seq` must exceed the worker's last accepted one (a replayed heartbeat is refused). Workers that may
 * restart without their counter should send the current Unix time in milliseconds: it only ever grows.
 */
export const heartbeatRequestSchema = z.strictObject({
  requester_pk: z.string(),
  seq: z.int().min(1),
  created_at: z.string().optional(),
  nonce: z.string().max(128).optional(),
  signature: z.string(),
});

export type HeartbeatRequest = z.infer<typeof heartbeatRequestSchema>;

/** A leave is sequenced like a heartbeat, and its `created_at` is required (gate 1 refuses one older than 5 min). */
export const leaveRequestSchema = heartbeatRequestSchema.extend({ created_at: z.string() });
export type LeaveRequest = z.infer<typeof leaveRequestSchema>;

const unique = <T>(values: readonly T[]): T[] => [...new Set(values)];

/**
 * Schema (400 `invalid_request`), models from the registry (400 `invalid_model`), and the declared hardware
 * tier against the declared hardware (400 `invalid_worker`). Gate 2 has already refused a malformed h3_cell.
 */
export function checkRegisterRequest(body: unknown): Check<WorkerRegistration> {
  const parsed = zodCheck(registerRequestSchema, body);
  if (!parsed.ok) return parsed;
  const r = parsed.value;
  const unknownModel = r.models.find((m) => !(WORKER_MODELS as readonly string[]).includes(m));
  if (unknownModel !== undefined) {
    return fail(
      'invalid_model',
      `models: ${JSON.stringify(unknownModel)} is not a registry model (${WORKER_MODELS.join(', ')})`,
    );
  }
  const tier = checkHardwareTier(r.hardware, r.hardware_tier);
  if (!tier.ok) return tier;
  return pass({
    pk: r.requester_pk,
    h3_cell: r.h3_cell,
    models: unique(r.models),
    tools: unique(r.tools),
    hardware: r.hardware,
    hardware_tier: tier.value,
    relay: r.relay,
    version: r.version,
    // Signed, and required: a registration older than the one the registry holds is a replay (store/worker-registry.ts).
    declared_at_ms: Date.parse(r.created_at),
  });
}

export const checkHeartbeatRequest = (body: unknown): Check<HeartbeatRequest> => zodCheck(heartbeatRequestSchema, body);
export const checkLeaveRequest = (body: unknown): Check<LeaveRequest> => zodCheck(leaveRequestSchema, body);
