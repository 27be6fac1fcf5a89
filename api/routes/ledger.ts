/**
 * The credit ledger over HTTP (docs/protocol.md §1.4, §1.6, §1.10): a worker's earnings, and the swarm's earnings per
 * hardware tier for `GET /svc/status`. Public reads: a payee's earnings are as visible as its payments on the
 * external ledger. Amounts are exact integer credit units in the store and credits only here, at the edge.
 */
import { fail, pass, type Check } from '../../core/check.js';
import { fromCreditUnits } from '../../core/credits.js';
import { isHex } from '../../core/hex.js';
import { checkPublicKey } from '../../core/identity.js';
import type { LedgerSettlement } from '../../core/ledger-types.js';
import { integerParam } from '../../core/query-params.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import { route, type RouteSpec } from '../route-spec.js';
import { daysQuery, workerPkParams } from '../schemas/param-docs.js';
import { earningsSchema } from '../schemas/swarm-responses.js';

const DAY_MS = 86_400_000;
export const DEFAULT_EARNINGS_DAYS = 7;
export const MAX_EARNINGS_DAYS = 90;
/** The most settlements one earnings answer lists (newest first). */
export const MAX_LISTED_SETTLEMENTS = 100;
/** docs/protocol.md §1.6's approximate earnings per day of one worker of each tier, for comparison with what the ledger shows. */
export const SPEC_EARNINGS_PER_DAY = Object.freeze({ '1': 0.35, '2': 8.7, '3': 25 });
/** `/svc/status` averages the last week. */
export const STATUS_EARNINGS_DAYS = 7;

export interface LedgerRouteDeps {
  ledger: LedgerStore;
  clock: () => number;
  /**
   * The settlements that paid `accountPk`, newest first, given the jobs of its entries in the window; default:
   * those jobs' per-job settlements (`job:<job_id>`) naming the account, and its latest balance payouts.
   */
  settlementsOf?: (accountPk: string, jobIds: string[]) => Promise<LedgerSettlement[]>;
}

interface EarningsQuery {
  pk: string;
  days: number;
}

export const ledgerRoutes = (deps: LedgerRouteDeps): RouteSpec<unknown>[] => [
  route<EarningsQuery>({
    method: 'GET',
    path: '/svc/workers/:pk/earnings',
    auth: 'public',
    cors: { expose: [] },
    facets: [],
    preflight: ({ params, query }) => {
      const pk = checkAccount(params.pk);
      if (!pk.ok) return pk;
      const days = integerParam(
        query.days,
        'days',
        { min: 1, max: MAX_EARNINGS_DAYS, fallback: DEFAULT_EARNINGS_DAYS },
        'invalid_days',
      );
      return days.ok ? pass({ pk: pk.value, days: days.value }) : days;
    },
    handler: async (ctx, { pk, days }) => {
      const now = deps.clock();
      // Whole UTC days: today and the `days - 1` before it, so `by_day` rows are complete days but the last.
      const fromIso = new Date(Math.floor(now / DAY_MS) * DAY_MS - (days - 1) * DAY_MS).toISOString();
      const toIso = new Date(now).toISOString();
      const [balance, unsettled, rows, entries] = await Promise.all([
        deps.ledger.balance(pk),
        deps.ledger.unsettled(pk),
        deps.ledger.earningsByDay({ fromIso, toIso, accountPk: pk }),
        deps.ledger.entries(pk, { fromIso, toIso }),
      ]);
      const jobIds = [...new Set(entries.flatMap((e) => (e.job_id !== null && e.amount_units > 0 ? [e.job_id] : [])))];
      const settlements = await (deps.settlementsOf ?? settlementsPaying(deps.ledger))(pk, jobIds);
      ctx.body = {
        worker_pk: pk,
        days,
        from: fromIso,
        to: toIso,
        balance_credits: fromCreditUnits(balance),
        unsettled_credits: fromCreditUnits(unsettled.reduce((sum, e) => sum + e.amount_units, 0)),
        by_day: [...rows]
          .sort((a, b) => a.day.localeCompare(b.day) || (a.hardware_tier ?? 0) - (b.hardware_tier ?? 0))
          .map((r) => ({
            day: r.day,
            credits: fromCreditUnits(r.units),
            entries: r.entries,
            hardware_tier: r.hardware_tier,
          })),
        settlements: settlements.slice(0, MAX_LISTED_SETTLEMENTS).map((s) => ({
          id: s.id,
          tx_hash: s.tx_hash,
          ledger: s.ledger,
          status: s.status,
          credits: fromCreditUnits(s.payees[pk] ?? 0),
          at: s.at,
        })),
      };
    },
    docs: {
      summary: "A worker's earnings",
      description: 'Balance, unsettled credits, earnings per UTC day and the settlements that paid the worker.',
      tags: ['Workers'],
      params: workerPkParams,
      query: daysQuery(MAX_EARNINGS_DAYS, DEFAULT_EARNINGS_DAYS),
      responses: { 200: { description: 'The earnings', schema: earningsSchema } },
      errors: ['invalid_public_key', 'invalid_days'],
    },
  }),
];

