/**
 * The compound-job scheduler (docs/protocol.md §2.2): runs a validated plan on its critical path, each step
 * starting as soon as every step it depends on has completed, fed their outputs in the order it lists them.
 * Pure apart from the injected `runStep`, so the Temporal workflow (where `runStep` is an activity on a task
 * queue) and the embedded runner (where it is a function call) share it. It must stay deterministic: no
 * clock, no randomness, no timers; it only reacts to step completions, and after each one scans the steps
 * in request order, so the same order of completions (what Temporal's history replays) starts the same
 * steps in the same order.
 *
 * Budget (docs/protocol.md §2.2 rule 3, 2.1 `budget_credits`): the job's proof is reserved first; a step
 * starts only when its worst-case estimate fits what is left after the estimates of the steps still
 * running. A ready step that does not fit waits while any step runs (its actual cost may free budget), and
 * holds back the ready steps after it in request order; when nothing runs and it still does not fit, it is
 * refused and the job fails with `budget_exceeded`, charging only what ran. Estimates can fall short of
 * actual costs (a runtime's real token count, tool rounds), so a completed step is charged, in completion
 * order, at most what was left: the requester never pays more than `budget_credits`.
 *
 * Failure: once a step fails (or is refused for budget), no further step starts; the steps already running
 * finish (their records and charges stand, and they may fail too); every step never started is `skipped`.
 * The job's error ("the first failure") is that of the failed step that comes first in request order
 * among all the steps that failed, whatever order they failed in. A step whose output is not canonical JSON (a
 * non-finite number…) has failed too (`invalid_step_output`): its output could not be hashed into the job's proof.
 *
 * Re-runs: a step that carries `done` (it completed in an earlier run of the same job, which then failed
 * for a transient reason) is not run again: its run is reused as it was, charged again against this run's
 * budget (a job has one settlement), and fed to its dependents.
 *
 * `barrier: true` runs the plan's levels one after another instead (each level waits for the whole level
 * before it): the scheduler of workflow runs started before critical-path scheduling, kept so their
 * histories replay (workflows/compute-job.ts).
 */
import { canonicalJson, CanonicalJsonError } from './canonical-json.js';
import { dependenciesOf, type JobPlan, type StepType } from './job-plan.js';
import type { StepResult } from './job-record.js';
import { fromCreditUnits, toCreditUnits } from './credits.js';

export interface ScheduledStep {
  id: string;
  type: StepType;
  depends_on?: string | readonly string[] | undefined;
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

/** Runs one step, fed the outputs of the steps it depends on in the order it lists them (none: empty). */
export type RunStep = (step: ScheduledStep, dependencyOutputs: Record<string, unknown>[]) => Promise<StepRun>;
/** Turns whatever `runStep` threw into a code and detail (the caller knows its failure types). */
export type DescribeError = (error: unknown) => StepError;

export interface ScheduleOptions {
  /** Level by level, as workflow runs started before critical-path scheduling did. */
  barrier?: boolean;
}

export async function runSchedule(
  input: ScheduleInput,
  runStep: RunStep,
  describe: DescribeError,
  options: ScheduleOptions = {},
): Promise<ScheduleResult> {
  if (options.barrier) return runLevels(input, runStep, describe);
  const results = new Map<string, StepResult>();
  const book = budgetBook(input, results);
  /** Failures and the budget refusal, by step id; the job's error is the first of them in request order. */
  const failures = new Map<string, StepError>();
  const started = new Set<string>();
  let stopped = book.proofError !== null;
  let reserved = 0;
  let running = 0;
  let bug: { thrown: unknown } | undefined;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));

  const outputsOf = (step: ScheduledStep): Record<string, unknown>[] | null => {
    const outputs: Record<string, unknown>[] = [];
    for (const id of dependenciesOf(step)) {
      const result = results.get(id);
      if (result?.status !== 'complete') return null;
      outputs.push(result.output);
    }
    return outputs;
  };

  const start = (step: ScheduledStep, outputs: Record<string, unknown>[]): void => {
    const estimate = toCreditUnits(step.estimate);
    reserved += estimate;
    running++;
    runStep(step, outputs)
      .then(
        (run) => {
          reserved -= estimate;
          const unhashable = outputRefusal(run);
          if (unhashable === null) {
            book.charge(step, run);
            return;
          }
          failures.set(step.id, unhashable);
          results.set(step.id, { ...skipped(step, unhashable.code, unhashable.detail), status: 'failed' });
          stopped = true;
        },
        (thrown: unknown) => {
          reserved -= estimate;
          const failure = describe(thrown);
          failures.set(step.id, failure);
          results.set(step.id, { ...skipped(step, failure.code, failure.detail), status: 'failed' });
          stopped = true;
        },
      )
      .catch((thrown: unknown) => {
        // Only a bug in `describe` gets here: stop, and throw it once the running steps are done.
        bug ??= { thrown };
        stopped = true;
      })
      .finally(() => {
        running--;
        pump();
      });
  };

  // Starts every ready step in request order; a reused (`done`) step completes at once and may make
  // others ready, hence the rescan.
  const pump = (): void => {
    for (let progress = true; progress && !stopped;) {
      progress = false;
      for (const step of input.steps) {
        if (started.has(step.id)) continue;
        const outputs = outputsOf(step);
        if (outputs === null) continue;
        if (step.done) {
          started.add(step.id);
          book.charge(step, step.done);
          progress = true;
          continue;
        }
        if (reserved + toCreditUnits(step.estimate) > book.left()) {
          if (running > 0) break; // waits for a running step to free budget; later steps wait behind it
          const detail =
            `step "${step.id}" may cost up to ${step.estimate} credits and ${fromCreditUnits(Math.max(0, book.left()))} ` +
            `of budget_credits ${input.budgetCredits} are left; it was not started`;
          failures.set(step.id, { code: 'budget_exceeded', detail });
          results.set(step.id, skipped(step, 'budget_exceeded', detail));
          stopped = true;
          break;
        }
        started.add(step.id);
        start(step, outputs);
      }
    }
    if (running === 0) finish();
  };

  pump();
  await finished;
  if (bug) throw bug.thrown;
  const first = input.steps.find((step) => failures.has(step.id));
  const error = book.proofError ?? (first ? { step_id: first.id, ...failures.get(first.id)! } : null);
  return book.result(error);
}

