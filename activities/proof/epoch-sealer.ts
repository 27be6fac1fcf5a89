/**
 * The auto-sealer (docs/protocol.md §3 "epoch open → epoch sealed"): seals each of a node's epochs once the
 * window has closed plus a grace period, empty epochs included, catching up on every epoch missed while the
 * node was down. `sealDueEpochs` is the whole logic with time passed in; `startAutoSealer` only runs it on a
 * timer (the embedded default; a Temporal Schedule can call `sealDueEpochs` the same way).
 */
import { performance } from 'node:perf_hooks';
import { ServiceError } from '../../core/errors.js';
import { EPOCH_MS } from '../../core/epoch.js';
import type { KeyPair } from '../../core/identity.js';
import { GENESIS_PREV_HASH, type Seal } from '../../core/proof-types.js';
import { createSealOverTree } from '../../core/seal.js';
import { checkEpochEnded } from '../../core/sync-window.js';
import type { ProofStore } from '../../store/proof-store.js';
import { startRepeatingTask, type RepeatingTask } from '../repeating-task.js';
import { sealOrphanedEpochs, type Custody } from './custodial-sealer.js';
import { extendSealLog } from './seal-log-keeper.js';

/**
 * Grace after an epoch's window ends before it is sealed. It exceeds the 30 s worker-to-central sync interval
 * (docs/protocol.md §8) so a record finished at the end of the hour is written and pushed before its epoch closes for good.
 */
export const DEFAULT_SEAL_GRACE_MS = 60_000;
/** How often the timer looks for due epochs; sealing lags the grace by at most this. */
export const DEFAULT_SEAL_INTERVAL_MS = 30_000;

/** Attempts per epoch when a record lands between reading the epoch and storing its seal. */
const SEAL_ATTEMPTS = 3;

export interface SealDeps {
  store: ProofStore;
  signer: KeyPair;
  /** ms since the Unix epoch. */
  now: number;
  genesisMs: number;
  graceMs: number;
  /** Epoch length: the hour (EPOCH_MS) unless a development node shortened it (EPOCH_SECONDS). */
  epochMs?: number | undefined;
  /**
   * Whose epochs to seal, when not the signer's own: custodial seals of a worker gone for good
   * (custodial-sealer.ts), sealed only through `lastEpoch`.
   */
  writerPk?: string | undefined;
  lastEpoch?: number | undefined;
  /** Told each seal made here and the ms it took (metrics); `timer` reads the time (default performance.now). */
  onEpochSealed?: ((seal: Seal, durationMs: number) => void) | undefined;
  timer?: (() => number) | undefined;
}

/** The last epoch whose window ended at least `graceMs` before `now`; -1 when none has. */
export function lastDueEpoch(now: number, genesisMs: number, graceMs: number, epochMs: number = EPOCH_MS): number {
  return Math.floor((now - graceMs - genesisMs) / epochMs) - 1;
}

/**
 * Seals, in order, every epoch of `signer` from the one after its latest seal (or, before its first seal,
 * the epoch of its first record; nothing while it has neither) through the last due epoch. Each seal covers
 * the signer's records of that epoch in seq order and chains to the previous seal; then the sealer's seal log
 * is extended and its head, signed by `signer`, stored (seal-log-keeper.ts). Returns the seals made.
 * Safe to run concurrently with appends (the store refuses a seal whose records changed; it is retried) and
 * with another sealer of the same key (its seal is adopted).
 */
