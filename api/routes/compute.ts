import type { Context } from 'koa';
import { fail, pass, type Check } from '../../core/check.js';
import { EPOCH_MS, epochAt } from '../../core/epoch.js';
import { ERROR_STATUS, ServiceError, type ErrorCode } from '../../core/errors.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { jobIdFromSignature, requestHash } from '../../core/job-hash.js';
import { planJob, type JobPlan } from '../../core/job-plan.js';
import type { ComputeResponse, JobRecord } from '../../core/job-record.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { PRICES, withinBudget } from '../../core/pricing.js';
import { integerParam } from '../../core/query-params.js';
import { TOOL_IDS, unknownStepTool } from '../../core/tool-registry.js';
import { hasBlobRefs } from '../../core/blob-ref.js';
import { checkSteps, estimateJob } from '../../core/step-types/index.js';
import { splitOutput } from '../../core/output-blobs.js';
import { jobRecordOf, jobRunOf } from '../../activities/compute/job-activities.js';
import type { JobStore, RecentKey } from '../../store/job-store.js';
import type { JobRunner } from '../job-runner.js';
import { serviceOrigin } from '../proxy-trust.js';
import { route, type GateState } from '../route-spec.js';
import { computeRequestSchema, type ComputeRequest } from '../schemas/compute-request.js';
import {
  computeFailureSchema,
  computeResponseSchema,
  jobLookupSchema,
  recentJobsSchema,
} from '../schemas/compute-response.js';
import { jobIdParams, limitQuery } from '../schemas/param-docs.js';
import { isOperator } from '../operator-auth.js';
import { checkRequestSignature } from '../../core/gates/signature.js';
import { decodeDelegationHeader } from '../../core/delegation-cert.js';
import { z } from 'zod';
import { zodCheck } from '../schemas/zod-check.js';

interface ComputeInput {
  request: ComputeRequest;
  plan: JobPlan;
  /** The body as signed (signature included): the job's identity and hash start from it. */
  signed: unknown;
}

export interface ComputeDeps {
  jobs: JobStore;
  runner: JobRunner;
  clock: () => number;
  epochGenesisMs: number;
  /** See GatewayConfig.epochMs. */
  epochMs?: number | undefined;
  /** Absolute base of `verify_url`; default: the request's own origin. */
  publicUrl?: string | undefined;
  /**
   * The ledger transaction that settled a job, or null. The stored job never changes: its
   * `settlement.stellar_tx` is filled from this when the job is read.
   */
  stellarTx?: (jobId: string) => Promise<string | null>;
  /** OPERATOR_TOKEN: its bearer lists every job; unset, nobody does. */
  operatorToken?: string | undefined;
}

interface RecentQuery {
  limit: number;
  /** `cursor`: the page after this job (the previous page's `next_cursor`). */
  before: RecentKey | undefined;
  query: Record<string, unknown>;
}

/** `next_cursor` of a full page: its last job's place in the order, opaque to the client (base64url JSON). */
const recentCursor = (jobs: readonly JobRecord[], limit: number): string | null => {
  const last = jobs[jobs.length - 1];
  return jobs.length < limit || last === undefined
    ? null
    : Buffer.from(JSON.stringify([last.created_at, last.job_id])).toString('base64url');
};

function recentKeyOf(cursor: unknown): Check<RecentKey | undefined> {
  if (cursor === undefined) return pass(undefined);
  const bad = fail('invalid_request', 'cursor is not one this server issued (use next_cursor as given)');
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) return bad;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'string')) {
      return pass({ createdAt: value[0] as string, jobId: value[1] as string });
    }
  } catch {
    // Not JSON: refused below.
  }
  return bad;
}

export const DEFAULT_RECENT_JOBS = 20;
export const MAX_RECENT_JOBS = 100;

