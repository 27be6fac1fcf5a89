/**
 * The JobRunner (docs/architecture.md): what runs a claimed compound job. `embedded` (the default)
 * runs the shared scheduler in this process, calling the step activities directly; `temporal`
 * (api/temporal-job-runner.ts) starts the `computeJob` workflow. Both answer with the finished job or,
 * after `waitMs`, ServiceError `job_timeout`: the job keeps running and `GET /v1/compute/:jobId` finds it.
 */
import { ApplicationFailure } from '@temporalio/common';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobActivities } from '../activities/compute/job-activities.js';
import type { StepActivities } from '../activities/compute/step-activities.js';
import { ServiceError } from '../core/errors.js';
import type { ComputeResponse } from '../core/job-record.js';
import { notStarted, runSchedule } from '../core/job-scheduler.js';
import { STEP_ACTIVITY, stepActivityInput, toScheduledStep, type ComputeJobInput } from '../core/job-steps.js';
import { describeStepError } from '../core/step-error.js';
import type { JobStore } from '../store/job-store.js';
import type { RateLimitStore } from '../store/types.js';

export interface JobRunner {
  readonly mode: 'embedded' | 'temporal';
  /** Runs a job this caller claimed (or joins this process's run of it); resolves with the finished job. */
  run(job: ComputeJobInput): Promise<ComputeResponse>;
  /**
   * Waits for a job whose claim another caller holds, perhaps in another process: its answer once stored, or
   * job_timeout after the wait. Never starts a run of its own (docs/architecture.md §3).
   */
  join(job: ComputeJobInput): Promise<ComputeResponse>;
  close(): Promise<void>;
}

export interface EmbeddedRunnerDeps {
  steps: StepActivities;
  jobs: Pick<JobActivities, 'finishJob'>;
  /** Where `join` reads a job another process runs (the store the claims are made in). */
  store: Pick<JobStore, 'get'>;
  /** How long `run` waits before answering job_timeout (the job goes on). */
  waitMs: number;
  /** The longest pause between two reads of a joined job (they start at 50 ms and double); default 1 s. */
  joinPollMs?: number;
  /**
   * Where runs keep their leases: the store the processes sharing the job store share (the rate-limit store).
   * Without it, a job left `running` by a process that died stays running (its replays answer job_timeout).
   */
  leases?: Pick<RateLimitStore, 'increment' | 'peek'>;
  /** The lease's length (default JOB_LEASE_MS); a run renews it three times a lease. */
  leaseMs?: number;
  /** The wall clock the lease windows and the job's updated_at are read on; default Date.now. */
  clock?: () => number;
  /** Attempts of a step whose failure is retryable (upstream trouble), as Temporal's retry policy would. */
  stepAttempts?: number;
  retryDelayMs?: number;
}

/** How long a run may go without renewing its lease before a replay elsewhere takes the job over. */
export const JOB_LEASE_MS = 15_000;

