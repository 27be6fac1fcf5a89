/**
 * POST /token of the governance server (docs/protocol.md §2.9, §5.6): an agent that signs its request and
 * shows a delegation chain that verifies now gets a short-lived EdDSA JWT carrying the idn_* claims, signed by
 * this server's key. token.ts checks the request and signs; this module fills the claims from the audit store:
 *
 *   idn_trust_tier  the tier_at_close of the agent's last epoch (signed by the agent when rolled), else
 *                   `provisioned`; cheap and never better than what a roll recorded, unlike a live score
 *                   that would re-verify the whole chain per token
 *   idn_epoch       the agent's current (open) epoch: last epoch_index + 1, 0 before any roll
 *   idn_chain_tip   the block_hash of the agent's newest breadcrumb (64 zeros before any)
 *
 * Lifetime: `ttl_seconds` from the request, capped at TOKEN_TTL_SECONDS, which is also the default.
 */
import type { TrustTier } from '../../core/breadcrumb-types.js';
import { ServiceError } from '../../core/errors.js';
import type { KeyPair } from '../../core/identity.js';
import {
  buildIdnTokenClaims,
  chainTipHash,
  currentEpochIndex,
  type IdnTokenClaims,
} from '../../core/idn-token-claims.js';
import type { AuditStore } from '../../store/audit-store.js';
import { checkTokenRequest, issueIdnToken, MAX_TOKEN_TTL_SECONDS } from './token.js';

export interface IssuedTokenResponse {
  token: string;
  token_type: 'Bearer';
  /** ISO 8601 of the token's `exp`. */
  expires_at: string;
  jti: string;
  claims: IdnTokenClaims;
}

export interface TokenService {
  /** Checks a POST /token body and its X-Idn-Signature; throws ServiceError (401/400/403) when refused. */
  issue(body: unknown, signatureHeader: string | undefined): Promise<IssuedTokenResponse>;
}

export interface TokenServiceDeps {
  store: AuditStore;
  key: KeyPair;
  clock: () => number;
  /** The longest (and default) lifetime, in seconds; at most MAX_TOKEN_TTL_SECONDS. */
  maxTtlSeconds: number;
  issuer: string;
  audience: string;
  /** TRUSTED_PRINCIPALS (core/delegation-cert.ts rootTrustIssue). */
  trustedPrincipals?: ReadonlySet<string> | undefined;
}

export function createTokenService(deps: TokenServiceDeps): TokenService {
  const maxTtl = Math.min(Math.max(1, Math.floor(deps.maxTtlSeconds)), MAX_TOKEN_TTL_SECONDS);
  return {
    async issue(body, signatureHeader) {
      const nowMs = deps.clock();
      const checked = checkTokenRequest({ body, signatureHeader, nowMs, trustedPrincipals: deps.trustedPrincipals });
      if (!checked.ok) throw new ServiceError(checked.error, checked.detail);
      const { chain, agentPk } = checked.value;
      const asked = (body as { ttl_seconds?: unknown }).ttl_seconds;
      const ttlSeconds = typeof asked === 'number' ? Math.min(checked.value.ttlSeconds, maxTtl) : maxTtl;
      const [tip, epochs] = await Promise.all([deps.store.tip(agentPk), deps.store.epochs(agentPk)]);
      const lastEpoch = epochs[epochs.length - 1] ?? null;
      const trustTier: TrustTier = lastEpoch?.tier_at_close ?? 'provisioned';
      const claims = buildIdnTokenClaims({
        chain,
        trustTier,
        epochIndex: currentEpochIndex(lastEpoch),
        chainTipHash: chainTipHash(tip),
      });
      const issued = await issueIdnToken({
        key: deps.key,
        claims,
        nowMs,
        ttlSeconds,
        issuer: deps.issuer,
        audience: deps.audience,
      });
      return { token: issued.token, token_type: 'Bearer', expires_at: issued.expires_at, jti: issued.jti, claims };
    },
  };
}
