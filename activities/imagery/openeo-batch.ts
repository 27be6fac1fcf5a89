/**
 * The run of an openEO batch job (docs/protocol.md §16.11): the `openEoBatchJob` workflow's one activity, and what
 * the embedded runner calls directly. It moves the stored job from `queued` to `running`, runs its process graph
 * (api's synchronous path, with the batch pixel budget), keeps the result file with the job and writes it as a
 * proof record whose id derives from the job and the run (so a retried activity writes it once), then stores the
 * job `finished` with its asset, or `error` with the reason in its logs. A job canceled or restarted meanwhile is
 * left as the user left it: every change is a compare-and-set on the stored job.
 */
import { OpenEoError } from '../../core/openeo/errors.js';
import { checkProcessGraph, type Registry } from '../../core/openeo/graph.js';
import type { OpenEoEnv } from '../../core/openeo/processes.js';
import { ServiceError } from '../../core/errors.js';
import type { OpenEoJob, OpenEoJobLog, OpenEoJobStatus, OpenEoJobStore } from '../../store/openeo-job-store.js';
import type { ImageryActivities } from './index.js';
import { runOpenEoGraph } from './openeo-run.js';

/**
 * The values (x × y × t × bands) one batch job may load: 40 million (ten times a synchronous request), e.g. a
 * 20 × 20 km area at 10 m in two bands on five dates.
 */
export const BATCH_MAX_SAMPLES = 40_000_000;

/** The largest result file a job keeps (MongoDB's document bound, with room to spare). */
export const BATCH_MAX_ASSET_BYTES = 12 * 1024 * 1024;

const EXTENSIONS: Record<string, string> = { GTiff: 'tif', PNG: 'png', JSON: 'json' };

export interface OpenEoBatchInput {
  job_id: string;
  /** The start this run is for (the job's `run` when it was started); another start since makes it stale. */
  run: number;
}

export interface OpenEoBatchActivities {
  runOpenEoBatchJob(input: OpenEoBatchInput): Promise<{ status: OpenEoJobStatus }>;
}

export interface OpenEoBatchDeps {
  imagery: ImageryActivities;
  jobs: OpenEoJobStore;
  registry: Registry<OpenEoEnv>;
  encodePng: (value: unknown) => Promise<Uint8Array>;
  clock: () => number;
}

/** The record id of a run's result: one per job and run, so a retried activity finds its record written. */
export const batchRecordId = (jobId: string, run: number) => `openeo-job:${jobId}:${run}`;

export function createOpenEoBatchActivities(deps: OpenEoBatchDeps): OpenEoBatchActivities {
  const now = () => new Date(deps.clock()).toISOString();
  const log = (job: OpenEoJob, level: OpenEoJobLog['level'], message: string, code?: string): OpenEoJobLog => ({
    id: String(job.logs.length + 1),
    level,
    message,
    time: now(),
    ...(code ? { code } : {}),
  });

  /** Applies `change` to the stored job of this run until it sticks; null when the job moved on without it. */
  async function update(input: OpenEoBatchInput, change: (job: OpenEoJob) => OpenEoJob | null) {
    for (let attempt = 0; attempt < 8; attempt++) {
      const job = await deps.jobs.get(input.job_id);
      if (job === null || job.run !== input.run) return null;
      const next = change(job);
      if (next === null) return job;
      const saved = await deps.jobs.save({ ...next, updated: now() });
      if (saved !== null) return saved;
    }
    throw new Error(`openEO job ${input.job_id}: the store kept changing under the run`);
  }

  return {
    async runOpenEoBatchJob(input) {
      const started = await update(input, (job) =>
        job.status === 'queued'
          ? { ...job, status: 'running', logs: [...job.logs, log(job, 'info', `run ${input.run} started`)] }
          : null,
      );
      if (started === null) return { status: 'canceled' };
      if (started.status !== 'running') return { status: started.status };
      const job = started;
      try {
        const process = job.request.process as { process_graph: Record<string, unknown> };
        const graph = checkProcessGraph(process.process_graph, deps.registry);
        const run = await runOpenEoGraph(
          { imagery: deps.imagery, registry: deps.registry, encodePng: deps.encodePng, clock: deps.clock },
          {
            graph,
            graphHash: job.process_graph_sha256,
            budget: job.budget,
            maxSamples: BATCH_MAX_SAMPLES,
            tooComplex: (samples) =>
              `The process is too complex for a batch job: it would load ${samples.toLocaleString('en')} values ` +
              `(x × y × t × bands), above the ${BATCH_MAX_SAMPLES.toLocaleString('en')} a batch job may load. ` +
              'Split the extent or the interval into several jobs.',
            recordId: batchRecordId(job.id, input.run),
            cell: job.h3_cell,
            authenticatedBy: job.authenticated_by,
            requestId: null,
            jobId: job.id,
            stepId: `run-${input.run}`,
          },
        );
        if (run.bytes.length > BATCH_MAX_ASSET_BYTES) {
          throw new OpenEoError(
            'ProcessGraphComplexity',
            `The result file is ${run.bytes.length} bytes, above the ${BATCH_MAX_ASSET_BYTES} a job keeps.`,
          );
        }
        const name = `result.${EXTENSIONS[run.format] ?? 'bin'}`;
        await deps.jobs.putAsset(job.id, name, run.bytes);
        const finished = await update(input, (current) =>
          current.status === 'running'
            ? {
                ...current,
                status: 'finished',
                costs: run.cost,
                assets: [
                  {
                    name,
                    record_id: run.record.id,
                    sha256: run.sha256,
                    bytes: run.bytes.length,
                    format: run.format,
                    media_type: run.mediaType,
                    cost: run.cost,
                    epoch: run.record.address.epoch,
                    h3_cell: run.record.address.h3_cell,
                  },
                ],
                logs: [
                  ...current.logs,
                  log(
                    current,
                    'info',
                    `${name}: ${run.bytes.length} bytes, ${run.cost} credits, record ${run.record.id}`,
                  ),
                ],
              }
            : null,
        );
        // Deleted meanwhile: its file goes with it.
        if (finished === null && (await deps.jobs.get(job.id)) === null) await deps.jobs.delete(job.id);
        return { status: finished?.status ?? 'canceled' };
      } catch (error) {
        const code =
          error instanceof OpenEoError ? error.openEoCode : error instanceof ServiceError ? error.code : 'Internal';
        const message =
          error instanceof ServiceError
            ? (error.detail ?? error.message)
            : 'The job failed on an internal error; the operators have its log.';
        const failed = await update(input, (current) =>
          current.status === 'running'
            ? { ...current, status: 'error', logs: [...current.logs, log(current, 'error', message, code)] }
            : null,
        );
        if (!(error instanceof ServiceError)) throw error; // a bug: let the engine show it, the job says error
        return { status: failed?.status ?? 'canceled' };
      }
    },
  };
}
