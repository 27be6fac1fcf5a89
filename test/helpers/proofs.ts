import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import type { KeyPair } from '../../core/identity.js';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import type { TestGateway } from './gateway.js';

/** An inference record entry of `epoch` in the Rome cell (or `cell`). */
export const inferenceEntry = (id: string, epoch: number, cell = '861e8050fffffff'): NewRecord => ({
  id,
  h3_cell: cell,
  epoch,
  collection_type: 'inference',
  payload_type: 'hive/inference',
  payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, text: `answer ${id}` },
  written_at: new Date(epochWindow(epoch).start + 1000).toISOString(),
});

/** The i-th of an epoch's numbered inference entries (`job-{epoch}-{i}:infer`), i ms into the epoch. */
export const numberedEntry = (i: number, epoch: number): NewRecord => ({
  id: `job-${epoch}-${i}:infer`,
  h3_cell: '861e8050fffffff',
  epoch,
  collection_type: 'inference',
  payload_type: 'hive/inference',
  payload: { model: 'tinyllama', tokens_in: i, tokens_out: 2 * i },
  written_at: new Date(epochWindow(epoch).start + i).toISOString(),
});

/** Seals every epoch of `signer` in `store` up to and including `throughEpoch`. */
export const sealThrough = (store: ProofStore, signer: KeyPair, throughEpoch: number) =>
  sealDueEpochs({
    store,
    signer,
    now: epochWindow(throughEpoch + 1).start + 61_000,
    genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    graceMs: 60_000,
  });

/**
 * Pushes records or seals to a gateway as `pusher` would (a signed batch). `vouching`: seals sent along with
 * records, as the sync agent does, for records older than the central store's sync window.
 */
export function push(
  gw: TestGateway,
  pusher: KeyPair,
  path: '/store/sync' | '/store/epochs',
  items: unknown[],
  vouching?: unknown[],
) {
  const key = path === '/store/sync' ? 'records' : 'seals';
  const { body, signature } = signRequestBody(pusher.secretKey, {
    [key]: items,
    ...(vouching === undefined ? {} : { seals: vouching }),
  });
  return gw.post(path, body, { 'x-idn-signature': signature });
}

/**
 * Registers `key` as a CPU worker in the Rome cell, as `POST /svc/workers/register` would: the central store
 * takes pushes only from node keys and registered workers.
 */
export const registerWorker = (workers: WorkerRegistry, key: KeyPair, nowMs: number = Date.now()) =>
  workers.register(
    {
      pk: key.publicKey,
      h3_cell: '861e8050fffffff',
      models: [],
      tools: [],
      hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 4 },
      hardware_tier: 1,
      relay: false,
      version: '0.1.0',
    },
    nowMs,
  );

/** A clock time inside `epoch`, `intoMs` after it opens (the central store takes records of epochs near now). */
export const timeIn = (epoch: number, intoMs = 10 * 60_000) => epochWindow(epoch).start + intoMs;
