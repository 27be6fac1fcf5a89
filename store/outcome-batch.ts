/**
 * Worker completions off the answer's path (docs/architecture.md "Chat completions"): a WorkerRegistry that
 * counts a chat completion's outcome in memory (`countCompleted`, no I/O) and writes the counted outcomes to the
 * registry it wraps in batches, `delayMs` after the first of a batch (or at once past `maxBatch`), on `flush`,
 * and on `close` (graceful shutdown).
 *
 * Reads through this object see every counted completion at once: `get`, `list` and the records the other
 * methods return add the not-yet-written completions to `jobs_completed`. The trust tier is the stored one until
 * the batch lands: a promotion waits for the write (at most `delayMs`), which only errs towards less trust, and a
 * failure is never counted here (`recordOutcome` writes through, after the counted completions, in their order),
 * so a demotion is never late. A read never overlaps a batch being written: reads started before a batch finish
 * first, reads started during it wait for it, so a completion is never seen twice or not at all.
 *
 * What a crash (kill -9) loses is the unwritten batch of counters (at most `delayMs` of completions): their proof
 * records are queued apart (activities/proof/record-batcher.ts) and the ledger is fed by compound jobs, not by
 * these counters, so the loss is a worker's `jobs_completed` lower by that many, and its promotion later. Another
 * process sharing the store sees them once written. A batch the store refuses is kept and tried again (writes are
 * idempotent by job: a retry never counts twice), up to `maxAttempts` times.
 *
 * It also keeps, per worker, the record its last `get` read (`recent`): chat dispatch reads its own worker's row
 * on every completion, and serving that row for up to a second instead was the largest cut left on the chat
 * answer's path (docs/benchmarks.md, chat). Any write through this object forgets every kept record, so this
 * process sees its own writes at once (a failure's demotion, a leave); another process's are seen within the age
 * the caller allows.
 */
import type { WorkerRecord, WorkerRegistry } from './worker-registry.js';

const KEPT_MAX = 1_000;

export interface OutcomeBatchOptions {
  /** How long the first counted completion waits for its batch to be written (ms, default 100). */
  delayMs?: number;
  /** Counted completions that start a write at once (default 500). */
  maxBatch?: number;
  /** Writes of one completion tried before it is dropped and reported (default 5). */
  maxAttempts?: number;
  /** Told of a completion dropped after `maxAttempts` failed writes. */
  onDropped?: (error: unknown, dropped: { pk: string; jobId: string }) => void;
}

export interface OutcomeBatch extends WorkerRegistry {
  countCompleted(pk: string, jobId: string): void;
  recent(pk: string, maxAgeMs: number): WorkerRecord | undefined;
  /** Writes every completion counted so far; resolves once they are written (or kept for a retry). */
  flush(): Promise<void>;
}

interface Counted {
  pk: string;
  jobId: string;
  attempts: number;
}

