import { z } from 'zod';
import {
  TRUST_TIERS,
  VIOLATION_TYPES,
  type AgentEpoch,
  type HumanApproval,
  type StoredBreadcrumb,
  type Violation,
} from '../core/breadcrumb-types.js';
import { ServiceError } from '../core/errors.js';
import { describeZodIssue } from '../core/zod-issue.js';
import type { BlockRange } from './audit-store.js';

/**
 * The stored forms of the audit chain's records (core/breadcrumb-types.ts), shared by the adapters of
 * {@link AuditStore}. Every record is checked on the way in (a malformed one is the caller's bug: RangeError)
 * and on the way out (a malformed one means the store was written by something else or corrupted: Error).
 *
 * The store checks shapes, not meaning: signatures, hashes and the chain's links are the writers' checks
 * (core/breadcrumb.ts). `data_to_sign` is kept as the exact text that was signed; it must be well-formed
 * UTF-16 (no engine can store a lone surrogate and give it back unchanged) without U+0000 (PostgreSQL-backed
 * engines refuse it); JSON text, JCS included, has neither.
 *
 * Timestamps are ISO 8601 with `Z` or an offset, compared as instants: every record's instant is a whole
 * millisecond (which is what `Date#toISOString` writes), kept beside the text as integer milliseconds for
 * range queries. Query bounds may be finer; they are rounded towards the inside of the range, so the
 * comparison stays exact.
 */

/**
 * Version of the stored layout of a block (StoredBreadcrumb has no version field of its own: its signed text
 * is versioned by its format). Epochs, violations and approvals carry `version` themselves.
 */
export const AUDIT_BLOCK_RECORD_VERSION = 1;

/** Longest `data_to_sign` accepted: a breadcrumb's meta holds small facts, and one block is one document. */
export const MAX_DATA_TO_SIGN_CHARS = 1_000_000;

const hex = (bytes: number) =>
  z.string().regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `must be ${bytes * 2} lowercase hex`);
const publicKey = hex(32);
const sha256 = hex(32);
const signature = hex(64);
const count = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

// A lone surrogate (UTF-16 code units, no `u` flag) cannot be encoded as UTF-8 by SQLite or BSON.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `YYYY-MM-DDTHH:mm:ss[.fraction](Z|±HH:mm)`, validated as a calendar date and time by zod first. */
const ISO_PARTS = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;
const isoDateTime = z.iso.datetime({ offset: true });

interface Instant {
  /** Milliseconds since 1970, rounded down. */
  ms: number;
  /** True when the instant has a non-zero part below the millisecond. */
  subMs: boolean;
}

/** The instant an ISO 8601 timestamp names; null when it is not one. */
function parseInstant(value: string): Instant | null {
  if (!isoDateTime.safeParse(value).success) return null;
  const parts = ISO_PARTS.exec(value);
  if (parts === null) return null;
  const [, dateTime = '', fraction = '', zone = ''] = parts;
  const seconds = Date.parse(`${dateTime}${zone}`);
  if (!Number.isFinite(seconds)) return null;
  return { ms: seconds + Number(fraction.slice(0, 3).padEnd(3, '0')), subMs: /[1-9]/.test(fraction.slice(3)) };
}

/** A record's timestamp: ISO 8601 naming a whole millisecond. */
const recordTimestamp = z.string().superRefine((value, ctx) => {
  const instant = parseInstant(value);
  if (instant === null) ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date-time with Z or an offset' });
  else if (instant.subMs) ctx.addIssue({ code: 'custom', message: 'must not be finer than a millisecond' });
});

/** The instant of a timestamp a record schema accepted, in milliseconds. */
export function instantMs(timestamp: string): number {
  const instant = parseInstant(timestamp);
  if (instant === null) throw new RangeError(`not an ISO 8601 timestamp: ${JSON.stringify(timestamp)}`);
  return instant.ms;
}

/**
 * A query bound in whole milliseconds, equivalent on records' (whole-millisecond) instants: `lowest` gives the
 * smallest stored ms that is >= the bound (so `t >= bound` iff `t_ms >= result`, and `t < bound` iff
 * `t_ms < result`); `highest` the largest that is <= it (`t <= bound` iff `t_ms <= result`).
 */
export function boundMs(bound: string, round: 'lowest' | 'highest', operation: string): number {
  const instant = typeof bound === 'string' ? parseInstant(bound) : null;
  if (instant === null) {
    throw new RangeError(`${operation}: not an ISO 8601 date-time with Z or an offset: ${JSON.stringify(bound)}`);
  }
  return round === 'lowest' && instant.subMs ? instant.ms + 1 : instant.ms;
}

export const storedBreadcrumbSchema = z.object({
  agent_pk: publicKey,
  index: count,
  timestamp: recordTimestamp,
  data_to_sign: z
    .string()
    .min(1)
    .max(MAX_DATA_TO_SIGN_CHARS)
    .refine((text) => !LONE_SURROGATE.test(text), 'must be well-formed UTF-16 (a lone surrogate cannot be stored)')
    .refine(
      (text) => !text.includes('\u0000'),
      'must not contain U+0000 (JSON escapes it; some engines cannot store it)',
    ),
  signature,
  block_hash: sha256,
});

