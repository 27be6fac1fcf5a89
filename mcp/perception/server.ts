/**
 * The perception and compliance service (docs/protocol.md §4.2) as a Koa app:
 *
 *   POST|GET|DELETE /mcp        MCP Streamable HTTP: stateless 2026-07-28 and sessions     token
 *   GET /sse, POST /message     MCP over the older SSE transport                            token
 *   GET  /health                docs/protocol.md §2.8 health; chain_tip = the next block index
 *   POST /epoch/roll            rolls every block since the last epoch; none → 500 with docs/protocol.md §7's message  token
 *   GET  /compliance[/:agent_pk] compliance report (query from, to: ISO 8601)                token
 *   POST /approvals             a human principal's signed approval of one call             token
 *   GET  /test/weather          perception_weather for a fixed city, through the auditor;   token
 *                               only with `testRoutes` (PERCEPTION_TEST_ROUTES), else 404
 *
 * Every route is Origin-checked (a browser Origin must be loopback or configured) and Host-checked while bound
 * to loopback (mcp-http-app.ts). "token" routes take the same authorization as /mcp: a bearer token, when sent,
 * must verify, and with `requireToken` one is required. /health stays open for liveness probes.
 *
 * Every MCP session gets its own McpServer whose tools are registered only through the auditor, so every
 * call is pre-flighted and leaves a breadcrumb. Errors leave as `{ error, detail? }` (core/errors.ts), except
 * the empty epoch roll, whose body docs/protocol.md §7 fixes. No body parsing happens on the MCP routes: the SDK reads
 * the raw stream. The service binds 127.0.0.1 unless told otherwise, and then answers loopback Host names
 * only (DNS rebinding, origin.ts). Without `requireToken` its HTTP endpoints carry no authentication (docs/protocol.md
 * §5.9 leaves it open), so exposing it beyond loopback is a deployment decision.
 *
 * Agent tokens (docs/protocol.md §2.9 and 5.6): with `tokenVerifier`, the MCP routes (/mcp, /sse, /message) accept
 * `Authorization: Bearer <jwt>` issued by the governance server (mcp/governance/token.ts). Every request's token
 * is verified (EdDSA by the configured issuer key, iss, aud, exp, claims); an invalid one is 401 token_invalid
 * with a `WWW-Authenticate: Bearer` challenge, never a 500. With `requireToken`, a request without one is 401 as
 * well. A valid token binds the MCP session it opens to its agent (mcp-transports.ts: later requests need a
 * token of that agent, 401 without, 403 with another agent's), and the session's tool calls run on behalf of
 * that agent (audit.ts: the token's cells limit the call, breadcrumbs record `on_behalf_of` and `jti`, and the
 * chain is still the server's own, signed by its key). Without `tokenVerifier` a bearer token is refused (401)
 * rather than ignored, so a client never believes a call was limited by a token that was not checked. A call
 * without a token is anonymous: the least trusted tier, no operation of the agent (audit.ts). POST /epoch/roll
 * (like idn_roll_epoch) needs a token of an agent of the server's own principal: 401 without, 403 otherwise.
 */
import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import type { Server } from 'node:http';
import Router from '@koa/router';
import type Koa from 'koa';
import type { Context, Middleware } from 'koa';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { HttpLimits } from '../../api/http-limits.js';
import { readJsonBody } from '../../api/json-body.js';
import { approvalSignatureValid } from '../../core/compliance-report.js';
import { parseStoredBreadcrumb } from '../../core/breadcrumb.js';
import { compileCoazMapping } from '../../core/coaz-mapping.js';
import type { HumanApproval } from '../../core/breadcrumb-types.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import { ServiceError } from '../../core/errors.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { checkPublicKey, type KeyPair } from '../../core/identity.js';
import { describeZodIssue } from '../../core/zod-issue.js';
import type { AuditStore } from '../../store/audit-store.js';
import { BoundedSet } from '../../core/bounded-set.js';
import { createAuditor, type AnyPerceptionTool, type Auditor } from './audit.js';
import type { BlockVerifier } from './block-verifier.js';
import { onBehalfOf } from './session-auth.js';
import type { SessionLimits } from '../shared/session-table.js';
import { createMcpHttpApp, originGate, silentLogger, type McpHttpLogger } from '../shared/mcp-http-app.js';
import {
  createMcpTransports,
  tokenError,
  tokenForbidden,
  type McpTransports,
  type RequestAuth,
} from '../shared/mcp-transports.js';
import { createBearerCheck } from '../shared/bearer.js';
import { createReportService, DEFAULT_REPORT_FROM, type ReportService } from './reports.js';
import { createComplianceTools, registerReportUi } from './tools/compliance-tools.js';
import { WEATHER_TEST_CELL } from './tools/weather.js';

