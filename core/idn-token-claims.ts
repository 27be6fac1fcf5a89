/**
 * The claims of an agent token (docs/protocol.md §2.9): what the governance server vouches for about an agent
 * when it issues a short-lived JWT, and what the perception server reads back from a verified one.
 *
 * Decisions the spec leaves open:
 * - `idn_delegation_cert` is the Blake3 hex of the LAST link's signing string (certificateBlake3), the
 *   certificate the agent acts under; `idn_principal_pk` is the ROOT link's principal (the human), and
 *   `idn_h3_cells` the last link's cells (a chain only narrows, so they are the cells in force).
 * - `idn_epoch` is the agent's current epoch: the index of the epoch its next breadcrumbs roll into, i.e.
 *   the last rolled epoch_index + 1, and 0 for an agent that never rolled (currentEpochIndex). It is never
 *   negative, so an "integer" claim reader needs no sentinel.
 * - `idn_chain_tip` is the block_hash of the agent's newest breadcrumb; an agent without a block has
 *   GENESIS_CHAIN_TIP, 64 zeros, as agent epochs use 64 zeros before the first (the claim stays "64 hex";
 *   the breadcrumb's own "genesis" prev_hash is not hex).
 * - `idn_trust_tier` is one of docs/protocol.md §2.9's four tiers. Our ladder (core/trust-score.ts) has `sovereign` above
 *   `certified`; it is claimed as `certified` (tokenTrustTier): the claim under-states, never over-states,
 *   and readers that follow docs/protocol.md §2.9 keep working.
 */
import { z } from 'zod';
import type { TrustTier } from './breadcrumb-types.js';
import { certificateBlake3, type DelegationCertificate } from './delegation-cert.js';
import { isCell } from './h3-cell.js';
import { isHex } from './hex.js';

/** docs/protocol.md §2.9's trust tiers, lowest first. */
export const TOKEN_TRUST_TIERS = ['provisioned', 'observed', 'trusted', 'certified'] as const;
export type TokenTrustTier = (typeof TOKEN_TRUST_TIERS)[number];

/** `idn_chain_tip` of an agent with no breadcrumb yet. */
export const GENESIS_CHAIN_TIP = '0'.repeat(64);

export interface IdnTokenClaims {
  /** The agent's Ed25519 public key (64 hex); also the JWT `sub`. */
  idn_agent_pk: string;
  /** The delegating human's public key: the root link's principal_pk. */
  idn_principal_pk: string;
  /** Blake3 hex of the last link's certificate signing string. */
  idn_delegation_cert: string;
  idn_trust_tier: TokenTrustTier;
  /** The agent's current (open) epoch index, >= 0. */
  idn_epoch: number;
  /** block_hash of the agent's newest breadcrumb; GENESIS_CHAIN_TIP without one. */
  idn_chain_tip: string;
  /** The cells the last link authorizes. */
  idn_h3_cells: string[];
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex');

export const idnTokenClaimsSchema = z.strictObject({
  idn_agent_pk: hex64,
  idn_principal_pk: hex64,
  idn_delegation_cert: hex64,
  idn_trust_tier: z.enum(TOKEN_TRUST_TIERS),
  idn_epoch: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  idn_chain_tip: hex64,
  idn_h3_cells: z.array(z.string().refine(isCell, 'must be a valid H3 cell (15 lowercase hex)')),
});

// Compile-time proof that the schema's output is the public interface.
const _schemaMatchesInterface = (parsed: z.output<typeof idnTokenClaimsSchema>): IdnTokenClaims => parsed;

/** The claimed tier of a ladder tier: `sovereign` is claimed as `certified` (see the header). */
export const tokenTrustTier = (tier: TrustTier): TokenTrustTier => (tier === 'sovereign' ? 'certified' : tier);

/** `idn_epoch` from the agent's last rolled epoch (null when it never rolled). */
export const currentEpochIndex = (lastEpoch: { epoch_index: number } | null): number =>
  lastEpoch === null ? 0 : lastEpoch.epoch_index + 1;

/** `idn_chain_tip` from the agent's newest breadcrumb (null when it has none). */
export const chainTipHash = (tip: { block_hash: string } | null): string =>
  tip === null ? GENESIS_CHAIN_TIP : tip.block_hash;

/**
 * The claims for the agent at the end of `chain` (root first, already verified by the caller). The inputs
 * come from the server itself (a verified chain, its stores), so a bad one is a bug: TypeError.
 */
export function buildIdnTokenClaims(input: {
  chain: readonly DelegationCertificate[];
  trustTier: TrustTier;
  /** currentEpochIndex of the agent. */
  epochIndex: number;
  /** chainTipHash of the agent (GENESIS_CHAIN_TIP without a block). */
  chainTipHash: string;
}): IdnTokenClaims {
  const root = input.chain[0];
  const last = input.chain[input.chain.length - 1];
  if (root === undefined || last === undefined) throw new TypeError('a delegation chain is required');
  if (!Number.isSafeInteger(input.epochIndex) || input.epochIndex < 0) {
    throw new TypeError(`epochIndex must be an integer >= 0, not ${input.epochIndex}`);
  }
  if (!isHex(input.chainTipHash, 32)) throw new TypeError('chainTipHash must be 64 lowercase hex');
  const claims: IdnTokenClaims = {
    idn_agent_pk: last.agent_pk,
    idn_principal_pk: root.principal_pk,
    idn_delegation_cert: certificateBlake3(last),
    idn_trust_tier: tokenTrustTier(input.trustTier),
    idn_epoch: input.epochIndex,
    idn_chain_tip: input.chainTipHash,
    idn_h3_cells: [...last.h3_cells],
  };
  const checked = idnTokenClaimsSchema.safeParse(claims);
  if (!checked.success) throw new TypeError(`cannot build token claims: ${checked.error.issues[0]?.message}`);
  return claims;
}
