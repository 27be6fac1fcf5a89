/**
 * The compound-job scheduler (docs/protocol.md §2.2): runs a validated plan level by level, the steps of one
 * level in parallel, each fed its dependency's output. Pure apart from the injected `runStep`, so the
 * Temporal workflow (where `runStep` is an activity on a task queue) and the embedded runner (where it is
 * a function call) share it; it must stay deterministic (no clock, no randomness, request order for ties).
 *
 * Budget (docs/protocol.md §2.2 rule 3, 2.1 `budget_credits`): the job's proof is reserved first; a step starts only
 * when its worst-case estimate fits what is left, so a step that would exceed the budget is not started and
 * the job fails with `budget_exceeded`, charging only what ran. Estimates can fall short of actual costs (a
 * runtime's real token count, tool rounds), so a completed step is charged at most what was left: the
 * requester never pays more than `budget_credits`.
 *
 * Failure: the first failed step (in request order among its level) stops the job; the other steps of
 * that level finish (they were already running, and their records and charges stand), later levels are
 * `skipped`.
 *
 * Re-runs: a step that carries `done` (it completed in an earlier run of the same job, which then failed
 * for a transient reason) is not run again: its run is reused as it was, charged again against this run's
 * budget (a job has one settlement), and fed to its dependents.
 */
import type { JobPlan, StepType } from './job-plan.js';
import type { StepResult } from './job-record.js';
import { fromCreditUnits, toCreditUnits } from './credits.js';

export interface ScheduledStep {
  id: string;
  type: StepType;
  depends_on?: string | undefined;
  /** Worst-case credits (core/pricing estimateStepCost). */
  estimate: number;
  /** This step's completed run from an earlier run of the job: reused instead of running the step again. */
  done?: StepRun | undefined;
}

/** What a step's activity reports. */
export interface StepRun {
  output: Record<string, unknown>;
  cost: number;
  worker_pk: string | null;
  record_id: string | null;
  latency_ms: number;
  /** The relay that routed the step (set by the workflow from its route). */
  relay_pk?: string | undefined;
}

export interface StepError {
  code: string;
  detail: string;
}

export interface ScheduleInput {
  /** Request order. */
  steps: readonly ScheduledStep[];
  plan: JobPlan;
  budgetCredits: number;
  /** Reserved before any step: the job's Merkle proof. */
  reservedCredits: number;
}

export interface ScheduleResult {
  status: 'complete' | 'failed';
  /** Request order. */
  steps: StepResult[];
  /** Credits charged for the steps (reserved credits not included). */
  charged: number;
  error: (StepError & { step_id: string | null }) | null;
}

export type RunStep = (step: ScheduledStep, dependencyOutput: Record<string, unknown> | undefined) => Promise<StepRun>;
/** Turns whatever `runStep` threw into a code and detail (the caller knows its failure types). */
export type DescribeError = (error: unknown) => StepError;

export async function runSchedule(
  input: ScheduleInput,
  runStep: RunStep,
  describe: DescribeError,
): Promise<ScheduleResult> {
  const byId = new Map(input.steps.map((step) => [step.id, step]));
  const results = new Map<string, StepResult>();
  let left = toCreditUnits(input.budgetCredits) - toCreditUnits(input.reservedCredits);
  let charged = 0;
  let error: ScheduleResult['error'] = null;
  // Charged in completion order against what is left; capped so the budget is never exceeded.
  const charge = (step: ScheduledStep, run: StepRun): void => {
    const units = Math.min(toCreditUnits(run.cost), Math.max(0, left));
    left -= units;
    charged += units;
    results.set(step.id, {
      id: step.id,
      type: step.type,
      status: 'complete',
      output: run.output,
      latency_ms: run.latency_ms,
      worker_pk: run.worker_pk,
      cost: fromCreditUnits(units),
      record_id: run.record_id,
      ...(run.relay_pk ? { relay_pk: run.relay_pk } : {}),
    });
  };
  if (left < 0) {
    error = {
      step_id: null,
      code: 'budget_exceeded',
      detail: `budget_credits ${input.budgetCredits} does not cover the job's proof (${input.reservedCredits} credits)`,
    };
  }

  for (const level of input.plan.levels) {
    if (error) break;
    // Admit the level's steps in request order until one does not fit; it and the rest are not started.
    let admitted = 0;
    const running: Promise<void>[] = [];
    for (const id of level) {
      const step = byId.get(id)!;
      if (step.done) {
        charge(step, step.done);
        continue;
      }
      const estimate = toCreditUnits(step.estimate);
      // Once one step of the level is refused, the rest are not started either: the job has failed.
      if (error || admitted + estimate > left) {
        error ??= {
          step_id: id,
          code: 'budget_exceeded',
          detail:
            `step "${id}" may cost up to ${step.estimate} credits and ${fromCreditUnits(Math.max(0, left - admitted))} ` +
            `of budget_credits ${input.budgetCredits} are left; it was not started`,
        };
        results.set(id, skipped(step, error.code, error.detail));
        continue;
      }
      admitted += estimate;
      const dependency = step.depends_on === undefined ? undefined : results.get(step.depends_on)?.output;
      running.push(
        runStep(step, dependency).then(
          (run) => charge(step, run),
          (thrown: unknown) => {
            const failure = describe(thrown);
            results.set(id, { ...skipped(step, failure.code, failure.detail), status: 'failed' });
          },
        ),
      );
    }
    await Promise.all(running);
    // The first failure in request order names the job's error (a budget stop found above stays first).
    if (!error) {
      const failed = level.map((id) => results.get(id)!).find((result) => result.status === 'failed');
      if (failed) error = { step_id: failed.id, code: failed.error!.code, detail: failed.error!.detail };
    }
  }

  const steps = input.steps.map(
    (step) =>
      results.get(step.id) ??
      skipped(
        step,
        error!.code,
        `not started: ${error!.step_id ? `step "${error!.step_id}"` : 'the budget'} stopped the job`,
      ),
  );
  return { status: error ? 'failed' : 'complete', steps, charged: fromCreditUnits(charged), error };
}

/** A job stopped before any step ran (e.g. routing found no worker): every step skipped, nothing charged. */
export function notStarted(
  steps: readonly ScheduledStep[],
  error: StepError & { step_id: string | null },
): ScheduleResult {
  return { status: 'failed', charged: 0, error, steps: steps.map((s) => skipped(s, error.code, error.detail)) };
}

function skipped(step: ScheduledStep, code: string, detail: string): StepResult {
  return {
    id: step.id,
    type: step.type,
    status: 'skipped',
    output: {},
    latency_ms: 0,
    worker_pk: null,
    cost: 0,
    record_id: null,
    error: { code, detail },
  };
}