/** docs/protocol.md §9.2: the perception service reports version 0.3.1. */
export const PERCEPTION_VERSION = '0.3.1';
export const PERCEPTION_SERVICE = 'geofabric-perception';
const MAX_JSON_BODY_BYTES = 64 * 1024;
/**
 * Blocks whose signature reports need not verify again (about 150 bytes each): enough for the 100,000-block
 * chains the benchmark reports on. Beyond it the oldest are verified again, never skipped unverified.
 */
const SIGNATURE_CACHE_BLOCKS = 250_000;

export type PerceptionLogger = McpHttpLogger;

export interface PerceptionServerDeps {
  store: AuditStore;
  agent: KeyPair;
  /** The agent's delegation chain, root first, verified by the caller (identity.ts). */
  chain: DelegationCertificate[];
  /** True when the root principal is the local development principal (reports say so). */
  principalLocal: boolean;
  /** The perception tools (weather, fetch_tile, classify, embed); the idn_* tools are added here. */
  tools: AnyPerceptionTool[];
  clock?: () => number;
  /** Where calls without a cell act (the idn_* tools); default the protocol's default perception cell (docs/protocol.md §4.2). */
  defaultCell?: string;
  /** Origins besides loopback ones that may use the MCP routes (exact `scheme://host[:port]`). */
  allowedOrigins?: string[];
  /**
   * Host header names besides loopback ones a loopback-bound server answers (e.g. a local reverse proxy's
   * public name); the hosts of `allowedOrigins` are allowed too. Not checked when bound to another address.
   */
  allowedHosts?: string[];
  /** Rate limits, trusted proxy and receive timeouts (RATE_LIMIT_*, TRUST_PROXY, *_TIMEOUT_SECONDS). */
  limits?: HttpLimits | undefined;
  /** MCP session bounds (MCP_MAX_SESSIONS …; mcp/shared/session-table.ts); the defaults otherwise. */
  sessionLimits?: SessionLimits | undefined;
  /** Other agents' chains whose certificates reports may show. */
  knownChains?: DelegationCertificate[][];
  logger?: PerceptionLogger;
  /**
   * Accept agent tokens (docs/protocol.md §2.9) from this issuer on the MCP routes: the governance server's Ed25519 public
   * key (64 hex) and the exact `iss` and `aud` its tokens carry. Without it a bearer token is refused.
   */
  tokenVerifier?: { issuerPk: string; issuer: string; audience: string };
  /** Refuse requests without a bearer token (401) on every route but /health; needs `tokenVerifier`. */
  requireToken?: boolean;
  /**
   * Serve GET /test/weather (PERCEPTION_TEST_ROUTES, default off): it makes real audited calls, so each one
   * adds a breadcrumb and moves the agent's trust score.
   */
  testRoutes?: boolean;
  /** Gate 5 (TOOL_POLICY_FILE): tools the policy forbids at a call's cell are blocked by pre-flight. */
  toolPolicy?: ToolPolicy;
  /** Where audit block signatures are checked (block-verifier.ts); default the thread pool and Ed25519 pool. */
  blockVerifier?: BlockVerifier;
}

export interface PerceptionServer {
  app: Koa;
  auditor: Auditor;
  reports: ReportService;
  /** Every tool name, as /health and tools/list show them. */
  toolNames: string[];
  /** Open MCP sessions and SSE streams, and the MCP POSTs being answered now. */
  mcp: Pick<McpTransports, 'sessions' | 'inFlight'>;
  listen(port: number, host?: string): Promise<{ url: string; server: Server }>;
  close(): Promise<void>;
}

const isoInstant = z.union([z.iso.datetime({ offset: true }), z.iso.date()]);

/** A report period from the query: `from` default 2020-01-01T00:00:00Z, `to` default now; bad → invalid_date. */
export function reportPeriod(query: Record<string, unknown>, nowMs: number): { from: string; to: string } {
  const bound = (name: 'from' | 'to', fallback: string): string => {
    const raw = query[name];
    if (raw === undefined) return fallback;
    if (typeof raw !== 'string' || !isoInstant.safeParse(raw).success || !Number.isFinite(Date.parse(raw))) {
      throw new ServiceError(
        'invalid_date',
        `${name} must be an ISO 8601 date or date-time, e.g. 2026-01-01T00:00:00Z`,
      );
    }
    return new Date(Date.parse(raw)).toISOString();
  };
  const from = bound('from', DEFAULT_REPORT_FROM);
  const to = bound('to', new Date(nowMs).toISOString());
  if (Date.parse(from) > Date.parse(to)) throw new ServiceError('invalid_date', `from ${from} is after to ${to}`);
  return { from, to };
}

const agentPkText = z.string().regex(/^[0-9a-f]{64}$/);

