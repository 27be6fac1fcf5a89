import { cellToParent, getResolution, gridDistance } from 'h3-js';
import type { HardwareTier } from './hardware-tier.js';
import { isInJurisdiction, resolveJurisdiction } from './jurisdiction.js';
import { workerTierRank, type WorkerTier } from './tiers.js';
import { meetsWorkerTier } from './worker-trust.js';

/**
 * Which registered workers may take a job, best first (docs/protocol.md §1.4: a worker receives only jobs whose
 * required tools it all advertises; 2.7: each tool's `min_trust_tier`; 7: 503 `no_workers`).
 */

/** How often a worker heartbeats (the gateway tells it so: `next_heartbeat_within_s`). */
export const HEARTBEAT_INTERVAL_MS = 10_000;
/** Beats a worker may miss before it counts as offline. */
export const MISSED_HEARTBEATS = 3;
/**
 * A worker is online while its last registration or heartbeat is at most this old (30 s: a killed worker is
 * offline within 30 s; one that stops gracefully says so at once, `POST /svc/workers/leave`).
 */
export const ONLINE_WINDOW_MS = HEARTBEAT_INTERVAL_MS * MISSED_HEARTBEATS;

/** The fields selection reads; the registry's WorkerRecord has them (core does not import store/). */
export interface SelectableWorker {
  pk: string;
  h3_cell: string;
  models: readonly string[];
  tools: readonly string[];
  hardware_tier: HardwareTier;
  relay: boolean;
  trust_tier: WorkerTier;
  last_seen_ms: number;
  /** When the worker announced it was leaving (a graceful stop); null or absent while it has not. */
  left_at_ms?: number | null;
}

export interface WorkerNeed {
  /** A registry model the worker must serve. */
  model?: string;
  /** Tools the job requires; the worker must advertise every one. */
  tools?: readonly string[];
  /** The tool registry's `min_trust_tier` per tool; a required tool missing here has no tier gate. */
  toolMinTiers?: Readonly<Record<string, WorkerTier>>;
  /** Gate 2's `x-svc-jurisdiction` (EU, IT, US-CA …): the worker's cell must lie within it. */
  jurisdiction?: string | null;
  /** Gate 2's `x-svc-min-tier`. */
  minTier?: WorkerTier | null;
  minHardwareTier?: HardwareTier;
  /** The job cell: nearer workers rank first. */
  cell?: string;
}

/**
 * Online: not left, and seen within the last 30 s (three missed 10 s heartbeats). A `last_seen_ms` ahead of
 * `nowMs` (another node's clock running fast) counts as seen now.
 */
export const isOnline = (w: Pick<SelectableWorker, 'last_seen_ms' | 'left_at_ms'>, nowMs: number): boolean =>
  (w.left_at_ms ?? null) === null && nowMs - w.last_seen_ms <= ONLINE_WINDOW_MS;

/**
 * The workers that may run the job: online compute workers (relays route jobs, they do not run them)
 * serving the model, advertising every required tool, at or above each required tool's trust tier and
 * `minTier`, at or above `minHardwareTier`, and located within `jurisdiction`.
 *
 * Order, best first: nearest to `need.cell` (a worker whose cell contains or lies in the job cell first,
 * then by H3 grid distance at the coarser of the two resolutions; cells too far apart for a grid distance
 * last), then higher trust tier, then most recently seen, then pk (so the order is total and stable).
 */
export function eligibleWorkers<W extends SelectableWorker>(
  workers: readonly W[],
  need: WorkerNeed,
  nowMs: number,
): W[] {
  const required = need.tools ?? [];
  const tierFloor = [
    ...(need.minTier ? [need.minTier] : []),
    ...required.flatMap((tool) => need.toolMinTiers?.[tool] ?? []),
  ];
  const eligible = workers.filter(
    (w) =>
      !w.relay &&
      isOnline(w, nowMs) &&
      (need.model === undefined || w.models.includes(need.model)) &&
      required.every((tool) => w.tools.includes(tool)) &&
      tierFloor.every((tier) => meetsWorkerTier(w.trust_tier, tier)) &&
      w.hardware_tier >= (need.minHardwareTier ?? 1) &&
      (!need.jurisdiction || isInJurisdiction(resolveJurisdiction(w.h3_cell), need.jurisdiction)),
  );
  const distance = new Map(eligible.map((w) => [w.pk, need.cell ? cellDistance(need.cell, w.h3_cell) : 0]));
  return eligible.sort(
    (a, b) =>
      (distance.get(a.pk) ?? Infinity) - (distance.get(b.pk) ?? Infinity) ||
      workerTierRank(b.trust_tier) - workerTierRank(a.trust_tier) ||
      b.last_seen_ms - a.last_seen_ms ||
      (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0),
  );
}

/**
 * Grid distance between two cells of any resolutions, measured at the coarser one: 0 when one contains
 * the other. Infinity where H3 cannot measure it (across pentagon distortion, or too far apart).
 */
export function cellDistance(a: string, b: string): number {
  const res = Math.min(getResolution(a), getResolution(b));
  try {
    const [pa, pb] = [cellToParent(a, res), cellToParent(b, res)];
    return pa === pb ? 0 : gridDistance(pa, pb);
  } catch {
    return Infinity;
  }
}

/** What a step needs of its worker, e.g. `model m, tools [web-search]`; `any worker` when nothing. */
export function describeNeed(need: WorkerNeed): string {
  return wantedOf(need).join(', ') || 'any worker';
}

function wantedOf(need: WorkerNeed): string[] {
  return [
    ...(need.model ? [`model ${need.model}`] : []),
    ...(need.tools && need.tools.length > 0 ? [`tools [${need.tools.join(', ')}]`] : []),
    ...(need.minTier ? [`trust tier ${need.minTier} or above`] : []),
    ...(need.minHardwareTier && need.minHardwareTier > 1 ? [`hardware tier ${need.minHardwareTier} or above`] : []),
    ...(need.jurisdiction ? [`in jurisdiction ${need.jurisdiction}`] : []),
  ];
}

/**
 * The 503 `no_workers` detail: what was asked for, then (docs/protocol.md §7) to retry or drop the jurisdiction
 * constraint. The only `;` is the one before the advice, so a caller may cut the advice off there.
 */
export function describeNoWorker(need: WorkerNeed): string {
  const wanted = wantedOf(need);
  const what = `no eligible worker is online${wanted.length > 0 ? ` (${wanted.join(', ')})` : ''}`;
  return need.jurisdiction
    ? `${what}; retry later or remove the jurisdiction constraint (x-svc-jurisdiction)`
    : `${what}; retry later`;
}