export async function sealDueEpochs(deps: SealDeps): Promise<Seal[]> {
  const { store, signer, now, genesisMs, graceMs } = deps;
  const pk = deps.writerPk ?? signer.publicKey;
  const due = Math.min(lastDueEpoch(now, genesisMs, graceMs, deps.epochMs), deps.lastEpoch ?? Infinity);
  if (due < 0) return [];
  const latest = await store.latestSeal(pk);
  const start = latest !== null ? latest.epoch + 1 : await store.firstRecordEpoch(pk);
  if (start === null) return [];

  const made: Seal[] = [];
  let prev = latest?.seal_hash ?? GENESIS_PREV_HASH;
  const sealedAt = new Date(now).toISOString();
  const timer = deps.timer ?? performance.now.bind(performance);
  for (let epoch = start; epoch <= due; epoch++) {
    // `due` already ends before now; this holds every sealer (embedded, Temporal, worker) to it whatever the grace.
    const ended = checkEpochEnded(epoch, now, genesisMs, deps.epochMs);
    if (!ended.ok) throw new ServiceError(ended.error, ended.detail);
    const began = timer();
    const seal = await sealOne(store, signer, pk, epoch, prev, sealedAt);
    if (seal.made) {
      made.push(seal.seal);
      observe(deps.onEpochSealed, seal.seal, timer() - began);
    }
    prev = seal.seal.seal_hash;
  }
  // The head of the sealer's log over these seals, stored (docs/protocol.md §15.4); also after a run that found
  // every epoch sealed, so a retry completes the log an interrupted run left behind, storing nothing twice.
  await extendSealLog(store, signer, pk);
  return made;
}

/** A metrics hook never fails sealing. */
function observe(hook: SealDeps['onEpochSealed'], seal: Seal, durationMs: number): void {
  try {
    hook?.(seal, durationMs);
  } catch {
    // ignored: see above
  }
}

async function sealOne(
  store: ProofStore,
  signer: KeyPair,
  writerPk: string,
  epoch: number,
  prev: string,
  sealedAt: string,
): Promise<{ seal: Seal; made: boolean }> {
  for (let attempt = 1; ; attempt++) {
    try {
      // The store builds the tree itself (SQLite: streamed, O(log n) memory) and stores the seal signed here.
      // 'exists': another sealer of this key sealed the epoch first: its seal is the chain now.
      const { seal, status } = await store.sealEpoch(writerPk, epoch, (tree) =>
        createSealOverTree(signer.secretKey, { writerPk, epoch, tree, prevSealHash: prev, sealedAt }),
      );
      return { seal, made: status === 'inserted' };
    } catch (error) {
      if (!(error instanceof ServiceError) || error.code !== 'seal_mismatch') throw error;
      // A record landed while the store built the tree, or another sealer won: adopt its seal or retry.
      const stored = await store.getSeal(writerPk, epoch);
      if (stored !== null) return { seal: stored, made: false };
      if (attempt >= SEAL_ATTEMPTS) throw error;
    }
  }
}

export interface AutoSealerDeps {
  store: ProofStore;
  signer: KeyPair;
  clock: () => number;
  genesisMs: number;
  graceMs?: number;
  /** See SealDeps.epochMs. */
  epochMs?: number;
  intervalMs?: number;
  onError: (error: unknown) => void;
  /**
   * Called with the seals a run made, when it made any (the epoch anchorer). Awaited before the next
   * run, so anchors follow the seal chain's order; a rejection goes to `onError` and the seals stand.
   */
  onSealed?: (seals: Seal[]) => Promise<void>;
  /** Told each seal made and the ms it took, read from `timer` (SealDeps): the gateway's metrics. */
  onEpochSealed?: (seal: Seal, durationMs: number) => void;
  timer?: () => number;
  /** The central store also seals the epochs of workers gone for good (custodial-sealer.ts). */
  custody?: Custody;
}

/**
 * Runs `sealDueEpochs` now and then every `intervalMs` after the previous run ends, so runs never overlap.
 * The timer is unref'd (it never keeps a process alive); `stop()` cancels it and waits for a run in flight.
 */
export function startAutoSealer(deps: AutoSealerDeps): RepeatingTask {
  const graceMs = deps.graceMs ?? DEFAULT_SEAL_GRACE_MS;
  return startRepeatingTask(
    deps.intervalMs ?? DEFAULT_SEAL_INTERVAL_MS,
    async () => {
      const run = {
        store: deps.store,
        signer: deps.signer,
        now: deps.clock(),
        genesisMs: deps.genesisMs,
        graceMs,
        epochMs: deps.epochMs,
        onEpochSealed: deps.onEpochSealed,
        timer: deps.timer,
      };
      const seals = await sealDueEpochs(run);
      if (deps.custody) seals.push(...(await sealOrphanedEpochs({ ...run, ...deps.custody })));
      if (seals.length > 0) await deps.onSealed?.(seals);
    },
    deps.onError,
  );
}
