/**
 * Step outputs in and out of the blob store (core/output-blobs.ts, store/blob-store.ts): a step activity
 * keeps its large fields out of its result, finishJob resolves them for the job hash and the stored job and
 * hands the workflow back the compact form.
 */
import { blobIdsOf, resolveOutput, splitOutput } from '../../core/output-blobs.js';
import type { StepResult } from '../../core/job-record.js';
import type { StepRun } from '../../core/job-scheduler.js';
import type { BlobOwner, BlobStore, StepBlobSink } from '../../store/blob-store.js';

/** `run` (the output of `step`) with its large output fields stored and referenced. */
export async function compactRun(blobs: StepBlobSink, run: StepRun, step: BlobOwner): Promise<StepRun> {
  const { output, blobs: large } = splitOutput(run.output);
  if (large.size === 0) return run;
  await blobs.put(large, step);
  return { ...run, output };
}

/** `steps` with every referenced field read back from the store. */
export async function resolveSteps<T extends Pick<StepResult, 'output'>>(
  blobs: Pick<BlobStore, 'get'>,
  steps: readonly T[],
): Promise<T[]> {
  const ids = steps.flatMap((step) => blobIdsOf(step.output));
  if (ids.length === 0) return [...steps];
  const found = await blobs.get(ids);
  return steps.map((step) => ({ ...step, output: resolveOutput(step.output, found) }));
}

/** `steps` with large output fields stored (again: content addressed, so a stored one stays) and referenced. */
export async function compactSteps<T extends Pick<StepResult, 'output'>>(
  blobs: Pick<BlobStore, 'put'>,
  steps: readonly T[],
): Promise<T[]> {
  const all = new Map<string, string>();
  const compact = steps.map((step) => {
    const { output, blobs: large } = splitOutput(step.output);
    for (const [id, text] of large) all.set(id, text);
    return large.size === 0 ? step : { ...step, output };
  });
  if (all.size > 0) await blobs.put(all);
  return compact;
}
