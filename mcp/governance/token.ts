/**
 * Agent tokens (docs/protocol.md §2.9, §5.6): the governance server issues a short-lived JWT carrying the
 * idn_* claims to an agent that proves its key and its delegation chain; the perception server accepts it as
 * a bearer token.
 *
 * Contracts and threats:
 * - Signed with EdDSA (Ed25519) by the governance server's own key, imported from our raw hex form as an OKP
 *   JWK. Verification accepts `alg: EdDSA` only, so `none` and HS* (an HMAC "signed" with the public key)
 *   are refused before any signature check; the issuer key is checked with core/identity.ts's policy
 *   (canonical, not small-order) because WebCrypto does not refuse weak keys itself.
 * - `sub` is the agent key and must equal `idn_agent_pk`; `iss` and `aud` are checked exactly; `exp` has no
 *   clock tolerance (a skewed verifier ends a token early, never late), and a token living longer than
 *   MAX_TOKEN_TTL_SECONDS (exp - iat) or issued more than a minute in the future is refused even when signed,
 *   so "short-lived" holds for the verifier, not only by the issuer's good will.
 * - POST /token (checkTokenRequest) is signed by the AGENT the way gate 1 signs a compute request
 *   (core/gates/signature.ts): X-Idn-Signature = Ed25519 over JCS(body without `signature`) by `agent_pk`;
 *   a `signature` field in the body, when present, must equal the header. `created_at` is required and must be
 *   within ±5 minutes of the server clock, so a captured request cannot be replayed later; within that window
 *   a replay gets the same token back, never a second one (token-service.ts). A bearer token is as strong as
 *   its transport: serve it over TLS.
 * - The chain must verify now (verifyDelegationChain) and end at `agent_pk`.
 */
import { randomUUID } from 'node:crypto';
import { decodeProtectedHeader, errors, importJWK, jwtVerify, SignJWT, type CryptoKey } from 'jose';
import { z } from 'zod';
import { CanonicalJsonError } from '../../core/canonical-json.js';
import { fail, pass, type Check } from '../../core/check.js';
import { verifyDelegationChain, type DelegationCertificate, type DelegationGrant } from '../../core/delegation-cert.js';
import { CREATED_AT_SKEW_MS, requestSigningMessage } from '../../core/gates/signature.js';
import { isHex } from '../../core/hex.js';
import { checkPublicKey, keyPairFromSecret, verifySignature, type KeyPair } from '../../core/identity.js';
import { idnTokenClaimsSchema, type IdnTokenClaims } from '../../core/idn-token-claims.js';
import { describeZodIssue } from '../../core/zod-issue.js';
import { parseChainArgument } from './chain-book.js';

/** `iss` and `aud` of the tokens the governance server issues for the perception server. */
export const TOKEN_ISSUER = 'geofabric-governance';
export const TOKEN_AUDIENCE = 'geofabric-perception';
export const TOKEN_ALG = 'EdDSA';
export const DEFAULT_TOKEN_TTL_SECONDS = 900;
export const MAX_TOKEN_TTL_SECONDS = 3600;
/** A longer Authorization value is refused unparsed (a token with a few hundred cells is far shorter). */
export const MAX_TOKEN_CHARS = 16_384;
/** How far in the future a token's `iat` may lie (issuer clock ahead of ours). */
const IAT_FUTURE_SKEW_SECONDS = 60;

export interface IssuedIdnToken {
  token: string;
  /** ISO 8601 of `exp`. */
  expires_at: string;
  jti: string;
}

/** A verified token: the idn_* claims plus the registered claims we issue. */
export type VerifiedIdnToken = IdnTokenClaims & {
  sub: string;
  iss: string;
  aud: string;
  iat: number;
  exp: number;
  jti: string;
};

export interface TokenVerifierOptions {
  /** The governance server's Ed25519 public key (64 hex). */
  issuerPk: string;
  nowMs: number;
  issuer: string;
  audience: string;
}

const base64url = (hex: string): string => Buffer.from(hex, 'hex').toString('base64url');

// Importing a key costs far more than verifying with it; a server uses one or two, attackers choose none.
const KEY_CACHE_LIMIT = 64;
const privateKeys = new Map<string, Promise<CryptoKey>>();
const publicKeys = new Map<string, Promise<CryptoKey>>();

