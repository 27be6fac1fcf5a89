import { z } from 'zod';
import { canonicalJson } from '../core/canonical-json.js';
import { describeZodIssue } from '../core/zod-issue.js';
import type { EpochAnchor, LedgerEntry, LedgerEntryKind, LedgerSettlement } from '../core/ledger-types.js';
import { boundMs, instantMs } from './audit-record-schema.js';

/**
 * The stored forms of the ledger's records (core/ledger-types.ts), shared by the adapters of
 * {@link LedgerStore}. Every record is checked on the way in (a malformed one is the caller's bug: RangeError)
 * and on the way out (a malformed one means the store was written by something else or corrupted: Error).
 *
 * Checked beyond the shapes, because a reader's sums rely on them: amounts are non-zero safe integers; a job's
 * charge, earnings and relay fees name their job; a `submitted` settlement or anchor names its transaction and
 * ledger. The sign is not tied to the kind: charges are negative and earnings positive, except in the correction
 * a job's re-run posts (core/ledger-entries.ts), which moves either way. Timestamps are ISO 8601 with `Z`
 * or an offset naming a whole millisecond, compared as instants (kept beside the text as integer ms), and an
 * entry's UTC day (`earningsByDay`) is the day of that instant.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);
const id = z.string().min(1).max(512);
/** Base64 (standard alphabet, padded): a signed transaction envelope as XDR. */
const base64 = z.string().regex(/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/, 'must be base64');

/** A record's timestamp: ISO 8601 with Z or an offset, no finer than a millisecond. */
const timestamp = z.iso.datetime({ offset: true }).refine((value) => {
  const fraction = /\.(\d+)/.exec(value)?.[1] ?? '';
  return !/[1-9]/.test(fraction.slice(3));
}, 'must not be finer than a millisecond');

export const LEDGER_ENTRY_KINDS = [
  'job_charge',
  'step_earning',
  'relay_fee',
  'proof_fee',
  'proof_charge',
] as const satisfies readonly LedgerEntryKind[];
/** Kinds that always belong to a job. */
const JOB_KINDS: ReadonlySet<LedgerEntryKind> = new Set(['job_charge', 'step_earning', 'relay_fee']);

export const ledgerEntrySchema = z
  .strictObject({
    version: z.literal(1),
    id,
    account_pk: hex64,
    kind: z.enum(LEDGER_ENTRY_KINDS),
    amount_units: z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER),
    job_id: id.nullable(),
    record_id: id,
    step_ids: z.array(z.string().min(1).max(256)).max(10_000),
    hardware_tier: z.number().int().min(1).max(3).nullable(),
    created_at: timestamp,
  })
  .superRefine((entry, ctx) => {
    if (entry.amount_units === 0) {
      ctx.addIssue({ code: 'custom', path: ['amount_units'], message: 'must not be 0 (zero amounts are not posted)' });
    }
    if (JOB_KINDS.has(entry.kind) && entry.job_id === null) {
      ctx.addIssue({ code: 'custom', path: ['job_id'], message: `a ${entry.kind} belongs to a job` });
    }
  });

const STATUSES = ['pending', 'submitted', 'failed'] as const;

/** A submitted transaction has a hash and the ledger it landed in. */
function requireLanded(
  record: { status: string; tx_hash: string | null; ledger: number | null },
  ctx: z.RefinementCtx,
) {
  if (record.status !== 'submitted') return;
  if (record.tx_hash === null)
    ctx.addIssue({ code: 'custom', path: ['tx_hash'], message: 'a submitted record has one' });
  if (record.ledger === null) ctx.addIssue({ code: 'custom', path: ['ledger'], message: 'a submitted record has one' });
}

export const ledgerSettlementSchema = z
  .strictObject({
    version: z.literal(1),
    id,
    entry_ids: z.array(id).max(100_000),
    payees: z.record(hex64, z.number().int().positive().max(Number.MAX_SAFE_INTEGER)),
    status: z.enum(STATUSES),
    tx_hash: hex64.nullable(),
    envelope_xdr: base64.nullable(),
    ledger: count.nullable(),
    memo_hash: hex64.nullable(),
    attempts: count,
    error: z.string().max(10_000).nullable(),
    at: timestamp,
  })
  .superRefine(requireLanded);

export const epochAnchorSchema = z
  .strictObject({
    version: z.literal(1),
    sealer_pk: hex64,
    epoch: count,
    root: hex64,
    status: z.enum(STATUSES),
    tx_hash: hex64.nullable(),
    envelope_xdr: base64.nullable(),
    ledger: count.nullable(),
    attempts: count,
    error: z.string().max(10_000).nullable(),
    at: timestamp,
  })
  .superRefine(requireLanded);

// Compile-time proof that each schema checks exactly the shared interface.
const _sameShapes = (
  entry: z.output<typeof ledgerEntrySchema>,
  settlement: z.output<typeof ledgerSettlementSchema>,
  anchor: z.output<typeof epochAnchorSchema>,
): [LedgerEntry, LedgerSettlement, EpochAnchor] => [entry, settlement, anchor];
const _sameInputs = (
  entry: LedgerEntry,
  settlement: LedgerSettlement,
  anchor: EpochAnchor,
): [
  z.output<typeof ledgerEntrySchema>,
  z.output<typeof ledgerSettlementSchema>,
  z.output<typeof epochAnchorSchema>,
] => [entry, settlement, anchor];

