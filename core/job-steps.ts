/**
 * From a compound job to its steps' activity inputs (docs/protocol.md §2.2). Pure and deterministic: the
 * workflow builds these while it replays. The types here are the activities' inputs (activities validate
 * them again with their zod schemas), so the gateway, the workflow and every worker agree on them.
 */
import type { SignedRequest } from './job-record.js';
import { dependenciesOf, type StepType } from './job-plan.js';
import { isBlobRef } from './blob-ref.js';
import type { ScheduledStep, StepRun } from './job-scheduler.js';

/** A request step as validated at entry (api/schemas/compute-request.ts). */
export interface JobStepSpec {
  id: string;
  type: StepType;
  /** One step id, or a list of them (fan-in). */
  depends_on?: string | string[] | undefined;
  model?: string | undefined;
  messages?: { role: string; content: string }[] | undefined;
  max_tokens?: number | undefined;
  operation?: string | undefined;
  center_cell?: string | undefined;
  zoom?: number | undefined;
  style?: string | undefined;
  context?:
    | {
        h3_cell?: string | undefined;
        epoch?: number | undefined;
        date_from?: string | undefined;
        date_to?: string | undefined;
        reference_from?: string | undefined;
        reference_to?: string | undefined;
      }
    | undefined;
  tools?: string[] | undefined;
  /** sensor_fusion: the quantity fused (core/telemetry.ts) and the k-ring around the cell (0–2). */
  quantity?: string | undefined;
  rings?: number | undefined;
}

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

export const DEFAULT_TILE_ZOOM = 12;
export const DEFAULT_TILE_STYLE = 'osm-bright';
export const DEFAULT_IMAGE_OPERATION = 'ndvi';
/** Each dependency's output shown to a model is cut here: a prompt is not a data pipe. */
export const MAX_CONTEXT_CHARS = 8000;

export interface InferenceStepInput {
  job_id: string;
  step_id: string;
  model?: string;
  messages: { role: 'system' | 'user' | 'assistant'; content: string }[];
  max_tokens?: number;
  want_locations: boolean;
  tools?: string[];
  h3_cell: string;
  jurisdiction: string | null;
  min_tier: string | null;
}

export interface TileStepInput {
  job_id: string;
  step_id: string;
  center_cell: string;
  zoom: number;
  style: string;
  locations?: { name: string; address?: string; lat?: number; lng?: number; h3_cell?: string }[];
}

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
}

/** A sensor_fusion step (core/sensor-fusion.ts): the window is resolved by the activity from these. */
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

export type StepActivityInput =
  | { type: 'inference'; input: InferenceStepInput }
  | { type: 'tile_render'; input: TileStepInput }
  | { type: 'image_process'; input: ImageStepInput }
  | { type: 'sensor_fusion'; input: SensorFusionStepInput };

/** Hardware tier a step type needs of its worker (docs/protocol.md §1.6: tier 1 runs tiles and small inference, tier 2 everything). */
export const STEP_MIN_HARDWARE_TIER = { inference: 1, tile_render: 1, image_process: 2, sensor_fusion: 2 } as const;

/** The step activity of each step type (activities/compute/step-activities.ts). */
export const STEP_ACTIVITY = {
  inference: 'inferenceStep',
  tile_render: 'tileRenderStep',
  image_process: 'imageProcessStep',
  sensor_fusion: 'sensorFusionStep',
} as const;

export const toScheduledStep = (step: ComputeJobInput['steps'][number]): ScheduledStep => ({
  id: step.id,
  type: step.type,
  depends_on: step.depends_on,
  estimate: step.estimate,
  ...(step.done ? { done: step.done } : {}),
});

/** Tools a step requires of its worker (docs/protocol.md §1.4); only inference steps call tools. */
export const requiredTools = (step: JobStepSpec): string[] => (step.type === 'inference' ? (step.tools ?? []) : []);

/**
 * The activity input of `step`, fed its dependencies' outputs in the order `depends_on` lists them
 * (docs/protocol.md §2.2 rules 1, 2):
 * - inference: each dependency's output reaches the model as a system message (JSON, cut at
 *   MAX_CONTEXT_CHARS, images left out), in that order; locations are asked for when a `tile_render` step
 *   depends on it;
 * - tile_render: the tile of `center_cell` (else the job cell), annotated with the dependencies' `locations`
 *   (concatenated in that order);
 * - image_process: the operation over `context.h3_cell` (else `center_cell`, else the job cell);
 * - sensor_fusion: `quantity` over `context.h3_cell` (else the job cell) and its `rings`, in the step's window.
 */
