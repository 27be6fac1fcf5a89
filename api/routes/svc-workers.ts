import { pass } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { HEARTBEAT_INTERVAL_MS, isOnline, ONLINE_WINDOW_MS } from '../../core/worker-selection.js';
import type { RateLimitStore } from '../../store/types.js';
import type { WorkerRecord, WorkerRegistration, WorkerRegistry } from '../../store/worker-registry.js';
import { route, type RouteSpec } from '../route-spec.js';
import {
  heartbeatResponseSchema,
  leaveResponseSchema,
  registeredWorkerSchema,
  workerListSchema,
} from '../schemas/swarm-responses.js';
import {
  checkHeartbeatRequest,
  checkLeaveRequest,
  checkRegisterRequest,
  heartbeatRequestSchema,
  leaveRequestSchema,
  registerRequestSchema,
  type HeartbeatRequest,
  type LeaveRequest,
} from '../schemas/worker-requests.js';

/** What a worker is told: beat at least this often. Three missed beats (30 s) and it is offline. */
export const HEARTBEAT_INTERVAL_S = HEARTBEAT_INTERVAL_MS / 1000;
const WINDOW_S = ONLINE_WINDOW_MS / 1000;

/**
 * The swarm's worker registry over HTTP (docs/protocol.md §1.4–1.6, 2.7). Registration and heartbeats are signed by the
 * worker key (gate 1: Ed25519 over JCS of the body; malformed and small-order keys fail there with 400
 * `invalid_public_key`); they exercise no delegation facet. A replayed heartbeat (seq not above the last
 * accepted one) is 401 `stale_request`, like gate 1's stale `created_at`: both mean "this signed message is
 * not fresh". The list is public, computed with the injected clock, and leaves out the device details
 * (hardware) that would fingerprint community members' machines.
 */
/** How many registrations one worker key, and how many new worker keys one address, may make per hour. */
export interface RegistrationLimits {
  /** WORKER_REGISTRATIONS_PER_KEY_PER_HOUR; 0: unlimited. */
  perKeyPerHour: number;
  /** WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR: first registrations from one client address; 0: unlimited. */
  newKeysPerAddressPerHour: number;
}

export const DEFAULT_REGISTRATION_LIMITS: RegistrationLimits = { perKeyPerHour: 30, newKeysPerAddressPerHour: 10 };

const HOUR_MS = 3_600_000;

export const workerRoutes = (deps: {
  workers: WorkerRegistry;
  clock: () => number;
  /** Counts registrations (the gateway's rate-limit store, shared by every gateway of the cluster). */
  rateLimits: RateLimitStore;
  limits?: RegistrationLimits | undefined;
}): RouteSpec<unknown>[] => [
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
      // A key costs nothing to make: bound what one key and one address can register, so a burst of made-up
      // workers cannot fill the registry (and the map, and the status) with devices that take no work.
      const limits = deps.limits ?? DEFAULT_REGISTRATION_LIMITS;
      await bound(deps, `worker-register:key:${pk}`, limits.perKeyPerHour, now, 'registrations of this worker key');
      if (!existed) {
        await bound(
          deps,
          `worker-register:ip:${ctx.ip}`,
          limits.newKeysPerAddressPerHour,
          now,
          'new workers from this address',
        );
      }
      const record = await deps.workers.register({ ...registration, pk }, now);
      ctx.status = existed ? 200 : 201;
      ctx.body = { ...publicWorker(record, now), hardware: record.hardware, heartbeat_seq: record.heartbeat_seq };
    },
    docs: {
      summary: 'Register a worker (signed by the worker key)',
      description:
        'Creates the worker (201) or replaces its declaration (200), keeping trust and counters. `created_at` is ' +
        'required, so a captured registration cannot be replayed after 5 minutes. Bounded per hour: registrations ' +
        'per worker key and new worker keys per client address (429 `rate_limit` past either). A registered ' +
        'worker gets steps only while it polls its task queues.',
      tags: ['Workers'],
      body: registerRequestSchema,
      responses: {
        200: { description: 'Updated', schema: registeredWorkerSchema },
        201: { description: 'Registered', schema: registeredWorkerSchema },
      },
      errors: ['invalid_request', 'invalid_model', 'invalid_worker', 'rate_limit'],
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
      description: `\`seq\` must exceed the last accepted one (a replay is 401 \`stale_request\`); beat every ${HEARTBEAT_INTERVAL_S} s.`,
      tags: ['Workers'],
      body: heartbeatRequestSchema,
      responses: { 200: { description: 'Seen', schema: heartbeatResponseSchema } },
      errors: ['invalid_request', 'worker_not_found'],
    },
  }),
  route<LeaveRequest>({
    method: 'POST',
    path: '/svc/workers/leave',
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => checkLeaveRequest(body),
    handler: async (ctx, leave, gates) => {
      const pk = signer(gates.requester?.pk);
      const now = deps.clock();
      const record = await deps.workers.leave(pk, leave.seq, now);
      ctx.body = { pk, seq: leave.seq, online: false, left_at: new Date(record.left_at_ms ?? now).toISOString() };
    },
    docs: {
      summary: 'Worker leaves (signed by the worker key)',
      description:
        'A worker stopping gracefully says so first: from this answer on it is offline (in `/svc/workers`, ' +
        '`/svc/status`, routing) until it registers or beats again. Sequenced like a heartbeat: `seq` must exceed ' +
        'the last accepted one, so a replayed leave is 401 `stale_request`; `created_at` is required.',
      tags: ['Workers'],
      body: leaveRequestSchema,
      responses: { 200: { description: 'Left', schema: leaveResponseSchema } },
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
      description: `Without hardware details; \`online\` means not left and seen within ${WINDOW_S} s.`,
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

/** Counts one registration under `key` in the current hour; past `limit` (0: none) it is 429 rate_limit. */
async function bound(
  deps: { rateLimits: RateLimitStore },
  key: string,
  limit: number,
  now: number,
  what: string,
): Promise<void> {
  if (limit <= 0) return;
  const start = Math.floor(now / HOUR_MS) * HOUR_MS;
  const count = await deps.rateLimits.increment(key, start, HOUR_MS);
  if (count > limit) {
    const retry = Math.max(1, Math.ceil((start + HOUR_MS - now) / 1000));
    throw new ServiceError('rate_limit', `more than ${limit} ${what} this hour`, { 'retry-after': String(retry) });
  }
}
