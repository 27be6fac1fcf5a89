/**
 * Bearer tokens of the governance server on the perception MCP routes: a verified token travels to
 * the tool handlers in the SDK's AuthInfo (`req.auth` → `extra.authInfo`), and a call made with one runs on
 * behalf of the token's agent (mcp-transports.ts binds the session to that agent; audit.ts narrows the
 * call to the token's cells and records the agent and the token id in the breadcrumb).
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { IdnTokenClaims } from '../../core/idn-token-claims.js';
import type { VerifiedIdnToken } from '../governance/token.js';

/** The bearer token agent a call runs on behalf of. */
export interface OnBehalf {
  agentPk: string;
  jti: string;
  claims: IdnTokenClaims;
}

/** Where server.ts puts the verified token in the SDK's AuthInfo (`extra`), so tool handlers can read it. */
export const AUTH_INFO_TOKEN_KEY = 'idn_token';

/** The SDK AuthInfo of a verified token (`req.auth`, reaching tool handlers as `extra.authInfo`). */
export function authInfoOf(raw: string, token: VerifiedIdnToken): AuthInfo {
  return {
    token: raw,
    clientId: token.idn_agent_pk,
    scopes: [],
    expiresAt: token.exp,
    extra: { [AUTH_INFO_TOKEN_KEY]: token },
  };
}

/** The agent a tool handler's call runs on behalf of; null without a token. */
export function onBehalfOf(authInfo: AuthInfo | undefined): OnBehalf | null {
  const token = authInfo?.extra?.[AUTH_INFO_TOKEN_KEY] as VerifiedIdnToken | undefined;
  if (token === undefined) return null;
  const { sub: _sub, iss: _iss, aud: _aud, iat: _iat, exp: _exp, jti, ...claims } = token;
  return { agentPk: token.idn_agent_pk, jti, claims };
}
