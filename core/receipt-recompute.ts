/**
 * Recomputing a verified receipt (docs/protocol.md §15.4): the pure parts. What each step's outcome may be, how it
 * is printed and what exit code a set of outcomes gives; which recorded values differ from recomputed ones; the
 * byte ranges an imagery record lists and the hash they must give; what an inference record binds. The fetching and
 * the per-type recomputations live in activities/recompute/ (they read upstreams and decode images).
 */
import { canonicalJson } from './canonical-json.js';
import { sha256Hex } from './hash.js';
import type { ComputeResponse, StepResult } from './job-record.js';
import type { ProofRecord } from './proof-types.js';
import type { JobReceipt } from './receipt.js';

/**
 * - `recomputed`: the inputs the record names were fetched, match their recorded hashes, and the step's answer
 *   recomputed from them is the recorded one, bit for bit.
 * - `differs`: a recorded input or the answer recomputed from the inputs is not what the receipt says.
 * - `upstream_changed`: a live upstream (a map tile) now serves other bytes than it did; not a forgery.
 * - `inputs_unavailable`: an input could not be fetched (network, refused URL, size bound); nothing is concluded.
 * - `not_recomputable`: the step's answer cannot be derived from public inputs (a model's answer, a catalog's
 *   metadata); the outcome shows what the receipt binds instead.
 */
export const RECOMPUTE_KINDS = [
  'recomputed',
  'differs',
  'upstream_changed',
  'inputs_unavailable',
  'not_recomputable',
] as const;
export type RecomputeKind = (typeof RECOMPUTE_KINDS)[number];

export interface RecomputeDifference {
  /** Path of the field in the step's output (e.g. `result.meanNdvi`) or in its record (`assets.red.sha256`). */
  field: string;
  recorded: unknown;
  recomputed: unknown;
}

export interface StepRecomputation {
  step_id: string;
  /** The step type, with the operation or record type when it says more (`image_process ndvi`). */
  what: string;
  kind: RecomputeKind;
  /** Why (inputs unavailable, not recomputable, upstream changed) or what was compared (recomputed). */
  detail: string;
  /** `differs`: the fields that differ, the output's first. */
  differences?: RecomputeDifference[];
  /** `not_recomputable`: what the receipt binds of the step (model, provider, prompt and answer hashes …). */
  bound?: Record<string, unknown>;
}

/**
 * Exit codes of `geofabric receipt verify --recompute` (also in its `--help`): 0 every step recomputed or not
 * recomputable; 1 the offline verification failed (nothing was fetched); 2 usage or an unreadable file; 3 some
 * step differs; 4 none differs, but some input was unavailable or an upstream changed (nothing could be concluded
 * for those steps).
 */
export const RECOMPUTE_EXIT = { ok: 0, invalid: 1, usage: 2, differs: 3, unconfirmed: 4 } as const;

export function recomputeExitCode(steps: readonly StepRecomputation[]): number {
  if (steps.some((s) => s.kind === 'differs')) return RECOMPUTE_EXIT.differs;
  if (steps.some((s) => s.kind === 'inputs_unavailable' || s.kind === 'upstream_changed')) {
    return RECOMPUTE_EXIT.unconfirmed;
  }
  return RECOMPUTE_EXIT.ok;
}