export function stepActivityInput(
  job: ComputeJobInput,
  step: JobStepSpec,
  dependencyOutputs: readonly Record<string, unknown>[],
): StepActivityInput {
  const dependencies = dependenciesOf(step);
  const base = { job_id: job.job_id, step_id: step.id };
  switch (step.type) {
    case 'inference': {
      const messages = (step.messages ?? []).map((m) => ({
        role: m.role as InferenceStepInput['messages'][number]['role'],
        content: m.content,
      }));
      messages.unshift(
        ...dependencyOutputs.map((output, i) => ({
          role: 'system' as const,
          content: dependencyContext(dependencies[i]!, output),
        })),
      );
      const input: InferenceStepInput = {
        ...base,
        messages,
        want_locations: job.steps.some((s) => s.type === 'tile_render' && dependenciesOf(s).includes(step.id)),
        h3_cell: job.h3_cell,
        jurisdiction: job.jurisdiction,
        min_tier: job.min_tier,
      };
      if (step.model !== undefined) input.model = step.model;
      if (step.max_tokens !== undefined) input.max_tokens = step.max_tokens;
      if (step.tools !== undefined) input.tools = step.tools;
      return { type: 'inference', input };
    }
    case 'tile_render': {
      const input: TileStepInput = {
        ...base,
        center_cell: step.center_cell ?? job.h3_cell,
        zoom: step.zoom ?? DEFAULT_TILE_ZOOM,
        style: step.style ?? DEFAULT_TILE_STYLE,
      };
      const locations = dependencyOutputs.flatMap((output) =>
        Array.isArray(output.locations) ? (output.locations as NonNullable<TileStepInput['locations']>) : [],
      );
      if (dependencyOutputs.some((output) => Array.isArray(output.locations))) input.locations = locations;
      return { type: 'tile_render', input };
    }
    case 'image_process': {
      const input: ImageStepInput = {
        ...base,
        operation: step.operation ?? DEFAULT_IMAGE_OPERATION,
        h3_cell: step.context?.h3_cell ?? step.center_cell ?? job.h3_cell,
      };
      if (step.context?.date_from !== undefined) input.date_from = step.context.date_from;
      if (step.context?.date_to !== undefined) input.date_to = step.context.date_to;
      if (step.context?.reference_from !== undefined) input.reference_from = step.context.reference_from;
      if (step.context?.reference_to !== undefined) input.reference_to = step.context.reference_to;
      if (step.model !== undefined) input.model = step.model;
      return { type: 'image_process', input };
    }
    case 'sensor_fusion': {
      const input: SensorFusionStepInput = {
        ...base,
        quantity: step.quantity ?? '',
        h3_cell: step.context?.h3_cell ?? job.h3_cell,
        rings: step.rings ?? 0,
        job_epoch: job.epoch,
      };
      if (step.context?.epoch !== undefined) input.epoch = step.context.epoch;
      if (step.context?.date_from !== undefined) input.date_from = step.context.date_from;
      if (step.context?.date_to !== undefined) input.date_to = step.context.date_to;
      return { type: 'sensor_fusion', input };
    }
    default:
      throw new RangeError(`step type ${JSON.stringify(step.type)} has no activity`);
  }
}

function dependencyContext(stepId: string, output: Record<string, unknown>): string {
  const { image_base64: _image, ...rest } = output;
  // A field kept out of line (core/blob-ref.ts) shows its head: the prompt is cut at MAX_CONTEXT_CHARS anyway.
  const json = JSON.stringify(rest, (_key, value: unknown) =>
    isBlobRef(value) ? (value.head ?? `[${value.bytes} bytes]`) : value,
  );
  const cut = json.length > MAX_CONTEXT_CHARS ? `${json.slice(0, MAX_CONTEXT_CHARS)}…` : json;
  return `Output of the job's step "${stepId}" (JSON), for use in your answer:\n${cut}`;
}
