/**
 * The proof writer of serving paths: every tile serve and imagery run writes a record, and
 * signing plus a transaction per record would put ~100 µs of work on each request. Records are queued with
 * the epoch and time of the moment they were served, then appended in batches (one transaction each) off
 * the request path.
 *
 * Contract: `record` never throws and never blocks; `write` resolves once the record is durable (what an
 * activity needs before it reports success). A record that cannot be stored for good (its epoch was sealed
 * meanwhile, or it is invalid) is logged and dropped alone: a batch that fails that way is retried record
 * by record, so one bad entry never takes its neighbours with it. A full store (disk full, STORE_MAX_MB) fails
 * awaited writes at once with `storage_full` (an activity must not wait on space that may never come) and keeps
 * the fire-and-forget records for later. Other failures (the database is busy or gone) keep the queue and retry
 * on the next tick.
 */
import { ServiceError } from '../../core/errors.js';
import { epochAt } from '../../core/epoch.js';
import type { KeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import { isStorageFull } from '../../store/store-errors.js';

/** What a serving path records; the writer adds the epoch and time. */
export type RecordEntry = Omit<NewRecord, 'epoch' | 'written_at'>;

/** When a record was made: its `written_at` and its epoch. */
export interface RecordStamp {
  atMs: number;
  epoch: number;
}

export interface ProofWriter {
  /**
   * Queues the record; returns its id and epoch at once. `at` (from `stamp()`) dates a record queued after the
   * answer it accounts for, so it lands in the epoch that answer reported.
   */
  record(entry: RecordEntry, at?: RecordStamp): { id: string; epoch: number };
  /** The time and epoch of a record made now. */
  stamp(): RecordStamp;
  /**
   * Adds one serve to the open aggregate record of `key` in the current epoch, opening it with `open()` on
   * first use; the aggregate is queued at the next flush with `serves` (the items, in order), `serve_count`,
   * `first_served_at` and `last_served_at` added to its payload. For hot paths whose serves repeat (a cached
   * tile): one Ed25519 signature per key and flush instead of one per serve, every serve still listed.
   */
  aggregate(key: string, open: () => RecordEntry, serve: Record<string, unknown>): { id: string; epoch: number };
  /** Queues the record and resolves with it once stored (rejects if it can never be stored). */
  write(entry: RecordEntry): Promise<ProofRecord>;
  /** The epoch a record written now gets. */
  epochNow(): number;
  /** Resolves when everything queued so far has been attempted. */
  flush(): Promise<void>;
  /** Flushes and stops the timer; later records are refused by `write` and dropped by `record`. */
  close(): Promise<void>;
}

export interface RecordBatcherDeps {
  store: ProofStore;
  signer: KeyPair;
  clock: () => number;
  genesisMs: number;
  /** Epoch length: the hour (EPOCH_MS) unless a development node shortened it (EPOCH_SECONDS). */
  epochMs?: number;
  /**
   * Longest a queued or aggregated record waits before its batch is written (default 1 s: at 10k tile hits a
   * second that is a few dozen signed records a second, and the ~30 s sync interval dwarfs it anyway).
   * `write()` does not wait for it: an awaited record is written within a few ms, batched with its neighbours.
   */
  flushMs?: number;
  /**
   * How long an awaited record (`write`) waits for neighbours to share its transaction (default 5 ms, a gateway's
   * many concurrent requests). 0: written on the next turn of the event loop, with what arrived in this one (a
   * swarm worker, whose step waits on its record before its activity can complete).
   */
  awaitedWriteDelayMs?: number;
  /** Records per transaction. */
  maxBatch?: number;
  /** Queue length past which new records are dropped (and counted) rather than growing memory unbounded. */
  maxQueued?: number;
  /** Serves per aggregate record; a full aggregate is queued and the next serve opens a new one. */
  maxServes?: number;
  onError?: (error: unknown, context: { dropped: number }) => void;
}

interface Aggregate {
  entry: NewRecord;
  serves: Record<string, unknown>[];
  /** ms of the last serve; formatted once, when the aggregate closes. */
  last: number;
}

interface Pending {
  entry: NewRecord;
  settle?: { resolve: (record: ProofRecord) => void; reject: (error: unknown) => void };
}

const AWAITED_WRITE_DELAY_MS = 5;
const PERMANENT = new Set(['epoch_sealed', 'invalid_record']);
const isPermanent = (error: unknown) => error instanceof ServiceError && PERMANENT.has(error.code);

export function createRecordBatcher(deps: RecordBatcherDeps): ProofWriter & { dropped(): number } {
  const flushMs = deps.flushMs ?? 1000;
  const maxBatch = deps.maxBatch ?? 1000;
  const maxQueued = deps.maxQueued ?? 200_000;
  const maxServes = deps.maxServes ?? 1000;
  let queue: Pending[] = [];
  let aggregates = new Map<string, Aggregate>();
  let timer: NodeJS.Timeout | undefined;
  let soon: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const awaitedDelayMs = deps.awaitedWriteDelayMs ?? AWAITED_WRITE_DELAY_MS;
  const cancelSoon = (pending: NodeJS.Timeout | NodeJS.Immediate) =>
    awaitedDelayMs === 0 ? clearImmediate(pending as NodeJS.Immediate) : clearTimeout(pending as NodeJS.Timeout);
  let running: Promise<void> | undefined;
  let closed = false;
  let dropped = 0;

  const epochNow = () => epochAt(deps.clock(), deps.genesisMs, deps.epochMs);

  const stamp = (): RecordStamp => {
    const atMs = deps.clock();
    return { atMs, epoch: epochAt(atMs, deps.genesisMs, deps.epochMs) };
  };

  function enqueue(entry: RecordEntry, settle?: Pending['settle'], at = stamp()): { id: string; epoch: number } {
    const full: NewRecord = { ...entry, epoch: at.epoch, written_at: new Date(at.atMs).toISOString() };
    if (closed || queue.length >= maxQueued) {
      dropped++;
      const error = new Error(closed ? 'proof writer is closed' : 'proof writer queue is full');
      if (settle) settle.reject(error);
      else deps.onError?.(error, { dropped: 1 });
      return { id: full.id, epoch: full.epoch };
    }
    queue.push(settle ? { entry: full, settle } : { entry: full });
    if (queue.length >= maxBatch) void drain();
    else if (settle) drainSoon();
    else timer ??= setTimeout(() => void drain(), flushMs);
    return { id: full.id, epoch: full.epoch };
  }

  function aggregate(key: string, open: () => RecordEntry, serve: Record<string, unknown>) {
    const now = deps.clock();
    const epoch = epochAt(now, deps.genesisMs, deps.epochMs);
    const slot = `${epoch}\u0000${key}`;
    let agg = aggregates.get(slot);
    if (agg === undefined) {
      agg = { entry: { ...open(), epoch, written_at: new Date(now).toISOString() }, serves: [], last: now };
      aggregates.set(slot, agg);
      timer ??= setTimeout(() => void drain(), flushMs);
    }
    agg.serves.push(serve);
    agg.last = now;
    const placed = { id: agg.entry.id, epoch };
    if (agg.serves.length >= maxServes) {
      aggregates.delete(slot);
      closeAggregate(agg);
    }
    return placed;
  }

  /** Turns an aggregate into a queued record; kept in epoch order with what is queued already. */
  function closeAggregate(agg: Aggregate): void {
    const payload = {
      ...(agg.entry.payload as Record<string, unknown>),
      serve_count: agg.serves.length,
      first_served_at: agg.entry.written_at,
      last_served_at: new Date(agg.last).toISOString(),
      serves: agg.serves,
    };
    if (closed || queue.length >= maxQueued) {
      dropped++;
      deps.onError?.(new Error(closed ? 'proof writer is closed' : 'proof writer queue is full'), { dropped: 1 });
      return;
    }
    queue.push({ entry: { ...agg.entry, payload } });
    if (queue.length >= maxBatch) void drain();
  }

  function closeAggregates(): void {
    const open = aggregates;
    aggregates = new Map();
    for (const agg of open.values()) closeAggregate(agg);
    // Aggregates opened earlier than records queued after them: a writer's epochs only move forward.
    queue.sort((a, b) => a.entry.epoch - b.entry.epoch);
  }

  async function append(batch: Pending[]): Promise<void> {
    const stored = await deps.store.appendRecords(
      deps.signer,
      batch.map((p) => p.entry),
    );
    batch.forEach((p, i) => p.settle?.resolve(stored[i]!));
  }

  async function writeBatch(batch: Pending[]): Promise<Pending[]> {
    try {
      await append(batch);
      return [];
    } catch (error) {
      if (isStorageFull(error)) {
        const full = new ServiceError('storage_full', 'the proof store is full: the record was not stored');
        for (const p of batch) p.settle?.reject(full);
        dropped += batch.filter((p) => p.settle).length;
        return batch.filter((p) => !p.settle);
      }
      if (!isPermanent(error)) return batch; // transient: keep for the next tick
      if (batch.length === 1) {
        dropped++;
        batch[0]!.settle?.reject(error);
        if (!batch[0]!.settle) deps.onError?.(error, { dropped: 1 });
        return [];
      }
      const retry: Pending[] = [];
      for (const one of batch) retry.push(...(await writeBatch([one])));
      return retry;
    }
  }

  /** Someone awaits a record: write within a few ms, together with whatever else arrives meanwhile. */
  function drainSoon(): void {
    const go = () => {
      soon = undefined;
      void drain();
    };
    soon ??= awaitedDelayMs === 0 ? setImmediate(go) : setTimeout(go, awaitedDelayMs);
  }

  function drain(): Promise<void> {
    running ??= (async () => {
      if (timer) clearTimeout(timer);
      timer = undefined;
      closeAggregates();
      let failed: Pending[] = [];
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        failed = await writeBatch(batch);
        if (failed.length > 0) break;
      }
      if (failed.length > 0) {
        queue = [...failed, ...queue];
        deps.onError?.(new Error('appending proof records failed; retrying'), { dropped: 0 });
        if (!closed) timer ??= setTimeout(() => void drain(), Math.max(flushMs, 1000));
      }
      return failed.length === 0;
    })()
      .then(
        (ok) => {
          // Awaited records queued while this drain was writing: they need not wait for the timer.
          if (ok && !closed && queue.some((p) => p.settle)) drainSoon();
        },
        (error: unknown) => deps.onError?.(error, { dropped: 0 }),
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  }

  return {
    record: (entry, at) => enqueue(entry, undefined, at),
    stamp,
    aggregate,
    write: (entry) =>
      new Promise<ProofRecord>((resolve, reject) => {
        enqueue(entry, { resolve, reject });
      }),
    epochNow,
    flush: async () => {
      await running;
      await drain();
    },
    close: async () => {
      await running;
      await drain();
      closed = true;
      if (timer) clearTimeout(timer);
      if (soon) cancelSoon(soon);
      timer = undefined;
      soon = undefined;
      for (const p of queue) p.settle?.reject(new Error('proof writer closed before the record was stored'));
      dropped += queue.length;
      queue = [];
    },
    dropped: () => dropped,
  };
}
