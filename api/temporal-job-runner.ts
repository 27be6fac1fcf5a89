/**
 * The `temporal` JobRunner: one `computeJob` workflow per job, id `job-<job_id>`, on the job queue, started
 * eagerly on this gateway's own Worker with the answer handed over in-process, or (without `answers`) by
 * update-with-start so the answer comes back with the `jobResult` update (docs/architecture.md).
 * A replayed request while the run is open attaches to it (conflict policy USE_EXISTING); a job the
 * store re-opened after a transient failure starts a new run under the same id (reuse ALLOW_DUPLICATE).
 * Search attributes let an operator find runs in the Temporal UI by cell, requester, epoch, step types and
 * status (`H3Cell = '861e8050fffffff' AND JobStatus = 'failed'`); the memo carries the budget and steps.
 */
import {
  WithStartWorkflowOperation,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '../core/errors.js';
import type { ComputeResponse } from '../core/job-record.js';
import type { ComputeJobInput } from '../core/job-steps.js';
import type { StepRoute } from '../activities/compute/job-activities.js';
import { backboneQueue, gatewayQueue, jobQueue, type QueueNaming } from '../core/task-queues.js';
import {
  jobResultUpdate,
  type ComputeJobArgs,
  type ComputeJobTimeouts,
  type computeJob,
} from '../workflows/compute-job.js';
import { EPOCH, H3_CELL, JOB_STATUS, REQUESTER, STEP_TYPES } from '../workflows/search-attributes.js';
import type { JobAnswers } from './job-answers.js';
import { withinWait, type JobRunner } from './job-runner.js';

export interface TemporalRunnerDeps {
  client: Client;
  naming: QueueNaming;
  /** How long a request waits before answering job_timeout (the workflow goes on). */
  waitMs: number;
  /** A run still open after this is stopped by Temporal (the job-level timeout). */
  runTimeoutMs: number;
  stepTimeouts?: Partial<ComputeJobTimeouts>;
  /**
   * Start runs eagerly and take answers in-process (startEagerly): `client` must be on the NativeConnection of
   * this process's job-queue Worker (bin/temporal-workers.ts connectTemporal), whose finishJob delivers to
   * `answers`. Without it: update-with-start.
   */
  answers?: JobAnswers;
  /** How long an eagerly started run's request waits for the in-process answer before reading the close event. */
  fallbackMs?: number;
  /**
   * Routes a job's steps before its run starts (the job activities' routeJob), so an eagerly started run need
   * not schedule routing as a local activity first. A routing failure is left to the run, which records it.
   */
  route?: (job: ComputeJobInput) => Promise<Record<string, StepRoute>>;
}

export const workflowIdOf = (jobId: string): string => `job-${jobId}`;

export function createTemporalJobRunner(deps: TemporalRunnerDeps): JobRunner {
  const options = (job: ComputeJobInput) => ({
    taskQueue: jobQueue(deps.naming),
    workflowId: workflowIdOf(job.job_id),
    workflowIdConflictPolicy: 'USE_EXISTING' as const,
    workflowIdReusePolicy: 'ALLOW_DUPLICATE' as const,
    workflowExecutionTimeout: deps.runTimeoutMs,
    args: [
      {
        job,
        gatewayQueue: gatewayQueue(deps.naming),
        backboneQueue: backboneQueue(deps.naming),
        ...(deps.stepTimeouts ? { timeouts: deps.stepTimeouts } : {}),
      },
    ] as [ComputeJobArgs],
    typedSearchAttributes: [
      { key: H3_CELL, value: job.h3_cell },
      { key: REQUESTER, value: job.requester_pk },
      { key: EPOCH, value: job.epoch },
      { key: STEP_TYPES, value: [...new Set(job.steps.map((s) => s.type))] },
      { key: JOB_STATUS, value: 'running' },
    ],
    memo: {
      budget_credits: job.budget_credits,
      steps: job.steps.map((s) => `${s.id}:${s.type}${s.depends_on ? `<-${s.depends_on}` : ''}`).join(' '),
    },
    staticSummary: `compute job ${job.job_id} in ${job.h3_cell}: ${job.steps.length} step(s)`,
  });

  /** Update-with-start: one call starts the run (or joins the open one) and returns when finishJob has answered. */
  async function startWithUpdate(job: ComputeJobInput): Promise<ComputeResponse> {
    const startRun = new WithStartWorkflowOperation<typeof computeJob>('computeJob', options(job));
    try {
      return await deps.client.workflow.executeUpdateWithStart(jobResultUpdate, { startWorkflowOperation: startRun });
    } catch (error) {
      // The run closed without answering (timed out, terminated): the update finds no open run to wait on.
      const stopped =
        error instanceof WorkflowUpdateFailedError ||
        error instanceof WorkflowFailedError ||
        error instanceof WorkflowNotFoundError;
      if (stopped) throw stoppedBeforeFinishing(job, error);
      throw error;
    }
  }

  /**
   * Eager start: the first workflow task comes back with the start call to this process's job-queue Worker, and
   * finishJob (a local activity here) hands the answer over in-process. A run that was not started here (a
   * replayed request joining an open run, no free workflow slot) or whose last task ran on another gateway is
   * answered from its close event instead: at once when not started here, else after `fallbackMs`.
   */
  async function startEagerly(job: ComputeJobInput, answers: JobAnswers): Promise<ComputeResponse> {
    const routes = deps.route ? await deps.route(job).catch(() => undefined) : undefined;
    const waiting = answers.wait(job.job_id); // before the start: the answer may come before it returns
    const fallback = new AbortController();
    try {
      const start = options(job);
      if (routes) start.args[0].routes = routes;
      const handle = await deps.client.workflow.start<typeof computeJob>('computeJob', {
        ...start,
        requestEagerStart: true,
      });
      const closed = (
        handle.eagerlyStarted
          ? sleep(deps.fallbackMs ?? 1_000, undefined, { signal: fallback.signal })
          : Promise.resolve()
      ).then(() => answerOfClosedRun(job, handle));
      closed.catch(() => undefined); // lost the race, or aborted: nobody reads it
      return await Promise.race([waiting.answer, closed]);
    } finally {
      waiting.cancel();
      fallback.abort();
    }
  }

  const run = (job: ComputeJobInput) =>
    withinWait(deps.answers ? startEagerly(job, deps.answers) : startWithUpdate(job), job.job_id, deps.waitMs);
  return {
    mode: 'temporal',
    run,
    // The workflow id is the job's and an open run is attached to (USE_EXISTING): Temporal is the claim
    // across gateways, so a join is a start that finds the run.
    join: run,
    async close() {},
  };
}

/** The answer of a run read from its close event: its result, or the ComputeResponse a failed job fails with. */
async function answerOfClosedRun(
  job: ComputeJobInput,
  handle: WorkflowHandle<typeof computeJob>,
): Promise<ComputeResponse> {
  try {
    return await handle.result();
  } catch (error) {
    if (error instanceof WorkflowFailedError && error.cause instanceof ApplicationFailure) {
      const [response] = error.cause.details ?? [];
      if (isComputeResponse(response, job.job_id)) return response;
    }
    if (error instanceof WorkflowFailedError || error instanceof WorkflowNotFoundError) {
      throw stoppedBeforeFinishing(job, error);
    }
    throw error;
  }
}

const isComputeResponse = (value: unknown, jobId: string): value is ComputeResponse =>
  typeof value === 'object' && value !== null && (value as { job_id?: unknown }).job_id === jobId;

const stoppedBeforeFinishing = (job: ComputeJobInput, error: Error) =>
  new ServiceError('job_timeout', `job ${job.job_id} stopped before finishing (${error.message})`);
