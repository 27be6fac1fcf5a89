import { DEFAULT_EPOCH_GENESIS_MS, epochWindow } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import type { KeyPair } from '../../core/identity.js';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import type { NewRecord, ProofStore } from '../../store/proof-store.js';
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

/** Seals every epoch of `signer` in `store` up to and including `throughEpoch`. */
export const sealThrough = (store: ProofStore, signer: KeyPair, throughEpoch: number) =>
  sealDueEpochs({
    store,
    signer,
    now: epochWindow(throughEpoch + 1).start + 61_000,
    genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    graceMs: 60_000,
  });

/** Pushes records or seals to a gateway as `pusher` would (a signed batch). */
export function push(gw: TestGateway, pusher: KeyPair, path: '/store/sync' | '/store/epochs', items: unknown[]) {
  const key = path === '/store/sync' ? 'records' : 'seals';
  const { body, signature } = signRequestBody(pusher.secretKey, { [key]: items });
  return gw.post(path, body, { 'x-idn-signature': signature });
}