/** Checks a record a caller hands the store; returns it as it will be stored. RangeError when invalid. */
export function checkLedgerInput<T>(schema: z.ZodType<T>, value: unknown, operation: string, subject: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new RangeError(`${operation}: invalid ${subject}: ${describeZodIssue(parsed.error, subject)}`);
  }
  return parsed.data;
}

/**
 * `post`'s batch, checked: every entry valid, and an id given twice only as the very same entry (kept once).
 * RangeError otherwise: two different entries under one id in one call is the caller's bug, not a conflict.
 */
export function checkLedgerBatch(entries: readonly LedgerEntry[]): LedgerEntry[] {
  if (!Array.isArray(entries)) throw new RangeError('post: entries must be an array');
  const byId = new Map<string, LedgerEntry>();
  for (const [i, value] of entries.entries()) {
    const entry = checkLedgerInput(ledgerEntrySchema, value, 'post', `entry ${i}`);
    const seen = byId.get(entry.id);
    if (seen === undefined) byId.set(entry.id, entry);
    else if (!sameRecord(seen, entry)) throw new RangeError(`post: entry id ${entry.id} is given twice, differently`);
  }
  return [...byId.values()];
}

/** Parses a record stored as JSON text; an invalid one is an Error naming it. */
export function parseStoredLedgerJson<T>(schema: z.ZodType<T>, json: string, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new Error(`stored ${what} is not JSON`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`stored ${what} is not a valid record: ${describeZodIssue(parsed.error, what)}`);
  return parsed.data;
}

/** Whether two records are the same (field order aside): a re-post of an identical entry is skipped. */
export function sameRecord(a: object, b: object): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** An account key a query names: 64 lowercase hex, else the caller's bug. */
export function checkAccountPk(accountPk: string, operation: string): string {
  if (!hex64.safeParse(accountPk).success) {
    throw new RangeError(`${operation}: account must be 64 lowercase hex: ${JSON.stringify(accountPk)}`);
  }
  return accountPk;
}

/** A job id or settlement id a query names: a non-empty string. */
export function checkLedgerId(value: string, operation: string): string {
  if (!id.safeParse(value).success) throw new RangeError(`${operation}: invalid id: ${JSON.stringify(value)}`);
  return value;
}

/** The fields adapters keep beside a stored entry for queries: its instant and UTC day. */
export function entryTime(entry: LedgerEntry): { created_ms: number; day: string } {
  const ms = instantMs(entry.created_at);
  return { created_ms: ms, day: utcDay(ms) };
}

/** The instant of a settlement's or anchor's `at`, in ms. */
export const recordMs = (record: { at: string }): number => instantMs(record.at);

/** YYYY-MM-DD of an instant, in UTC. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** Default and largest page of `entries`. */
export const DEFAULT_ENTRIES_LIMIT = 1000;
/** Default page of `openSettlements` and `openAnchors`. */
export const DEFAULT_OPEN_LIMIT = 100;

/** An inclusive millisecond range and a limit, from a query's optional ISO bounds. RangeError when malformed. */
export function ledgerRange(
  range: { fromIso?: string; toIso?: string; limit?: number } | undefined,
  operation: string,
  defaultLimit: number,
): { fromMs: number; toMs: number; limit: number } {
  return {
    fromMs: range?.fromIso === undefined ? -Number.MAX_SAFE_INTEGER : boundMs(range.fromIso, 'lowest', operation),
    toMs: range?.toIso === undefined ? Number.MAX_SAFE_INTEGER : boundMs(range.toIso, 'highest', operation),
    limit: checkLimit(range?.limit, operation, defaultLimit),
  };
}

/** A page size: an integer >= 0 (default `fallback`), else RangeError. */
export function checkLimit(limit: number | undefined, operation: string, fallback: number): number {
  if (limit === undefined) return fallback;
  if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`${operation}: limit must be an integer >= 0`);
  return limit;
}

/** `balance`'s lower bound in ms (all entries when absent). */
export function sinceMs(sinceIso: string | undefined): number {
  return sinceIso === undefined ? -Number.MAX_SAFE_INTEGER : boundMs(sinceIso, 'lowest', 'balance');
}

/** The kinds `earningsByDay` sums (positive amounts only). */
export const EARNING_KINDS = ['step_earning', 'relay_fee'] as const satisfies readonly LedgerEntryKind[];

export interface EarningsRow {
  day: string;
  hardware_tier: number | null;
  units: number;
  entries: number;
}

/** Rows ordered by day, then tier (unknown tier first), as both adapters answer. */
export function byDayAndTier(a: EarningsRow, b: EarningsRow): number {
  if (a.day !== b.day) return a.day < b.day ? -1 : 1;
  return (a.hardware_tier ?? 0) - (b.hardware_tier ?? 0);
}
