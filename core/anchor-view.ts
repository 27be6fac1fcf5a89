import type { EpochAnchor } from './ledger-types.js';

/** An epoch anchor as clients see it (`/store/proof`, job receipts): where a seal's root was written. */
export interface AnchorView {
  tx_hash: string;
  ledger: number | null;
  epoch: number;
  /** The root written on the ledger: a verifier compares it with the seal's `merkle_root`, then with the ledger. */
  root: string;
  network_passphrase?: string;
}

/** An anchor as clients see it: only once its transaction was submitted (pending and failed ones are retried). */
export function anchorView(anchor: EpochAnchor | null, networkPassphrase: string | undefined): AnchorView | null {
  if (anchor === null || anchor.status !== 'submitted' || anchor.tx_hash === null) return null;
  return {
    tx_hash: anchor.tx_hash,
    ledger: anchor.ledger,
    epoch: anchor.epoch,
    root: anchor.root,
    ...(networkPassphrase === undefined ? {} : { network_passphrase: networkPassphrase }),
  };
}
