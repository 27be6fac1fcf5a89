/**
 * The governance tool server (docs/protocol.md §4.3) as a Koa app:
 *
 *   POST|GET|DELETE /mcp   MCP Streamable HTTP (stateless 2026-07-28 and sessions): verify_jurisdiction,
 *                          generate_audit_proof, check_delegation_chain                           Origin-checked
 *   GET  /health           {status, service, version 0.1.0, tools, cert_loaded} plus server_pk, agent_pk
 *   POST /token            a short-lived JWT for an agent (body signed by it, X-Idn-Signature)     Origin-checked
 *
 * It binds 127.0.0.1 unless told otherwise (docs/protocol.md §4.3 binds 0.0.0.0:8000; GOVERNANCE_HOST). No global body parsing: the MCP SDK reads the raw stream, and /token reads its
 * own bounded JSON body. DNS rebinding: a browser Origin on /mcp and /token must be loopback or configured
 * (origin.ts); while bound to loopback, Host must be a loopback or configured name too. The routes carry no
 * authentication (docs/protocol.md §5.9 leaves it open): the tools answer about certificates the caller passes or the
 * server holds, and reveal audit chains of the shared store, so exposing the port is a deployment decision. A
 * bearer token sent to /mcp must still be one this server issued and still valid (401 `token_invalid`).
 * Errors leave as `{ error, detail? }` (core/errors.ts); bad input is never a 500.
 *
 * Its own Ed25519 key (server-key.ts) signs the bundles and the tokens; verifiers know it by `server_pk`.
 */
import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import type { Server } from 'node:http';
import Router from '@koa/router';
import type Koa from 'koa';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { HttpLimits } from '../../api/http-limits.js';
import { readJsonBody } from '../../api/json-body.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import type { KeyPair } from '../../core/identity.js';
import type { AuditStore } from '../../store/audit-store.js';
import type { SessionLimits } from '../shared/session-table.js';
import { createMcpHttpApp, originGate, silentLogger, type McpHttpLogger } from '../shared/mcp-http-app.js';
import { createBearerCheck } from '../shared/bearer.js';
import { createMcpTransports, type McpTransports } from '../shared/mcp-transports.js';
import { createChainBook, type ChainBook } from './chain-book.js';
import { createComplianceClient, type ComplianceClient } from './compliance-client.js';
import { DEFAULT_TOKEN_TTL_SECONDS, TOKEN_AUDIENCE, TOKEN_ISSUER } from './token.js';
import { createTokenService, type TokenService } from './token-service.js';
import { createGovernanceTools, GOVERNANCE_TOOL_NAMES, registerGovernanceTools } from './tools.js';

/** docs/protocol.md §9.2: the governance server reports version 0.1.0. */
export const GOVERNANCE_VERSION = '0.1.0';
export const GOVERNANCE_SERVICE = 'geofabric-governance';
/** The `iss` of issued tokens and the `aud` the perception server expects. */
const MAX_TOKEN_BODY_BYTES = 64 * 1024;

export type GovernanceLogger = McpHttpLogger;

export interface GovernanceServerDeps {
  /** The audit store the perception server writes; read only here. */
  store: AuditStore;
  /** Gate 5 (TOOL_POLICY_FILE), reported by check_delegation_chain; default no rules. */
  toolPolicy?: ToolPolicy | undefined;
  /** The server's own key: signs audit bundles and tokens. */
  key: KeyPair;
  /** The default subject (IDN_DELEGATION_CERT, or perception's provisioned chain), root first; null when none. */
  chain: DelegationCertificate[] | null;
  /** Other agents' chains the tools may judge without being passed one. */
  knownChains?: DelegationCertificate[][];
  /** COMPLIANCE_URL: where compliance reports come from (or a client, e.g. in tests). */
  complianceUrl?: string;
  complianceTimeoutMs?: number;
  compliance?: ComplianceClient;
  clock?: () => number;
  /** Origins besides loopback ones that may use /mcp and /token (exact `scheme://host[:port]`). */
  allowedOrigins?: string[];
  /** Host names besides loopback ones a loopback-bound server answers. */
  allowedHosts?: string[];
  /** Rate limits, trusted proxy and receive timeouts (RATE_LIMIT_*, TRUST_PROXY, *_TIMEOUT_SECONDS). */
  limits?: HttpLimits | undefined;
  /** MCP session bounds (MCP_MAX_SESSIONS …; mcp/shared/session-table.ts); the defaults otherwise. */
  sessionLimits?: SessionLimits | undefined;
  /** TOKEN_TTL_SECONDS: the longest lifetime of an issued token (default 900). */
  tokenTtlSeconds?: number;
  /** TRUSTED_PRINCIPALS: roots whose chains verify (tools, /token); unset or empty: any root. */
  trustedPrincipals?: ReadonlySet<string>;
  maxBundleBlocks?: number;
  logger?: GovernanceLogger;
}

