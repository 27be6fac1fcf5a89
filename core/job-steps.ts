/**
 * From a compound job to its steps' activity inputs (docs/protocol.md §2.2). Pure and deterministic: the
 * workflow builds these while it replays. Each step type declares its activity and input in its module of
 * core/step-types/, so the gateway, the workflow and every worker agree on them.
 */
import type { SignedRequest } from './job-record.js';
import type { ScheduledStep, StepRun } from './job-scheduler.js';
import type { RequestStep, StepType } from './step-types/index.js';
import { STEP_RUNS, type ActivityInputOf } from './step-types/run/index.js';

/** A request step as validated at entry (core/step-types: one shape per step type). */
export type JobStepSpec = RequestStep;

/** Everything a compound job's run needs; the workflow's argument and the embedded runner's input. */
export interface ComputeJobInput {
  job_id: string;
  requester_pk: string;
  h3_cell: string;
  /** The epoch the job was accepted in. */
  epoch: number;
  budget_credits: number;
  /** The job's Merkle proof (docs/protocol.md §8), reserved from the budget first. */
  proof_credits: number;
  /**
   * Request order, each with its worst-case estimate; on a re-run, the steps that completed in the failed
   * run carry that run (`done`) and are not run again.
   */
  steps: (JobStepSpec & { estimate: number; done?: StepRun })[];
  plan: { order: string[]; levels: string[][] };
  /** Gate 2's worker constraints (`x-svc-jurisdiction`, `x-svc-min-tier`). */
  jurisdiction: string | null;
  min_tier: string | null;
  /** SHA-256 hex of JCS of the signed request; the job hash starts from it. */
  request_hash: string;
  created_at: string;
  /** The signed request and its delegation chain, kept with the job for its receipt (docs/protocol.md §15). */
  request?: SignedRequest;
  /** Which run of the job this is: 1 (or absent) first, +1 each time a replay re-runs it after a transient failure. */
  run?: number;
}

// The workflow imports this module: only the registry's run side (core/step-types/run/), which needs no Node.
export { DEFAULT_TILE_STYLE, DEFAULT_TILE_ZOOM, type TileStepInput } from './step-types/run/tile-render.js';
export { DEFAULT_IMAGE_OPERATION, type ImageStepInput } from './step-types/run/image-process.js';
export { MAX_CONTEXT_CHARS, type InferenceStepInput } from './step-types/run/inference.js';
export type { SensorFusionStepInput } from './step-types/run/sensor-fusion.js';
export { STEP_ACTIVITY } from './step-types/run/index.js';

/** A step type and its activity's input, as the workflow and the embedded runner dispatch them. */
export type StepActivityInput = { [K in StepType]: { type: K; input: ActivityInputOf<K> } }[StepType];

export const toScheduledStep = (step: ComputeJobInput['steps'][number]): ScheduledStep => ({
  id: step.id,
  type: step.type,
  depends_on: step.depends_on,
  estimate: step.estimate,
  ...(step.done ? { done: step.done } : {}),
});

/**
 * The activity input of `step`, fed its dependencies' outputs in the order `depends_on` lists them
 * (docs/protocol.md §2.2 rules 1, 2): each type's `activityInput` (core/step-types/) says what it makes of them.
 */
export function stepActivityInput(
  job: ComputeJobInput,
  step: JobStepSpec,
  dependencyOutputs: readonly Record<string, unknown>[],
): StepActivityInput {
  // A step type the registry does not know (a history written by a newer gateway) has no activity.
  if (!Object.hasOwn(STEP_RUNS, step.type)) {
    throw new RangeError(`step type ${JSON.stringify(step.type)} has no activity`);
  }
  const run = STEP_RUNS[step.type] as {
    activityInput: (job: ComputeJobInput, step: JobStepSpec, outputs: readonly Record<string, unknown>[]) => unknown;
  };
  return { type: step.type, input: run.activityInput(job, step, dependencyOutputs) } as StepActivityInput;
}
