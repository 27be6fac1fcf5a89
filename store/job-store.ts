/**
 * The job store port: one record per compute job, claimed before any step runs, finished once.
 * Adapters: `sqlite/job-store.ts`, `mongo/job-store.ts`; the contract is `test/store/job-store.contract.ts`.
 * Records are checked against store/job-record-schema.ts on the way in: a record that is not a valid JobRecord,
 * or has the wrong status for the operation, is a caller bug and throws RangeError (nothing is stored).
 */
import type { JobRecord } from '../core/job-record.js';

/** A job's place in `recent`'s order: its created_at and job_id. */
export interface RecentKey {
  createdAt: string;
  jobId: string;
}

export interface JobStore {
  /**
   * Inserts a new `running` job, or returns the stored one when `job_id` exists (a replayed request):
   * `created` says which. Atomic: of two concurrent claims of one id exactly one creates.
   * `job` must be `running` (RangeError otherwise).
   */
  claim(job: JobRecord): Promise<{ created: boolean; job: JobRecord }>;
  /**
   * Moves a `failed` job back to `running` (the given record replaces it) so a replayed request can run it
   * again after a transient failure. Atomic: of two concurrent retries exactly one gets `restarted: true`;
   * a job that is running or complete is returned unchanged with `restarted: false`. Unknown id: null.
   * `job` must be `running` (RangeError otherwise).
   */
  retry(job: JobRecord): Promise<{ restarted: boolean; job: JobRecord } | null>;
  /**
   * Stores a job's final state (`complete` or `failed`, with its response). Only a `running` job changes; a finished
   * one is returned as stored (a late or duplicate finish never overwrites). Throws ServiceError('job_not_found') for an unknown id.
   * Atomic: of two concurrent finishes of one running job exactly one is stored, and both return it.
   * `job` must be `complete` or `failed` with a response (RangeError otherwise).
   */
  finish(job: JobRecord): Promise<JobRecord>;
  /**
   * The job as last stored; null for an unknown id, or one pruned: a job last written longer ago than the
   * retention window (JobRetention) is deleted by the store itself.
   */
  get(jobId: string): Promise<JobRecord | null>;
  /**
   * Newest first (created_at of the stored record, then job_id, descending). `limit` is clamped to 1..100;
   * a non-integer is a caller bug: RangeError. With `requesterPk`, only that requester's jobs. With `before`,
   * only jobs after that key in this order (the last job of the previous page): a keyset page, which costs the
   * same however deep it is (an index seek, no rows skipped).
   */
  recent(limit: number, filter?: { requesterPk?: string; before?: RecentKey }): Promise<JobRecord[]>;
  close(): Promise<void>;
}

/**
 * How long a job is kept after it was last written (claimed, retried or finished). Now is the `updated_at` of the
 * job being claimed: the clock that stamps every job (the gateway's) also judges their age.
 * A job is read again by a replay of its signed request (accepted within 5 minutes of its created_at,
 * core/gates/signature.ts), by its run until it finishes (JOB_RUN_TIMEOUT_SECONDS, at most 7 days), by the
 * settlement that names its job hash, and by GET /v1/compute/:id and its receipt for as long as the operator
 * promises them: a window longer than the run keeps every read that correctness needs (docs/operations.md
 * "Retention"). The job's proof records are not pruned with it.
 */
export interface JobRetention {
  /** Jobs last written longer ago than this are pruned (ms). Default DEFAULT_JOB_RETENTION_MS. */
  jobRetentionMs?: number;
}

/** 30 days (JOB_RETENTION_DAYS): far past the longest run (7 days), a month of receipts. */
export const DEFAULT_JOB_RETENTION_MS = 30 * 86_400_000;

/** How often a store prunes: the window's tenth, at most hourly (as worker outcomes, store/worker-registry.ts). */
export const jobPruneEveryMs = (retentionMs: number): number => Math.min(3_600_000, Math.ceil(retentionMs / 10));
