/** The run side of `sensor_fusion` steps (./spec.ts). */
import { defineStepRun, type StepContext } from './spec.js';

/** What the input builder reads of a sensor_fusion step. */
export interface SensorFusionRunStep {
  id: string;
  quantity?: string | undefined;
  rings?: number | undefined;
  context?: StepContext | undefined;
}

/** The window is resolved by the activity from these (core/sensor-fusion.ts fusionWindow). */
export interface SensorFusionStepInput {
  job_id: string;
  step_id: string;
  quantity: string;
  h3_cell: string;
  rings: number;
  /** The epoch the job was accepted in: the default window is the epoch before it. */
  job_epoch: number;
  epoch?: number;
  date_from?: string;
  date_to?: string;
}

export const sensorFusionRun = defineStepRun({
  activity: 'sensorFusionStep',
  // `quantity` over `context.h3_cell` (else the job cell) and its `rings`, in the step's window.
  activityInput: (job, step: SensorFusionRunStep): SensorFusionStepInput => {
    const input: SensorFusionStepInput = {
      job_id: job.job_id,
      step_id: step.id,
      quantity: step.quantity ?? '',
      h3_cell: step.context?.h3_cell ?? job.h3_cell,
      rings: step.rings ?? 0,
      job_epoch: job.epoch,
    };
    if (step.context?.epoch !== undefined) input.epoch = step.context.epoch;
    if (step.context?.date_from !== undefined) input.date_from = step.context.date_from;
    if (step.context?.date_to !== undefined) input.date_to = step.context.date_to;
    return input;
  },
});