/**
 * Compound jobs (docs/protocol.md §2.1–2.3, 4.1). `POST /v1/compute` passes the four gates, validates and plans
 * the steps, checks the worst-case cost against `budget_credits`, claims the job in the job store and runs
 * it (JobRunner). The job id derives from the signature, so a replayed request returns the stored job and
 * never runs or charges twice; a job that failed for a transient reason (a 5xx code: no worker, upstream
 * down) runs again on replay: its completed steps keep their stored results instead of running again, and the
 * new run writes its own `compute/job` record (`compute:<job_id>:run-<n>`, see jobRecordId).
 *
 * A finished job answers 200 with docs/protocol.md §2.3's body plus `status`; a failed one answers its error's status
 * (402 `budget_exceeded`, 503 `no_workers`, a step's own code, else 502 `step_failed`) with
 * `{ error, detail, job_id, step_id, job }`, `job` being the same body. Waiting longer than the job timeout
 * answers 504 `job_timeout` with the job id; the job goes on and `GET /v1/compute/:jobId` returns it.
 *
 * `GET /v1/compute/:jobId` returns the job (its id is a capability: 122 bits derived from a signature);
 * `GET /v1/compute/recent?limit` (1–100, default 20) lists summaries without step outputs to the operator (all
 * jobs) or a signed requester (its own), and counts without ids to anyone else, so the list never hands out
 * the capabilities.
 */
export const computeRoutes = (deps: ComputeDeps) => [
  route<ComputeInput>({
    method: 'POST',
    path: '/v1/compute',
    auth: 'signed',
    jsonBody: true,
    defaultCell: DEFAULT_JOB_CELL,
    preflight: ({ body }) => {
      const request = zodCheck(computeRequestSchema, body);
      if (!request.ok) return request;
      const plan = planJob(request.value.steps);
      if (!plan.ok) return plan;
      const unknown = unknownStepTool(request.value.steps);
      if (unknown) {
        return fail(
          'invalid_request',
          `step "${unknown.step}" requires the unknown tool "${unknown.tool}"; the registry's tools are ${TOOL_IDS.join(', ')}`,
          unknown.param,
        );
      }
      return pass({ request: request.value, plan: plan.value, signed: body });
    },
    handler: async (ctx, input, gates) => {
      const job = acceptJob(input, gates, deps, delegationChainOf(ctx));
      let response: ComputeResponse;
      try {
        response = await wholeJob(await runOrReplay(job, deps), deps);
      } catch (error) {
        if (error instanceof ServiceError && error.code === 'job_timeout') {
          ctx.status = error.status;
          ctx.body = { ...error.toBody(), job_id: job.job_id };
          return;
        }
        throw error;
      }
      answer(ctx, await withStellarTx(response, deps), deps.publicUrl);
    },
    docs: {
      summary: 'Run a signed compound job',
      description:
        'Steps run in dependency order (a cycle is refused); one settlement and one proof cover all steps. The job ' +
        'id derives from the signature: a replayed request returns the stored job and never runs or charges ' +
        'twice (add a `nonce` for a fresh run). A failed job answers its error status with the error, the job id, ' +
        'the failing step and the job. Waiting longer than the job timeout answers 504 `job_timeout` with ' +
        '`job_id`; the job goes on and `GET /v1/compute/{jobId}` returns it.',
      tags: ['Compute'],
      body: computeRequestSchema,
      responses: {
        200: { description: 'The finished job (docs/protocol.md §2.3, plus `status`)', schema: computeResponseSchema },
        502: { description: 'A step failed (`step_failed` or the step’s own code)', schema: computeFailureSchema },
      },
      errors: [
        'invalid_request',
        'invalid_date',
        'cyclic_dependency',
        'step_type_unavailable',
        'invalid_model',
        'budget_exceeded',
        'step_failed',
        'upstream_unavailable',
        'runtime_unavailable',
        'backbone_unavailable',
        'no_workers',
        'job_timeout',
        'upstream_timeout',
        'no_readings',
        'tool_not_permitted',
      ],
    },
  }),
  route<RecentQuery>({
    method: 'GET',
    path: '/v1/compute/recent',
    auth: 'public',
    facets: [],
    preflight: ({ query }) => {
      const limit = integerParam(
        query.limit,
        'limit',
        { min: 1, max: MAX_RECENT_JOBS, fallback: DEFAULT_RECENT_JOBS },
        'invalid_limit',
      );
      if (!limit.ok) return limit;
      const before = recentKeyOf(query.cursor);
      return before.ok ? pass({ limit: limit.value, before: before.value, query }) : before;
    },
    handler: async (ctx, { limit, before, query }) => {
      const page = before === undefined ? {} : { before };
      if (isOperator(ctx, deps.operatorToken)) {
        const found = await deps.jobs.recent(limit, page);
        const jobs = found.map((job) => summary(job, ctx, deps.publicUrl));
        ctx.body = { view: 'operator', limit, count: jobs.length, jobs, next_cursor: recentCursor(found, limit) };
        return;
      }
      const signature = ctx.get('x-idn-signature');
      if (signature !== '') {
        const pk = signedLister(query, signature, deps.clock());
        const found = await deps.jobs.recent(limit, { requesterPk: pk, ...page });
        const jobs = found.map((job) => summary(job, ctx, deps.publicUrl));
        ctx.body = {
          view: 'requester',
          limit,
          count: jobs.length,
          requester_pk: pk,
          jobs,
          next_cursor: recentCursor(found, limit),
        };
        return;
      }
      // The public view counts the newest jobs only: no pages (a cursor would carry a job id, a capability).
      ctx.body = { view: 'public', limit, ...aggregate(await deps.jobs.recent(limit)) };
    },
    docs: {
      summary: 'Recent jobs',
      description:
        'Newest first. Job ids are capabilities, so only the operator (`Authorization: Bearer <OPERATOR_TOKEN>`) ' +
        'lists every job, and a requester its own: `requester_pk`, `created_at` (within 5 minutes) and an optional ' +
        '`nonce` in the query, signed like a compute request (X-Idn-Signature = Ed25519 over the JCS of those ' +
        'fields). Anyone else gets counts by status and step type over the newest `limit` jobs, without ids. ' +
        "The operator and requester views page: pass a full page's `next_cursor` as `cursor` for the next, " +
        'older jobs (null once a page is not full, so the last page may be empty); every page costs the same however deep.',
      tags: ['Compute'],
      query: limitQuery(MAX_RECENT_JOBS, DEFAULT_RECENT_JOBS).extend({
        requester_pk: z.string().optional().describe('Signed listing: the requester whose jobs to list'),
        created_at: z.string().optional().describe('Signed listing: ISO 8601, within 5 minutes of the server clock'),
        nonce: z.string().optional().describe('Signed listing: optional, signed with the other two'),
        cursor: z.string().optional().describe('The previous page’s `next_cursor` (operator and requester views)'),
      }),
      responses: { 200: { description: 'Recent jobs, or counts', schema: recentJobsSchema } },
      errors: [
        'invalid_limit',
        'invalid_request',
        'unauthorized',
        'invalid_signature',
        'invalid_public_key',
        'stale_request',
      ],
    },
  }),
  route<string>({
    method: 'GET',
    path: '/v1/compute/:jobId',
    auth: 'public',
    facets: [],
    preflight: ({ params }) => pass(params.jobId ?? ''),
    handler: async (ctx, jobId) => {
      const job = /^[0-9a-f-]{36}$/.test(jobId) ? await deps.jobs.get(jobId) : null;
      if (!job) throw new ServiceError('job_not_found', noJobDetail(jobId));
      ctx.body = job.response
        ? withAbsoluteUrl(await withStellarTx(job.response, deps), ctx, deps.publicUrl)
        : summary(job, ctx, deps.publicUrl);
    },
    docs: {
      summary: 'One job',
      description:
        'The finished job as `POST /v1/compute` answered it, or the summary of a job still running. A job is kept ' +
        'JOB_RETENTION_DAYS after its last write, then 404 `job_not_found` (its proof records stay).',
      tags: ['Compute'],
      params: jobIdParams,
      responses: { 200: { description: 'The job', schema: jobLookupSchema } },
      errors: ['job_not_found'],
    },
  }),
];

