/**
 * Epoch sealing as a Temporal activity: the `sealEpoch` workflow, started every hour by the seal
 * Schedule (seal-schedule.ts), calls `sealDueEpochs` of the process that owns the central store. It is the
 * embedded auto-sealer's logic (epoch-sealer.ts) with the clock read at each attempt, so it catches up on
 * every epoch missed while nothing sealed, and it is idempotent: sealing resumes after the signer's latest
 * seal, so a retry, a repeated run or a second sealer of the same key finds nothing left to seal (a racing
 * sealer's seal is adopted, never duplicated).
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ServiceError } from '../../core/errors.js';
import type { KeyPair } from '../../core/identity.js';
import type { Seal } from '../../core/proof-types.js';
import type { ProofStore } from '../../store/proof-store.js';
import { sealOrphanedEpochs, type Custody } from './custodial-sealer.js';
import { DEFAULT_SEAL_GRACE_MS, sealDueEpochs } from './epoch-sealer.js';

/** Heartbeats while sealing: a worker that dies mid catch-up is noticed by the heartbeat timeout, not later. */
const HEARTBEAT_INTERVAL_MS = 10_000;

export interface SealActivityDeps {
  store: ProofStore;
  /** The key whose epochs are sealed (the central store's node key). */
  signer: KeyPair;
  /** ms since the Unix epoch; read once per attempt. */
  clock: () => number;
  genesisMs: number;
  /** Grace after an epoch closes before it is sealed; DEFAULT_SEAL_GRACE_MS when absent. */
  graceMs?: number;
  /** The central store also seals the epochs of workers gone for good (custodial-sealer.ts). */
  custody?: Custody;
  /**
   * Called with the seals this call made, when it made any (the epoch anchorer). Its failure never
   * fails the seal: a retried activity would find nothing left to seal, so the hook keeps and retries its own work.
   */
  onSealed?: (seals: Seal[]) => Promise<void>;
  /** Told each seal made and the ms it took, read from `timer` (epoch-sealer.ts SealDeps): the gateway's metrics. */
  onEpochSealed?: (seal: Seal, durationMs: number) => void;
  timer?: () => number;
  /**
   * The seal queues of the gateways online now (core/task-queues.ts sealQueue), for `sealerQueues`: with
   * several gateways on one Temporal, each seals its own key on its own queue. Absent: none (the run seals
   * on the queue it runs on).
   */
  sealers?: () => Promise<string[]>;
}

/**
 * What one call sealed, kept small for the workflow history: epoch numbers and Merkle roots, not the seals
 * (those are in the store). Even a year of catch-up (8,760 epochs, about 650 kB) stays under Temporal's
 * 2 MB payload limit.
 */
export interface SealRunResult {
  sealerPk: string;
  /** Epochs sealed by this call, ascending; empty when none was due or all were sealed already. */
  sealed: number[];
  /** The merkle_root of each epoch in `sealed`, in the same order. */
  roots: string[];
}

export function createSealActivities(deps: SealActivityDeps) {
  return {
    /** The gateways' seal queues, sorted, so the run's commands do not depend on the order Temporal lists them. */
    async sealerQueues(): Promise<string[]> {
      return [...new Set((await deps.sealers?.()) ?? [])].sort();
    },

    async sealDueEpochs(): Promise<SealRunResult> {
      const context = Context.current();
      context.heartbeat();
      const beat = setInterval(() => context.heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        const run = {
          store: deps.store,
          signer: deps.signer,
          now: deps.clock(),
          genesisMs: deps.genesisMs,
          graceMs: deps.graceMs ?? DEFAULT_SEAL_GRACE_MS,
          onEpochSealed: deps.onEpochSealed,
          timer: deps.timer,
        };
        const seals = await sealDueEpochs(run);
        if (deps.custody) seals.push(...(await sealOrphanedEpochs({ ...run, ...deps.custody })));
        if (seals.length > 0 && deps.onSealed) {
          await deps.onSealed(seals).catch(() => undefined); // see SealActivityDeps.onSealed
        }
        return {
          sealerPk: deps.signer.publicKey,
          sealed: seals.map((seal) => seal.epoch),
          roots: seals.map((seal) => seal.merkle_root),
        };
      } catch (error) {
        throw asFailure(error);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type SealActivities = ReturnType<typeof createSealActivities>;

/**
 * `invalid_seal` means the store rejects the tree this code built over the store's own leaves: a bug or a
 * corrupt store, which no retry repairs. Every other failure (a record landing while sealing, a store that
 * is briefly unavailable) is retried with the workflow's backoff.
 */
function asFailure(error: unknown): unknown {
  if (!(error instanceof ServiceError)) return error;
  const message = error.detail ?? error.code;
  return error.code === 'invalid_seal'
    ? ApplicationFailure.nonRetryable(message, error.code)
    : ApplicationFailure.retryable(message, error.code);
}
