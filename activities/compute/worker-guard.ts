/**
 * The swarm worker's own eligibility check of each step it takes from a task queue (docs/protocol.md §1.4).
 *
 * Trade-off: task queues are keyed by routing cell and tool set only (core/task-queues.ts), as decided
 * asks, so Temporal's hand-off already guarantees the cell and the tools. A queue does not say which model,
 * trust tier, jurisdiction or hardware a step needs: keying queues by those too would multiply them
 * (models × tiers × jurisdictions × tool subsets) for every worker. Instead the gateway checks them when it
 * routes the job (activities/compute/job-activities.ts `routeJob`: a step goes to a cell queue only when an
 * eligible worker of that cell is online), and the worker that takes the task checks them again here, since
 * any worker of the cell polling the queue may receive it. A worker that may not take the step fails the
 * attempt with a retryable `worker_ineligible` ApplicationFailure, and Temporal schedules the retry on
 * whichever poller asks next. The cost: an attempt (of the step's retry budget) and a backoff interval per
 * wrong hand-off, so a cell mixing very different workers on one queue wastes attempts; a step that no
 * poller may take ends with `worker_ineligible` once its attempts are spent.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { HardwareTier } from '../../core/hardware-tier.js';
import { resolveJurisdiction, isInJurisdiction } from '../../core/jurisdiction.js';
import { createModelRegistry, type ModelRegistry } from '../../core/model-registry.js';
import { takeUpToolRefusal, type ToolPolicy } from '../../core/gates/tool-policy.js';
import type { InferenceStepInput } from '../../core/job-steps.js';
import {
  STEP_MIN_HARDWARE_TIER,
  STEP_TYPE_SPECS,
  STEP_TYPES,
  type ActivityInputOf,
  type StepType,
} from '../../core/step-types/index.js';
import { isWorkerTier, WORKER_TIERS, type WorkerTier } from '../../core/tiers.js';
import { toolMinTiers } from '../../core/tool-registry.js';
import { meetsWorkerTier } from '../../core/worker-trust.js';
import type { StepActivities } from './step-activities.js';

/** What this worker is, as the gateway knows it (the trust tier is the gateway's, from register/heartbeat). */
export interface WorkerSelf {
  models: readonly string[];
  tools: readonly string[];
  hardware_tier: HardwareTier;
  trust_tier: WorkerTier;
  h3_cell: string;
  relay: boolean;
}

export const WORKER_INELIGIBLE = 'worker_ineligible';

type StepInput = ActivityInputOf<StepType>;

/** Why this worker may not take the step, or null when it may. Pure: tested with plain values. */
export function stepIneligibility(
  type: StepType,
  input: StepInput,
  self: WorkerSelf,
  models: ModelRegistry,
  toolPolicy?: ToolPolicy,
): string | null {
  if (self.relay) return 'a relay worker routes jobs and runs no steps';
  let minHardware: number = STEP_MIN_HARDWARE_TIER[type];
  if (type === 'inference') {
    const step = input as InferenceStepInput;
    const model = step.model ?? models.defaultModel;
    if (!self.models.includes(model)) {
      return `model ${model} is not served here (serves: ${self.models.join(', ') || 'none'})`;
    }
    minHardware = Math.max(minHardware, models.get(model)?.min_hardware_tier ?? 1);
    const tools = step.tools ?? [];
    const missing = tools.filter((t) => !self.tools.includes(t));
    if (missing.length > 0) return `tools [${missing.join(', ')}] are not advertised here`;
    for (const [tool, tier] of Object.entries(toolMinTiers(tools))) {
      if (!meetsWorkerTier(self.trust_tier, tier)) {
        return `tool ${tool} needs trust tier ${tier}; this worker is ${self.trust_tier}`;
      }
    }
    // Gate 5 again, at this worker's tier, against the step's cell and this worker's own: a worker never runs a
    // tool any jurisdiction either cell touches forbids (the agent's tier is not known here: such rules refuse).
    // What no worker could pass at the step's cell was refused for good already (stepToolRefusal).
    const cells = [(input as InferenceStepInput).h3_cell, self.h3_cell];
    const refusal = takeUpToolRefusal(toolPolicy, { tools, cells, workerTier: self.trust_tier });
    if (refusal !== null) return refusal.detail;
  }
  if (self.hardware_tier < minHardware) {
    return `a ${type} step needs hardware tier ${minHardware}; this worker is tier ${self.hardware_tier}`;
  }
  // Gate 2's worker constraints, wherever a step's input carries them (today: inference).
  const { min_tier: minTier, jurisdiction } = input as { min_tier?: string | null; jurisdiction?: string | null };
  if (minTier) {
    if (!isWorkerTier(minTier)) return `unknown minimum tier ${JSON.stringify(minTier)}`;
    if (!meetsWorkerTier(self.trust_tier, minTier)) {
      return `the job asks for trust tier ${minTier} or above; this worker is ${self.trust_tier}`;
    }
  }
  if (jurisdiction && !isInJurisdiction(resolveJurisdiction(self.h3_cell), jurisdiction)) {
    return `the job is restricted to jurisdiction ${jurisdiction}; this worker's cell ${self.h3_cell} is outside it`;
  }
  return null;
}

const TOOL_REFUSED = 'tool_not_permitted';

/**
 * Gate 5 at take-up against the step's own cell (docs/security.md "The fifth gate"): a tool the policy forbids
 * there is forbidden on every worker, so the step fails for good (`tool_not_permitted`, not retried) instead of
 * bouncing between pollers. This worker's tier still counts for a `min_worker_tier` rule, which another worker
 * might meet: such a refusal is left to stepIneligibility's retryable check below.
 */
function stepToolRefusal(type: StepType, input: StepInput, policy?: ToolPolicy): string | null {
  if (type !== 'inference') return null;
  const { tools, h3_cell: cell } = input as InferenceStepInput;
  // At the top worker tier: what refuses even there refuses on every worker.
  const refusal = takeUpToolRefusal(policy, { tools, cells: [cell], workerTier: WORKER_TIERS.at(-1) });
  return refusal?.detail ?? null;
}

/**
 * The step activities, each first checking that this worker may take the step (see the file comment). `self`
 * is read on every attempt, so a trust tier the gateway changes applies to the next step.
 */
export function guardSteps(
  steps: StepActivities,
  self: () => WorkerSelf,
  options: { models?: ModelRegistry; toolPolicy?: ToolPolicy } = {},
): StepActivities {
  const models = options.models ?? createModelRegistry();
  const check = (type: StepType, input: StepInput): void => {
    const refused = stepToolRefusal(type, input, options.toolPolicy);
    if (refused !== null) {
      throw ApplicationFailure.nonRetryable(`step "${input.step_id}" of job ${input.job_id}: ${refused}`, TOOL_REFUSED);
    }
    const why = stepIneligibility(type, input, self(), models, options.toolPolicy);
    if (why !== null) {
      throw ApplicationFailure.retryable(`step "${input.step_id}" of job ${input.job_id}: ${why}`, WORKER_INELIGIBLE);
    }
  };
  // Every step type's activity, each checking first (the step types and their activities: core/step-types/).
  const guarded = { ...steps };
  for (const type of STEP_TYPES) {
    const name = STEP_TYPE_SPECS[type].activity;
    const run = steps[name] as (input: StepInput) => ReturnType<StepActivities[typeof name]>;
    (guarded as Record<string, unknown>)[name] = async (input: StepInput) => {
      check(type, input);
      return run(input);
    };
  }
  return guarded;
}
