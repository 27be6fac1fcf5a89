/**
 * The agent trust score (docs/protocol.md §2.8) and the tier ladder of the agent tier gate (docs/protocol.md §3).
 *
 *   operations      40 × min(operations / 5000, 1)
 *   territory       30 × min(unique H3 cells / 20, 1)
 *   longevity       20 × min(days since the first block / 365, 1)   (fractional days; 0 without a block)
 *   chain_validity  10 if the chain verifies, else 0
 *
 * Each part is rounded to 2 decimals and the score is the sum of the rounded parts, so the parts shown
 * in a report always add up to the score shown. The score is within 0..100.
 *
 * An operation is a call that did its work: a breadcrumb with outcome `ok`. Calls that did nothing earn no
 * trust: refused before running (`blocked`), or failed (`error`: not_available, not_configured, an upstream
 * down, bad input), or anyone could climb the ladder by calling a tool that cannot answer. Nor do calls of
 * anonymous callers (`meta.anonymous: true`, docs/security.md §5).
 */
import type { Breadcrumb, TrustTier } from './breadcrumb-types.js';

/**
 * Whether a (verified) breadcrumb counts as an operation: the call did its work (see above) for a caller who
 * showed a token. A call of an anonymous caller (`meta.anonymous: true`) earns nothing either: anyone could
 * otherwise lift the agent's tier by calling it.
 */
export const isOperation = (block: Pick<Breadcrumb, 'context' | 'meta'>): boolean =>
  block.context.outcome === 'ok' && block.meta.anonymous !== true;

/**
 * An epoch roll's own breadcrumb: rolling is housekeeping, so a roll with only such blocks since the last
 * epoch has nothing to roll (else every repeated roll would seal a one-block epoch of the previous roll).
 */
export const EPOCH_ROLL_TOOL = 'idn_roll_epoch';

export const TRUST_SCORE_WEIGHTS = { operations: 40, territory: 30, longevity: 20, chain_validity: 10 } as const;
export const OPERATIONS_FOR_FULL_CREDIT = 5000;
export const CELLS_FOR_FULL_CREDIT = 20;
export const DAYS_FOR_FULL_CREDIT = 365;
const DAY_MS = 86_400_000;

/** Lowest score of each tier (docs/protocol.md §3, percent of the 0..100 score). */
export const TIER_THRESHOLDS: Readonly<Record<TrustTier, number>> = {
  provisioned: 0,
  observed: 25,
  trusted: 60,
  certified: 85,
  sovereign: 99,
};

export interface TrustScore {
  score: number;
  parts: { operations: number; territory: number; longevity: number; chain_validity: number };
}

const round2 = (n: number): number => Math.round(n * 100) / 100;
/** min(value / full, 1), with anything negative or not a number counting as 0. */
const ratio = (value: number, full: number): number => (value > 0 ? Math.min(value / full, 1) : 0);

export function trustScore(input: {
  operations: number;
  uniqueCells: number;
  firstBlockAt: string | null;
  nowMs: number;
  chainValid: boolean;
}): TrustScore {
  const first = input.firstBlockAt === null ? NaN : Date.parse(input.firstBlockAt);
  // A first block in the future (clock skew) or an unreadable date earns no longevity.
  const days = Number.isFinite(first) ? (input.nowMs - first) / DAY_MS : 0;
  const parts = {
    operations: round2(TRUST_SCORE_WEIGHTS.operations * ratio(input.operations, OPERATIONS_FOR_FULL_CREDIT)),
    territory: round2(TRUST_SCORE_WEIGHTS.territory * ratio(input.uniqueCells, CELLS_FOR_FULL_CREDIT)),
    longevity: round2(TRUST_SCORE_WEIGHTS.longevity * ratio(days, DAYS_FOR_FULL_CREDIT)),
    chain_validity: input.chainValid ? TRUST_SCORE_WEIGHTS.chain_validity : 0,
  };
  const score = round2(parts.operations + parts.territory + parts.longevity + parts.chain_validity);
  return { score: Math.min(100, Math.max(0, score)), parts };
}

/** The highest tier whose threshold the score reaches. */
export function tierFor(score: number): TrustTier {
  let tier: TrustTier = 'provisioned';
  for (const [name, threshold] of Object.entries(TIER_THRESHOLDS) as [TrustTier, number][]) {
    if (score >= threshold) tier = name;
  }
  return tier;
}
