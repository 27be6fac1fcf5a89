/**
 * Two gateways of one deployment, as the chaos run's are (docs/operations.md "Chaos under load"): each its own
 * node key, each listing the other as a peer node key (SYNC_NODE_KEYS), on one store for proofs, jobs, blobs and
 * the ledger, as the deployment's MongoDB-protocol store is.
 */
import { generateKeyPair } from '../../core/identity.js';
import { createSqliteBlobStore } from '../../store/sqlite/blob-store.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway } from './gateway.js';

export type Gateway = Awaited<ReturnType<typeof startGateway>>;

/** Gateways A and B on shared stores; the caller closes them. */
export async function startPeerGateways(clock: () => number): Promise<[Gateway, Gateway]> {
  const db = openSqlite(':memory:');
  const shared = {
    proofs: createSqliteProofStore(db),
    jobs: createSqliteJobStore(db),
    blobs: createSqliteBlobStore(db),
    ledger: createSqliteLedgerStore(db),
  };
  const [a, b] = [generateKeyPair(), generateKeyPair()];
  const start = (node: typeof a, peer: typeof a) =>
    startGateway({ clock, node, ...shared, config: { proofSync: { nodeKeys: [peer.publicKey] } } });
  return [await start(a, b), await start(b, a)];
}
