/**
 * The inference audit views (`GET /svc/inference/recent`, `GET /svc/inference/stats`, docs/protocol.md §4.1; shapes are
 * ours) and the "jobs in the last hour" of `/svc/status`.
 *
 * Per process, in memory, since `since` (its start): the last 100 inferences, hourly buckets for 168 hours,
 * and a minute ring for the last hour. A restart or a second gateway starts from zero; the durable,
 * verifiable account is the proof store (one `hive/inference` record per inference, `/store/query`).
 *
 * ```
 * stats = { hours, since, buckets: [bucket], totals: counts }
 * bucket = { epoch, start, ...counts }        (every requested hour, zero-filled, oldest first)
 * counts = { requests, errors, tokens_in, tokens_out, cost, cold_starts,
 *            latency_ms: { p50, p95, p99, max } | null,
 *            by_provider: { worker, backbone }: tally, by_model: { <model>: tally } }
 * tally = { requests, tokens_in, tokens_out, cost }
 * ```
 * Latency percentiles are nearest-rank over at most 10,000 samples per hour (a uniform reservoir beyond).
 */
import { createHourlyBuckets } from '../../core/hourly-buckets.js';
import { fromCreditUnits, toCreditUnits } from '../../core/pricing.js';
import type { InferencePayload } from './inference-record.js';

export const MAX_RECENT = 100;
const MAX_SAMPLES = 10_000;

/** One row of `/svc/inference/recent`: the audit fields of docs/protocol.md §2.6 and where to find the record. */
export type RecentInference = Pick<
  InferencePayload,
  | 'job_id'
  | 'step_id'
  | 'provider'
  | 'model'
  | 'requested_model'
  | 'worker_pk'
  | 'tokens_in'
  | 'tokens_out'
  | 'latency_ms'
  | 'cold_start'
  | 'fallback_reason'
  | 'cost'
  | 'epoch'
  | 'job_hash'
  | 'h3_cell'
> & { record_id: string; at: string };

/** The public row of a record: prompt and answer hashes and the API key id stay in the record. */
export function recentEntry(p: InferencePayload, recordId: string, at: string): RecentInference {
  return {
    job_id: p.job_id,
    step_id: p.step_id,
    provider: p.provider,
    model: p.model,
    requested_model: p.requested_model,
    worker_pk: p.worker_pk,
    tokens_in: p.tokens_in,
    tokens_out: p.tokens_out,
    latency_ms: p.latency_ms,
    cold_start: p.cold_start,
    fallback_reason: p.fallback_reason,
    cost: p.cost,
    epoch: p.epoch,
    job_hash: p.job_hash,
    h3_cell: p.h3_cell,
    record_id: recordId,
    at,
  };
}

interface Tally {
  requests: number;
  tokens_in: number;
  tokens_out: number;
  costUnits: number;
}
interface Bucket {
  all: Tally;
  errors: number;
  coldStarts: number;
  latencies: number[];
  seen: number;
  byProvider: Map<string, Tally>;
  byModel: Map<string, Tally>;
}

const tally = (): Tally => ({ requests: 0, tokens_in: 0, tokens_out: 0, costUnits: 0 });
const bucket = (): Bucket => ({
  all: tally(),
  errors: 0,
  coldStarts: 0,
  latencies: [],
  seen: 0,
  byProvider: new Map(),
  byModel: new Map(),
});
const addTally = (into: Tally, from: Tally) => {
  into.requests += from.requests;
  into.tokens_in += from.tokens_in;
  into.tokens_out += from.tokens_out;
  into.costUnits += from.costUnits;
};
const showTally = ({ costUnits, ...rest }: Tally) => ({ ...rest, cost: fromCreditUnits(costUnits) });
const tallyIn = (map: Map<string, Tally>, key: string) => {
  let t = map.get(key);
  if (!t) map.set(key, (t = tally()));
  return t;
};

function percentiles(samples: number[]) {
  if (samples.length === 0) return null;
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: sorted[sorted.length - 1]! };
}

function showBuckets(parts: Bucket[]) {
  const merged = bucket();
  for (const b of parts) {
    addTally(merged.all, b.all);
    merged.errors += b.errors;
    merged.coldStarts += b.coldStarts;
    merged.latencies.push(...b.latencies);
    for (const [k, t] of b.byProvider) addTally(tallyIn(merged.byProvider, k), t);
    for (const [k, t] of b.byModel) addTally(tallyIn(merged.byModel, k), t);
  }
  const byProvider = { worker: tally(), backbone: tally() } as Record<string, Tally>;
  for (const [k, t] of merged.byProvider) byProvider[k] = t;
  return {
    ...showTally(merged.all),
    errors: merged.errors,
    cold_starts: merged.coldStarts,
    latency_ms: percentiles(merged.latencies),
    by_provider: Object.fromEntries(Object.entries(byProvider).map(([k, t]) => [k, showTally(t)])),
    by_model: Object.fromEntries([...merged.byModel].map(([k, t]) => [k, showTally(t)])),
  };
}

export function createInferenceStats(startedAtMs: number, random: () => number = Math.random) {
  const recent: RecentInference[] = [];
  const buckets = createHourlyBuckets(bucket);
  const minutes = new Array<{ minute: number; count: number }>(60);

  return {
    /** A completed inference, as recorded. */
    add(entry: RecentInference, nowMs: number): void {
      recent.push(entry);
      if (recent.length > MAX_RECENT) recent.shift();
      const b = buckets.at(entry.epoch);
      const one: Tally = {
        requests: 1,
        tokens_in: entry.tokens_in,
        tokens_out: entry.tokens_out,
        costUnits: toCreditUnits(entry.cost),
      };
      addTally(b.all, one);
      addTally(tallyIn(b.byProvider, entry.provider), one);
      addTally(tallyIn(b.byModel, entry.model), one);
      if (entry.cold_start) b.coldStarts++;
      b.seen++;
      if (b.latencies.length < MAX_SAMPLES) b.latencies.push(entry.latency_ms);
      else {
        const slot = Math.floor(random() * b.seen);
        if (slot < MAX_SAMPLES) b.latencies[slot] = entry.latency_ms;
      }
      const minute = Math.floor(nowMs / 60_000);
      const slot = minutes[minute % 60];
      if (slot?.minute === minute) slot.count++;
      else minutes[minute % 60] = { minute, count: 1 };
    },
    /** A failed inference (upstream failure, no worker …), counted per hour. */
    error(epoch: number): void {
      buckets.at(epoch).errors++;
    },
    /** Newest first. */
    recent: (limit: number): RecentInference[] => recent.slice(-limit).reverse(),
    /** Inferences completed in the 60 minutes before `nowMs`. */
    lastHour(nowMs: number): number {
      const now = Math.floor(nowMs / 60_000);
      return minutes.reduce((sum, s) => (s && s.minute > now - 60 && s.minute <= now ? sum + s.count : sum), 0);
    },
    report(hours: number, currentEpoch: number, nowMs: number) {
      const parts: Bucket[] = [];
      const out = buckets.window(hours, currentEpoch, nowMs).map(({ epoch, start, bucket: b = bucket() }) => {
        parts.push(b);
        return { epoch, start, ...showBuckets([b]) };
      });
      return { hours, since: new Date(startedAtMs).toISOString(), buckets: out, totals: showBuckets(parts) };
    },
  };
}
export type InferenceStats = ReturnType<typeof createInferenceStats>;
