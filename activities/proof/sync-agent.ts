import { signRequestBody } from '../../core/gates/signature.js';
import type { KeyPair } from '../../core/identity.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import type { ProofStore } from '../../store/proof-store.js';
import { sealId } from './proof-ingest.js';

export interface SyncAgentDeps {
  /** The node's local store. */
  store: ProofStore;
  /** Base URL of the central store's gateway (`{base_url}`; the agent posts to `/store/sync` and `/store/epochs`). */
  centralUrl: string;
  /** The node key that signs each push (gate 1 of the central gateway). */
  signer: KeyPair;
  /** docs/protocol.md §2.6: every 30 s. */
  intervalMs?: number;
  batchSize?: number;
  /** Backoff after a failed round: initial, doubled per consecutive failure, capped. */
  backoff?: { initialMs: number; maxMs: number };
  requestTimeoutMs?: number;
  logger?: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Told how each scheduled round ended (the gateway's metrics: sync lag is the time since the last ok). */
  onRound?: (outcome: { ok: boolean }) => void;
}

export interface SyncRound {
  records: number;
  seals: number;
  /** Items the central store refused for good (conflict, sealed epoch, invalid): logged, not retried. */
  refused: number;
}

interface BatchAnswer {
  accepted: string[];
  duplicates: string[];
  rejected: { id: string; error: string; detail: string }[];
}

/** Told after each acknowledged batch, so a one-off sync from the CLI can show progress. */
export type SyncProgress = (kind: 'records' | 'seals', acknowledged: number) => void;

export class SyncError extends Error {
  override name = 'SyncError';
}

/**
 * Pushes a node's unsynced records, then its seals, to the central store. Crash-safe by construction:
 * an item is marked synced only after the central store acknowledged it, and the central store is
 * idempotent by record id and by (sealer, epoch), so a batch re-sent after a crash or a lost answer
 * arrives exactly once. Seals go only after every record is acknowledged, because the central store
 * accepts a seal only over records it holds.
 */
export function createSyncAgent(deps: SyncAgentDeps) {
  const intervalMs = deps.intervalMs ?? 30_000;
  const backoff = deps.backoff ?? { initialMs: 1_000, maxMs: 5 * 60_000 };
  const timeoutMs = deps.requestTimeoutMs ?? 30_000;
  let batchSize = deps.batchSize ?? 200;

  async function push(
    path: string,
    key: 'records' | 'seals',
    items: readonly unknown[],
    extra: Record<string, unknown> = {},
  ): Promise<BatchAnswer> {
    const { body, signature } = signRequestBody(deps.signer.secretKey, { [key]: items, ...extra });
    let res: Response;
    try {
      res = await fetch(new URL(path, deps.centralUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-idn-signature': signature },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new SyncError(`${path}: ${(error as Error).message}`, { cause: error });
    }
    const text = await res.text();
    if (res.status === 413 && items.length > 1) {
      batchSize = Math.max(1, Math.floor(items.length / 2)); // the central body limit is smaller than our batch
      throw new SyncError(`${path}: batch of ${items.length} too large; retrying with ${batchSize}`);
    }
    let answer: Partial<BatchAnswer> = {};
    try {
      answer = JSON.parse(text) as Partial<BatchAnswer>;
    } catch {
      // handled below: no lists means no acknowledgement
    }
    if (!Array.isArray(answer.accepted) || !Array.isArray(answer.duplicates) || !Array.isArray(answer.rejected)) {
      throw new SyncError(`${path}: HTTP ${res.status} without acknowledgement: ${text.slice(0, 200)}`);
    }
    return answer as BatchAnswer;
  }

  /**
   * Ids the central store is done with: stored (new or already there) or refused for good. `seal_required` is
   * not for good: the record's epoch is past the sync window and not sealed here yet; it goes again with its seal.
   */
  function settled(answer: BatchAnswer, kind: string): Set<string> {
    const final = answer.rejected.filter((r) => r.error !== 'seal_required');
    for (const r of final)
      deps.logger?.error({ id: r.id, error: r.error, detail: r.detail }, `central store refused ${kind}`);
    return new Set([...answer.accepted, ...answer.duplicates, ...final.map((r) => r.id)]);
  }

  /** This node's seals of the epochs of `records`: the central store takes records past its window only with them. */
  async function sealsOfRecords(records: readonly ProofRecord[]): Promise<Record<string, unknown>> {
    const epochs = new Map<string, { pk: string; epoch: number }>();
    for (const r of records) epochs.set(`${r.address.pk}:${r.address.epoch}`, r.address);
    const seals: Seal[] = [];
    for (const { pk, epoch } of epochs.values()) {
      const seal = await deps.store.getSeal(pk, epoch);
      if (seal !== null) seals.push(seal);
    }
    return seals.length > 0 ? { seals } : {};
  }

  /**
   * Pushes batches from `next` until it is empty, marking what each answer settled (`held`: the ids it stored
   * or already held, not those it refused). An answer that settles nothing of its batch stops the round, so a
   * misbehaving central store cannot spin the loop.
   */
  async function drain<T>(
    path: string,
    key: 'records' | 'seals',
    next: (limit: number) => Promise<T[]>,
    idOf: (item: T) => string,
    mark: (items: T[], held: ReadonlySet<string>) => Promise<void>,
    onPushed: SyncProgress | undefined,
    extra: (batch: T[]) => Promise<Record<string, unknown>> = async () => ({}),
  ): Promise<{ pushed: number; refused: number }> {
    let pushed = 0;
    let refused = 0;
    for (;;) {
      const batch = await next(batchSize);
      if (batch.length === 0) return { pushed, refused };
      const answer = await push(path, key, batch, await extra(batch));
      const done = settled(answer, key === 'records' ? 'record' : 'seal');
      const acked = batch.filter((item) => done.has(idOf(item)));
      if (acked.length === 0) {
        // Records past the central window wait for this node's sealer: the next round sends them with the seal.
        if (answer.rejected.length > 0 && answer.rejected.every((r) => r.error === 'seal_required')) {
          deps.logger?.warn({ waiting: batch.length }, 'records wait for their epoch seal before they sync');
          return { pushed, refused };
        }
        throw new SyncError(`${path} acknowledged none of the batch`);
      }
      await mark(acked, new Set([...answer.accepted, ...answer.duplicates]));
      pushed += acked.length;
      onPushed?.(key, acked.length);
      refused += answer.rejected.filter((r) => r.error !== 'seal_required').length;
    }
  }

  async function syncOnce(options: { onPushed?: SyncProgress } = {}): Promise<SyncRound> {
    // Records first: the central store accepts a seal only over records it already holds.
    const records = await drain<ProofRecord>(
      '/store/sync',
      'records',
      (n) => deps.store.unsyncedRecords(n),
      (r) => r.id,
      (acked) => deps.store.markRecordsSynced(acked.map((r) => r.id)),
      options.onPushed,
      sealsOfRecords,
    );
    const seals = await drain<Seal>(
      '/store/epochs',
      'seals',
      (n) => deps.store.unsyncedSeals(n),
      sealId,
      async (acked, held) => {
        // What the central store holds, before it counts as synced: a crash in between pushes it again, and the
        // answer is `duplicate`. A local store may prune a held epoch's records (docs/operations.md "Retention").
        await deps.store.markSealsHeld?.(acked.filter((seal) => held.has(sealId(seal))));
        await deps.store.markSealsSynced(acked);
      },
      options.onPushed,
    );
    return { records: records.pushed, seals: seals.pushed, refused: records.refused + seals.refused };
  }

  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;
  let failures = 0;

  function schedule(delay: number): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = syncOnce().then(
        () => {
          failures = 0;
          tell(true);
        },
        (error: unknown) => {
          failures += 1;
          deps.logger?.warn({ err: error, failures }, 'proof sync failed; backing off');
          tell(false);
        },
      );
      void running.then(() => schedule(failures === 0 ? intervalMs : retryDelay()));
    }, delay);
    timer.unref();
  }

  // A throwing hook must not break the schedule (the next round is chained on this one).
  const tell = (ok: boolean) => {
    try {
      deps.onRound?.({ ok });
    } catch {
      // ignored
    }
  };

  // Full jitter, so many workers recovering from one outage do not retry in step.
  const retryDelay = () => Math.random() * Math.min(backoff.maxMs, backoff.initialMs * 2 ** (failures - 1));

  return {
    syncOnce,
    start(): void {
      if (!stopped) return;
      stopped = false;
      schedule(0);
    },
    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

export type SyncAgent = ReturnType<typeof createSyncAgent>;