/**
 * A path key: 64 lowercase hex that is a usable Ed25519 key (core/identity.ts: canonical, not small-order).
 * No account can hold any other key (every write refuses it), so asking for one is refused too.
 */
function checkAccount(pk: string | undefined): Check<string> {
  if (typeof pk !== 'string' || !isHex(pk, 32)) {
    return fail('invalid_public_key', 'the worker key must be 64 lowercase hex characters');
  }
  const key = checkPublicKey(pk);
  return key.ok ? key : fail('invalid_public_key', `the worker key is not a usable Ed25519 key: ${key.detail}`);
}

/**
 * The settlements paying `accountPk`, newest first: per-job ones (`job:<job_id>`) of the given jobs, and balance
 * payouts (`balance:<pk>:<n>`, n counting from 1 without gaps: activities/settlement/settlement-service.ts).
 * The store has no index by payee, so the payouts' count is found by doubling then bisecting (about 2 log n
 * reads), and only the latest MAX_LISTED_SETTLEMENTS are read.
 */
const settlementsPaying =
  (ledger: LedgerStore) =>
  async (accountPk: string, jobIds: string[]): Promise<LedgerSettlement[]> => {
    const balanceId = (n: number) => `balance:${accountPk}:${n}`;
    const exists = async (n: number) => (await ledger.settlement(balanceId(n))) !== null;
    let payouts = 0;
    if (await exists(1)) {
      let high = 2;
      while (await exists(high)) high *= 2;
      let low = high / 2; // exists(low), !exists(high)
      while (high - low > 1) {
        const mid = Math.floor((low + high) / 2);
        if (await exists(mid)) low = mid;
        else high = mid;
      }
      payouts = low;
    }
    const latestPayouts = Array.from({ length: Math.min(payouts, MAX_LISTED_SETTLEMENTS) }, (_, i) => payouts - i);
    const found = await Promise.all([
      ...jobIds.slice(-MAX_LISTED_SETTLEMENTS).map((id) => ledger.settlement(`job:${id}`)),
      ...latestPayouts.map((n) => ledger.settlement(balanceId(n))),
    ]);
    return found
      .filter((s): s is LedgerSettlement => s !== null && s.payees[accountPk] !== undefined)
      .sort((a, b) => b.at.localeCompare(a.at));
  };

/**
 * What `/svc/status` adds: the swarm's earnings per hardware tier per day over the last week (every account's
 * step earnings and relay fees of that tier, divided by 7), beside docs/protocol.md §1.6's per-worker reference figures.
 * `unknown` gathers entries whose earner's tier was not known when they were posted.
 */
export async function statusEarnings(ledger: LedgerStore, nowMs: number) {
  const rows = await ledger.earningsByDay({
    fromIso: new Date(nowMs - STATUS_EARNINGS_DAYS * DAY_MS).toISOString(),
    toIso: new Date(nowMs).toISOString(),
  });
  const units = { '1': 0, '2': 0, '3': 0, unknown: 0 };
  for (const row of rows) {
    const key =
      row.hardware_tier === 1 || row.hardware_tier === 2 || row.hardware_tier === 3 ? row.hardware_tier : 'unknown';
    units[key] += row.units;
  }
  // Rounded to whole credit units (1e-8 credits).
  const perDay = (u: number) => fromCreditUnits(Math.round(u / STATUS_EARNINGS_DAYS));
  return {
    window_days: STATUS_EARNINGS_DAYS,
    per_day_by_tier: {
      '1': perDay(units[1]),
      '2': perDay(units[2]),
      '3': perDay(units[3]),
      unknown: perDay(units.unknown),
    },
    spec_reference: SPEC_EARNINGS_PER_DAY,
  };
}