export function createEmbeddedJobRunner(deps: EmbeddedRunnerDeps): JobRunner {
  const attempts = deps.stepAttempts ?? 3;
  const leaseMs = deps.leaseMs ?? JOB_LEASE_MS;
  const clock = deps.clock ?? Date.now;
  const windowOf = (ms: number) => Math.floor(ms / leaseMs) * leaseMs;
  const retryDelayMs = deps.retryDelayMs ?? 250;
  const joinPollMs = deps.joinPollMs ?? 1000;
  // A replayed request while its job runs in this process joins the run instead of starting another.
  const inFlight = new Map<string, Promise<ComputeResponse>>();
  // Ends the joins that read the store when the runner closes (their requests then answer job_timeout).
  const closing = new AbortController();

  async function attempt<T>(run: () => Promise<T>): Promise<T> {
    for (let n = 1; ; n++) {
      try {
        return await run();
      } catch (error) {
        const retryable = error instanceof ApplicationFailure ? !error.nonRetryable : !(error instanceof ServiceError);
        if (!retryable || n >= attempts) throw error;
        await sleep(retryDelayMs * 2 ** (n - 1));
      }
    }
  }

  async function execute(job: ComputeJobInput): Promise<ComputeResponse> {
    const specs = new Map(job.steps.map((s) => [s.id, s]));
    const steps = job.steps.map(toScheduledStep);
    let result;
    try {
      result = await runSchedule(
        { steps, plan: job.plan, budgetCredits: job.budget_credits, reservedCredits: job.proof_credits },
        (step, dependency) => {
          const { type, input } = stepActivityInput(job, specs.get(step.id)!, dependency);
          const activity = deps.steps[STEP_ACTIVITY[type]] as (
            i: typeof input,
          ) => ReturnType<StepActivities['inferenceStep']>;
          return attempt(() => activity(input));
        },
        describeStepError,
      );
    } catch (error) {
      // Only a bug gets here (the scheduler reports step failures); still record the job as failed.
      result = notStarted(steps, { step_id: null, ...describeStepError(error) });
    }
    return attempt(() => deps.jobs.finishJob(job, result));
  }

  /**
   * A run's lease: a count in the shared store per lease window, renewed three times a lease while the run goes on,
   * so a process that died (or a gateway restarted mid-job) leaves windows without one. Renewal failures are
   * ignored: the worst a missed renewal does is let a replay run the job a second time, which its activities
   * absorb (record and ledger ids derive from the job).
   */
  function renewing(jobId: string): () => void {
    const leases = deps.leases;
    if (leases === undefined) return () => undefined;
    const renew = () => void leases.increment(`job-run:${jobId}`, windowOf(clock()), leaseMs).catch(() => undefined);
    renew();
    const timer = setInterval(renew, leaseMs / 3);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * Whether a running job's run has lapsed: claimed (or last moved) over two leases ago, and no renewal in this
   * lease window or the last. Of the replays that find it so, the one whose take-over count is 1 runs it.
   */
  async function takeOver(jobId: string, updatedAt: string): Promise<boolean> {
    const leases = deps.leases;
    if (leases === undefined) return false;
    const now = clock();
    if (!(Date.parse(updatedAt) < now - 2 * leaseMs)) return false;
    const window = windowOf(now);
    const renewals = await Promise.all([
      leases.peek(`job-run:${jobId}`, window),
      leases.peek(`job-run:${jobId}`, window - leaseMs),
    ]);
    if (renewals.some((n) => n > 0)) return false;
    return (await leases.increment(`job-takeover:${jobId}`, window, leaseMs)) === 1;
  }

  function start(job: ComputeJobInput): Promise<ComputeResponse> {
    let running = inFlight.get(job.job_id);
    if (!running) {
      const release = renewing(job.job_id);
      running = execute(job).finally(() => {
        release();
        inFlight.delete(job.job_id);
      });
      inFlight.set(job.job_id, running);
    }
    return running;
  }

  /**
   * A job claimed elsewhere: another process sharing the job store runs it (WEB_CONCURRENCY, or several gateways
   * on one MongoDB), and its in-flight map is not this one's. Its answer is the stored job once final, so every
   * request of the job answers the same body; the store is read at 50 ms, then at doubling pauses up to
   * `joinPollMs`. A run whose lease lapsed (its process died) is taken over and run here.
   */
  async function storedOutcome(job: ComputeJobInput): Promise<ComputeResponse> {
    const jobId = job.job_id;
    const deadline = performance.now() + deps.waitMs;
    for (let pause = 50; !closing.signal.aborted; pause = Math.min(pause * 2, joinPollMs)) {
      const local = inFlight.get(jobId);
      if (local) return withinWait(local, jobId, Math.max(1, deadline - performance.now()));
      const stored = await deps.store.get(jobId);
      if (stored !== null && stored.status !== 'running' && stored.response) return stored.response;
      if (stored?.status === 'running' && (await takeOver(jobId, stored.updated_at))) {
        return withinWait(start(job), jobId, Math.max(1, deadline - performance.now()));
      }
      const left = deadline - performance.now();
      if (left <= 0) break;
      await sleep(Math.min(pause, left), undefined, { signal: closing.signal }).catch(() => undefined);
    }
    throw jobTimeout(jobId, deps.waitMs);
  }

  return {
    mode: 'embedded',
    run(job) {
      return withinWait(start(job), job.job_id, deps.waitMs);
    },
    join(job) {
      const running = inFlight.get(job.job_id);
      return running ? withinWait(running, job.job_id, deps.waitMs) : storedOutcome(job);
    },
    async close() {
      closing.abort();
      await Promise.allSettled([...inFlight.values()]);
    },
  };
}

/** `running`, or job_timeout after `waitMs` (the job itself is not cancelled). */
export async function withinWait<T>(running: Promise<T>, jobId: string, waitMs: number): Promise<T> {
  running.catch(() => undefined); // a run that fails after the wait ended is the store's to record
  const timer = new AbortController();
  const timeout = sleep(waitMs, undefined, { signal: timer.signal }).then(
    () => {
      throw jobTimeout(jobId, waitMs);
    },
    () => undefined as never,
  );
  try {
    return await Promise.race([running, timeout]);
  } finally {
    timer.abort();
  }
}

export const jobTimeout = (jobId: string, waitMs: number): ServiceError =>
  new ServiceError(
    'job_timeout',
    `job ${jobId} did not complete within ${Math.round(waitMs / 1000)} s; it is still running: GET /v1/compute/${jobId}`,
  );
