/** The run side of `image_process` steps (./spec.ts). */
import { defineStepRun, type StepContext } from './spec.js';

/** What the input builder reads of an image_process step. */
export interface ImageRunStep {
  id: string;
  operation?: string | undefined;
  center_cell?: string | undefined;
  model?: string | undefined;
  expression?: string | undefined;
  context?: StepContext | undefined;
}

export const DEFAULT_IMAGE_OPERATION = 'ndvi';

export interface ImageStepInput {
  job_id: string;
  step_id: string;
  operation: string;
  h3_cell: string;
  date_from?: string;
  date_to?: string;
  /** flood_classify: the reference window (`context.reference_from`/`reference_to`). */
  reference_from?: string;
  reference_to?: string;
  /** flood_classify: a classify-endpoint model (the step's `model`). */
  model?: string;
  /** band_math: the step's expression. */
  expression?: string;
}

export const imageProcessRun = defineStepRun({
  activity: 'imageProcessStep',
  // The operation over `context.h3_cell`, else `center_cell`, else the job cell, in the step's date window.
  activityInput: (job, step: ImageRunStep): ImageStepInput => {
    const input: ImageStepInput = {
      job_id: job.job_id,
      step_id: step.id,
      operation: step.operation ?? DEFAULT_IMAGE_OPERATION,
      h3_cell: step.context?.h3_cell ?? step.center_cell ?? job.h3_cell,
    };
    if (step.context?.date_from !== undefined) input.date_from = step.context.date_from;
    if (step.context?.date_to !== undefined) input.date_to = step.context.date_to;
    if (step.context?.reference_from !== undefined) input.reference_from = step.context.reference_from;
    if (step.context?.reference_to !== undefined) input.reference_to = step.context.reference_to;
    if (step.model !== undefined) input.model = step.model;
    // Only when set: an input without it has the shape histories recorded before band_math.
    if (step.expression !== undefined) input.expression = step.expression;
    return input;
  },
});
