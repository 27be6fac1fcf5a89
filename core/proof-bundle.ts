import { hexToBytes, isHex } from './hex.js';
import { MerkleError, verifyInclusion } from './merkle/inclusion.js';
import { checkRecord, recordLeaf } from './proof-record.js';
import type { InclusionProof, ProofRecord, Seal } from './proof-types.js';
import { checkSeal, sealKindOf, sealSignerOf } from './seal.js';

/** What `GET /store/proof/{id}` returns, and what a client checks offline without trusting the server. */
export interface ProofBundle {
  record: ProofRecord;
  seal: Seal | null;
  proof: InclusionProof | null;
  verified: boolean;
  pending?: boolean;
}

export interface BundleVerdict {
  verified: boolean;
  /** Every reason the bundle does not verify; empty when it does. */
  problems: string[];
  /**
   * Which kind of seal was checked (docs/protocol.md §12): `writer` (the record's writer sealed its own epoch) or
   * `custodial` (the central store's key sealed the epoch of a worker gone for good), and the key that signed it.
   */
  seal_kind?: 'writer' | 'custodial';
  sealed_by?: string;
}

/**
 * Recomputes everything from the bundle: the record's hash and writer signature, the seal's hash and
 * sealer signature, that the seal is the writer's seal of the record's epoch, and the inclusion path
 * from the record's leaf to the seal's root; with `expectedRecordId`, also that it is the record asked for.
 * Callers that need the chain (no epoch dropped) must also
 * check the sealer's seal chain (`checkSealChain`).
 */
export function verifyProofBundle(
  bundle: { record: unknown; seal: unknown; proof: unknown },
  expectedRecordId?: string,
): BundleVerdict {
  const problems: string[] = [];
  const record = checkRecord(bundle.record);
  if (!record.ok) problems.push(`record: ${record.detail}`);
  // A valid proof of some other record proves nothing about the one asked for.
  if (record.ok && expectedRecordId !== undefined && record.value.id !== expectedRecordId) {
    problems.push(`the answer is record ${JSON.stringify(record.value.id)}, not ${JSON.stringify(expectedRecordId)}`);
  }
  if (bundle.seal === null || bundle.seal === undefined) {
    problems.push('record is not sealed yet');
    return { verified: false, problems };
  }
  const seal = checkSeal(bundle.seal);
  if (!seal.ok) problems.push(`seal: ${seal.detail}`);
  if (!record.ok || !seal.ok) return { verified: false, problems };

  const kind = { seal_kind: sealKindOf(seal.value), sealed_by: sealSignerOf(seal.value) };
  const { address } = record.value;
  if (seal.value.sealer_pk !== address.pk || seal.value.epoch !== address.epoch) {
    problems.push(
      `seal is of sealer ${seal.value.sealer_pk} epoch ${seal.value.epoch}, not the record's writer and epoch`,
    );
  }
  const proof = bundle.proof as Partial<InclusionProof> | null;
  if (!proof || !Number.isSafeInteger(proof.leaf_index) || !Number.isSafeInteger(proof.tree_size)) {
    problems.push('proof: leaf_index and tree_size must be integers');
  } else if (!Array.isArray(proof.hashes) || !proof.hashes.every((h) => isHex(h, 32))) {
    problems.push('proof: hashes must be 64-hex strings');
  } else if (proof.tree_size !== seal.value.record_count) {
    problems.push(
      `proof: tree_size ${proof.tree_size} differs from the seal's record_count ${seal.value.record_count}`,
    );
  } else {
    try {
      verifyInclusion(
        proof.leaf_index as number,
        proof.tree_size,
        recordLeaf(record.value),
        proof.hashes.map(hexToBytes),
        hexToBytes(seal.value.merkle_root),
      );
    } catch (error) {
      if (!(error instanceof MerkleError)) throw error;
      problems.push(`proof: ${error.message}`);
    }
  }
  return { verified: problems.length === 0, problems, ...kind };
}
