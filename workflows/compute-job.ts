/**
 * The compound-job workflow: one run per job, workflow id `job-<job_id>`. It routes the steps
 * (a gateway activity reads the worker registry), runs the shared scheduler (core/job-scheduler.ts) with
 * each step as an activity on its task queue, then has the gateway write the `compute/job` proof record,
 * the settlement entry and the stored job. Deterministic: it imports `core/` and activity types only.
 */
import { ApplicationFailure, TimeoutFailure, TimeoutType } from '@temporalio/common';
import { patched, proxyActivities, upsertSearchAttributes, type ActivityOptions } from '@temporalio/workflow';
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
  /** Attempts per step (upstream trouble and lost workers retry; business errors never do). */
  stepAttempts: number;
}

export const DEFAULT_JOB_TIMEOUTS: ComputeJobTimeouts = {
  stepMs: 5 * 60_000,
  heartbeatMs: 20_000,
  queueWaitMs: 60_000,
  stepAttempts: 5,
};

/** The patch that moved the workflow from level-by-level to critical-path scheduling (core/job-scheduler.ts). */
export const CRITICAL_PATH_PATCH = 'critical-path-scheduling';

export interface ComputeJobArgs {
  job: ComputeJobInput;
  /** The gateway's activity queue (core/task-queues.ts gatewayQueue). */
  gatewayQueue: string;
  timeouts?: Partial<ComputeJobTimeouts>;
}

export async function computeJob(args: ComputeJobArgs): Promise<ComputeResponse> {
  const { job } = args;
  const timeouts = { ...DEFAULT_JOB_TIMEOUTS, ...args.timeouts };
  const gateway = proxyActivities<JobActivities>({
    taskQueue: args.gatewayQueue,
    startToCloseTimeout: '30 s',
    retry: { initialInterval: '1 s', backoffCoefficient: 2, maximumInterval: '30 s', maximumAttempts: 10 },
  });

  let result: ScheduleResult;
  let routes: Record<string, StepRoute> | undefined;
  try {
    routes = await gateway.routeJob(job);
  } catch (error) {
    result = notStarted(job.steps.map(toScheduledStep), { step_id: failedStepOf(error), ...describeStepError(error) });
  }
  if (routes) {
    const onQueue = stepProxies(args.gatewayQueue, timeouts);
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
        const activities = onQueue(routes[step.id]!.queue);
        const run = await (
          activities[STEP_ACTIVITY[type]] as (i: typeof input) => ReturnType<StepActivities['inferenceStep']>
        )(input);
        const { fallback_reason: fallback, relay_pk } = routes[step.id]!;
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
  const response = await gateway.finishJob(job, result!);
  upsertSearchAttributes([{ key: JOB_STATUS, value: response.status }]);
  return response;
}

/** One activity proxy per queue: steps on the gateway's own queue need no queue-wait limit. */
function stepProxies(gatewayQueue: string, timeouts: ComputeJobTimeouts) {
  const proxies = new Map<string, StepActivities>();
  return (queue: string): StepActivities => {
    let proxy = proxies.get(queue);
    if (!proxy) {
      const options: ActivityOptions = {
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
      if (queue !== gatewayQueue) options.scheduleToStartTimeout = timeouts.queueWaitMs;
      proxy = proxyActivities<StepActivities>(options);
      proxies.set(queue, proxy);
    }
    return proxy;
  };
}

/** The step a routing failure names (routeJob puts its id in the failure's details). */
function failedStepOf(error: unknown): string | null {
  for (let cause: unknown = error; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof ApplicationFailure && typeof cause.details?.[0] === 'string') return cause.details[0];
  }
  return null;
}

/** A step nobody (eligible) took from its queue means its workers went away: the spec's no_workers. */
function describeWorkflowStepError(error: unknown): StepError {
  for (let cause: unknown = error; cause instanceof Error; cause = (cause as { cause?: unknown }).cause) {
    if (cause instanceof TimeoutFailure && cause.timeoutType === TimeoutType.SCHEDULE_TO_START) {
      return { code: 'no_workers', detail: 'no worker took the step from its queue in time; retry later' };
    }
  }
  const described = describeStepError(error);
  // Every attempt landed on a worker that may not take the step (activities/compute/worker-guard.ts).
  if (described.code === 'worker_ineligible') {
    return { code: 'no_workers', detail: `no eligible worker took the step: ${described.detail}; retry later` };
  }
  return described;
}
