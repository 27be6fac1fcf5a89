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
  /** The job as last stored; null for an unknown id. */
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
