/**
 * ProofStore.sealEpoch for an adapter that cannot stream the tree into its pages before the seal exists (the
 * MongoDB adapter keys pages by seal_hash): the packed leaves and every level in memory (64 bytes a record),
 * then putSeal, which re-checks the record count.
 */
import { HASH_BYTES, merkleLevelsOfPacked } from '../core/merkle/tree.js';
import type { Seal } from '../core/proof-types.js';
import type { EpochTree } from '../core/seal.js';
import type { ProofStore } from './proof-store.js';
import { checkSealOverTree } from './seal-tree-pages.js';

export async function sealEpochOverLevels(
  store: Pick<ProofStore, 'getSeal' | 'epochLeafHashes' | 'putSeal'>,
  pk: string,
  epoch: number,
  sign: (tree: EpochTree) => Seal,
): Promise<{ seal: Seal; status: 'inserted' | 'exists' }> {
  const stored = await store.getSeal(pk, epoch);
  if (stored !== null) return { seal: stored, status: 'exists' };
  const leaves = await store.epochLeafHashes(pk, epoch);
  const levels = merkleLevelsOfPacked(leaves.leaves);
  const tree: EpochTree = {
    count: leaves.leaves.length / HASH_BYTES,
    firstSeq: leaves.firstSeq,
    root: levels[levels.length - 1] as Uint8Array,
  };
  const seal = sign(tree);
  checkSealOverTree(seal, pk, epoch, tree);
  // 'duplicate': another sealer stored the identical seal meanwhile.
  const status = await store.putSeal(seal, levels);
  return { seal, status: status === 'inserted' ? 'inserted' : 'exists' };
}
