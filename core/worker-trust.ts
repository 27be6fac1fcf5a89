import { WORKER_TIERS, workerTierRank, type WorkerTier } from './tiers.js';

/**
 * The swarm worker trust ladder (docs/protocol.md §3: new workers register as `seedling`; the other rungs and the
 * transitions are Geofabric's). Trust gates which tools a worker may run (each tool's `min_trust_tier`) and
 * which jobs ask for it (`x-svc-min-tier`), so it must be slow to earn and quick to lose.
 *
 * Inputs: only outcomes the caller has verified. `completed` means the job finished and its proof record
 * checked (signature, hash, address); anything else the worker was paid to do and did not is `failed`.
 *
 * | rung        | completed jobs | lifetime failure rate at most |
 * |-------------|----------------|-------------------------------|
 * | seedling    | 0              | —                             |
 * | explorer    | 10             | 20 %                          |
 * | navigator   | 100            | 10 %                          |
 * | trailblazer | 1,000          | 5 %                           |
 * | sovereign   | 10,000         | 2 %                           |
 *
 * Promotion, on a completion: up one rung when the next rung's count and rate hold and the last
 * PROMOTION_STREAK outcomes were all completions. The streak is what makes a demotion stick: without it a
 * demoted worker whose lifetime counts still qualify would climb back on its very next success.
 * Demotion, on a failure: down one rung (never below seedling) when the failures in a row reach
 * DEMOTION_STREAK, or when the lifetime failure rate exceeds the current rung's ceiling. The streak catches a
 * long-trusted worker that breaks (a lifetime rate would take hundreds of failures to move); the rate catches
 * one that fails often but never three times running. A demotion restarts the streak, so each further
 * demotion needs fresh evidence. One rung per outcome either way: no single job moves a worker further.
 */
export interface TrustState {
  trust_tier: WorkerTier;
  jobs_completed: number;
  jobs_failed: number;
  /** Consecutive outcomes of one kind: n > 0 completions in a row, -n failures in a row, 0 after a change of rung. */
  streak: number;
}

export type JobOutcome = 'completed' | 'failed';

export interface TrustRung {
  minCompleted: number;
  maxFailureRate: number;
}

export const TRUST_LADDER: Readonly<Record<WorkerTier, TrustRung>> = {
  seedling: { minCompleted: 0, maxFailureRate: 1 },
  explorer: { minCompleted: 10, maxFailureRate: 0.2 },
  navigator: { minCompleted: 100, maxFailureRate: 0.1 },
  trailblazer: { minCompleted: 1_000, maxFailureRate: 0.05 },
  sovereign: { minCompleted: 10_000, maxFailureRate: 0.02 },
};

export const PROMOTION_STREAK = 10;
export const DEMOTION_STREAK = 3;

export const INITIAL_TRUST: Readonly<TrustState> = Object.freeze({
  trust_tier: 'seedling',
  jobs_completed: 0,
  jobs_failed: 0,
  streak: 0,
});

export const failureRate = (s: Pick<TrustState, 'jobs_completed' | 'jobs_failed'>): number => {
  const total = s.jobs_completed + s.jobs_failed;
  return total === 0 ? 0 : s.jobs_failed / total;
};

const step = (tier: WorkerTier, by: 1 | -1): WorkerTier =>
  WORKER_TIERS[Math.min(WORKER_TIERS.length - 1, Math.max(0, workerTierRank(tier) + by))] ?? tier;

/** The state after one verified outcome. Pure: the store applies it atomically per worker. */
export function applyOutcome(state: TrustState, outcome: JobOutcome): TrustState {
  if (outcome === 'completed') {
    const next: TrustState = {
      ...state,
      jobs_completed: state.jobs_completed + 1,
      streak: Math.max(state.streak, 0) + 1,
    };
    const up = step(state.trust_tier, 1);
    const rung = TRUST_LADDER[up];
    const qualifies =
      up !== state.trust_tier &&
      next.streak >= PROMOTION_STREAK &&
      next.jobs_completed >= rung.minCompleted &&
      failureRate(next) <= rung.maxFailureRate;
    return qualifies ? { ...next, trust_tier: up, streak: 0 } : next;
  }
  const next: TrustState = {
    ...state,
    jobs_failed: state.jobs_failed + 1,
    streak: Math.min(state.streak, 0) - 1,
  };
  const demote =
    state.trust_tier !== 'seedling' &&
    (-next.streak >= DEMOTION_STREAK || failureRate(next) > TRUST_LADDER[state.trust_tier].maxFailureRate);
  return demote ? { ...next, trust_tier: step(state.trust_tier, -1), streak: 0 } : next;
}

/** True when `tier` is at least `required` on the worker ladder. */
export const meetsWorkerTier = (tier: WorkerTier, required: WorkerTier): boolean =>
  workerTierRank(tier) >= workerTierRank(required);
