/**
 * The `temporal` JobRunner: one `computeJob` workflow per job, id `job-<job_id>`, on the job
 * queue, started by update-with-start so the answer comes back with the `jobResult` update (docs/architecture.md).
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
} from '@temporalio/client';
import { ServiceError } from '../core/errors.js';
import type { ComputeResponse } from '../core/job-record.js';
import type { ComputeJobInput } from '../core/job-steps.js';
import { backboneQueue, gatewayQueue, jobQueue, type QueueNaming } from '../core/task-queues.js';
import { jobResultUpdate, type ComputeJobTimeouts, type computeJob } from '../workflows/compute-job.js';
import { EPOCH, H3_CELL, JOB_STATUS, REQUESTER, STEP_TYPES } from '../workflows/search-attributes.js';
import { withinWait, type JobRunner } from './job-runner.js';

export interface TemporalRunnerDeps {
  client: Client;
  naming: QueueNaming;
  /** How long a request waits before answering job_timeout (the workflow goes on). */
  waitMs: number;
  /** A run still open after this is stopped by Temporal (the job-level timeout). */
  runTimeoutMs: number;
  stepTimeouts?: Partial<ComputeJobTimeouts>;
}

export const workflowIdOf = (jobId: string): string => `job-${jobId}`;

export function createTemporalJobRunner(deps: TemporalRunnerDeps): JobRunner {
  async function start(job: ComputeJobInput): Promise<ComputeResponse> {
    const startRun = new WithStartWorkflowOperation<typeof computeJob>('computeJob', {
      taskQueue: jobQueue(deps.naming),
      workflowId: workflowIdOf(job.job_id),
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      workflowExecutionTimeout: deps.runTimeoutMs,
      args: [
        {
          job,
          gatewayQueue: gatewayQueue(deps.naming),
          backboneQueue: backboneQueue(deps.naming),
          ...(deps.stepTimeouts ? { timeouts: deps.stepTimeouts } : {}),
        },
      ],
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
    try {
      // Update-with-start: one call starts the run (or joins the open one) and returns when finishJob has
      // answered, instead of long-polling the history for the close event.
      return await deps.client.workflow.executeUpdateWithStart(jobResultUpdate, { startWorkflowOperation: startRun });
    } catch (error) {
      // The run closed without answering (timed out, terminated): the update finds no open run to wait on.
      const stopped =
        error instanceof WorkflowUpdateFailedError ||
        error instanceof WorkflowFailedError ||
        error instanceof WorkflowNotFoundError;
      if (stopped) {
        throw new ServiceError('job_timeout', `job ${job.job_id} stopped before finishing (${error.message})`);
      }
      throw error;
    }
  }

  return {
    mode: 'temporal',
    run: (job) => withinWait(start(job), job.job_id, deps.waitMs),
    async close() {},
  };
}
