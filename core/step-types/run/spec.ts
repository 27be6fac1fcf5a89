/**
 * The run side of a step type: its activity's name and input. Kept apart from the rest of the type's spec because
 * the computeJob workflow builds these while it replays, and its bundle may hold nothing that needs Node (no
 * hashing, no signatures): these modules import only plain data helpers.
 */
import type { ComputeJobInput } from '../../job-steps.js';

/** A step's `context` as its activity input reads it (core/step-types/spec.ts `commonStepFields`). */
export interface StepContext {
  h3_cell?: string | undefined;
  epoch?: number | undefined;
  date_from?: string | undefined;
  date_to?: string | undefined;
  reference_from?: string | undefined;
  reference_to?: string | undefined;
}

/**
 * `Step` is what the input builder reads of a request step; the registry's index checks that its type's request
 * schema provides it.
 */
export interface StepRunSpec<Step, Input, Activity extends string = string> {
  /**
   * The name of its activity: `createStepActivities` (activities/compute/step-activities.ts) must have a method
   * of this name, which is what the gateway's and every worker's Temporal Worker register and the workflow calls.
   */
  activity: Activity;
  /** The activity's input, fed its dependencies' outputs in `depends_on` order (docs/protocol.md §2.2 rule 2). */
  activityInput: (job: ComputeJobInput, step: Step, dependencyOutputs: readonly Record<string, unknown>[]) => Input;
}

export const defineStepRun = <Step, Input, const Activity extends string>(
  run: StepRunSpec<Step, Input, Activity>,
): StepRunSpec<Step, Input, Activity> => run;
