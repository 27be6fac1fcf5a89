import { pass } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { isOnline } from '../../core/worker-selection.js';
import type { WorkerRecord, WorkerRegistration, WorkerRegistry } from '../../store/worker-registry.js';
import { route, type RouteSpec } from '../route-spec.js';
import { heartbeatResponseSchema, registeredWorkerSchema, workerListSchema } from '../schemas/swarm-responses.js';
import {
  checkHeartbeatRequest,
  checkRegisterRequest,
  heartbeatRequestSchema,
  registerRequestSchema,
  type HeartbeatRequest,
} from '../schemas/worker-requests.js';

/** What a worker is told: beat at least this often. Three missed beats (90 s) and it is offline. */
export const HEARTBEAT_INTERVAL_S = 30;

/**
 * The swarm's worker registry over HTTP (docs/protocol.md §1.4–1.6, 2.7). Registration and heartbeats are signed by the
 * worker key (gate 1: Ed25519 over JCS of the body; malformed and small-order keys fail there with 400
 * `invalid_public_key`); they exercise no delegation facet. A replayed heartbeat (seq not above the last
 * accepted one) is 401 `stale_request`, like gate 1's stale `created_at`: both mean "this signed message is
 * not fresh". The list is public, computed with the injected clock, and leaves out the device details
 * (hardware) that would fingerprint community members' machines.
 */
export const workerRoutes = (deps: { workers: WorkerRegistry; clock: () => number }): RouteSpec<unknown>[] => [
  route<WorkerRegistration>({
    method: 'POST',
    path: '/svc/workers/register',
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => checkRegisterRequest(body),
    handler: async (ctx, registration, gates) => {
      const pk = signer(gates.requester?.pk);
      // Only for the status code: two concurrent first registrations may both answer 201.
      const existed = (await deps.workers.get(pk)) !== null;
      const now = deps.clock();
      const record = await deps.workers.register({ ...registration, pk }, now);
      ctx.status = existed ? 200 : 201;
      ctx.body = { ...publicWorker(record, now), hardware: record.hardware, heartbeat_seq: record.heartbeat_seq };
    },
    docs: {
      summary: 'Register a worker (signed by the worker key)',
      description:
        'Creates the worker (201) or replaces its declaration (200), keeping trust and counters. `created_at` is ' +
        'required, so a captured registration cannot be replayed after 5 minutes.',
      tags: ['Workers'],
      body: registerRequestSchema,
      responses: {
        200: { description: 'Updated', schema: registeredWorkerSchema },
        201: { description: 'Registered', schema: registeredWorkerSchema },
      },
      errors: ['invalid_request', 'invalid_model', 'invalid_worker'],
    },
  }),
  route<HeartbeatRequest>({
    method: 'POST',
    path: '/svc/workers/heartbeat',
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => checkHeartbeatRequest(body),
    handler: async (ctx, beat, gates) => {
      const pk = signer(gates.requester?.pk);
      const now = deps.clock();
      const record = await deps.workers.heartbeat(pk, beat.seq, now);
      ctx.body = {
        pk,
        seq: beat.seq,
        trust_tier: record.trust_tier,
        online: isOnline(record, now),
        next_heartbeat_within_s: HEARTBEAT_INTERVAL_S,
      };
    },
    docs: {
      summary: 'Worker heartbeat (signed by the worker key)',
      description: '`seq` must exceed the last accepted one (a replay is 401 `stale_request`); beat every 30 s.',
      tags: ['Workers'],
      body: heartbeatRequestSchema,
      responses: { 200: { description: 'Seen', schema: heartbeatResponseSchema } },
      errors: ['invalid_request', 'worker_not_found'],
    },
  }),
  route({
    method: 'GET',
    path: '/svc/workers',
    auth: 'public',
    facets: [],
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      const now = deps.clock();
      const workers = (await deps.workers.list()).map((w) => publicWorker(w, now));
      ctx.body = { workers, total: workers.length, online: workers.filter((w) => w.online).length };
    },
    docs: {
      summary: 'Registered workers',
      description: 'Without hardware details; `online` means seen within 90 s.',
      tags: ['Workers'],
      responses: { 200: { description: 'The workers', schema: workerListSchema } },
    },
  }),
];

/** Gate 1 ran (auth 'signed'), so the requester is known; anything else is a wiring bug. */
function signer(pk: string | undefined): string {
  if (pk === undefined) throw new ServiceError('internal_error', 'signed route without a requester');
  return pk;
}

/** A worker as anyone may see it; `online` is computed now, `last_seen` is ISO 8601 like `registered_at`. */
function publicWorker(w: WorkerRecord, nowMs: number) {
  return {
    pk: w.pk,
    h3_cell: w.h3_cell,
    models: w.models,
    tools: w.tools,
    hardware_tier: w.hardware_tier,
    relay: w.relay,
    version: w.version,
    trust_tier: w.trust_tier,
    jobs_completed: w.jobs_completed,
    jobs_failed: w.jobs_failed,
    registered_at: w.registered_at,
    last_seen: new Date(w.last_seen_ms).toISOString(),
    online: isOnline(w, nowMs),
  };
}
