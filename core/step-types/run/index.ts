/**
 * The run side of every step type (./spec.ts): what the computeJob workflow and the embedded runner need to call
 * a step's activity. Each type's full spec (../index.ts) includes its entry here, so the two cannot disagree, and
 * a type of the registry without one does not compile.
 */
import type { StepOfType, StepType } from '../index.js';
import { imageProcessRun } from './image-process.js';
import { inferenceRun } from './inference.js';
import { sensorFusionRun } from './sensor-fusion.js';
import type { StepRunSpec } from './spec.js';
import { tileRenderRun } from './tile-render.js';

export const STEP_RUNS = {
  inference: inferenceRun,
  tile_render: tileRenderRun,
  image_process: imageProcessRun,
  sensor_fusion: sensorFusionRun,
} as const satisfies {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [K in StepType]: StepRunSpec<StepOfType<K>, any>;
};

type Runs = typeof STEP_RUNS;
/** The activity input of a step of type `K`. */
export type ActivityInputOf<K extends StepType> = ReturnType<Runs[K]['activityInput']>;

/** The step activity of each step type (activities/compute/step-activities.ts). */
export const STEP_ACTIVITY = Object.fromEntries(
  Object.entries(STEP_RUNS).map(([type, run]) => [type, run.activity]),
) as { [K in StepType]: Runs[K]['activity'] };
