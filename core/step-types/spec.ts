/**
 * What a step type is (docs/architecture.md "Adding a step type"): everything the gateway, the scheduler, the
 * workflow, the workers, the price list and the API reference need to know about one type of compound-job step,
 * declared once in that type's module and combined by `./index.ts`. Pure: no I/O, so the workflow bundle and
 * every process read the same declarations.
 */
import { z } from 'zod';
import type { Check } from '../check.js';
import type { HardwareTier } from '../hardware-tier.js';
import type { ComputeJobInput } from '../job-steps.js';

/** Most steps a job may carry: enough for any real pipeline, small enough to plan and price instantly. */
export const MAX_STEPS = 32;

/** The request fields every step has, whatever its type (docs/protocol.md §2.2). */
export const commonStepFields = {
  id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'step ids are 1-64 characters of A-Z a-z 0-9 _ . -'),
  // One step id, or a list of them (fan-in: the step gets every output, in this order).
  depends_on: z.union([z.string(), z.array(z.string()).min(1).max(MAX_STEPS)]).optional(),
  // The step's place and time. Open beyond its named keys, so a step can carry e.g. a GeoJSON `area` (checked by
  // gate 4); gates 2, 3 and 5 read `h3_cell` from a step of any type.
  context: z
    .looseObject({
      h3_cell: z.string().optional(),
      epoch: z.int().min(0).optional(),
      date_from: z.iso.date().or(z.iso.datetime()).optional(),
      date_to: z.iso.date().or(z.iso.datetime()).optional(),
      reference_from: z.iso.date().or(z.iso.datetime()).optional(),
      reference_to: z.iso.date().or(z.iso.datetime()).optional(),
    })
    .optional(),
};

type CommonFields = typeof commonStepFields;
/** A request step of type `T` with its own `fields`, as validated at entry. */
export type StepOf<T extends string, Fields extends z.ZodRawShape> = z.output<
  z.ZodObject<CommonFields & { type: z.ZodLiteral<T> } & Fields>
>;

/** What the gateway knows when it prices a step at entry. */
export interface EntryContext {
  jobCell: string;
  /** The epoch the job is accepted in. */
  epoch: number;
  epochGenesisMs: number;
  epochMs: number;
}

/** Payload types of the proof records a step of this type writes (docs/protocol.md §2.6). */
export interface StepRecords<Collection extends string = string> {
  collection: Collection;
  payloadTypes: readonly string[];
}

/** One row of the step types table (docs/protocol.md §1.2), written out by `scripts/step-types-doc.ts`. */
export interface StepDocs {
  /** What runs. */
  runs: string;
  state: 'available' | 'planned';
}

/**
 * One step type. `Fields` are its request fields beyond `commonStepFields`; `Input` its activity's input;
 * `Measure` what its price is a function of, which the entry estimate assumes at its worst (`worstCase`) and
 * the activity measures (`price` is the one function for both).
 */
export interface StepTypeSpec<
  T extends string,
  Fields extends z.ZodRawShape,
  Input,
  Measure,
  Activity extends string = string,
> {
  type: T;
  /** Request fields of this type: a field of another type is refused by construction (a strict object). */
  fields: Fields;
  /**
   * Checks across fields and against the registries (models, quantities) that the schema cannot state, at
   * entry and before anything runs: null when the step is fine.
   */
  check: (step: StepOf<T, Fields>) => Check<unknown> | null;
  /** The least hardware tier a worker needs to run this type (docs/protocol.md §1.6). */
  minHardwareTier: HardwareTier;
  /** Tools the step requires of its worker (docs/protocol.md §1.4, §2.7): a worker must advertise all of them. */
  requiredTools: (step: StepOf<T, Fields>) => string[];
  /**
   * The name of its activity: `createStepActivities` (activities/compute/step-activities.ts) must have a method
   * of this name, which is what the gateway's and every worker's Temporal Worker register and the workflow calls.
   */
  activity: Activity;
  /** The activity's input, fed its dependencies' outputs in `depends_on` order (docs/protocol.md §2.2 rule 2). */
  activityInput: (
    job: ComputeJobInput,
    step: StepOf<T, Fields>,
    dependencyOutputs: readonly Record<string, unknown>[],
  ) => Input;
  /** The step's worst case at entry; a failure is the request's error (e.g. a fusion window out of range). */
  worstCase: (step: StepOf<T, Fields>, context: EntryContext) => Check<Measure>;
  /** Credits for `measure`: the entry estimate of `worstCase`, and the activity's charge for what it measured. */
  price: (measure: Measure) => number;
  records: StepRecords;
  /** The step's `output` (docs/protocol.md §2.3), for the API reference. */
  output: z.ZodType;
  docs: StepDocs;
}

/** Any step type, for code that handles every type alike. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyStepTypeSpec = StepTypeSpec<string, any, any, any, string>;

/** Declares a step type, inferring its parts' types (so the index can check the whole). */
export const defineStepType = <
  T extends string,
  Fields extends z.ZodRawShape,
  Input,
  Measure,
  const Activity extends string,
>(
  spec: StepTypeSpec<T, Fields, Input, Measure, Activity>,
): StepTypeSpec<T, Fields, Input, Measure, Activity> => spec;
