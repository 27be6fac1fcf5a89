/**
 * The pending → submitted protocol shared by payments and epoch anchors (never pay twice).
 *
 *   1. Build and sign the envelope, record it `pending` (envelope + hash) BEFORE submitting.
 *   2. Submit; on success record `submitted` with the ledger.
 *   3. On a retry of a recorded envelope, first GET it by hash: found and successful → record `submitted`,
 *      never resubmit. Not found → resubmit the SAME envelope: it carries the same sequence number, and
 *      Stellar refuses a second use of a sequence, so that envelope can land at most once.
 *   4. Only when Horizon answers tx_bad_seq (the sequence was consumed) may a new envelope be built: the
 *      account's sequence is loaded FIRST, then the old hash and the account's transactions are searched
 *      for this memo, and only if neither landed is a new envelope built on the sequence loaded in step 4.
 *      Loading first matters: an old envelope that lands after the search must have used that very
 *      sequence, so it and the new envelope exclude each other.
 *   A transaction found on the ledger but failed (successful: false) paid nothing and burnt its sequence:
 *   a new envelope is built the same way.
 * Transient failures (network, timeout, 429, 5xx) retry with exponential backoff and jitter up to
 * `retry.attempts`; then, or on a refusal that is not tx_bad_seq, the record becomes `failed` (keeping its
 * envelope) for a later `retryOpen` sweep, which restarts at step 3.
 */
import { HorizonError, type HorizonClient } from './horizon.js';

export interface RetryPolicy {
  /** Submission attempts per drive (≥ 1). */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 500, maxDelayMs: 30_000 };

export interface SettlementLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** The submission fields common to LedgerSettlement and EpochAnchor. */
export interface SubmissionState {
  status: 'pending' | 'submitted' | 'failed';
  tx_hash: string | null;
  envelope_xdr: string | null;
  ledger: number | null;
  attempts: number;
  error: string | null;
}

/** Where every payment and anchor starts: nothing built, nothing sent. */
export const newSubmission = (): SubmissionState => ({
  status: 'pending',
  tx_hash: null,
  envelope_xdr: null,
  ledger: null,
  attempts: 0,
  error: null,
});

export interface SignedEnvelope {
  tx_hash: string;
  envelope_xdr: string;
}

export interface DriveDeps {
  horizon: HorizonClient;
  /** The source account (`G…`) whose sequence the envelopes use. */
  source: string;
  /** Hex memo hash identifying this submission among the source's transactions. */
  memoHex: string;
  /** Builds and signs a fresh envelope on the source's current sequence `sequence` (it uses sequence + 1). */
  build(sequence: string): SignedEnvelope;
  /** Persists a state (append a record). Must resolve only once durable. */
  save(state: SubmissionState): Promise<void>;
  retry: RetryPolicy;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  logger: SettlementLogger;
  /** For logs: the settlement id or anchor key. */
  label: string;
  memoSearchRecords?: number;
}

/** Equal jitter: half the exponential delay fixed, half random, so retries of many payments spread out. */
export function backoffDelay(retry: RetryPolicy, failures: number, random: () => number): number {
  const exp = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exp / 2 + random() * (exp / 2));
}

export const sleepMs = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Drives one submission to `submitted` or `failed`, starting from its latest record (null: nothing built
 * yet). Horizon failures end in a `failed` state (returned, not thrown); a failing `save` throws, leaving
 * the last durable record for the next drive.
 */
export async function driveSubmission(initial: SubmissionState | null, deps: DriveDeps): Promise<SubmissionState> {
  const { horizon, retry } = deps;
  let state: SubmissionState = initial ?? newSubmission();
  if (state.status === 'submitted') return state;

  const save = async (next: SubmissionState): Promise<SubmissionState> => {
    await deps.save(next);
    state = next;
    return next;
  };
  const landed = (ledger: number, txHash: string) =>
    save({ ...state, status: 'submitted', tx_hash: txHash, ledger, error: null });
  const rebuild = async (sequence: string, error: string | null) => {
    const envelope = deps.build(sequence);
    deps.logger.info({ id: deps.label, tx_hash: envelope.tx_hash, sequence }, 'built a settlement envelope');
    return save({ ...state, status: 'pending', ...envelope, ledger: null, error });
  };

  // Known fresh: built in this drive and never sent, so there is nothing to look up before submitting.
  let fresh = false;
  const attempts = Math.max(1, retry.attempts);
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) await deps.sleep(backoffDelay(retry, attempt - 1, deps.random));
    state = { ...state, attempts: state.attempts + 1 };
    try {
      if (state.envelope_xdr === null || state.tx_hash === null) {
        await rebuild(await horizon.accountSequence(deps.source), state.error);
        fresh = true;
      }
      if (!fresh) {
        const found = await horizon.transaction(state.tx_hash!);
        if (found !== null && found.successful) return await landed(found.ledger, found.hash);
        if (found !== null) {
          // On the ledger but failed: it paid nothing and its sequence is spent; only a new envelope can pay.
          await rebuild(await horizon.accountSequence(deps.source), `transaction ${found.hash} failed on the ledger`);
        }
      }
      fresh = false;
      const result = await horizon.submit(state.envelope_xdr!);
      return await landed(result.ledger, result.hash);
    } catch (error) {
      if (!(error instanceof HorizonError)) throw error; // a store failure: the last durable record stands
      fresh = false;
      if (error.badSeq) {
        const outcome = await afterBadSeq(error);
        if (outcome === 'rebuilt') fresh = true;
        else if (outcome !== 'unknown') return outcome;
        continue;
      }
      deps.logger.warn({ id: deps.label, attempt, err: error.message }, 'settlement submission failed');
      state = { ...state, error: error.message };
      if (!error.transient) break;
    }
  }
  return save({ ...state, status: 'failed' });

  /** Our sequence is spent: has this submission landed (by hash, then by memo)? If not, build anew. */
  async function afterBadSeq(error: HorizonError): Promise<SubmissionState | 'rebuilt' | 'unknown'> {
    try {
      const sequence = await horizon.accountSequence(deps.source); // before the search: see the header
      const own = await horizon.transaction(state.tx_hash!);
      if (own !== null && own.successful) return await landed(own.ledger, own.hash);
      const byMemo = await horizon.findByMemoHash(deps.source, deps.memoHex, deps.memoSearchRecords);
      if (byMemo !== null) {
        deps.logger.info({ id: deps.label, tx_hash: byMemo.hash }, 'found the settlement by its memo');
        return await landed(byMemo.ledger, byMemo.hash);
      }
      await rebuild(sequence, error.message);
      return 'rebuilt';
    } catch (inner) {
      if (!(inner instanceof HorizonError)) throw inner;
      // Could not settle the question now: keep the old envelope; the next attempt starts with its hash.
      state = { ...state, error: inner.message };
      return 'unknown';
    }
  }
}

/** Serializes async work per key within a process (a sweep and a job hook must not drive one id at once). */
/** Runs work one at a time per key. */
export type KeyedLock = <T>(key: string, work: () => Promise<T>) => Promise<T>;

export function createKeyedLock(): KeyedLock {
  const tails = new Map<string, Promise<unknown>>();
  return async <T>(key: string, work: () => Promise<T>): Promise<T> => {
    const previous = tails.get(key) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    try {
      return await run;
    } finally {
      if (tails.get(key) === tail) tails.delete(key);
    }
  };
}
