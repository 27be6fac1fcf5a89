/**
 * The two trust ladders of docs/protocol.md §3. Agents (delegated AI agents) climb the score-based ladder; swarm
 * workers climb their own, starting at `seedling` (promotion rules live with the worker registry).
 */
export const AGENT_TIERS = ['provisioned', 'observed', 'trusted', 'certified', 'sovereign'] as const;
export type AgentTier = (typeof AGENT_TIERS)[number];

/** Minimum trust score (0..100) for each agent tier (docs/protocol.md §3). */
export const AGENT_TIER_THRESHOLDS: Record<AgentTier, number> = {
  provisioned: 0,
  observed: 25,
  trusted: 60,
  certified: 85,
  sovereign: 99,
};

export const WORKER_TIERS = ['seedling', 'explorer', 'navigator', 'trailblazer', 'sovereign'] as const;
export type WorkerTier = (typeof WORKER_TIERS)[number];

export const isAgentTier = (value: unknown): value is AgentTier => AGENT_TIERS.includes(value as AgentTier);
export const isWorkerTier = (value: unknown): value is WorkerTier => WORKER_TIERS.includes(value as WorkerTier);

/** Position on the ladder, so "at least tier X" is a number comparison. */
export const agentTierRank = (tier: AgentTier): number => AGENT_TIERS.indexOf(tier);
export const workerTierRank = (tier: WorkerTier): number => WORKER_TIERS.indexOf(tier);