function cached(
  cache: Map<string, Promise<CryptoKey>>,
  id: string,
  load: () => Promise<CryptoKey>,
): Promise<CryptoKey> {
  let key = cache.get(id);
  if (key === undefined) {
    if (cache.size >= KEY_CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    key = load();
    key.catch(() => cache.delete(id));
    cache.set(id, key);
  }
  return key;
}

const privateKeyOf = (key: KeyPair): Promise<CryptoKey> =>
  cached(privateKeys, `${key.secretKey}:${key.publicKey}`, async () => {
    const { publicKey, secretKey } = keyPairFromSecret(key.secretKey);
    if (publicKey !== key.publicKey) throw new TypeError('the key pair public key does not belong to its seed');
    return (await importJWK(
      { kty: 'OKP', crv: 'Ed25519', x: base64url(publicKey), d: base64url(secretKey) },
      TOKEN_ALG,
    )) as CryptoKey;
  });

const publicKeyOf = (pk: string): Promise<CryptoKey> =>
  cached(
    publicKeys,
    pk,
    async () => (await importJWK({ kty: 'OKP', crv: 'Ed25519', x: base64url(pk) }, TOKEN_ALG)) as CryptoKey,
  );

/**
 * Signs a token for `claims.idn_agent_pk` (sub), valid from `nowMs` for `ttlSeconds`. The inputs are the
 * server's own (its key, claims it built): a bad one is a bug and throws TypeError.
 */
export async function issueIdnToken(input: {
  key: KeyPair;
  claims: IdnTokenClaims;
  nowMs: number;
  ttlSeconds: number;
  issuer: string;
  audience: string;
  /** Default: a random UUID. */
  jti?: string;
}): Promise<IssuedIdnToken> {
  const claims = idnTokenClaimsSchema.safeParse(input.claims);
  if (!claims.success) throw new TypeError(`cannot issue a token: ${describeZodIssue(claims.error, 'claims')}`);
  if (!Number.isInteger(input.ttlSeconds) || input.ttlSeconds < 1 || input.ttlSeconds > MAX_TOKEN_TTL_SECONDS) {
    throw new TypeError(`ttlSeconds must be an integer from 1 to ${MAX_TOKEN_TTL_SECONDS}`);
  }
  if (!Number.isFinite(input.nowMs)) throw new TypeError('nowMs must be a number');
  const iat = Math.floor(input.nowMs / 1000);
  const exp = iat + input.ttlSeconds;
  const jti = input.jti ?? randomUUID();
  const token = await new SignJWT({ ...claims.data })
    .setProtectedHeader({ alg: TOKEN_ALG, typ: 'JWT' })
    .setSubject(claims.data.idn_agent_pk)
    .setIssuer(input.issuer)
    .setAudience(input.audience)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .setJti(jti)
    .sign(await privateKeyOf(input.key));
  return { token, expires_at: new Date(exp * 1000).toISOString(), jti };
}

const verifiedPayloadSchema = z.object({
  ...idnTokenClaimsSchema.shape,
  sub: z.string(),
  iss: z.string(),
  aud: z.string(),
  iat: z.number().int().nonnegative(),
  exp: z.number().int().nonnegative(),
  jti: z.string().min(1).max(256),
});

const invalid = (detail: string) => fail('token_invalid', detail);

function describeJoseError(error: unknown, token: string, options: TokenVerifierOptions): string {
  if (error instanceof errors.JWTExpired) {
    const exp = typeof error.payload.exp === 'number' ? new Date(error.payload.exp * 1000).toISOString() : 'unknown';
    return `token expired at ${exp}`;
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return 'token signature does not verify under the issuer key (signed by another key, or altered after signing)';
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    let alg = 'unknown';
    try {
      alg = String(decodeProtectedHeader(token).alg);
    } catch {
      // keep 'unknown'
    }
    return `token alg ${JSON.stringify(alg)} is not accepted; only ${TOKEN_ALG}`;
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return `token issuer is not ${JSON.stringify(options.issuer)}`;
    if (error.claim === 'aud') return `token audience is not ${JSON.stringify(options.audience)}`;
    return `token claim ${error.claim}: ${error.reason === 'missing' ? 'missing' : error.message}`;
  }
  if (error instanceof errors.JOSEError) return `token is malformed: ${error.message}`;
  return 'token does not verify';
}

/** Verifies a bearer token; every failure is `token_invalid` (401) with a detail saying why. */
export async function verifyIdnToken(token: string, options: TokenVerifierOptions): Promise<Check<VerifiedIdnToken>> {
  if (typeof token !== 'string' || token.length === 0) return invalid('token is empty');
  if (token.length > MAX_TOKEN_CHARS) return invalid(`token is longer than ${MAX_TOKEN_CHARS} characters`);
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token)) {
    return invalid('token is not a compact JWT (three base64url parts)');
  }
  const issuerKey = checkPublicKey(options.issuerPk);
  if (!issuerKey.ok) return invalid(`the configured issuer key is invalid: ${issuerKey.detail}`);

  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(token, await publicKeyOf(issuerKey.value), {
      algorithms: [TOKEN_ALG],
      issuer: options.issuer,
      audience: options.audience,
      currentDate: new Date(options.nowMs),
      requiredClaims: ['sub', 'iat', 'exp', 'jti'],
    }));
  } catch (error) {
    return invalid(describeJoseError(error, token, options));
  }
  const parsed = verifiedPayloadSchema.safeParse(payload);
  if (!parsed.success) return invalid(`token claims: ${describeZodIssue(parsed.error, 'claims')}`);
  const claims = parsed.data;
  if (claims.sub !== claims.idn_agent_pk) return invalid('token sub is not idn_agent_pk');
  if (claims.exp <= claims.iat) return invalid('token exp is not after iat');
  if (claims.exp - claims.iat > MAX_TOKEN_TTL_SECONDS) {
    return invalid(`token lifetime exceeds ${MAX_TOKEN_TTL_SECONDS} seconds`);
  }
  if (claims.iat > options.nowMs / 1000 + IAT_FUTURE_SKEW_SECONDS) return invalid('token is issued in the future');
  return pass({
    idn_agent_pk: claims.idn_agent_pk,
    idn_principal_pk: claims.idn_principal_pk,
    idn_delegation_cert: claims.idn_delegation_cert,
    idn_trust_tier: claims.idn_trust_tier,
    idn_epoch: claims.idn_epoch,
    idn_chain_tip: claims.idn_chain_tip,
    idn_h3_cells: claims.idn_h3_cells,
    sub: claims.sub,
    iss: claims.iss,
    aud: claims.aud,
    iat: claims.iat,
    exp: claims.exp,
    jti: claims.jti,
  });
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

