/**
 * The compound-job workflow: one run per job, workflow id `job-<job_id>`. It routes the steps
 * (a gateway local activity reads the worker registry), runs the shared scheduler (core/job-scheduler.ts)
 * with each step as an activity on its task queue, then has the gateway write the `compute/job` proof record,
 * the settlement entry and the stored job; the answer goes to the `jobResult` update, and a failed job fails
 * the run. Deterministic: it imports `core/` and activity types only.
 */
import { ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  defineUpdate,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { JobActivities, StepRoute } from '../activities/compute/job-activities.js';
import type { StepActivities } from '../activities/compute/step-activities.js';
import type { ComputeResponse } from '../core/job-record.js';
import { notStarted, runSchedule, type ScheduleResult, type StepError } from '../core/job-scheduler.js';
import { STEP_ACTIVITY, stepActivityInput, toScheduledStep, type ComputeJobInput } from '../core/job-steps.js';
import { describeStepError } from '../core/step-error.js';
import { JOB_STATUS } from './search-attributes.js';

export interface ComputeJobTimeouts {
  /** Longest one attempt of a step may run. */
  stepMs: number;
  /** A step attempt that has not heartbeated for this long is retried (its worker is presumed dead). */
  heartbeatMs: number;
  /** How long a step waits on a swarm queue for a worker to take it before the job fails with no_workers. */
  queueWaitMs: number;
  /**
   * How long a step routed with a fallback (StepRoute.unclaimed) waits on its cell's queue before it is re-routed
   * there: a worker seen polling moments ago may have died since, and nobody waits for the dead.
   */
  claimMs: number;
  /** Attempts per step (upstream trouble and lost workers retry; business errors never do). */
  stepAttempts: number;
}

export const DEFAULT_JOB_TIMEOUTS: ComputeJobTimeouts = {
  stepMs: 5 * 60_000,
  heartbeatMs: 20_000,
  queueWaitMs: 60_000,
  claimMs: 4_000,
  stepAttempts: 5,
};

/** The patch that moved the workflow from level-by-level to critical-path scheduling (core/job-scheduler.ts). */
export const CRITICAL_PATH_PATCH = 'critical-path-scheduling';

export interface ComputeJobArgs {
  job: ComputeJobInput;
  /** The gateway's activity queue (core/task-queues.ts gatewayQueue). */
  gatewayQueue: string;
  /** The backbone queue (core/task-queues.ts backboneQueue): like the gateway queue, served by the gateway. */
  backboneQueue?: string;
  timeouts?: Partial<ComputeJobTimeouts>;
  /**
   * The steps' routes, when the gateway that starts the run has already routed them (api/temporal-job-runner.ts):
   * the run then skips its routeJob local activity. Part of the run's input, so a replay sees the same.
   */
  routes?: Record<string, StepRoute>;
}

/**
 * The finished job (the ComputeResponse), for whoever starts or joins the run: the gateway sends it with the
 * start (update-with-start) and learns the answer the moment finishJob returns, without polling the history.
 */
export const jobResultUpdate = defineUpdate<ComputeResponse>('jobResult');

/**
 * Runs from this version on: routeJob and finishJob run as local activities in the gateway process that runs
 * the workflow (no task-queue round trip), and a failed job fails the workflow. Runs started before it replay
 * the old commands (remote activities on the gateway queue, a completed workflow).
 */
export const LOCAL_GATEWAY_PATCH = 'gateway-local-activities';

/**
 * Runs from this version on: a step routed to the gateway itself (its gateway or backbone queue) runs as a local
 * activity of the gateway that runs the workflow, with no task-queue round trip (docs/architecture.md).
 */
export const LOCAL_STEPS_PATCH = 'gateway-steps-local';

export async function computeJob(args: ComputeJobArgs): Promise<ComputeResponse> {
  const { job } = args;
  const timeouts = { ...DEFAULT_JOB_TIMEOUTS, ...args.timeouts };
  const answer: { response?: ComputeResponse } = {};
  setHandler(jobResultUpdate, async () => {
    await condition(() => answer.response !== undefined);
    return answer.response!;
  });
  const local = patched(LOCAL_GATEWAY_PATCH);
  const gatewayRetry = { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s', maximumAttempts: 10 };
  const gateway = local
    ? proxyLocalActivities<JobActivities>({ startToCloseTimeout: '30 s', retry: gatewayRetry })
    : proxyActivities<JobActivities>({
        taskQueue: args.gatewayQueue,
        startToCloseTimeout: '30 s',
        retry: gatewayRetry,
      });

  let result: ScheduleResult;
  let routes: Record<string, StepRoute> | undefined;
  try {
    routes = args.routes ?? (await gateway.routeJob(job));
  } catch (error) {
    result = notStarted(job.steps.map(toScheduledStep), { step_id: failedStepOf(error), ...describeStepError(error) });
  }
  if (routes) {
    const onQueue = stepProxies(args.gatewayQueue, timeouts);
    const ownQueues = new Set([args.gatewayQueue, ...(args.backboneQueue ? [args.backboneQueue] : [])]);
    const localSteps = patched(LOCAL_STEPS_PATCH);
    const specs = new Map(job.steps.map((s) => [s.id, s]));
    result = await runSchedule(
      {
        steps: job.steps.map(toScheduledStep),
        plan: job.plan,
        budgetCredits: job.budget_credits,
        reservedCredits: job.proof_credits,
      },
      async (step, dependency) => {
        const { type, input } = stepActivityInput(job, specs.get(step.id)!, dependency);
        const runOn = (queue: string, claimed: boolean) =>
          // The Web UI shows the summary on the step's activity: an operator reads the run without decoding payloads.
          (
            (localSteps && ownQueues.has(queue)
              ? localStepProxy(timeouts, `step ${step.id}: ${type} on the gateway (${queue})`)
              : onQueue(queue, claimed, `step ${step.id}: ${type} on ${queue}`))[STEP_ACTIVITY[type]] as (
              i: typeof input,
            ) => ReturnType<StepActivities['inferenceStep']>
          )(input);
        let route: Omit<StepRoute, 'unclaimed'> = routes[step.id]!;
        const { unclaimed } = routes[step.id]!;
        let run: Awaited<ReturnType<typeof runOn>>;
        try {
          run = await runOn(route.queue, unclaimed !== undefined);
        } catch (error) {
          // No worker took it from the cell's queue in the claim window: re-route (docs/operations.md).
          if (!unclaimed || !isScheduleToStart(error)) throw error;
          if ('no_workers' in unclaimed) {
            throw ApplicationFailure.create({ message: unclaimed.no_workers, type: 'no_workers', nonRetryable: true });
          }
          route = unclaimed;
          run = await runOn(route.queue, false);
        }
        const { fallback_reason: fallback, relay_pk } = route;
        return {
          ...run,
          ...(fallback ? { output: { ...run.output, fallback_reason: fallback } } : {}),
          ...(relay_pk ? { relay_pk } : {}),
        };
      },
      describeWorkflowStepError,
      // Runs started before critical-path scheduling replay their level-by-level commands.
      { barrier: !patched(CRITICAL_PATH_PATCH) },
    );
  }
  const response = (answer.response = await gateway.finishJob(job, result!));
  upsertSearchAttributes([{ key: JOB_STATUS, value: response.status }]);
  if (local) {
    await condition(allHandlersFinished); // the answer reaches the gateway before the run closes
    if (response.status === 'failed') throw jobFailure(response);
  }
  return response;
}

/**
 * A failed job as the workflow's failure (status Failed in Temporal): type = the error code, message = the
 * step and the detail, non-retryable; the first detail is the ComputeResponse, as stored.
 */
export function jobFailure(response: ComputeResponse): ApplicationFailure {
  const error = response.error;
  const detail = error?.detail ?? 'no detail';
  const named = error?.step_id ? `step "${error.step_id}"` : '';
  // A routing failure's detail names its step already.
  const where = named && !detail.startsWith(named) ? `${named}: ` : '';
  return ApplicationFailure.create({
    type: error?.code ?? 'job_failed',
    message: `job ${response.job_id} failed: ${where}${detail}`,
    nonRetryable: true,
    details: [response],
  });
}

/** A step the gateway runs itself, as a local activity: the same time limit and retries as on a queue. */
function localStepProxy(timeouts: ComputeJobTimeouts, summary: string): StepActivities {
  return proxyLocalActivities<StepActivities>({
    startToCloseTimeout: timeouts.stepMs,
    retry: {
      initialInterval: '1 s',
      backoffCoefficient: 2,
      maximumInterval: '20 s',
      maximumAttempts: timeouts.stepAttempts,
    },
    summary,
  });
}

/**
 * Activity options per queue: steps on the gateway's own queue need no queue-wait limit; a step with a
 * fallback (`claimed`) waits only the claim window.
 */
function stepProxies(gatewayQueue: string, timeouts: ComputeJobTimeouts) {
  const proxies = new Map<string, ActivityOptions>();
  return (queue: string, claimed: boolean, summary: string): StepActivities => {
    const key = `${claimed ? 'claim' : 'wait'}:${queue}`;
    let options = proxies.get(key);
    if (!options) {
      options = {
        taskQueue: queue,
        startToCloseTimeout: timeouts.stepMs,
        heartbeatTimeout: timeouts.heartbeatMs,
        retry: {
          initialInterval: '1 s',
          backoffCoefficient: 2,
          maximumInterval: '20 s',
          maximumAttempts: timeouts.stepAttempts,
        },
      };
      if (queue !== gatewayQueue) options.scheduleToStartTimeout = claimed ? timeouts.claimMs : timeouts.queueWaitMs;
      proxies.set(key, options);
    }
    return proxyActivities<StepActivities>({ ...options, summary });
  };
}

/** The step a routing failure names (routeJob puts its id in the failure's details). */
function failedStepOf(error: unknown): string | null {
  for (let cause: unknown = error; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof ApplicationFailure && typeof cause.details?.[0] === 'string') return cause.details[0];
  }
  return null;
}

/** Nobody took the step from its queue in time (Temporal's schedule-to-start timeout). */
function isScheduleToStart(error: unknown): boolean {
  for (let cause: unknown = error; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof TimeoutFailure && cause.timeoutType === TimeoutType.SCHEDULE_TO_START) return true;
  }
  return false;
}

/** A step nobody (eligible) took from its queue means its workers went away: the spec's no_workers. */
function describeWorkflowStepError(error: unknown): StepError {
  if (isScheduleToStart(error)) {
    return { code: 'no_workers', detail: 'no worker took the step from its queue in time; retry later' };
  }
  const described = describeStepError(error);
  // Every attempt landed on a worker that may not take the step (activities/compute/worker-guard.ts).
  if (described.code === 'worker_ineligible') {
    return { code: 'no_workers', detail: `no eligible worker took the step: ${described.detail}; retry later` };
  }
  return described;
}