const SHOWN_CHARS = 80;
/** A value as a line shows it: JSON, hashes cut to 12 hex digits, long values cut. */
export function shown(value: unknown): string {
  if (typeof value === 'string' && /^[0-9a-f]{64}$/.test(value)) return `${value.slice(0, 12)}…`;
  const text = value === undefined ? 'absent' : JSON.stringify(value);
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS - 1)}…` : text;
}

/** One line per step: `<step> (<what>): recomputed | differs (field: recorded vs recomputed) | … (why)`. */
export function recomputeLine(step: StepRecomputation): string {
  const head = `${step.step_id} (${step.what}): `;
  switch (step.kind) {
    case 'recomputed':
      return `${head}recomputed (${step.detail})`;
    case 'differs': {
      const diffs = (step.differences ?? [])
        .map((d) => `${d.field}: ${shown(d.recorded)} vs ${shown(d.recomputed)}`)
        .join('; ');
      return `${head}differs (${diffs || step.detail})`;
    }
    case 'upstream_changed':
      return `${head}upstream changed (${step.detail})`;
    case 'inputs_unavailable':
      return `${head}inputs unavailable (${step.detail})`;
    case 'not_recomputable': {
      const bound = Object.entries(step.bound ?? {})
        .map(([k, v]) => `${k} ${typeof v === 'string' ? shown(v).replace(/^"|"$/g, '') : shown(v)}`)
        .join(', ');
      return `${head}not recomputable (${step.detail}${bound ? `; bound: ${bound}` : ''})`;
    }
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The leaves where `recomputed` is not `recorded`, as paths (`result.meanNdvi`, `assets[0]`), at most `limit`;
 * empty when both are the same JSON value (canonical JSON, so numbers compare bit for bit as JSON writes them).
 */
export function jsonDifferences(recorded: unknown, recomputed: unknown, limit = 3, path = ''): RecomputeDifference[] {
  if (canonicalJson(recorded ?? null) === canonicalJson(recomputed ?? null)) return [];
  const out: RecomputeDifference[] = [];
  if (isObj(recorded) && isObj(recomputed)) {
    const keys = [...new Set([...Object.keys(recorded), ...Object.keys(recomputed)])].sort();
    for (const key of keys) {
      if (out.length >= limit) break;
      out.push(...jsonDifferences(recorded[key], recomputed[key], limit - out.length, path ? `${path}.${key}` : key));
    }
    return out;
  }
  if (Array.isArray(recorded) && Array.isArray(recomputed) && recorded.length === recomputed.length) {
    for (let i = 0; i < recorded.length && out.length < limit; i++) {
      out.push(...jsonDifferences(recorded[i], recomputed[i], limit - out.length, `${path}[${i}]`));
    }
    return out;
  }
  return [{ field: path || '(value)', recorded, recomputed }];
}

/** At most this many ranges per asset, and bytes per range: a receipt is a stranger's, its lists are bounded. */
export const MAX_RANGES_PER_ASSET = 4096;
export const MAX_RANGE_BYTES = 64 * 1024 * 1024;

/** One asset an imagery record lists (activities/imagery/asset-client.ts): its URL, ranges and their hash. */
export interface RecordedAsset {
  band: string;
  href: string;
  sha256: string;
  /** [offset, length], in hash order. */
  ranges: [number, number][];
}

/** The assets of an imagery payload, checked for shape and bounds; a string says what is wrong. */
export function recordedAssets(payload: unknown): RecordedAsset[] | string {
  if (!isObj(payload) || !Array.isArray(payload.assets)) return 'the record lists no assets';
  const assets: RecordedAsset[] = [];
  for (const [i, a] of payload.assets.entries()) {
    if (!isObj(a) || typeof a.band !== 'string' || typeof a.href !== 'string' || typeof a.sha256 !== 'string') {
      return `assets[${i}] has no band, href and sha256`;
    }
    if (!Array.isArray(a.ranges) || a.ranges.length > MAX_RANGES_PER_ASSET) {
      return `assets[${i}] lists no ranges, or more than ${MAX_RANGES_PER_ASSET}`;
    }
    const ranges: [number, number][] = [];
    for (const r of a.ranges) {
      if (
        !Array.isArray(r) ||
        r.length !== 2 ||
        !Number.isSafeInteger(r[0]) ||
        !Number.isSafeInteger(r[1]) ||
        (r[0] as number) < 0 ||
        (r[1] as number) < 1 ||
        (r[1] as number) > MAX_RANGE_BYTES
      ) {
        return `assets[${i}] has a range that is not [offset, length] within ${MAX_RANGE_BYTES} bytes`;
      }
      ranges.push([r[0] as number, r[1] as number]);
    }
    assets.push({ band: a.band, href: a.href, sha256: a.sha256, ranges });
  }
  return assets;
}

/** The hash a record gives an asset's bytes: SHA-256 over its range responses concatenated in recorded order. */
export function assetBytesHash(pieces: readonly Uint8Array[]): string {
  const total = pieces.reduce((n, p) => n + p.length, 0);
  const all = new Uint8Array(total);
  let at = 0;
  for (const piece of pieces) {
    all.set(piece, at);
    at += piece.length;
  }
  return sha256Hex(all);
}

/** A step of the receipt with what recomputing it starts from. */
export interface ReceiptStep {
  index: number;
  answer: StepResult;
  /** The step as the requester signed it. */
  request: Obj;
  /** The step's record, when it wrote one and the receipt holds it. */
  record: ProofRecord | null;
}

/** Every answered step, with its signed request step and its record. */
export function receiptSteps(receipt: JobReceipt): ReceiptStep[] {
  const job: ComputeResponse | null = receipt.job;
  const requested = Array.isArray(receipt.request.body.steps) ? (receipt.request.body.steps as unknown[]) : [];
  return (job?.steps ?? []).map((answer, index) => {
    const entry = receipt.records.find((r) => r.role === 'step' && r.step_id === answer.id);
    const request = requested[index];
    return { index, answer, request: isObj(request) ? request : {}, record: entry?.record ?? null };
  });
}

/** What a `hive/inference` record binds: a model's answer is not recomputable, but this is what was signed. */
export function inferenceBound(payload: unknown): Record<string, unknown> {
  const p = isObj(payload) ? payload : {};
  const pick = ['model', 'provider', 'worker_pk', 'prompt_sha256', 'answer_sha256', 'tokens_in', 'tokens_out'];
  return Object.fromEntries(pick.filter((k) => p[k] !== undefined).map((k) => [k, p[k]]));
}