export const agentEpochSchema = z.object({
  version: z.literal(1),
  agent_pk: publicKey,
  epoch_index: count,
  start_block: count,
  end_block: count,
  block_count: count,
  merkle_root: sha256,
  prev_epoch_hash: sha256,
  tier_at_close: z.enum(TRUST_TIERS),
  rolled_at: recordTimestamp,
  epoch_hash: sha256,
  signature,
});

export const violationSchema = z.object({
  version: z.literal(1),
  id: z.uuid(),
  agent_pk: publicKey,
  type: z.enum(VIOLATION_TYPES),
  severity: z.enum(['warning', 'critical']),
  tool_name: z.string(),
  h3_cell: z.string().nullable(),
  detail: z.string(),
  at: recordTimestamp,
  block_index: count.nullable(),
});

export const humanApprovalSchema = z.object({
  version: z.literal(1),
  agent_pk: publicKey,
  principal_pk: publicKey,
  block_index: count,
  approved_at: recordTimestamp,
  signature,
});

// Compile-time proof that each schema checks exactly the shared interface.
const _sameShapes = (
  block: z.output<typeof storedBreadcrumbSchema>,
  epoch: z.output<typeof agentEpochSchema>,
  violation: z.output<typeof violationSchema>,
  approval: z.output<typeof humanApprovalSchema>,
): [StoredBreadcrumb, AgentEpoch, Violation, HumanApproval] => [block, epoch, violation, approval];
const _sameInputs = (
  block: StoredBreadcrumb,
  epoch: AgentEpoch,
  violation: Violation,
  approval: HumanApproval,
): [
  z.output<typeof storedBreadcrumbSchema>,
  z.output<typeof agentEpochSchema>,
  z.output<typeof violationSchema>,
  z.output<typeof humanApprovalSchema>,
] => [block, epoch, violation, approval];

/** Checks a record a caller hands the store; returns it as it will be stored (only the declared fields). */
export function checkAuditInput<T>(schema: z.ZodType<T>, value: unknown, operation: string, subject: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new RangeError(`${operation}: invalid ${subject}: ${describeZodIssue(parsed.error, subject)}`);
  }
  return parsed.data;
}

/** Parses a record read back from a store; an invalid one is an Error naming it. */
export function parseStoredAudit<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    throw new Error(`stored ${what} is not a valid record: ${describeZodIssue(parsed.error, what)}`);
  }
  return parsed.data;
}

/** The fields of a stored block, as both adapters keep them. */
export interface StoredBlockFields extends StoredBreadcrumb {
  record_version: number;
}

const HEX64 = /^[0-9a-f]{64}$/;
const HEX128 = /^[0-9a-f]{128}$/;
/** What `Date#toISOString` writes for years 0000-9999: always a valid whole-millisecond record timestamp. */
const TO_ISO_STRING = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const digits = (text: string, at: number, n: number): number => {
  let value = 0;
  for (let i = at; i < at + n; i++) value = value * 10 + text.charCodeAt(i) - 48;
  return value;
};

/** A `Date#toISOString` text naming a real calendar date and time (checked without allocating). */
function isToIsoString(value: string): boolean {
  if (!TO_ISO_STRING.test(value)) return false;
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 2);
  const day = digits(value, 8, 2);
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays =
    month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= monthDays &&
    digits(value, 11, 2) <= 23 &&
    digits(value, 14, 2) <= 59 &&
    digits(value, 17, 2) <= 59
  );
}

// String#isWellFormed (native, Node 20) where present: the lookbehind regex scans each 600-char text slowly.
const wellFormed = (text: string): boolean => {
  const native = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return native !== undefined ? native.call(text) : !LONE_SURROGATE.test(text);
};

/**
 * storedBreadcrumbSchema's verdict on the common row, without zod (a report reads 100,000 blocks): true only
 * where the schema surely accepts it. A row this cannot vouch for goes through the schema, which is the judge.
 */
function plainStoredBlock(row: StoredBlockFields): boolean {
  const { agent_pk, index, timestamp, data_to_sign: text, signature: sig, block_hash } = row;
  return (
    typeof agent_pk === 'string' &&
    HEX64.test(agent_pk) &&
    Number.isSafeInteger(index) &&
    index >= 0 &&
    typeof timestamp === 'string' &&
    isToIsoString(timestamp) &&
    typeof text === 'string' &&
    text.length >= 1 &&
    text.length <= MAX_DATA_TO_SIGN_CHARS &&
    !text.includes('\u0000') &&
    wellFormed(text) &&
    typeof sig === 'string' &&
    HEX128.test(sig) &&
    typeof block_hash === 'string' &&
    HEX64.test(block_hash)
  );
}

