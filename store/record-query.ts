/**
 * What both proof-store adapters share about `queryRecords`: the opaque cursor, input checks and H3
 * containment as data (a record's ancestor cells, or the integer key range of a cell's descendants).
 */
import { cellToParent, getResolution } from 'h3-js';
import { ServiceError } from '../core/errors.js';
import { isCell } from '../core/h3-cell.js';
import { COLLECTION_PAYLOAD_TYPES } from '../core/proof-types.js';
import type { RecordQuery } from './proof-store.js';

/** The sort key of `queryRecords`: (epoch, pk, seq), unique per record. */
export interface RecordSortKey {
  epoch: number;
  pk: string;
  seq: number;
}

/** base64url of JSON [epoch, pk, seq]: opaque to clients, stable across adapters and restarts. */
export function encodeRecordCursor(key: RecordSortKey): string {
  return Buffer.from(JSON.stringify([key.epoch, key.pk, key.seq])).toString('base64url');
}

/** A cursor comes from a client: anything but one this module encoded is `invalid_request`. */
export function decodeRecordCursor(cursor: string): RecordSortKey {
  const bad = () => new ServiceError('invalid_request', 'cursor is not one this store issued');
  if (typeof cursor !== 'string' || !/^[A-Za-z0-9_-]{1,400}$/.test(cursor)) throw bad();
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(value) || value.length !== 3) throw bad();
  const [epoch, pk, seq] = value as unknown[];
  if (!isWhole(epoch) || !isWhole(seq) || typeof pk !== 'string' || !/^[0-9a-f]{64}$/.test(pk)) throw bad();
  return { epoch, pk, seq };
}

const isWhole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0;

/**
 * Checks a query before any database work. Client-controlled parts (cell, epochs, collection, cursor) fail
 * as ServiceErrors; the limit is the caller's to bound (the endpoint caps it), so a bad one is a RangeError.
 */
export function checkRecordQuery(query: RecordQuery): { after: RecordSortKey | null } {
  if (!Number.isSafeInteger(query.limit) || query.limit < 1) {
    throw new RangeError(`limit must be a positive integer: ${query.limit}`);
  }
  if (query.cell !== undefined && !isCell(query.cell)) {
    throw new ServiceError('invalid_cell', `cell is not a valid H3 cell: ${JSON.stringify(query.cell)}`);
  }
  for (const [name, value] of [
    ['epoch_start', query.epochStart],
    ['epoch_end', query.epochEnd],
  ] as const) {
    if (value !== undefined && !isWhole(value)) {
      throw new ServiceError('invalid_request', `${name} must be an integer ≥ 0`);
    }
  }
  if (query.collection !== undefined && !Object.hasOwn(COLLECTION_PAYLOAD_TYPES, query.collection)) {
    throw new ServiceError('invalid_request', `unknown collection ${JSON.stringify(query.collection)}`);
  }
  return { after: query.cursor === undefined ? null : decodeRecordCursor(query.cursor) };
}

/** The cell and all its ancestors, resolution 0 first: what a containment query on an array matches. */
export function cellAncestors(cell: string): string[] {
  const res = getResolution(cell);
  const out: string[] = [];
  for (let r = 0; r < res; r++) out.push(cellToParent(cell, r));
  out.push(cell);
  return out;
}

// H3 index bits: 4 resolution bits at 52..55, then 15 digits of 3 bits each, digit 1 highest; digits past
// the cell's resolution are 7 (all ones). cellToParent keeps the digit prefix, so containment is a prefix.
const RESOLUTION_BITS = 0xfn << 52n;

/**
 * A cell as an integer whose order groups descendants: the H3 index without its resolution bits. Every
 * descendant of a cell (and the cell itself) falls in `cellKeyRange(cell)`, and nothing else does: a cell
 * outside shares no digit prefix, and a coarser cell has a 7 where the range's cell has a digit 0..6.
 */
export function cellKey(cell: string): bigint {
  return BigInt(`0x${cell}`) & ~RESOLUTION_BITS;
}

/** Inclusive range of `cellKey` over the cell and its descendants at any finer resolution. */
export function cellKeyRange(cell: string): { lo: bigint; hi: bigint } {
  const hi = cellKey(cell); // its unused digits are already all ones
  const freeBits = 3n * BigInt(15 - getResolution(cell));
  return { lo: hi & ~((1n << freeBits) - 1n), hi };
}
