/**
 * Answers of `/v1/compute*` (docs/protocol.md §2.3) for the API reference: core/job-record.ts `ComputeResponse` and the job
 * summary of api/routes/compute.ts. A step's output is its type's (core/step-types/: each declares its `output`),
 * an empty object when it did not complete.
 */
import { z } from 'zod';
import { STEP_TYPE_SPECS, STEP_TYPES } from '../../core/step-types/index.js';

const jobStatus = z.enum(['running', 'complete', 'failed']);

export const stepResultSchema = z.object({
  id: z.string(),
  type: z.enum(STEP_TYPES),
  status: z.enum(['complete', 'failed', 'skipped']),
  output: z
    .union([...STEP_TYPES.map((type) => STEP_TYPE_SPECS[type].output), z.strictObject({})])
    .describe('The output of the step’s type (docs/protocol.md §2.3); an empty object when it did not complete'),
  latency_ms: z.number(),
  worker_pk: z.string().nullable().describe('Worker key, the backbone marker, or the gateway node key'),
  cost: z.number(),
  record_id: z.string().nullable().describe("The step's proof record; null when it did not complete"),
  relay_pk: z.string().optional().describe('The relay worker that routed the step, when one did'),
  error: z.object({ code: z.string(), detail: z.string() }).optional(),
});

export const computeResponseSchema = z.object({
  job_id: z.string(),
  status: jobStatus,
  worker_pk: z.string().nullable(),
  h3_cell: z.string(),
  epoch: z.int(),
  steps: z.array(stepResultSchema),
  settlement: z.object({
    stellar_tx: z.string().nullable(),
    total_credits: z.number(),
    breakdown: z.record(z.string(), z.number()).describe('Step id → credits'),
    proof_credits: z.number(),
    relay_fees: z.record(z.string(), z.number()).optional().describe('Relay key → its fee'),
  }),
  proof: z
    .object({ job_hash: z.string(), verify_url: z.string(), record_id: z.string() })
    .nullable()
    .describe('Absent (null) until the job record is written'),
  error: z.object({ code: z.string(), detail: z.string(), step_id: z.string().nullable() }).optional(),
});

/** A failed job answers its error's status with the error body and the job. */
export const computeFailureSchema = z.object({
  error: z.string(),
  detail: z.string(),
  job_id: z.string(),
  step_id: z.string().nullable(),
  job: computeResponseSchema,
});

export const jobSummarySchema = z.object({
  job_id: z.string(),
  status: jobStatus,
  requester_pk: z.string(),
  h3_cell: z.string(),
  epoch: z.int(),
  step_types: z.array(z.enum(STEP_TYPES)),
  created_at: z.string(),
  updated_at: z.string(),
  total_credits: z.number().nullable(),
  job_hash: z.string().nullable(),
  verify_url: z.string().nullable(),
  error: z.object({ code: z.string(), detail: z.string(), step_id: z.string().nullable() }).nullable(),
});

const counts = z.record(z.string(), z.int());

/**
 * `GET /v1/compute/recent`: the operator sees every job (`view: operator`), a signed requester its own
 * (`view: requester`); the public sees counts over the newest `limit` jobs, without ids (`view: public`).
 */
export const recentJobsSchema = z.object({
  view: z.enum(['operator', 'requester', 'public']),
  limit: z.int(),
  count: z.int(),
  requester_pk: z.string().optional().describe('The signed requester (view `requester`)'),
  jobs: z.array(jobSummarySchema).optional().describe('Views `operator` and `requester` only'),
  next_cursor: z
    .string()
    .nullable()
    .optional()
    .describe('Views `operator` and `requester`: `cursor` for the next, older page; null on the last page'),
  by_status: counts.optional().describe('View `public`: jobs by status'),
  by_step_type: counts.optional().describe('View `public`: jobs containing each step type'),
});

/** `GET /v1/compute/:jobId`: the finished job, or the summary of one still running. */
export const jobLookupSchema = z.union([computeResponseSchema, jobSummarySchema]);
