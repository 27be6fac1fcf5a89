/** The run side of `tile_render` steps (./spec.ts). */
import { defineStepRun } from './spec.js';

/** What the input builder reads of a tile_render step. */
export interface TileRunStep {
  id: string;
  center_cell?: string | undefined;
  zoom?: number | undefined;
  style?: string | undefined;
}

export const DEFAULT_TILE_ZOOM = 12;
export const DEFAULT_TILE_STYLE = 'osm-bright';

export interface TileStepInput {
  job_id: string;
  step_id: string;
  center_cell: string;
  zoom: number;
  style: string;
  locations?: { name: string; address?: string; lat?: number; lng?: number; h3_cell?: string }[];
}

export const tileRenderRun = defineStepRun({
  activity: 'tileRenderStep',
  // The tile of `center_cell` (else the job cell), annotated with the dependencies' `locations`, concatenated in
  // `depends_on` order.
  activityInput: (job, step: TileRunStep, dependencyOutputs): TileStepInput => {
    const input: TileStepInput = {
      job_id: job.job_id,
      step_id: step.id,
      center_cell: step.center_cell ?? job.h3_cell,
      zoom: step.zoom ?? DEFAULT_TILE_ZOOM,
      style: step.style ?? DEFAULT_TILE_STYLE,
    };
    const locations = dependencyOutputs.flatMap((output) =>
      Array.isArray(output.locations) ? (output.locations as NonNullable<TileStepInput['locations']>) : [],
    );
    if (dependencyOutputs.some((output) => Array.isArray(output.locations))) input.locations = locations;
    return input;
  },
});
