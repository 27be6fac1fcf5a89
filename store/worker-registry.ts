/**
 * The worker registry port (docs/protocol.md §1.4–1.6, 2.7): community devices in H3 cells that declare the
 * models and tools they run. Adapters: `sqlite/worker-registry.ts`, `mongo/worker-registry.ts`; the contract
 * is `test/store/worker-registry.contract.ts`. Signature checks happen before the store (api/routes/svc-workers).
 */
import { ServiceError } from '../core/errors.js';
import type { WorkerTier } from '../core/tiers.js';

export interface WorkerHardware {
  /** e.g. linux-x64, darwin-arm64, android-arm64. */
  platform: string;
  /** GPU model, null for CPU-only devices. */
  gpu: string | null;
  vram_gb: number;
  ram_gb: number;
  cores: number;
}

import type { HardwareTier } from '../core/hardware-tier.js';
export type { HardwareTier };

/** What a worker declares when it registers (validated and signature-checked before it reaches the store). */
export interface WorkerRegistration {
  pk: string;
  h3_cell: string;
  models: string[];
  tools: string[];
  hardware: WorkerHardware;
  hardware_tier: HardwareTier;
  /** A mobile relay: routes jobs to compute workers and earns relay fees (docs/protocol.md §1.4). */
  relay: boolean;
  /** The worker's real software version (docs/protocol.md §9.4 notes the original reported a stale one). */
  version: string;
  /**
   * When the worker signed this declaration (its `created_at`, ms); absent, the registration time. A declaration
   * older than the stored one is refused, so a captured earlier registration cannot roll a worker back.
   */
  declared_at_ms?: number;
}

export interface WorkerRecord extends WorkerRegistration {
  trust_tier: WorkerTier;
  jobs_completed: number;
  jobs_failed: number;
  registered_at: string;
  /** ms since the Unix epoch of the latest registration or heartbeat. */
  last_seen_ms: number;
  /** Highest heartbeat sequence number accepted; a heartbeat must exceed it (replays are refused). */
  heartbeat_seq: number;
  /**
   * When the worker announced a graceful stop (`leave`, ms); null while it has not, or since it registered or
   * beat again. A worker that left is offline (core/worker-selection.ts `isOnline`) whatever its last_seen.
   */
  left_at_ms: number | null;
}

export interface WorkerRegistry {
  /**
   * Creates the worker (seedling, heartbeat_seq 0, registered_at and last_seen at `nowMs`), or replaces its
   * declaration; a re-registration keeps trust tier, counters, heartbeat_seq and registered_at, and moves
   * last_seen_ms forward (never back). A declaration older than the stored one (`declared_at_ms`) is a replay:
   * ServiceError('stale_request'), and nothing changes; one of the same age is accepted again.
   */
  register(registration: WorkerRegistration, nowMs: number): Promise<WorkerRecord>;
  /**
   * Marks the worker seen at `nowMs`. Throws ServiceError('worker_not_found') for an unknown pk and
   * ServiceError('stale_request') when `seq` does not exceed the stored heartbeat_seq (a replay). Atomic:
   * of two concurrent heartbeats with the same seq exactly one succeeds. last_seen_ms never moves back.
   * A seq that is not a positive safe integer is a caller bug: RangeError.
   */
  heartbeat(pk: string, seq: number, nowMs: number): Promise<WorkerRecord>;
  /**
   * The worker stops (docs/operations.md "Worker lifecycle"): sets left_at_ms to `nowMs`, so it is offline at
   * once. Signed and sequenced like a heartbeat: `seq` must exceed the stored heartbeat_seq and becomes it, so a
   * replayed leave (or a heartbeat sent before it) is ServiceError('stale_request'); an unknown pk is
   * ServiceError('worker_not_found'). A later registration or heartbeat clears left_at_ms (the worker is back).
   * last_seen_ms does not move.
   */
  leave(pk: string, seq: number, nowMs: number): Promise<WorkerRecord>;
  get(pk: string): Promise<WorkerRecord | null>;
  /** Every registered worker (online or not), ordered by pk; `online` is the caller's (core/worker-selection.ts). */
  list(): Promise<WorkerRecord[]>;
  /**
   * Counts the outcome of job `jobId` and applies the trust ladder (core/worker-trust.ts); null for an unknown
   * pk (nothing is recorded). `completed` only for a job whose proof record verified.
   * Idempotent by job: the first outcome recorded for (pk, jobId) counts, once, ever; a later call with the same
   * pair (a retried final activity, a replayed request; whatever its outcome) changes nothing and returns the
   * worker as stored (a call racing the one that counts may return it from just before that count). Different
   * job ids count separately, also when recorded concurrently; of concurrent calls with one (pk, jobId) exactly
   * one counts. An empty `jobId` is a caller bug: RangeError.
   * "Ever" within the retention window (OutcomeRetention): an outcome's claim is kept that long after it was
   * recorded and then pruned, so a call for that job after the window would count again. The window outlasts
   * every way a job's outcome is recorded again (docs/operations.md "Retention").
   */
  recordOutcome(pk: string, outcome: 'completed' | 'failed', jobId: string): Promise<WorkerRecord | null>;
  /**
   * Only on a registry that batches completions (store/outcome-batch.ts): counts job `jobId` completed by `pk` at
   * once, in memory, and writes it (as `recordOutcome`) in the next batch, shortly after. Every read of this
   * registry object counts it from the moment of the call; `flush` and `close` write what is counted.
   */
  countCompleted?(pk: string, jobId: string): void;
  /**
   * Optional: `recordOutcome(pk, 'completed', jobId)` for each, in order, all or none (one transaction), returning
   * nothing: how store/outcome-batch.ts writes a batch where the store can (SQLite).
   */
  recordCompletions?(batch: readonly { pk: string; jobId: string }[]): Promise<void>;
  /**
   * Only on store/outcome-batch.ts: the worker as this registry object last read it, when that read is at most
   * `maxAgeMs` old and nothing was written through this object since; undefined when it has no such read (or
   * the worker was not registered then), and the caller reads with `get`. Writes made by other processes are
   * seen within `maxAgeMs`; this process's own at once.
   */
  recent?(pk: string, maxAgeMs: number): WorkerRecord | undefined;
  close(): Promise<void>;
}

/** The refusal of a registration older than the stored declaration (both adapters). */
export const staleDeclaration = (pk: string): ServiceError =>
  new ServiceError(
    'stale_request',
    `worker ${pk} holds a newer registration than this one (created_at is older): a replay?`,
  );

/**
 * How long a worker's counted outcome (the (pk, job id) claim) is kept, and the clock that stamps it. The claim
 * is only read to refuse a second count of the same job, which can come from a retried final activity (within
 * the job's run, JOB_RUN_TIMEOUT_SECONDS at most 7 days) or a replayed signed request (within 5 minutes of its
 * created_at, core/gates/signature.ts): a window longer than both keeps every refusal that can matter.
 */
export interface OutcomeRetention {
  /** Claims older than this are pruned (ms). Default DEFAULT_OUTCOME_RETENTION_MS. */
  outcomeRetentionMs?: number;
  /** Now, in ms since the epoch (tests move it). Default Date.now. */
  clock?: () => number;
}

/** 8 days: the longest job run (7 days) plus a day. */
export const DEFAULT_OUTCOME_RETENTION_MS = 8 * 86_400_000;

/** How often a registry prunes its expired claims: the window's tenth, at most hourly. */
export const outcomePruneEveryMs = (retentionMs: number): number => Math.min(3_600_000, Math.ceil(retentionMs / 10));
