/**
 * The openEO batch job workflow (docs/protocol.md §16.11): one run per start of a job, workflow id
 * `openeo-<job id>-<run>`, on the job queue beside `computeJob`, so operators find batch jobs in the Temporal Web
 * UI like compound jobs. Its one step runs the job's process graph as a local activity of the gateway that runs
 * the workflow (it reads the catalog and writes the store and the proof record); the job's status goes to the
 * `JobStatus` search attribute. Deterministic: it imports activity types only.
 */
import { proxyLocalActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { OpenEoBatchActivities, OpenEoBatchInput } from '../activities/imagery/openeo-batch.js';
import { JOB_STATUS } from './search-attributes.js';

export interface OpenEoBatchJobArgs extends OpenEoBatchInput {
  /** Longest one attempt may run; default 30 minutes. */
  runMs?: number;
}

export async function openEoBatchJob(args: OpenEoBatchJobArgs): Promise<{ status: string }> {
  const { runOpenEoBatchJob } = proxyLocalActivities<OpenEoBatchActivities>({
    startToCloseTimeout: args.runMs ?? 30 * 60_000,
    retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s', maximumAttempts: 3 },
    summary: `openEO job ${args.job_id}, run ${args.run}`,
  });
  const outcome = await runOpenEoBatchJob({ job_id: args.job_id, run: args.run });
  upsertSearchAttributes([{ key: JOB_STATUS, value: outcome.status }]);
  return outcome;
}