/**
 * job_not_found's detail: an unknown id and a pruned job look alike to the store (no tombstone is kept, it would
 * grow per job), so the detail names both (docs/operations.md "Retention").
 */
export const noJobDetail = (jobId: string): string =>
  `no job ${JSON.stringify(jobId.slice(0, 64))}: unknown, or last written longer ago than this node keeps jobs ` +
  `(JOB_RETENTION_DAYS); its proof records stay`;

/** The chain gate 3 verified (root first), kept for the job's receipt; null without a certificate. */
function delegationChainOf(ctx: Context): unknown[] | null {
  const header = ctx.get('x-svc-delegation-cert');
  if (header === '') return null;
  const chain = decodeDelegationHeader(header);
  return chain.ok ? chain.value : null;
}

function acceptJob(
  { request, plan, signed }: ComputeInput,
  gates: GateState,
  deps: ComputeDeps,
  delegationChain: unknown[] | null,
): ComputeJobInput {
  const refused = checkSteps(request.steps);
  if (refused !== null && !refused.ok) throw new ServiceError(refused.error, refused.detail);
  const jobCell = gates.place?.jobCell ?? DEFAULT_JOB_CELL;
  const now = deps.clock();
  const epoch = epochAt(now, deps.epochGenesisMs, deps.epochMs);
  const estimated = estimateJob(
    request.steps,
    { jobCell, epoch, epochGenesisMs: deps.epochGenesisMs, epochMs: deps.epochMs ?? EPOCH_MS },
    PRICES.merkleProof,
  );
  if (!estimated.ok) throw new ServiceError(estimated.error, estimated.detail);
  const estimate = estimated.value;
  if (!withinBudget(estimate.total_credits, request.budget_credits)) {
    throw new ServiceError(
      'budget_exceeded',
      `estimated cost ${estimate.total_credits} credits exceeds budget_credits ${request.budget_credits}`,
    );
  }
  return {
    job_id: jobIdFromSignature(request.signature),
    requester_pk: request.requester_pk,
    h3_cell: jobCell,
    epoch,
    budget_credits: request.budget_credits,
    proof_credits: estimate.proof_credits,
    steps: request.steps.map((step) => ({ ...step, estimate: estimate.breakdown[step.id] ?? 0 })),
    plan,
    jurisdiction: gates.place?.workerJurisdiction ?? null,
    min_tier: gates.place?.minWorkerTier ?? null,
    request_hash: requestHash(signed),
    created_at: new Date(now).toISOString(),
    request: { body: signed as Record<string, unknown>, delegation_chain: delegationChain },
  };
}

