/**
 * The bearer token check of both MCP servers (docs/security.md §5): an `Authorization` header, when sent, must
 * carry a valid governance-issued agent token (mcp/governance/token.ts), else 401 `token_invalid` with an
 * RFC 6750 `error="invalid_token"` challenge: a presented token is never ignored, so a request is never served
 * as anonymous because its token did not verify. With `required`, a request without one is 401 as well.
 */
import type { Context } from 'koa';
import { verifyIdnToken } from '../governance/token.js';
import { authInfoOf } from '../perception/session-auth.js';
import { tokenError, type RequestAuth } from './mcp-transports.js';

export interface BearerOptions {
  /** Whose tokens verify (issuer key, `iss`, `aud`); undefined: every presented token is refused. */
  verifier: { issuerPk: string; issuer: string; audience: string } | undefined;
  required: boolean;
  clock: () => number;
  /** The RFC 6750 realm of the challenges. */
  realm: string;
}

/** The request's verified bearer token; null without one (unless required); throws 401 token_invalid. */
export function createBearerCheck(options: BearerOptions): (ctx: Context) => Promise<RequestAuth | null> {
  const { verifier, realm } = options;
  return async (ctx) => {
    const header = ctx.get('authorization');
    if (header === '') {
      if (options.required) {
        throw tokenError(
          'a bearer token is required: Authorization: Bearer <token from the governance server>',
          false,
          realm,
        );
      }
      return null;
    }
    const match = /^Bearer +([^\s]+) *$/i.exec(header);
    if (match === null) throw tokenError('the Authorization header must be "Bearer <token>"', true, realm);
    if (verifier === undefined)
      throw tokenError('this server accepts no bearer tokens (no token issuer is configured)', true, realm);
    const raw = match[1] as string;
    const verified = await verifyIdnToken(raw, { ...verifier, nowMs: options.clock() });
    if (!verified.ok) throw tokenError(verified.detail, true, realm);
    return { agentPk: verified.value.idn_agent_pk, info: authInfoOf(raw, verified.value) };
  };
}
