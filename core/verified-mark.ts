/**
 * The verified-through mark of an audit chain (docs/architecture.md "Audit chains"): "this verifier checked
 * agent A's chain through block `index`, whose hash was `block_hash`". Every block commits to its predecessor's
 * hash, so the mark vouches for exactly the blocks verified: one rewritten since has another hash, and its
 * successors' links or the marked hash no longer match. The verifier signs the mark, so whoever can write the
 * store cannot forge one over a chain of their own making; a verifier trusts only marks under its own key.
 */
import { signMessage, verifySignature, type KeyPair } from './identity.js';

export interface SignedVerifiedMark {
  index: number;
  block_hash: string;
  verifier_pk: string;
  signature: string;
}

const signingText = (agentPk: string, index: number, blockHash: string): string =>
  `geofabric/audit-verified-through\n${agentPk}\n${index}\n${blockHash}`;

export function signVerifiedMark(
  verifier: KeyPair,
  agentPk: string,
  index: number,
  blockHash: string,
): SignedVerifiedMark {
  return {
    index,
    block_hash: blockHash,
    verifier_pk: verifier.publicKey,
    signature: signMessage(verifier.secretKey, signingText(agentPk, index, blockHash)),
  };
}

/** True when `mark` is `verifierPk`'s own signed mark of `agentPk`'s chain. */
export function isOwnVerifiedMark(mark: SignedVerifiedMark, agentPk: string, verifierPk: string): boolean {
  return (
    mark.verifier_pk === verifierPk &&
    verifySignature(verifierPk, signingText(agentPk, mark.index, mark.block_hash), mark.signature)
  );
}
