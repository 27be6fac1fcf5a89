/**
 * Where the perception server checks audit blocks' Ed25519 signatures (docs/architecture.md "Audit chains"):
 * the writer's one check of each block it appends, and a report's check of the blocks above the agent's
 * verified-through mark. A few inline (one is the writer's ~90 µs), a batch on the Ed25519 pool's workers (all
 * cores). Injectable, so tests can count what a block costs.
 */
import { checkPublicKey, verifySignature } from '../../core/identity.js';
import { sharedEd25519Pool } from '../../store/ed25519-pool.js';

/** [signer's public key (64 hex), data_to_sign, signature (128 hex)]. */
export type SignedBlockText = readonly [publicKey: string, text: string, signature: string];

export interface BlockVerifier {
  /** Whether each signature verifies, in order; never rejects. */
  verify(items: readonly SignedBlockText[]): Promise<boolean[]>;
}

/** Below this many signatures the pool is not worth a round trip. */
export const POOL_MIN_SIGNATURES = 64;

export const defaultBlockVerifier: BlockVerifier = {
  async verify(items) {
    // A few inline: a hop to another thread costs more latency than the ~90 µs of a verification.
    const inline = () => items.map(([pk, text, signature]) => verifySignature(pk, text, signature));
    if (items.length < POOL_MIN_SIGNATURES) return inline();
    // The pool leaves the key checks (canonical, not small order) to its caller: once per key here.
    const keyOk = new Map<string, boolean>();
    const usable = (pk: string): boolean => {
      let ok = keyOk.get(pk);
      if (ok === undefined) keyOk.set(pk, (ok = checkPublicKey(pk).ok));
      return ok;
    };
    const checked = items.filter(([pk]) => usable(pk));
    let verdicts: boolean[];
    try {
      verdicts = checked.length === 0 ? [] : await sharedEd25519Pool().verify(checked);
    } catch {
      return inline(); // the pool failed (a worker died): same answers, slower
    }
    let next = 0;
    return items.map(([pk]) => (usable(pk) ? verdicts[next++] === true : false));
  },
};