/**
 * The runner's answer keeps large output fields as references (core/output-blobs.ts: workflow results stay
 * small); the stored job has them whole, and is what the requester gets.
 */
async function wholeJob(response: ComputeResponse, deps: ComputeDeps): Promise<ComputeResponse> {
  if (!hasBlobRefs(response.steps)) return response;
  const stored = await deps.jobs.get(response.job_id);
  if (!stored?.response || hasBlobRefs(stored.response.steps)) {
    throw new ServiceError('internal_error', `job ${response.job_id}: its stored answer is not whole`);
  }
  return stored.response;
}

/**
 * Claims the job and runs it, or answers a replay from the store (re-running only transient failures). Only the
 * caller whose claim (or retry) changed the stored job runs it; any other waits for the stored answer
 * (JobRunner.join), whichever process holds the run: the claim is atomic in the store, an in-flight map is not.
 */
async function runOrReplay(job: ComputeJobInput, deps: ComputeDeps): Promise<ComputeResponse> {
  const claimed = await deps.jobs.claim(jobRecordOf(job, 'running', null, deps.clock()));
  if (claimed.created) return deps.runner.run(job);
  const stored = claimed.job;
  // The stored job's own input (created_at, epoch) stays the job's: a replay only finds it.
  const original: ComputeJobInput = {
    ...job,
    created_at: stored.created_at,
    epoch: stored.epoch,
    ...(stored.request === undefined ? {} : { request: stored.request }),
  };
  if (stored.status === 'running') return deps.runner.join(original);
  if (stored.status === 'failed' && isTransient(stored.response)) {
    const rerun = rerunOf(original, stored.response!);
    const reopened = await deps.jobs.retry(jobRecordOf(rerun, 'running', null, deps.clock()));
    if (reopened?.restarted) return deps.runner.run(rerun);
    if (reopened?.job.status === 'running') return deps.runner.join(rerun);
    return reopened?.job.response ?? stored.response!;
  }
  return stored.response!;
}

/**
 * The job's next run after a transient failure: the steps that completed in the failed run carry it (`done`)
 * and are not run again (no second upstream call, no second answer), and the run gets its own proof record.
 */
function rerunOf(job: ComputeJobInput, failed: ComputeResponse): ComputeJobInput {
  const done = new Map(failed.steps.filter((s) => s.status === 'complete').map((s) => [s.id, s]));
  const previous = failed.proof ? jobRunOf(job.job_id, failed.proof.record_id) : null;
  return {
    ...job,
    run: (previous ?? 1) + 1,
    steps: job.steps.map((step) => {
      const result = done.get(step.id);
      if (!result) return step;
      const { output, cost, worker_pk, record_id, latency_ms, relay_pk } = result;
      // The relay keeps its fee for a step it routed in the earlier run (the settlement recomputes it).
      // Large fields stay references (their blobs were stored by the first run), keeping the workflow input small.
      return {
        ...step,
        done: {
          output: splitOutput(output).output,
          cost,
          worker_pk,
          record_id,
          latency_ms,
          ...(relay_pk === undefined ? {} : { relay_pk }),
        },
      };
    }),
  };
}