const approvalBody = z.strictObject({
  version: z.literal(1).optional().default(1),
  agent_pk: agentPkText,
  block_index: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  approved_at: z.iso.datetime({ offset: true }),
  principal_pk: agentPkText,
  signature: z.string().regex(/^[0-9a-f]{128}$/, 'must be 128 lowercase hex'),
});

export function createPerceptionServer(deps: PerceptionServerDeps): PerceptionServer {
  const clock = deps.clock ?? Date.now;
  const logger = deps.logger ?? silentLogger;
  const certificate = deps.chain[deps.chain.length - 1];
  if (certificate === undefined) throw new TypeError('a delegation chain is required');
  const verifier = deps.tokenVerifier;
  if (deps.requireToken === true && verifier === undefined) throw new TypeError('requireToken needs a tokenVerifier');
  if (verifier !== undefined) {
    const key = checkPublicKey(verifier.issuerPk);
    if (!key.ok) throw new TypeError(`tokenVerifier.issuerPk: ${key.detail}`);
  }
  const signatureCache = new BoundedSet(SIGNATURE_CACHE_BLOCKS);
  const auditor = createAuditor({
    store: deps.store,
    agent: deps.agent,
    certificate,
    chain: deps.chain,
    clock,
    defaultCell: deps.defaultCell ?? DEFAULT_PERCEPTION_CELL,
    logger,
    signatureCache,
    ...(deps.toolPolicy ? { toolPolicy: deps.toolPolicy } : {}),
    ...(deps.blockVerifier ? { blockVerifier: deps.blockVerifier } : {}),
  });
  const reports = createReportService({
    store: deps.store,
    clock,
    agent: deps.agent,
    chain: deps.chain,
    principalLocal: deps.principalLocal,
    knownChains: deps.knownChains ?? [],
    withChainLock: auditor.withChainLock,
    signatureCache,
    ...(deps.blockVerifier ? { blockVerifier: deps.blockVerifier } : {}),
  });
  const tools = [...deps.tools, ...createComplianceTools({ reports })];
  for (const tool of tools) {
    // A broken mapping blocks every call of its tool (audit.ts); say so at startup, not only per call.
    const compiled = tool.coaz === undefined ? null : compileCoazMapping(tool.coaz);
    if (compiled !== null && !compiled.ok)
      logger.error({ tool: tool.name, detail: compiled.detail }, 'broken x-coaz-mapping');
  }
  const toolNames = tools.map((t) => t.name);
  const weather = tools.find((t) => t.name === 'perception_weather');

  const buildServer = (): McpServer => {
    const server = new McpServer(
      { name: PERCEPTION_SERVICE, version: PERCEPTION_VERSION },
      { capabilities: { tools: {}, resources: {} } },
    );
    for (const tool of tools) auditor.register(server, tool);
    registerReportUi(server);
    return server;
  };
  const transports = createMcpTransports({
    buildServer,
    onError: (error) => logger.error({ err: error }, 'closing an MCP session failed'),
    ...(deps.limits?.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: deps.limits.requestTimeoutMs }),
    sessionLimits: deps.sessionLimits,
    realm: PERCEPTION_SERVICE,
    serverInfo: { name: PERCEPTION_SERVICE, version: PERCEPTION_VERSION },
    capabilities: { tools: {}, resources: {} },
  });

  const bearer = createBearerCheck({
    verifier,
    required: deps.requireToken === true,
    clock,
    realm: PERCEPTION_SERVICE,
  });

  const router = new Router();
  const mcpOrigin = originGate(deps.allowedOrigins ?? []);
  for (const method of ['post', 'get', 'delete', 'options'] as const) {
    router[method]('/mcp', mcpOrigin, async (ctx) => transports.streamable(ctx, await bearer(ctx)));
  }
  router.get('/sse', mcpOrigin, async (ctx) => transports.sse(ctx, await bearer(ctx)));
  router.options('/sse', mcpOrigin);
  router.post('/message', mcpOrigin, async (ctx) => transports.message(ctx, await bearer(ctx)));
  router.options('/message', mcpOrigin);

  router.get('/health', async (ctx) => {
    ctx.body = {
      status: 'ok',
      service: PERCEPTION_SERVICE,
      version: PERCEPTION_VERSION,
      audit_active: true,
      agent_pk: auditor.agentPk,
      chain_tip: await auditor.nextIndex(),
      tools: toolNames,
    };
  });

  // The MCP routes' authorization for the plain HTTP ones: a sent token must verify, a required one be sent.
  // The verified token (null without one) is left in ctx.state.auth.
  const authorized: Middleware = async (ctx, next) => {
    ctx.state.auth = await bearer(ctx);
    await next();
  };

  router.post('/epoch/roll', authorized, async (ctx) => {
    // Sealing the agent's chain is for its own principal's agents only (audit.ts mayRollEpoch), as idn_roll_epoch.
    const onBehalf = onBehalfOf((ctx.state.auth as RequestAuth | null)?.info);
    const refusal = auditor.rollRefusal(onBehalf);
    if (refusal !== null) {
      throw onBehalf === null
        ? tokenError(refusal, false, PERCEPTION_SERVICE)
        : tokenForbidden(refusal, PERCEPTION_SERVICE, 'delegation_invalid');
    }
    const rolled = await reports.rollEpoch();
    if (rolled.ok) {
      ctx.body = rolled.value;
      return;
    }
    // docs/protocol.md §7 fixes this body: the message is the error.
    ctx.status = 500;
    ctx.body = { error: rolled.message };
  });

  const compliance = async (ctx: Context, agentPk: string) => {
    if (!agentPkText.safeParse(agentPk).success) {
      throw new ServiceError('invalid_public_key', 'agent_pk must be an Ed25519 public key (64 lowercase hex)');
    }
    ctx.body = await reports.report(agentPk, reportPeriod(ctx.query, clock()));
  };
  router.get('/compliance', authorized, (ctx) => compliance(ctx, auditor.agentPk));
  router.get('/compliance/:agent_pk', authorized, (ctx) => compliance(ctx, ctx.params.agent_pk ?? ''));

  router.post('/approvals', authorized, async (ctx) => {
    const parsed = approvalBody.safeParse(await readJsonBody(ctx, MAX_JSON_BODY_BYTES, deps.limits?.requestTimeoutMs));
    if (!parsed.success) throw new ServiceError('invalid_request', describeZodIssue(parsed.error, 'approval'));
    // Kept as sent: the signature covers the approved_at text.
    const approval: HumanApproval = parsed.data;
    if (approval.agent_pk !== auditor.agentPk) {
      throw new ServiceError('agent_not_found', `approvals are recorded for this server's agent ${auditor.agentPk}`);
    }
    const root = deps.chain[0]?.principal_pk;
    if (approval.principal_pk !== root) {
      throw new ServiceError(
        'delegation_invalid',
        `principal_pk is not the delegation chain's human principal ${root}`,
      );
    }
    if (!approvalSignatureValid(approval)) {
      throw new ServiceError(
        'invalid_signature',
        'signature does not verify: JCS of the approval fields, signed by principal_pk',
      );
    }
    const [stored] = await deps.store.blocks(approval.agent_pk, {
      fromIndex: approval.block_index,
      toIndex: approval.block_index,
    });
    const block = stored === undefined ? undefined : parseStoredBreadcrumb(stored);
    if (block === undefined) throw new ServiceError('record_not_found', `no block ${approval.block_index}`);
    if (!block.ok) throw new ServiceError('invalid_record', block.detail);
    if (block.value.context.outcome === 'blocked') {
      throw new ServiceError('approval_not_required', `block ${approval.block_index} is a blocked call: it never ran`);
    }
    if (!auditor.requiresApproval(block.value.tool_name)) {
      throw new ServiceError(
        'approval_not_required',
        `block ${approval.block_index} is a call of ${block.value.tool_name}, which needs no human approval`,
      );
    }
    await deps.store.addApproval(approval);
    ctx.status = 201;
    ctx.body = approval;
  });

  if (deps.testRoutes === true) {
    router.get('/test/weather', authorized, async (ctx) => {
      if (weather === undefined) throw new ServiceError('tool_not_found', 'perception_weather is not configured');
      // On behalf of the token's agent when one was sent; anonymous otherwise (audit.ts).
      const call = await auditor.call(
        weather,
        { h3_cell: WEATHER_TEST_CELL },
        onBehalfOf((ctx.state.auth as RequestAuth | null)?.info),
      );
      const text = call.result.content[0]?.type === 'text' ? call.result.content[0].text : '';
      if (call.outcome === 'blocked') throw new ServiceError('delegation_invalid', text);
      if (call.outcome !== 'ok') throw new ServiceError('upstream_unavailable', text);
      const value = call.value as { h3_cell: string; temperature_c: number | null; status: string };
      ctx.body = { h3_cell: value.h3_cell, temperature_c: value.temperature_c, status: value.status };
    });
  }

  const http = createMcpHttpApp({
    router,
    logger,
    allowedOrigins: deps.allowedOrigins ?? [],
    allowedHosts: deps.allowedHosts ?? [],
    limits: deps.limits,
    beforeClose: () => transports.close(),
  });
  return {
    app: http.app,
    auditor,
    reports,
    toolNames,
    mcp: { sessions: () => transports.sessions(), inFlight: () => transports.inFlight() },
    async listen(port, host = '127.0.0.1') {
      const listening = await http.listen(port, host);
      logger.info({ url: listening.url, agent_pk: auditor.agentPk }, 'geofabric perception listening');
      return listening;
    },
    close: () => http.close(),
  };
}
