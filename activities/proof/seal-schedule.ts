/**
 * The Temporal Schedule that seals the central store's epochs: every hour, a few minutes after the
 * epoch boundary (so the seal grace has passed), it starts a `sealEpoch` workflow (workflows/seal-epoch.ts) on
 * the task queue of the process that registered the seal activities (seal-activities.ts).
 *
 * `ensureSealSchedule` runs at every gateway start and is idempotent: the server keeps one schedule per id,
 * so of gateways starting together one creates it and the others find it; each then compares the stored
 * spec, action and policies with its own and updates only what differs. The pause state is not compared: an
 * operator's pause survives restarts (`paused` applies at creation only).
 */
import {
  ScheduleAlreadyRunning,
  type Client,
  type ScheduleDescription,
  type ScheduleOptions,
} from '@temporalio/client';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';

export const DEFAULT_SEAL_SCHEDULE_ID = 'geofabric-seal-epochs';
/** Minutes after each epoch boundary: past the 60 s seal grace, with room for clock skew and a late sync. */
export const DEFAULT_SEAL_OFFSET_MINUTES = 2;
/** The workflow type the Schedule starts (workflows/seal-epoch.ts; a string, as activities do not import workflows). */
export const SEAL_WORKFLOW_TYPE = 'sealEpoch';
/** A Temporal outage shorter than this still gets its missed hourly run, once (SKIP), when the server returns. */
export const SEAL_CATCHUP_WINDOW_MS = 24 * 3_600_000;
/**
 * A run that has not finished within this (no worker polled, a stuck attempt) ends before the next hourly
 * action, so it never keeps the next one skipped; the activity gives up at 50 minutes, before this.
 */
export const SEAL_WORKFLOW_TIMEOUT_MS = 55 * 60_000;

export interface SealScheduleOptions {
  /** Default DEFAULT_SEAL_SCHEDULE_ID; a deployment (or a test run) sharing a namespace takes its own. */
  scheduleId?: string;
  /** Where `sealEpoch` runs: a queue polled by the process that registered the seal activities. */
  taskQueue: string;
  /** Minutes after each epoch boundary, 0 ≤ m < 60; default 2. */
  offsetMinutes?: number;
  /** EPOCH_GENESIS: epochs start at genesis + n hours, so the hourly spec is aligned to it. */
  genesisMs?: number;
  /** Create the schedule paused (never changes an existing schedule's pause state). */
  paused?: boolean;
}

export interface EnsuredSealSchedule {
  scheduleId: string;
  /** True when this call created the schedule; false when it existed already. */
  created: boolean;
  /** True when it existed with another spec, action or policies, and this call replaced them. */
  updated: boolean;
}

/** The schedule `ensureSealSchedule` keeps, as ScheduleOptions (exported for tests and for `describe` output). */
export function sealScheduleOptions(opts: SealScheduleOptions): ScheduleOptions {
  const scheduleId = opts.scheduleId ?? DEFAULT_SEAL_SCHEDULE_ID;
  const offsetMinutes = opts.offsetMinutes ?? DEFAULT_SEAL_OFFSET_MINUTES;
  if (!Number.isInteger(offsetMinutes) || offsetMinutes < 0 || offsetMinutes >= 60) {
    throw new RangeError(`offsetMinutes must be an integer in [0, 60), got ${offsetMinutes}`);
  }
  // Interval specs count from the Unix epoch; a genesis off the whole hour shifts every epoch boundary.
  const genesisPhase = ((opts.genesisMs ?? DEFAULT_EPOCH_GENESIS_MS) % EPOCH_MS) + EPOCH_MS;
  const offset = (genesisPhase + offsetMinutes * 60_000) % EPOCH_MS;
  return {
    scheduleId,
    spec: { intervals: [{ every: EPOCH_MS, offset }] },
    action: {
      type: 'startWorkflow',
      workflowType: SEAL_WORKFLOW_TYPE,
      // The server appends the nominal time: `geofabric-seal-epochs-2026-03-01T10:02:00Z`.
      workflowId: scheduleId,
      taskQueue: opts.taskQueue,
      args: [],
      workflowExecutionTimeout: SEAL_WORKFLOW_TIMEOUT_MS,
    },
    policies: {
      // A run still sealing (a long catch-up) makes the next start redundant: it seals up to its own clock
      // reading, and the run after it takes the rest.
      overlap: 'SKIP',
      catchupWindow: SEAL_CATCHUP_WINDOW_MS,
      // A failed run must not stop sealing: the next run catches up.
      pauseOnFailure: false,
    },
    state: { paused: opts.paused ?? false },
  };
}

