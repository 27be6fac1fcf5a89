/**
 * Custodial seals (docs/protocol.md §12): no record a worker synced stays unprovable because its worker never
 * came back. A worker seals its own epochs and pushes the seals; one that stops for good (retired, disk lost,
 * killed in its last epoch) leaves records in the central store that no seal of its own will cover. Once such a
 * worker has been gone for the custody grace, the central store's sealer seals those epochs with its node key:
 * each seal names the worker as `sealer_pk` (its records, its chain, continued from its last own seal) and the
 * node as `custodian_pk`, which signs it. Only epochs up to the one the worker was last alive in are sealed (a
 * gone worker writes nothing later), so a retired worker does not cost an empty seal every hour forever.
 */
import { EPOCH_MS } from '../../core/epoch.js';
import type { KeyPair } from '../../core/identity.js';
import type { Seal } from '../../core/proof-types.js';
import { isOnline } from '../../core/worker-selection.js';
import type { ProofStore } from '../../store/proof-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { sealDueEpochs, type SealDeps } from './epoch-sealer.js';

/** CUSTODIAL_SEAL_GRACE_SECONDS default: a worker silent this long is gone; a day covers reboots and outages. */
export const DEFAULT_CUSTODY_GRACE_MS = 24 * 3_600_000;
/** A draining worker finishes its steps within WORKER_DRAIN_SECONDS (20 s) after it was last alive. */
const DRAIN_MARGIN_MS = 60_000;

/** What a central sealer needs to seal for gone workers (startAutoSealer and the seal activity take it). */
export interface Custody {
  workers: Pick<WorkerRegistry, 'list'>;
  /** CUSTODIAL_SEAL_GRACE_SECONDS: how long a worker must have been gone (left, or silent). */
  custodyMs: number;
}

export interface CustodyDeps {
  store: ProofStore;
  /** The central store's node key: the custodian. */
  signer: KeyPair;
  workers: Pick<WorkerRegistry, 'list'>;
  now: number;
  genesisMs: number;
  /** The epoch seal grace (an epoch is sealed only this long after it ended). */
  graceMs: number;
  /** How long a worker must have been gone (left, or silent) before its epochs are sealed for it. */
  custodyMs: number;
  epochMs?: number | undefined;
  onEpochSealed?: SealDeps['onEpochSealed'];
  timer?: SealDeps['timer'];
}

/** Seals the open epochs of every worker gone past the custody grace; returns the seals made. */
export async function sealOrphanedEpochs(deps: CustodyDeps): Promise<Seal[]> {
  const made: Seal[] = [];
  const epochMs = deps.epochMs ?? EPOCH_MS;
  for (const worker of await deps.workers.list()) {
    if (worker.pk === deps.signer.publicKey || isOnline(worker, deps.now)) continue;
    const lastAlive = Math.max(worker.last_seen_ms, worker.left_at_ms ?? 0);
    if (deps.now - lastAlive < deps.custodyMs) continue;
    const lastEpoch = Math.floor((lastAlive + DRAIN_MARGIN_MS - deps.genesisMs) / epochMs);
    made.push(
      ...(await sealDueEpochs({
        store: deps.store,
        signer: deps.signer,
        writerPk: worker.pk,
        lastEpoch,
        now: deps.now,
        genesisMs: deps.genesisMs,
        graceMs: deps.graceMs,
        epochMs: deps.epochMs,
        onEpochSealed: deps.onEpochSealed,
        timer: deps.timer,
      })),
    );
  }
  return made;
}
