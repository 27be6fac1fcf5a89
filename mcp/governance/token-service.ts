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
 *
 * One signed request, one token: a request is accepted for ±5 minutes around its `created_at`, so the answer to
 * each accepted request (keyed by the hash of its signed message) is kept until that window closes, and a
 * replay within it gets the same token back instead of a second one. At most MAX_REMEMBERED_REQUESTS answers
 * are kept; when that many are still inside their window a new request is refused (429) rather than
 * forgetting one, which would let its replay mint again.
 */
import { createHash } from 'node:crypto';
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
import { CREATED_AT_SKEW_MS, requestSigningMessage } from '../../core/gates/signature.js';
import { checkTokenRequest, issueIdnToken, MAX_TOKEN_TTL_SECONDS, type TokenRequest } from './token.js';

/** Answers kept for replays; each lives at most 10 minutes (created_at ± 5 min). */
export const MAX_REMEMBERED_REQUESTS = 10_000;

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
  /** Default MAX_REMEMBERED_REQUESTS (tests lower it). */
  maxRemembered?: number;
}

export function createTokenService(deps: TokenServiceDeps): TokenService {
  const maxTtl = Math.min(Math.max(1, Math.floor(deps.maxTtlSeconds)), MAX_TOKEN_TTL_SECONDS);
  const limit = deps.maxRemembered ?? MAX_REMEMBERED_REQUESTS;
  // Insertion order is arrival order; entries expire by their request's window, roughly in that order.
  const answered = new Map<string, { untilMs: number; answer: Promise<IssuedTokenResponse> }>();
  const forgetExpired = (nowMs: number) => {
    for (const [key, entry] of answered) if (entry.untilMs < nowMs) answered.delete(key);
  };
  return {
    async issue(body, signatureHeader) {
      const nowMs = deps.clock();
      const checked = checkTokenRequest({ body, signatureHeader, nowMs, trustedPrincipals: deps.trustedPrincipals });
      if (!checked.ok) throw new ServiceError(checked.error, checked.detail);
      // Checked: a signed JSON object whose created_at parses. The key is its signed message, not the
      // signature's text, so another encoding of the same signature is the same request.
      const message = requestSigningMessage(body as Record<string, unknown>);
      const key = createHash('sha256').update(message).digest('hex');
      const seen = answered.get(key);
      if (seen !== undefined && seen.untilMs >= nowMs) return seen.answer;
      if (answered.size >= limit) forgetExpired(nowMs);
      if (answered.size >= limit) {
        throw new ServiceError('rate_limit', 'too many token requests in the last minutes; retry shortly', {
          'retry-after': '60',
        });
      }
      const createdAt = Date.parse((body as { created_at: string }).created_at);
      const answer = mint(checked.value, body, nowMs);
      answered.set(key, { untilMs: createdAt + CREATED_AT_SKEW_MS, answer });
      answer.catch(() => answered.delete(key));
      return answer;
    },
  };

  async function mint(checked: TokenRequest, body: unknown, nowMs: number): Promise<IssuedTokenResponse> {
    const { chain, agentPk } = checked;
    const asked = (body as { ttl_seconds?: unknown }).ttl_seconds;
    const ttlSeconds = typeof asked === 'number' ? Math.min(checked.ttlSeconds, maxTtl) : maxTtl;
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
  }
}
