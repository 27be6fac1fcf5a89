/**
 * What runs an openEO batch job once started (docs/protocol.md §16.11), on the engine compound jobs run on:
 * `embedded` (the default) calls the run activity in this process; `temporal` starts one `openEoBatchJob`
 * workflow per start (workflows/openeo-batch-job.ts), id `openeo-<job id>-<run>`, on the job queue, where the
 * Web UI shows it by cell and status. Either way the job's state lives in the openEO job store, so `GET /jobs/{id}`
 * answers from there, and a cancel is a store change the run respects (Temporal's run is also cancelled).
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { OpenEoBatchActivities } from '../../activities/imagery/openeo-batch.js';
import { jobQueue, type QueueNaming } from '../../core/task-queues.js';
import type { OpenEoBatchJobArgs, openEoBatchJob } from '../../workflows/openeo-batch-job.js';
import { H3_CELL, JOB_STATUS } from '../../workflows/search-attributes.js';

export interface OpenEoBatchStart {
  job_id: string;
  run: number;
  h3_cell: string;
}

export interface OpenEoBatchRunner {
  readonly mode: 'embedded' | 'temporal';
  /** Starts the run of a job the store now holds `queued` with this `run`; returns once it is started. */
  start(job: OpenEoBatchStart): Promise<void>;
  /** Best effort: stops the run of a job the store now holds `canceled` (the run checks the store anyway). */
  cancel(job: OpenEoBatchStart): Promise<void>;
  close(): Promise<void>;
}

export const openEoWorkflowId = (jobId: string, run: number) => `openeo-${jobId}-${run}`;

export function createEmbeddedOpenEoRunner(activities: OpenEoBatchActivities, logger?: Logger): OpenEoBatchRunner {
  const running = new Set<Promise<unknown>>();
  return {
    mode: 'embedded',
    async start(job) {
      const run = activities
        .runOpenEoBatchJob({ job_id: job.job_id, run: job.run })
        .catch((error: unknown) => logger?.error({ err: error, job_id: job.job_id }, 'openEO batch job failed'))
        .finally(() => running.delete(run));
      running.add(run);
    },
    async cancel() {},
    async close() {
      await Promise.allSettled([...running]);
    },
  };
}

export function createTemporalOpenEoRunner(deps: {
  client: Client;
  naming: QueueNaming;
  runTimeoutMs: number;
}): OpenEoBatchRunner {
  return {
    mode: 'temporal',
    async start(job) {
      await deps.client.workflow.start<typeof openEoBatchJob>('openEoBatchJob', {
        taskQueue: jobQueue(deps.naming),
        workflowId: openEoWorkflowId(job.job_id, job.run),
        workflowExecutionTimeout: deps.runTimeoutMs,
        args: [{ job_id: job.job_id, run: job.run } satisfies OpenEoBatchJobArgs],
        typedSearchAttributes: [
          { key: H3_CELL, value: job.h3_cell },
          { key: JOB_STATUS, value: 'queued' },
        ],
        staticSummary: `openEO batch job ${job.job_id} (run ${job.run}) in ${job.h3_cell}`,
      });
    },
    async cancel(job) {
      await deps.client.workflow
        .getHandle(openEoWorkflowId(job.job_id, job.run))
        .cancel()
        .catch(() => undefined); // already closed: the store's state is what counts
    },
    async close() {},
  };
}