export interface GovernanceServer {
  app: Koa;
  chains: ChainBook;
  toolNames: string[];
  /** The server's public key (64 hex): the signer of bundles and the issuer key of tokens. */
  serverPk: string;
  tokens: TokenService;
  /** Open MCP sessions and SSE streams, and the MCP POSTs being answered now. */
  mcp: Pick<McpTransports, 'sessions' | 'inFlight'>;
  listen(port: number, host?: string): Promise<{ url: string; server: Server }>;
  close(): Promise<void>;
}

export function createGovernanceServer(deps: GovernanceServerDeps): GovernanceServer {
  const clock = deps.clock ?? Date.now;
  const logger = deps.logger ?? silentLogger;
  const chains = createChainBook(deps.chain, deps.knownChains ?? []);
  const compliance =
    deps.compliance ??
    createComplianceClient({
      baseUrl: deps.complianceUrl ?? 'http://127.0.0.1:8100',
      timeoutMs: deps.complianceTimeoutMs ?? 10_000,
      userAgent: `${GOVERNANCE_SERVICE}/${GOVERNANCE_VERSION}`,
    });
  const tools = createGovernanceTools({
    store: deps.store,
    chains,
    compliance,
    key: deps.key,
    clock,
    trustedPrincipals: deps.trustedPrincipals,
    ...(deps.maxBundleBlocks === undefined ? {} : { maxBundleBlocks: deps.maxBundleBlocks }),
    toolPolicy: deps.toolPolicy,
  });
  const toolNames: string[] = [...GOVERNANCE_TOOL_NAMES];
  const tokens = createTokenService({
    store: deps.store,
    key: deps.key,
    clock,
    maxTtlSeconds: deps.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS,
    trustedPrincipals: deps.trustedPrincipals,
    issuer: TOKEN_ISSUER,
    audience: TOKEN_AUDIENCE,
  });

  const buildServer = (): McpServer => {
    const server = new McpServer(
      { name: GOVERNANCE_SERVICE, version: GOVERNANCE_VERSION },
      { capabilities: { tools: {} } },
    );
    registerGovernanceTools(server, tools, (error) => logger.error({ err: error }, 'governance tool failed'));
    return server;
  };
  const transports = createMcpTransports({
    buildServer,
    onError: (error) => logger.error({ err: error }, 'closing an MCP session failed'),
    ...(deps.limits?.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: deps.limits.requestTimeoutMs }),
    sessionLimits: deps.sessionLimits,
    realm: GOVERNANCE_SERVICE,
    serverInfo: { name: GOVERNANCE_SERVICE, version: GOVERNANCE_VERSION },
    capabilities: { tools: {} },
  });

  const router = new Router();
  const allowedOrigins = deps.allowedOrigins ?? [];
  const mcpOrigin = originGate(allowedOrigins);
  // The tools take no token into account, but a presented one must be a valid token of this server's own
  // (RFC 6750: 401 invalid_token otherwise, never served as anonymous); a valid one binds the session it opens.
  const bearer = createBearerCheck({
    verifier: { issuerPk: deps.key.publicKey, issuer: TOKEN_ISSUER, audience: TOKEN_AUDIENCE },
    required: false,
    clock,
    realm: GOVERNANCE_SERVICE,
  });
  for (const method of ['post', 'get', 'delete', 'options'] as const) {
    router[method]('/mcp', mcpOrigin, async (ctx) => transports.streamable(ctx, await bearer(ctx)));
  }

  router.get('/health', (ctx) => {
    ctx.body = {
      status: 'ok',
      service: GOVERNANCE_SERVICE,
      version: GOVERNANCE_VERSION,
      tools: toolNames,
      cert_loaded: chains.subjectPk !== null,
      server_pk: deps.key.publicKey,
      agent_pk: chains.subjectPk,
    };
  });

  const tokenOrigin = originGate(allowedOrigins, 'content-type, x-idn-signature');
  router.options('/token', tokenOrigin);
  router.post('/token', tokenOrigin, async (ctx) => {
    const body = await readJsonBody(ctx, MAX_TOKEN_BODY_BYTES, deps.limits?.requestTimeoutMs);
    ctx.body = await tokens.issue(body, ctx.get('x-idn-signature') || undefined);
  });

  const http = createMcpHttpApp({
    router,
    logger,
    allowedOrigins,
    allowedHosts: deps.allowedHosts ?? [],
    limits: deps.limits,
    beforeClose: () => transports.close(),
  });
  return {
    app: http.app,
    chains,
    toolNames,
    serverPk: deps.key.publicKey,
    tokens,
    mcp: { sessions: () => transports.sessions(), inFlight: () => transports.inFlight() },
    async listen(port, host = '127.0.0.1') {
      const listening = await http.listen(port, host);
      logger.info(
        {
          url: listening.url,
          server_pk: deps.key.publicKey,
          agent_pk: chains.subjectPk,
          cert_loaded: chains.subjectPk !== null,
        },
        'geofabric governance listening',
      );
      return listening;
    },
    close: () => http.close(),
  };
}