/** A block read back from a store; an unknown layout version or a malformed block is an Error. */
export function parseStoredBlock(row: StoredBlockFields): StoredBreadcrumb {
  if (row.record_version !== AUDIT_BLOCK_RECORD_VERSION) {
    const what = `block ${row.agent_pk}#${row.index}`;
    throw new Error(`stored ${what} has layout version ${row.record_version} (expected ${AUDIT_BLOCK_RECORD_VERSION})`);
  }
  if (plainStoredBlock(row)) {
    const { agent_pk, index, timestamp, data_to_sign, signature, block_hash } = row;
    return { agent_pk, index, timestamp, data_to_sign, signature, block_hash };
  }
  return parseStoredAudit(storedBreadcrumbSchema, row, `block ${row.agent_pk}#${row.index}`);
}

/** Parses a record stored as JSON text. */
export function parseStoredAuditJson<T>(schema: z.ZodType<T>, json: string, what: string): T {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    throw new Error(`stored ${what} is not JSON`);
  }
  return parseStoredAudit(schema, value, what);
}

/** An agent key a query names: 64 lowercase hex, else the caller's bug. */
export function checkAgentPk(agentPk: string, operation: string): string {
  if (!publicKey.safeParse(agentPk).success) {
    throw new RangeError(`${operation}: agent_pk must be 64 lowercase hex: ${JSON.stringify(agentPk)}`);
  }
  return agentPk;
}

/** A verified-through mark's shape (store/audit-store.ts VerifiedMark); a bad one is the caller's bug. */
export function checkVerifiedMark(mark: {
  index: number;
  block_hash: string;
  verifier_pk: string;
  signature: string;
}): void {
  const hex = (value: unknown, length: number) =>
    typeof value === 'string' && new RegExp(`^[0-9a-f]{${length}}$`).test(value);
  if (
    !Number.isSafeInteger(mark?.index) ||
    mark.index < 0 ||
    !hex(mark.block_hash, 64) ||
    !hex(mark.verifier_pk, 64) ||
    !hex(mark.signature, 128)
  ) {
    throw new RangeError(
      `markVerified: a mark is a block index ≥ 0, its 64-hex block_hash, a 64-hex verifier_pk and a 128-hex signature`,
    );
  }
}

/** A block query in whole numbers: inclusive index and millisecond bounds, and the most rows to return. */
export interface BlockQuery {
  fromIndex: number;
  toIndex: number;
  fromMs: number;
  toMs: number;
  /** Whether a time bound was given (adapters then walk the time index). */
  timed: boolean;
  limit: number;
}

/**
 * `blocks`' arguments as whole-number bounds. Index bounds are safe integers (a negative one is allowed: it
 * simply matches from 0); `limit` an integer >= 0, all blocks when absent. Anything else is a RangeError.
 */
export function blockQuery(range: BlockRange = {}, limit?: number): BlockQuery {
  const index = (value: number | undefined, fallback: number, name: string): number => {
    if (value === undefined) return fallback;
    if (!Number.isSafeInteger(value)) throw new RangeError(`blocks: ${name} must be an integer: ${value}`);
    return value;
  };
  if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 0)) {
    throw new RangeError(`blocks: limit must be an integer >= 0: ${limit}`);
  }
  return {
    fromIndex: index(range.fromIndex, 0, 'fromIndex'),
    toIndex: index(range.toIndex, Number.MAX_SAFE_INTEGER, 'toIndex'),
    fromMs: range.from === undefined ? -Number.MAX_SAFE_INTEGER : boundMs(range.from, 'lowest', 'blocks'),
    toMs: range.to === undefined ? Number.MAX_SAFE_INTEGER : boundMs(range.to, 'highest', 'blocks'),
    timed: range.from !== undefined || range.to !== undefined,
    limit: limit ?? Number.MAX_SAFE_INTEGER,
  };
}

/** The inclusive millisecond bounds of a `[from, to]` period query (violations, approvals). */
export function periodMs(from: string, to: string, operation: string): { fromMs: number; toMs: number } {
  return { fromMs: boundMs(from, 'lowest', operation), toMs: boundMs(to, 'highest', operation) };
}

/**
 * Why the stored chain refuses `block` (ServiceError('record_conflict')), or null: its index is taken, its
 * predecessor is missing (a chain has no gaps), or its timestamp is before its predecessor's (timestamps
 * never go back, which makes time order index order). `previousMs` is the predecessor's instant: undefined
 * when it is missing, null at index 0. A predecessor, once stored, never changes, so the last two checks hold
 * without a lock; only the first needs the insert's unique key to be atomic.
 */
export function chainRefusal(
  block: StoredBreadcrumb,
  tsMs: number,
  taken: boolean,
  previousMs: number | null | undefined,
): ServiceError | null {
  const name = `block ${block.index} of agent ${block.agent_pk}`;
  if (taken) return new ServiceError('record_conflict', `${name} exists`);
  if (previousMs === undefined) {
    return new ServiceError('record_conflict', `${name}: block ${block.index - 1} is missing`);
  }
  if (previousMs !== null && previousMs > tsMs) {
    return new ServiceError('record_conflict', `${name}: timestamp ${block.timestamp} is before its predecessor's`);
  }
  return null;
}