/**
 * Where an existing schedule differs from the desired one: the names of the differing fields, empty when it
 * matches. Only what `sealScheduleOptions` sets is compared, in the units `describe` returns (milliseconds).
 */
export function sealScheduleDrift(current: ScheduleDescription, desired: ScheduleOptions): string[] {
  const drift: string[] = [];
  const want = desired.action;
  const intervals = (current.spec.intervals ?? []).map((i) => `${i.every}+${i.offset}`);
  const wantIntervals = (desired.spec.intervals ?? []).map((i) => `${String(i.every)}+${String(i.offset ?? 0)}`);
  if (intervals.join() !== wantIntervals.join()) drift.push('spec.intervals');
  const extraSpec =
    (current.spec.calendars?.length ?? 0) +
    (current.spec.skip?.length ?? 0) +
    (current.spec.startAt ? 1 : 0) +
    (current.spec.endAt ? 1 : 0);
  if (extraSpec > 0) drift.push('spec.calendars');
  const action = current.action;
  if (action.workflowType !== want.workflowType) drift.push('action.workflowType');
  if (action.workflowId !== want.workflowId) drift.push('action.workflowId');
  if (action.taskQueue !== want.taskQueue) drift.push('action.taskQueue');
  if ((action.args?.length ?? 0) !== 0) drift.push('action.args');
  if (action.workflowExecutionTimeout !== want.workflowExecutionTimeout) drift.push('action.workflowExecutionTimeout');
  if ((current.policies.overlap ?? 'SKIP') !== desired.policies?.overlap) drift.push('policies.overlap');
  if (current.policies.catchupWindow !== desired.policies?.catchupWindow) drift.push('policies.catchupWindow');
  if (current.policies.pauseOnFailure !== desired.policies?.pauseOnFailure) drift.push('policies.pauseOnFailure');
  return drift;
}

/**
 * Creates the seal schedule, or brings an existing one to this configuration. Safe to call concurrently from
 * several gateways: the server admits one create per id, the others see ScheduleAlreadyRunning, and all end
 * with one schedule. Gateways with different configurations (another queue, offset) converge on the last one
 * to start, which is the intent of a rolling deploy.
 */
export async function ensureSealSchedule(client: Client, opts: SealScheduleOptions): Promise<EnsuredSealSchedule> {
  const desired = sealScheduleOptions(opts);
  const { scheduleId } = desired;
  try {
    await client.schedule.create(desired);
    return { scheduleId, created: true, updated: false };
  } catch (error) {
    if (!(error instanceof ScheduleAlreadyRunning)) throw error;
  }
  const handle = client.schedule.getHandle(scheduleId);
  const current = await handle.describe();
  if (sealScheduleDrift(current, desired).length === 0) return { scheduleId, created: false, updated: false };
  await handle.update((latest) => ({
    spec: desired.spec,
    action: desired.action,
    policies: desired.policies,
    // Keep the running schedule's state: an operator's pause and note, and any action limit.
    state: {
      paused: latest.state.paused,
      note: latest.state.note,
      remainingActions: latest.state.remainingActions,
    },
  }));
  return { scheduleId, created: false, updated: true };
}
