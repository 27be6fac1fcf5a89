/**
 * Keeps each sealer's seal log in the store (docs/protocol.md §15.4): after each seal the sealer appends the nodes
 * the new leaves complete and stores the head over the new size, signed by its node key, so serving a receipt
 * reads O(log n) nodes and the stored head instead of every seal since the first. A log the store does not keep
 * yet (seals made before it kept logs, or a worker's own seals pushed to the central store) is back-filled once,
 * from its seals; after that only the seals past its size are read.
 */
import type { KeyPair } from '../../core/identity.js';
import type { Seal } from '../../core/proof-types.js';
import type { ReceiptRecord, StoredSealLog } from '../../core/receipt.js';
import {
  sealConsistencyProof,
  sealInclusionProof,
  sealLeafHash,
  sealLogAppend,
  sealLogFrontier,
  sealLogNodeKey,
  sealLogNodesRead,
  sealLogRoot,
  signSealHead,
  type SealHead,
  type SealLogNodes,
} from '../../core/seal-log.js';
import type { ProofStore } from '../../store/proof-store.js';

const nodesOf = (map: ReadonlyMap<string, Uint8Array>): SealLogNodes => ({
  node(level, index) {
    const found = map.get(sealLogNodeKey(level, index));
    if (found === undefined) throw new TypeError(`the seal log has no node ${level}:${index}`);
    return found;
  },
});

/**
 * Brings the stored log of `sealerPk` up to its gapless seals and stores the head over it signed by `signer`;
 * returns that head (null while the sealer has no seal). Idempotent: a retry stores nothing new.
 */
export async function extendSealLog(
  store: ProofStore,
  signer: KeyPair,
  sealerPk: string,
): Promise<{ firstEpoch: number; size: number; head: SealHead } | null> {
  const state = await store.sealLogState(sealerPk);
  let firstEpoch: number;
  let size: number;
  const fresh: Seal[] = [];
  if (state === null) {
    // Back-fill, once: the sealer's seals from its first up to its first gap.
    const seals = await store.sealsOf(sealerPk);
    if (seals.length === 0) return null;
    firstEpoch = (seals[0] as Seal).epoch;
    size = 0;
    for (const seal of seals) if (seal.epoch === firstEpoch + fresh.length) fresh.push(seal);
  } else {
    ({ firstEpoch, size } = state);
    for (;;) {
      const next = await store.getSeal(sealerPk, firstEpoch + size + fresh.length);
      if (next === null) break;
      fresh.push(next);
    }
  }
  const newSize = size + fresh.length;
  if (fresh.length === 0) {
    const stored = await store.sealHead(sealerPk, signer.publicKey, size);
    if (stored !== null) return { firstEpoch, size, head: stored };
  }
  const known = await store.sealLogNodes(sealerPk, sealLogFrontier(size));
  const made = sealLogAppend(
    size,
    fresh.map((s) => sealLeafHash(s.seal_hash)),
    nodesOf(known),
  );
  for (const n of made) known.set(sealLogNodeKey(n.level, n.index), n.hash);
  const head = signSealHead(signer.secretKey, { sealerPk, firstEpoch, leaves: nodesOf(known), size: newSize });
  await store.appendSealLog(sealerPk, firstEpoch, made, head);
  return { firstEpoch, size: newSize, head };
}

/** After a sealing run: the log of every sealer it sealed for, extended and its head stored. */
export async function extendSealLogs(store: ProofStore, signer: KeyPair, seals: readonly Seal[]): Promise<void> {
  for (const sealer of new Set(seals.map((s) => s.sealer_pk))) await extendSealLog(store, signer, sealer);
}

/**
 * The log of `sealerPk` as a receipt of `records` needs it (core/receipt.ts sealHeadsFor): the stored head and the
 * stored nodes its proofs read, O(log n) of them per record; null while the sealer has no seal.
 */
export async function loadSealLog(
  store: ProofStore,
  signer: KeyPair,
  sealerPk: string,
  records: readonly ReceiptRecord[],
): Promise<StoredSealLog | null> {
  const log = await extendSealLog(store, signer, sealerPk);
  if (log === null) return null;
  const { firstEpoch, size } = log;
  const keys = sealLogNodesRead((src) => {
    for (const r of records) {
      if (r.seal?.sealer_pk !== sealerPk) continue;
      const index = r.seal.epoch - firstEpoch;
      if (index < 0 || index >= size) continue;
      src.node(0, index);
      sealInclusionProof(src, index, size);
      const anchored = r.anchor === null ? 0 : r.anchor.epoch - firstEpoch + 1;
      if (anchored >= 1 && anchored <= size) {
        sealLogRoot(src, anchored);
        sealConsistencyProof(src, anchored, size);
      }
    }
  });
  return { firstEpoch, size, head: log.head, nodes: nodesOf(await store.sealLogNodes(sealerPk, keys)) };
}