const statusOf = (code: string): number => ERROR_STATUS[code as ErrorCode] ?? ERROR_STATUS.step_failed;

function isTransient(response: ComputeResponse | null): boolean {
  return response?.error !== undefined && statusOf(response.error.code) >= 500;
}

function answer(ctx: Context, response: ComputeResponse, publicUrl: string | undefined): void {
  const body = withAbsoluteUrl(response, ctx, publicUrl);
  if (response.status !== 'failed') {
    ctx.body = body;
    return;
  }
  const error = response.error ?? { code: 'step_failed', detail: 'the job failed', step_id: null };
  const code = error.code in ERROR_STATUS ? (error.code as ErrorCode) : 'step_failed';
  ctx.status = statusOf(code);
  if (code === 'no_workers') ctx.set('retry-after', '30');
  // As every store_unavailable answer (api/http-errors.ts): the same signed request may be sent again.
  if (code === 'store_unavailable') ctx.set('retry-after', '5');
  ctx.body = { error: code, detail: error.detail, job_id: response.job_id, step_id: error.step_id, job: body };
}

/** `path` under PUBLIC_URL, else under the origin the client reached (relative without a usable Host). */
function absolute(path: string, ctx: Context, publicUrl: string | undefined): string {
  return `${publicUrl ?? serviceOrigin(ctx)}${path}`;
}

/** docs/protocol.md §2.3 `settlement.stellar_tx` from the ledger, once the job's settlement was submitted. */
async function withStellarTx(response: ComputeResponse, deps: ComputeDeps): Promise<ComputeResponse> {
  if (!deps.stellarTx || response.settlement.stellar_tx !== null) return response;
  const tx = await deps.stellarTx(response.job_id);
  return tx === null ? response : { ...response, settlement: { ...response.settlement, stellar_tx: tx } };
}

function withAbsoluteUrl(response: ComputeResponse, ctx: Context, publicUrl: string | undefined): ComputeResponse {
  if (!response.proof) return response;
  return { ...response, proof: { ...response.proof, verify_url: absolute(response.proof.verify_url, ctx, publicUrl) } };
}

function summary(job: JobRecord, ctx: Context, publicUrl: string | undefined) {
  const response = job.response;
  return {
    job_id: job.job_id,
    status: job.status,
    requester_pk: job.requester_pk,
    h3_cell: job.h3_cell,
    epoch: job.epoch,
    step_types: job.step_types,
    created_at: job.created_at,
    updated_at: job.updated_at,
    total_credits: response?.settlement.total_credits ?? null,
    job_hash: response?.proof?.job_hash ?? null,
    verify_url: response?.proof ? absolute(response.proof.verify_url, ctx, publicUrl) : null,
    error: response?.error ?? null,
  };
}

/**
 * Gate 1 for a listing: the signed fields travel in the query (a GET has no body) and are checked as the
 * body `{ requester_pk, created_at, nonce? }` would be. created_at is required, so a captured listing
 * request works for 5 minutes only.
 */
function signedLister(query: Record<string, unknown>, signature: string, nowMs: number): string {
  const fields: Record<string, unknown> = {};
  for (const name of ['requester_pk', 'created_at', 'nonce'] as const) {
    const value = query[name];
    if (value === undefined) continue;
    if (typeof value !== 'string') throw new ServiceError('invalid_request', `${name} must be given once`);
    fields[name] = value;
  }
  if (fields.created_at === undefined) {
    throw new ServiceError('stale_request', 'a signed listing needs created_at (ISO 8601) in the query');
  }
  const checked = checkRequestSignature({ ...fields, signature: signature.trim().toLowerCase() }, signature, nowMs);
  if (!checked.ok) throw new ServiceError(checked.error, checked.detail);
  return checked.value.pk;
}

/** The public view: how many of the newest jobs are in each status and contain each step type, no ids. */
function aggregate(jobs: readonly JobRecord[]) {
  const by_status: Record<string, number> = {};
  const by_step_type: Record<string, number> = {};
  for (const job of jobs) {
    by_status[job.status] = (by_status[job.status] ?? 0) + 1;
    for (const type of new Set(job.step_types)) by_step_type[type] = (by_step_type[type] ?? 0) + 1;
  }
  return { count: jobs.length, by_status, by_step_type };
}