const tokenRequestSchema = z.strictObject({
  agent_pk: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex'),
  /** A certificate or a chain (root first), as JSON. */
  delegation_chain: z.unknown().refine((v) => v !== undefined, 'is required'),
  ttl_seconds: z.number().int().min(1).max(MAX_TOKEN_TTL_SECONDS).optional(),
  created_at: z.string().regex(ISO_8601, 'must be an ISO 8601 date-time with a time zone'),
  /** Lets a client make two otherwise equal requests differ. */
  nonce: z.string().max(256).optional(),
  signature: z.string().optional(),
});

export interface TokenRequest {
  chain: DelegationCertificate[];
  agentPk: string;
  ttlSeconds: number;
  /** The verified chain's rights (verifyDelegationChain). */
  grant: DelegationGrant;
}

/**
 * The POST /token request check: the agent's signature (header X-Idn-Signature, as gate 1), a fresh
 * `created_at`, and a chain that verifies now and ends at `agent_pk`. Failures: signature_required (401),
 * invalid_signature (401), invalid_request (400), invalid_public_key (400), stale_request (401),
 * delegation_invalid (403).
 */
export function checkTokenRequest(input: {
  body: unknown;
  signatureHeader: string | undefined;
  nowMs: number;
  /** TRUSTED_PRINCIPALS: when non-empty, no token for a chain from another root. */
  trustedPrincipals?: ReadonlySet<string> | undefined;
}): Check<TokenRequest> {
  if (input.signatureHeader === undefined || input.signatureHeader.trim() === '') {
    return fail('signature_required', 'X-Idn-Signature header is required: the agent signs its token request');
  }
  const header = input.signatureHeader.trim().toLowerCase();
  if (!isHex(header, 64)) {
    return fail('invalid_signature', 'X-Idn-Signature must be 128 hex characters (an Ed25519 signature)');
  }
  if (typeof input.body !== 'object' || input.body === null || Array.isArray(input.body)) {
    return fail('invalid_request', 'the token request must be a JSON object');
  }
  const parsed = tokenRequestSchema.safeParse(input.body);
  if (!parsed.success) return fail('invalid_request', describeZodIssue(parsed.error, 'token request'));
  const body = parsed.data;
  if (body.signature !== undefined && body.signature !== header) {
    return fail('invalid_signature', 'the body signature field and the X-Idn-Signature header differ');
  }
  const key = checkPublicKey(body.agent_pk);
  if (!key.ok) return fail('invalid_public_key', `agent_pk: ${key.detail}`);

  let message: string;
  try {
    message = requestSigningMessage(input.body as Record<string, unknown>);
  } catch (error) {
    if (error instanceof CanonicalJsonError) return fail('invalid_signature', error.message);
    throw error;
  }
  if (!verifySignature(key.value, message, header)) {
    return fail('invalid_signature', 'signature does not match the canonical request signed by agent_pk');
  }

  const createdAt = Date.parse(body.created_at);
  if (Number.isNaN(createdAt)) return fail('stale_request', 'created_at must be an ISO 8601 timestamp');
  if (Math.abs(input.nowMs - createdAt) > CREATED_AT_SKEW_MS) {
    return fail('stale_request', 'created_at is more than 5 minutes away from the server clock');
  }

  // The encodings the governance tools take too: a certificate or chain as JSON, or its base64 text.
  const chain = parseChainArgument(body.delegation_chain);
  if (!chain.ok) return chain;
  const grant = verifyDelegationChain(chain.value, {
    now: input.nowMs,
    agentPk: key.value,
    ...(input.trustedPrincipals === undefined ? {} : { trustedPrincipals: input.trustedPrincipals }),
  });
  if (!grant.ok) return grant;
  return pass({
    chain: chain.value,
    agentPk: key.value,
    ttlSeconds: body.ttl_seconds ?? DEFAULT_TOKEN_TTL_SECONDS,
    grant: grant.value,
  });
}
