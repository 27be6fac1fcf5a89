import type { TrustTier } from '../../core/breadcrumb-types.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import type { KeyPair } from '../../core/identity.js';
import { buildIdnTokenClaims, GENESIS_CHAIN_TIP } from '../../core/idn-token-claims.js';
import { issueIdnToken, TOKEN_AUDIENCE, TOKEN_ISSUER } from '../../mcp/governance/token.js';

/** The perception server's token verifier for tokens `agentToken` issues with `issuer`. */
export const tokenVerifierOf = (issuer: KeyPair) => ({
  issuerPk: issuer.publicKey,
  issuer: TOKEN_ISSUER,
  audience: TOKEN_AUDIENCE,
});

/**
 * An agent token as the governance server issues it (POST /token), for the agent at the end of `chain`, signed by
 * `issuer`: an hour long from `nowMs`, claiming `trustTier` (default provisioned).
 */
export async function agentToken(input: {
  issuer: KeyPair;
  chain: readonly DelegationCertificate[];
  nowMs: number;
  trustTier?: TrustTier;
}): Promise<string> {
  const claims = buildIdnTokenClaims({
    chain: input.chain,
    trustTier: input.trustTier ?? 'provisioned',
    epochIndex: 0,
    chainTipHash: GENESIS_CHAIN_TIP,
  });
  const issued = await issueIdnToken({
    key: input.issuer,
    claims,
    nowMs: input.nowMs,
    ttlSeconds: 3600,
    issuer: TOKEN_ISSUER,
    audience: TOKEN_AUDIENCE,
  });
  return issued.token;
}
