import { z } from 'zod';
import type { JobRecord, JobStatus } from '../core/job-record.js';
import { STEP_TYPES } from '../core/step-types/index.js';
import { describeZodIssue } from '../core/zod-issue.js';

/**
 * The stored form of a compute job ({@link JobRecord}), shared by the adapters of {@link JobStore}. Every record
 * is checked on the way in (a malformed one is the caller's bug: RangeError) and on the way out (a malformed
 * one means the store was written by something else or corrupted: Error), so what a reader gets is a JobRecord.
 *
 * The envelope is strict (version, id, status, timestamps, the request's identity); `response` is checked
 * loosely (an object naming the same job, any further fields kept as they are): its shape belongs to the
 * compute route, and a stored answer must come back exactly as it was written.
 */

/** Version of the stored record; bump it (and migrate) when the stored fields change. */
export const JOB_RECORD_VERSION = 1;

const JOB_STATUSES = ['running', 'complete', 'failed'] as const satisfies readonly JobStatus[];
const jobStatusSchema = z.enum(JOB_STATUSES);
const isoTimestamp = z.iso.datetime();

const responseSchema = z.looseObject({
  job_id: z.string(),
  status: jobStatusSchema,
});

export const jobRecordSchema = z
  .strictObject({
    version: z.literal(JOB_RECORD_VERSION),
    job_id: z.string().min(1).max(256),
    status: jobStatusSchema,
    requester_pk: z.string().min(1),
    h3_cell: z.string().min(1),
    epoch: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
    step_types: z.array(z.enum(STEP_TYPES)),
    request_hash: z.string().min(1),
    created_at: isoTimestamp,
    updated_at: isoTimestamp,
    response: responseSchema.nullable(),
    // Kept as signed: loose, so a stored body comes back exactly as it was written.
    request: z
      .strictObject({ body: z.record(z.string(), z.unknown()), delegation_chain: z.array(z.unknown()).nullable() })
      .optional(),
  })
  .superRefine((job, ctx) => {
    // core/job-record.ts: "The answer once finished; null while running."
    if ((job.status === 'running') !== (job.response === null)) {
      ctx.addIssue({
        code: 'custom',
        path: ['response'],
        message: job.status === 'running' ? 'a running job has no response yet' : `a ${job.status} job has a response`,
      });
    }
    if (job.response !== null && job.response.job_id !== job.job_id) {
      ctx.addIssue({ code: 'custom', path: ['response', 'job_id'], message: 'must equal the job id' });
    }
  });

// Compile-time proof that the envelope the schema checks is the shared interface's (the response is loose).
const _envelopeMatchesInterface = (
  parsed: Omit<z.output<typeof jobRecordSchema>, 'response'>,
): Omit<JobRecord, 'response'> => parsed;

/**
 * Checks a record a caller hands the store: a valid JobRecord whose status is one of `allowed` (claim and retry
 * take a `running` record, finish a `complete` or `failed` one). Returns the record as it will be stored.
 * Throws RangeError otherwise: storing it would break the invariants every reader relies on.
 */
export function checkJobInput(job: JobRecord, allowed: readonly JobStatus[], operation: string): JobRecord {
  const parsed = jobRecordSchema.safeParse(job);
  if (!parsed.success)
    throw new RangeError(`${operation}: invalid job record: ${describeZodIssue(parsed.error, 'job')}`);
  if (!allowed.includes(parsed.data.status)) {
    throw new RangeError(
      `${operation}: job ${job.job_id} has status ${parsed.data.status} (expected ${allowed.join(' or ')})`,
    );
  }
  return parsed.data as JobRecord;
}

/** Parses a record read back from a store (its JSON text); an invalid one is an Error naming the job. */
export function parseStoredJob(json: string, jobId: string): JobRecord {
  const parsed = jobRecordSchema.safeParse(JSON.parse(json));
  if (!parsed.success) {
    throw new Error(`stored job ${jobId} is not a valid job record: ${describeZodIssue(parsed.error, 'job')}`);
  }
  return parsed.data as JobRecord;
}

/** Most records `recent` returns. */
export const MAX_RECENT_JOBS = 100;

/**
 * `recent`'s limit: an integer, clamped to 1..MAX_RECENT_JOBS (the route validates what a client sends; the
 * store only keeps a query bounded). A non-integer is a caller bug: RangeError.
 */
export function recentLimit(limit: number): number {
  if (!Number.isInteger(limit)) throw new RangeError(`recent: limit must be an integer: ${limit}`);
  return Math.min(MAX_RECENT_JOBS, Math.max(1, limit));
}