export function createOutcomeBatch(inner: WorkerRegistry, options: OutcomeBatchOptions = {}): OutcomeBatch {
  const delayMs = options.delayMs ?? 100;
  const maxBatch = options.maxBatch ?? 500;
  const maxAttempts = options.maxAttempts ?? 5;
  let pending: Counted[] = [];
  /** Per worker, the completions counted and not yet written (pending or in the batch being written). */
  const unwritten = new Map<string, number>();
  /** (pk, job) pairs counted and not yet written: a job counts once, as the store would count it. */
  const counted = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let readers = 0;
  let readersDone: (() => void) | undefined;
  let closed = false;
  /**
   * Per registered worker, its record (unfolded) as a `get` read it, and when (performance.now()). At most
   * KEPT_MAX: reads of many workers (GET /svc/workers/{pk}) start it again rather than grow it.
   */
  const kept = new Map<string, { record: WorkerRecord; at: number }>();
  /** Moves on every write through this object: a read that started before a write keeps nothing. */
  let writes = 0;
  const wrote = () => {
    writes++;
    kept.clear();
  };

  const fold = <T extends WorkerRecord | null>(record: T): T => {
    if (record === null) return record;
    const extra = unwritten.get(record.pk);
    return extra === undefined ? record : { ...record, jobs_completed: record.jobs_completed + extra };
  };

  /** A read of the wrapped registry, folded; never overlapping a batch being written. */
  async function read<T>(run: () => Promise<T>, folded: (value: T) => T): Promise<T> {
    while (writing) await writing;
    readers++;
    try {
      return folded(await run());
    } finally {
      if (--readers === 0) readersDone?.();
    }
  }
  const readOne = (run: () => Promise<WorkerRecord | null>) => read(run, fold);

  const done = (item: Counted) => {
    counted.delete(`${item.pk}\n${item.jobId}`);
    const left = (unwritten.get(item.pk) ?? 1) - 1;
    if (left === 0) unwritten.delete(item.pk);
    else unwritten.set(item.pk, left);
  };

  async function writeBatch(): Promise<void> {
    if (readers > 0) await new Promise<void>((resolve) => (readersDone = resolve));
    readersDone = undefined;
    const batch = pending;
    pending = [];
    const retry: Counted[] = [];
    if (inner.recordCompletions && batch.length > 1) {
      try {
        // All or none: on a failure each is tried alone below, so one bad entry keeps none of the others back.
        await inner.recordCompletions(batch);
        for (const item of batch) done(item);
        wrote(); // a promotion on the trust ladder lands with its batch
        return;
      } catch {
        // tried one by one below
      }
    }
    for (const item of batch) {
      try {
        await inner.recordOutcome(item.pk, 'completed', item.jobId);
        done(item);
        wrote();
      } catch (error) {
        if (++item.attempts < maxAttempts) retry.push(item);
        else {
          done(item);
          options.onDropped?.(error, { pk: item.pk, jobId: item.jobId });
        }
      }
    }
    if (retry.length > 0) {
      pending = [...retry, ...pending];
      if (!closed) schedule();
    }
  }

  function schedule(): void {
    timer ??= setTimeout(() => {
      timer = undefined;
      void flush();
    }, delayMs);
    timer.unref();
  }

  /** Writes what is pending now; a batch already being written finishes first. */
  function flush(): Promise<void> {
    if (timer) {
      clearTimeout(timer);
      timer = undefined;
    }
    const run = async (): Promise<void> => {
      while (writing) await writing;
      if (pending.length === 0) return;
      const current = writeBatch().finally(() => {
        if (writing === current) writing = undefined;
      });
      writing = current;
      await current;
    };
    return run();
  }

  /**
   * A write of the wrapped registry that returns the worker, read as `readOne` reads: every kept record is
   * forgotten before it starts and once it is done.
   */
  const writeOne = <T extends WorkerRecord | null>(run: () => Promise<T>) =>
    read(async () => {
      wrote();
      try {
        return await run();
      } finally {
        wrote();
      }
    }, fold);

  return {
    countCompleted(pk, jobId) {
      if (typeof jobId !== 'string' || jobId.length === 0) throw new RangeError('countCompleted: a job id is required');
      const key = `${pk}\n${jobId}`;
      if (counted.has(key)) return;
      counted.add(key);
      pending.push({ pk, jobId, attempts: 0 });
      unwritten.set(pk, (unwritten.get(pk) ?? 0) + 1);
      if (pending.length >= maxBatch) void flush();
      else schedule();
    },
    flush,
    register: (registration, nowMs) => writeOne(() => inner.register(registration, nowMs)),
    heartbeat: (pk, seq, nowMs) => writeOne(() => inner.heartbeat(pk, seq, nowMs)),
    leave: (pk, seq, nowMs) => writeOne(() => inner.leave(pk, seq, nowMs)),
    get: (pk) => {
      const before = writes;
      return readOne(async () => {
        const record = await inner.get(pk);
        if (record !== null && writes === before) {
          if (kept.size >= KEPT_MAX) kept.clear();
          kept.set(pk, { record, at: performance.now() });
        }
        return record;
      });
    },
    recent(pk, maxAgeMs) {
      const hit = kept.get(pk);
      if (hit === undefined || performance.now() - hit.at > maxAgeMs) return undefined;
      return fold(hit.record);
    },
    list: () =>
      read(
        () => inner.list(),
        (records) => records.map(fold),
      ),
    async recordOutcome(pk, outcome, jobId) {
      // After the completions counted before it, as they happened: a failure must see them (the trust ladder).
      await flush();
      return writeOne(() => inner.recordOutcome(pk, outcome, jobId));
    },
    async close() {
      closed = true;
      // A batch the store refused is tried again here, until written or dropped after maxAttempts.
      while (pending.length > 0) await flush();
      await inner.close();
    },
  };
}