/** Credits left and charged, shared by both schedules; `results` receives each completed step. */
function budgetBook(input: ScheduleInput, results: Map<string, StepResult>) {
  let left = toCreditUnits(input.budgetCredits) - toCreditUnits(input.reservedCredits);
  let charged = 0;
  const proofError: ScheduleResult['error'] =
    left < 0
      ? {
          step_id: null,
          code: 'budget_exceeded',
          detail: `budget_credits ${input.budgetCredits} does not cover the job's proof (${input.reservedCredits} credits)`,
        }
      : null;
  return {
    proofError,
    left: () => left,
    // Charged in completion order against what is left; capped so the budget is never exceeded.
    charge(step: ScheduledStep, run: StepRun): void {
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
    },
    /** Request order; a step never started is skipped, naming what stopped the job. */
    result(error: ScheduleResult['error']): ScheduleResult {
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
    },
  };
}

/** The level-by-level schedule (`barrier`): unchanged, so histories recorded with it replay. */
async function runLevels(input: ScheduleInput, runStep: RunStep, describe: DescribeError): Promise<ScheduleResult> {
  const byId = new Map(input.steps.map((step) => [step.id, step]));
  const results = new Map<string, StepResult>();
  const book = budgetBook(input, results);
  let error: ScheduleResult['error'] = book.proofError;

  for (const level of input.plan.levels) {
    if (error) break;
    // Admit the level's steps in request order until one does not fit; it and the rest are not started.
    let admitted = 0;
    const running: Promise<void>[] = [];
    for (const id of level) {
      const step = byId.get(id)!;
      if (step.done) {
        book.charge(step, step.done);
        continue;
      }
      const estimate = toCreditUnits(step.estimate);
      // Once one step of the level is refused, the rest are not started either: the job has failed.
      if (error || admitted + estimate > book.left()) {
        error ??= {
          step_id: id,
          code: 'budget_exceeded',
          detail:
            `step "${id}" may cost up to ${step.estimate} credits and ${fromCreditUnits(Math.max(0, book.left() - admitted))} ` +
            `of budget_credits ${input.budgetCredits} are left; it was not started`,
        };
        results.set(id, skipped(step, error.code, error.detail));
        continue;
      }
      admitted += estimate;
      const dependencies = dependenciesOf(step).map((dep) => results.get(dep)!.output);
      running.push(
        runStep(step, dependencies).then(
          (run) => {
            const unhashable = outputRefusal(run);
            if (unhashable === null) book.charge(step, run);
            else results.set(id, { ...skipped(step, unhashable.code, unhashable.detail), status: 'failed' });
          },
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
  return book.result(error);
}

/**
 * Why a step's run cannot complete the step: its output is not canonical JSON (RFC 8785 has no non-finite numbers),
 * so it has no output hash and the job's proof record could not be written; null when it can.
 */
function outputRefusal(run: StepRun): StepError | null {
  try {
    canonicalJson(run.output);
    return null;
  } catch (error) {
    if (!(error instanceof CanonicalJsonError)) throw error;
    return {
      code: 'invalid_step_output',
      detail: `the step's output cannot be hashed into the job's proof: ${error.message}`,
    };
  }
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
