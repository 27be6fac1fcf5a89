/**
 * The step-type registry (docs/architecture.md "Adding a step type"): the one list of compound-job step types,
 * each declared whole in its own module. Everything that varies by step type (the request schema, entry checks,
 * prices, activity names and inputs, worker tiers and tools, the API reference, the docs' tables) reads it from
 * here; `test/core/step-types.test.ts` fails when another file spells the list out.
 */
import { z } from 'zod';
import { pass, type Check } from '../check.js';
import { fromCreditUnits, toCreditUnits } from '../credits.js';
import { imageProcess } from './image-process.js';
import { inference } from './inference.js';
import { sensorFusion } from './sensor-fusion.js';
import type { HardwareTier } from '../hardware-tier.js';
import type { ComputeJobInput } from '../job-steps.js';
import type { ActivityInputOf } from './run/index.js';
import { commonStepFields, type EntryContext, type StepTypeSpec } from './spec.js';

export { STEP_ACTIVITY, STEP_RUNS, type ActivityInputOf } from './run/index.js';
import { tileRender } from './tile-render.js';

export const STEP_TYPES = ['inference', 'tile_render', 'image_process', 'sensor_fusion'] as const;
export type StepType = (typeof STEP_TYPES)[number];

/**
 * Each type's spec under its own name. A type of STEP_TYPES without a module, a module under another type's
 * name or a spec missing a part does not compile.
 */
export const STEP_TYPE_SPECS = {
  inference,
  tile_render: tileRender,
  image_process: imageProcess,
  sensor_fusion: sensorFusion,
} as const satisfies {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [K in StepType]: StepTypeSpec<K, any, any, any>;
};

type Specs = typeof STEP_TYPE_SPECS;
/** A request step of type `K` as validated at entry. */
export type StepOfType<K extends StepType> = Parameters<Specs[K]['check']>[0];
/** A request step of any type (docs/protocol.md §2.2). */
export type RequestStep = { [K in StepType]: StepOfType<K> }[StepType];
/** What a step of type `K` is priced by. */
export type MeasureOf<K extends StepType> = Parameters<Specs[K]['price']>[0];

/** Any type's spec as code that handles every type alike sees it: its functions take a step of its own type. */
export interface UniformStepTypeSpec {
  type: StepType;
  check: (step: RequestStep) => Check<unknown> | null;
  minHardwareTier: HardwareTier;
  requiredTools: (step: RequestStep) => string[];
  activity: string;
  activityInput: (
    job: ComputeJobInput,
    step: RequestStep,
    dependencyOutputs: readonly Record<string, unknown>[],
  ) => ActivityInputOf<StepType>;
  worstCase: (step: RequestStep, context: EntryContext) => Check<unknown>;
  price: (measure: never) => number;
  records: StepTypeSpec<StepType, z.ZodRawShape, unknown, unknown>['records'];
  output: z.ZodType;
  docs: StepTypeSpec<StepType, z.ZodRawShape, unknown, unknown>['docs'];
}

/** The spec of `type`; the caller hands its functions steps of that type only. */
export const stepTypeSpec = (type: StepType): UniformStepTypeSpec =>
  STEP_TYPE_SPECS[type] as unknown as UniformStepTypeSpec;

/** A step type's own request schema: its fields and the common ones, nothing else. */
const stepVariant = <K extends StepType>(type: K) =>
  z.strictObject(
    { ...commonStepFields, type: z.literal(type), ...STEP_TYPE_SPECS[type].fields },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `${issue.keys.map((key) => JSON.stringify(key)).join(', ')} ${issue.keys.length === 1 ? 'is not a field' : 'are not fields'} of a ${type} step`
          : undefined,
    },
  );

/**
 * docs/protocol.md §2.2: a union discriminated on `type`, each type a strict object of its own fields, so a field of
 * another type is refused by construction.
 */
export const requestStepSchema = z.discriminatedUnion(
  'type',
  STEP_TYPES.map(stepVariant) as unknown as [
    ReturnType<typeof stepVariant<StepType>>,
    ...ReturnType<typeof stepVariant<StepType>>[],
  ],
  {
    error: (issue) =>
      issue.code === 'invalid_union'
        ? `Invalid option: expected one of ${STEP_TYPES.map((type) => JSON.stringify(type)).join('|')}`
        : undefined,
  },
) as unknown as z.ZodType<RequestStep>;

/** Hardware tier a step type needs of its worker (docs/protocol.md §1.6). */
export const STEP_MIN_HARDWARE_TIER = Object.fromEntries(
  STEP_TYPES.map((type) => [type, STEP_TYPE_SPECS[type].minHardwareTier]),
) as { [K in StepType]: Specs[K]['minHardwareTier'] };

/** Tools a step requires of its worker (docs/protocol.md §1.4). */
export const requiredTools = (step: RequestStep): string[] => stepTypeSpec(step.type).requiredTools(step);

/** The first step that fails its type's cross-checks, as that failure; null when all pass. */
export function checkSteps(steps: readonly RequestStep[]): Check<unknown> | null {
  for (const step of steps) {
    const refused = stepTypeSpec(step.type).check(step);
    if (refused !== null && !refused.ok) return refused;
  }
  return null;
}

/** Credits of a step's worst case at entry: its type's price of its worst-case measure. */
export function estimateStep(step: RequestStep, context: EntryContext): Check<number> {
  const spec = stepTypeSpec(step.type);
  const worst = spec.worstCase(step, context);
  return worst.ok ? pass(spec.price(worst.value as never)) : worst;
}

export interface CostEstimate {
  /** Sum of the step estimates plus the job's one Merkle proof. */
  total_credits: number;
  /** Step id → estimated credits (the shape of the settlement breakdown, docs/protocol.md §2.3). */
  breakdown: Record<string, number>;
  proof_credits: number;
}

/** docs/protocol.md §2.2 rule 3: a compound job costs the sum of its steps, and one proof covers all of them. */
export function estimateJob(
  steps: readonly RequestStep[],
  context: EntryContext,
  proofCredits: number,
): Check<CostEstimate> {
  // A Map, then fromEntries: step ids are client text, and "__proto__" must stay an ordinary key. Sums in credit
  // units, so they are exact (core/credits.ts).
  const byStep = new Map<string, number>();
  let total = toCreditUnits(proofCredits);
  for (const step of steps) {
    const credits = estimateStep(step, context);
    if (!credits.ok) return credits;
    const units = toCreditUnits(credits.value);
    byStep.set(step.id, (byStep.get(step.id) ?? 0) + units);
    total += units;
  }
  return pass({
    total_credits: fromCreditUnits(total),
    breakdown: Object.fromEntries([...byStep].map(([id, units]) => [id, fromCreditUnits(units)])),
    proof_credits: proofCredits,
  });
}

/** Every step type's row of docs/protocol.md §1.2, as `scripts/step-types-doc.ts` writes it. */
export const stepTypeDocRows = (): string[] =>
  STEP_TYPES.map(
    (type) => `| \`${type}\` | ${STEP_TYPE_SPECS[type].docs.runs} | ${STEP_TYPE_SPECS[type].docs.state} |`,
  );

export type { EntryContext, StepTypeSpec } from './spec.js';
