/**
 * The MCP transports of both servers in Koa (docs/architecture.md): Streamable HTTP at `/mcp` (stateful
 * sessions, one McpServer per session; a stateless 2026-07-28 request goes to stateless.ts) and the older SSE transport at `GET /sse` + `POST /message?sessionId=`.
 * POST bodies are read and parsed here (api/json-body.ts: size bound, strict JSON, so a repeated key or deep
 * nesting is 400 `invalid_json` as on every other route) and handed to the SDK as its `parsedBody`; the SDK
 * writes the response on the raw stream (`ctx.respond = false`). Every session gets a fresh McpServer from `buildServer`, which registers the tools through
 * the auditor, so no transport can reach an unaudited tool.
 *
 * Session binding: the caller (server.ts) verifies a request's bearer token and passes it here. A
 * session created with a token is bound to that token's agent for its whole life: every later request of the
 * session (POST, GET, DELETE on /mcp; POST /message) must carry a valid token of the same agent, refreshed
 * tokens included (401 without one, 403 with another agent's). A session created without a token never
 * accepts one (403): what a session may do is fixed when it starts. The token of each request reaches the
 * tool handlers through the SDK (`req.auth` → `extra.authInfo`), so a call is audited under the token that
 * carried it. An open SSE stream outlives its token; the POSTs that carry calls do not.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  ClientRequestSchema,
  ErrorCode,
  isJSONRPCErrorResponse,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type RequestId,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import { readJsonBody } from '../../api/json-body.js';
import { ServiceError } from '../../core/errors.js';
import { createStatelessShell, envelopeProblem, isStatelessRequest } from './stateless.js';
import { DEFAULT_SESSION_LIMITS, SessionTable, type SessionLimits, type TableEntry } from './session-table.js';

/**
 * Streamable HTTP sessions and SSE streams each live in a SessionTable (session-table.ts): bounded in all, per
 * client address and per principal, the least recently used idle one closed to make room, and any idle past
 * `idleMs` closed (its client may have gone without a DELETE; coming back it gets 404 and initializes again, as
 * the MCP spec has it; an SSE stream without a POST /message for that long is ended). An SSE session also ends
 * with its stream.
 *
 * Every JSON-RPC request a server receives, on any transport, has a deadline (`deadlineMs`, answerByDeadline):
 * past it the call is cancelled (its handler's signal aborts, its late answer is dropped) and the client is
 * answered -32001. POSTs of one client address waiting on an MCP server at once are bounded
 * (`inFlightPerClient`, 429 `rate_limit` past it), counted until their response closes.
 */
const MAX_SWEEP_MS = 60_000;
/** Largest JSON-RPC POST body: the SDK's own bound for SSE messages, now also for Streamable HTTP (which had none). */
export const MAX_MCP_BODY_BYTES = 4 * 1024 * 1024;

/** A request's verified bearer token: the agent it binds a session to, and the SDK AuthInfo for tool handlers. */
export interface RequestAuth {
  agentPk: string;
  info: AuthInfo;
}

interface Session extends TableEntry {
  server: McpServer;
  /** The token agent the session is bound to; null for a session opened without a token. */
  agentPk: string | null;
}

/** An RFC 6750 `error_description`: a quoted string of printable ASCII, without quote or backslash. */
const quoted = (text: string): string => `"${text.replace(/[^\x20-\x7e]|["\\]/g, "'")}"`;

/** The RFC 6750 realm of a server's challenges: its service name. */
export const DEFAULT_REALM = 'geofabric-perception';

/**
 * 401 for a missing or unusable bearer token, with the RFC 6750 challenge the MCP authorization spec asks for:
 * `error="invalid_token"` and the reason as `error_description` when a token was presented.
 */
export function tokenError(detail: string, presented = true, realm = DEFAULT_REALM): ServiceError {
  const challenge = presented
    ? `Bearer realm="${realm}", error="invalid_token", error_description=${quoted(detail)}`
    : `Bearer realm="${realm}"`;
  return new ServiceError('token_invalid', detail, { 'www-authenticate': challenge });
}

/** 403 for a valid token that may not do this (another agent's session): RFC 6750 insufficient_scope. */
export function tokenForbidden(
  detail: string,
  realm = DEFAULT_REALM,
  code: 'token_agent_mismatch' | 'delegation_invalid' = 'token_agent_mismatch',
): ServiceError {
  const challenge = `Bearer realm="${realm}", error="insufficient_scope", error_description=${quoted(detail)}`;
  return new ServiceError(code, detail, { 'www-authenticate': challenge });
}

/** Refuses a request whose token does not match its session's binding. */
function checkBinding(session: Session, auth: RequestAuth | null, realm: string): void {
  if (session.agentPk === null) {
    if (auth !== null) {
      throw tokenForbidden('this MCP session was opened without a bearer token; open a new session to use one', realm);
    }
    return;
  }
  if (auth === null) {
    throw tokenError(`this MCP session is bound to agent ${session.agentPk}: send its bearer token`, false, realm);
  }
  if (auth.agentPk !== session.agentPk) {
    throw tokenForbidden(
      `this MCP session is bound to agent ${session.agentPk}, not to the token's agent ${auth.agentPk}`,
      realm,
    );
  }
}

/** Hands the token to the SDK, which passes it to tool handlers as `extra.authInfo`. */
function attach(ctx: Context, auth: RequestAuth | null): IncomingMessage & { auth?: AuthInfo } {
  const req = ctx.req as IncomingMessage & { auth?: AuthInfo };
  if (auth !== null) req.auth = auth.info;
  return req;
}

/** The MCP schema of every request method a client may send (tools/call, initialize, resources/read …). */
const CLIENT_REQUESTS: ReadonlyMap<string, (typeof ClientRequestSchema.options)[number]> = new Map(
  ClientRequestSchema.options.map((schema) => [(schema.shape.method as { value: string }).value, schema] as const),
);

/**
 * Answers a request whose params do not fit its method's MCP schema (e.g. tools/call with `arguments: null`)
 * with JSON-RPC -32602 invalid params. The SDK would parse them inside its handler and answer -32603, an
 * internal error, for what is the caller's mistake. Everything else reaches the server unchanged.
 */
function answerInvalidParams(transport: Transport, onError?: (error: unknown) => void): void {
  const deliver = transport.onmessage;
  if (deliver === undefined) return;
  transport.onmessage = (message, extra) => {
    const schema = isJSONRPCRequest(message) ? CLIENT_REQUESTS.get(message.method) : undefined;
    if (schema !== undefined && isJSONRPCRequest(message)) {
      const parsed = schema.safeParse({ method: message.method, params: message.params });
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue === undefined || issue.path.length === 0 ? 'params' : issue.path.map(String).join('.');
        transport
          .send({
            jsonrpc: '2.0',
            id: message.id,
            error: {
              code: ErrorCode.InvalidParams,
              message: `${message.method}: ${where}: ${issue?.message ?? 'invalid'}`,
            },
          })
          .catch((error: unknown) => onError?.(error));
        return;
      }
    }
    deliver(message, extra);
  };
}

/**
 * Gives every JSON-RPC request reaching `transport`'s server a deadline: when no answer has been sent for it
 * within `deadlineMs`, the server gets a `notifications/cancelled` for it (the SDK aborts the handler's signal
 * and drops its answer) and the client gets JSON-RPC -32001 instead, on the request's own stream. Wraps after
 * connect, outermost, so it sees every request the SDK would handle.
 */
export function answerByDeadline(transport: Transport, deadlineMs: number, onError?: (error: unknown) => void): void {
  const deliver = transport.onmessage;
  if (deliver === undefined) return;
  const send = transport.send.bind(transport);
  const timers = new Map<RequestId, NodeJS.Timeout>();
  const settle = (id: RequestId): void => {
    clearTimeout(timers.get(id));
    timers.delete(id);
  };
  transport.send = (message, options) => {
    if ((isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message)) && message.id !== undefined)
      settle(message.id);
    return send(message, options);
  };
  transport.onmessage = (message, extra) => {
    if (isJSONRPCRequest(message)) {
      const { id } = message;
      settle(id);
      const timer = setTimeout(() => {
        timers.delete(id);
        const reason = `no answer within ${deadlineMs / 1000} s`;
        deliver({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }, extra);
        send(
          { jsonrpc: '2.0', id, error: { code: ErrorCode.RequestTimeout, message: `Request timed out: ${reason}` } },
          { relatedRequestId: id },
        ).catch((error: unknown) => onError?.(error));
      }, deadlineMs);
      timer.unref();
      timers.set(id, timer);
    }
    deliver(message, extra);
  };
  const onclose = transport.onclose;
  transport.onclose = () => {
    for (const timer of timers.values()) clearTimeout(timer);
    timers.clear();
    onclose?.();
  };
}

export interface McpTransports {
  /** POST, GET and DELETE /mcp, with the request's verified bearer token (null without one). */
  streamable(ctx: Context, auth?: RequestAuth | null): Promise<void>;
  /** GET /sse. */
  sse(ctx: Context, auth?: RequestAuth | null): Promise<void>;
  /** POST /message?sessionId=. */
  message(ctx: Context, auth?: RequestAuth | null): Promise<void>;
  sessions(): { streamable: number; sse: number };
  /** POSTs being answered now (each until its response closes), over every client address. */
  inFlight(): number;
  /** The bounds in force (session-table.ts). */
  limits: Required<SessionLimits>;
  /** Closes every session (ends open SSE streams). */
  close(): Promise<void>;
}

export function createMcpTransports(deps: {
  buildServer: () => McpServer;
  onError?: (error: unknown) => void;
  /** How long a POST body may take to arrive (api/json-body.ts's default otherwise). */
  requestTimeoutMs?: number;
  /** Session bounds (MCP_MAX_SESSIONS …); DEFAULT_SESSION_LIMITS otherwise. */
  sessionLimits?: SessionLimits | undefined;
  /** What `server/discover` of the stateless revision (stateless.ts) says of the server. */
  serverInfo: { name: string; version: string };
  capabilities: ServerCapabilities;
  /** The realm of its RFC 6750 challenges (default DEFAULT_REALM). */
  realm?: string;
}): McpTransports {
  const realm = deps.realm ?? DEFAULT_REALM;
  const given = deps.sessionLimits ?? DEFAULT_SESSION_LIMITS;
  const limits: Required<SessionLimits> = {
    ...given,
    deadlineMs: given.deadlineMs ?? DEFAULT_SESSION_LIMITS.deadlineMs,
    inFlightPerClient: given.inFlightPerClient ?? DEFAULT_SESSION_LIMITS.inFlightPerClient,
  };
  /** What every server-side transport gets once connected: -32602 for bad params, then the deadline. */
  const guard = (transport: Transport): void => {
    answerInvalidParams(transport, deps.onError);
    answerByDeadline(transport, limits.deadlineMs, deps.onError);
  };
  const stateless = createStatelessShell({
    buildServer: deps.buildServer,
    serverInfo: deps.serverInfo,
    capabilities: deps.capabilities,
    ...(deps.onError === undefined ? {} : { onError: deps.onError }),
    wrapTransport: guard,
  });
  const postBody = (ctx: Context): Promise<unknown> =>
    ctx.method === 'POST' ? readJsonBody(ctx, MAX_MCP_BODY_BYTES, deps.requestTimeoutMs) : Promise.resolve(undefined);
  const streamable = new SessionTable<Session & { transport: StreamableHTTPServerTransport }>(limits);
  const sse = new SessionTable<Session & { transport: SSEServerTransport }>(limits);

  const closeQuietly = (server: McpServer) => server.close().catch((error: unknown) => deps.onError?.(error));
  const sweep = setInterval(
    () => {
      streamable.sweep();
      sse.sweep();
    },
    Math.max(1000, Math.min(MAX_SWEEP_MS, limits.idleMs / 2)),
  );
  sweep.unref();

  // POSTs waiting on an MCP server, per client address: each holds a slot until its response closes.
  const inFlight = new Map<string, number>();
  let inFlightTotal = 0;
  const holdSlot = (ctx: Context): void => {
    const client = ctx.ip;
    const held = inFlight.get(client) ?? 0;
    if (held >= limits.inFlightPerClient) {
      throw new ServiceError(
        'rate_limit',
        `${held} MCP requests of this address are still being answered; retry when one is done`,
        { 'retry-after': '1' },
      );
    }
    inFlight.set(client, held + 1);
    inFlightTotal += 1;
    ctx.res.once('close', () => {
      const left = (inFlight.get(client) ?? 1) - 1;
      if (left > 0) inFlight.set(client, left);
      else inFlight.delete(client);
      inFlightTotal -= 1;
    });
  };
  /** Runs one request of a session (a GET stream while it stays open), which counts as busy meanwhile: never evicted. */
  const busy = async (session: Session, work: () => Promise<void>): Promise<void> => {
    session.inflight += 1;
    try {
      await work();
    } finally {
      session.inflight -= 1;
    }
  };

  return {
    async streamable(ctx, auth = null) {
      const body = await postBody(ctx);
      // Revision 2026-07-28 and later: one self-contained request, no session (an Mcp-Session-Id is ignored).
      if (isStatelessRequest(body)) {
        // A malformed envelope is answered at once (-32600); anything else waits on a server and holds a slot.
        if (envelopeProblem(body) === undefined) holdSlot(ctx);
        const closed = new AbortController();
        const onClose = () => {
          if (!ctx.res.writableFinished) closed.abort();
        };
        ctx.res.once('close', onClose);
        const answer = await stateless.answer(body, {
          header: (name) => ctx.get(name),
          auth: auth?.info,
          signal: closed.signal,
        });
        if (closed.signal.aborted) {
          ctx.respond = false; // nobody is listening
          if (!ctx.res.writableEnded) ctx.res.end();
          return;
        }
        ctx.status = answer.status;
        if (answer.body !== undefined) ctx.body = answer.body;
        return;
      }
      const sessionId = ctx.get('mcp-session-id');
      if (sessionId !== '') {
        const session = streamable.touch(sessionId);
        // 404 tells an MCP client its session is gone and it should initialize a new one.
        if (session === undefined) throw new ServiceError('not_found', 'unknown or closed MCP session');
        checkBinding(session, auth, realm);
        if (ctx.method === 'POST') holdSlot(ctx);
        await busy(session, async () => {
          ctx.respond = false;
          await session.transport.handleRequest(attach(ctx, auth), ctx.res, body);
        });
        return;
      }
      if (ctx.method !== 'POST') {
        throw new ServiceError('invalid_request', 'an Mcp-Session-Id header is required; initialize with POST first');
      }
      holdSlot(ctx);
      const client = ctx.ip;
      const principal = auth?.agentPk ?? null;
      if (!streamable.admit(client, principal)) {
        throw new ServiceError('quota_exceeded', 'too many open MCP sessions, all of them busy: retry later');
      }
      const server = deps.buildServer();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => {
          streamable.set(id, {
            server,
            transport,
            client,
            principal,
            lastSeen: Date.now(),
            inflight: 0,
            agentPk: principal,
            close: () => closeQuietly(server),
          });
        },
        onsessionclosed: (id) => {
          streamable.delete(id);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) streamable.delete(transport.sessionId);
      };
      await server.connect(transport);
      guard(transport);
      ctx.respond = false;
      await transport.handleRequest(attach(ctx, auth), ctx.res, body);
      // Anything but a successful initialize leaves no session behind.
      if (transport.sessionId === undefined || !streamable.has(transport.sessionId)) await closeQuietly(server);
    },

    async sse(ctx, auth = null) {
      const client = ctx.ip;
      const principal = auth?.agentPk ?? null;
      // As for Streamable sessions: the address's (or principal's, or anyone's) least recently used idle stream
      // is ended to make room; refused only when every one under the bound is busy.
      if (!sse.admit(client, principal)) {
        throw new ServiceError('quota_exceeded', 'too many open MCP SSE streams, all of them busy: retry later');
      }
      ctx.respond = false;
      const transport = new SSEServerTransport('/message', ctx.res);
      const server = deps.buildServer();
      const id = transport.sessionId;
      sse.set(id, {
        server,
        transport,
        client,
        principal,
        lastSeen: Date.now(),
        inflight: 0,
        agentPk: principal,
        close: () => closeQuietly(server),
      });
      transport.onclose = () => {
        sse.delete(id);
      };
      ctx.res.on('close', () => {
        if (sse.delete(id)) void closeQuietly(server);
      });
      await server.connect(transport); // writes the stream's headers and the `endpoint` event
      guard(transport);
    },

    async message(ctx, auth = null) {
      const id = typeof ctx.query.sessionId === 'string' ? ctx.query.sessionId : '';
      if (id === '') throw new ServiceError('invalid_request', 'the sessionId query parameter is required');
      const session = sse.touch(id);
      if (session === undefined) throw new ServiceError('not_found', 'unknown or closed SSE session');
      checkBinding(session, auth, realm);
      const body = await postBody(ctx);
      holdSlot(ctx);
      await busy(session, async () => {
        ctx.respond = false;
        await session.transport.handlePostMessage(attach(ctx, auth), ctx.res, body);
      });
    },

    sessions: () => ({ streamable: streamable.size, sse: sse.size }),
    inFlight: () => inFlightTotal,
    limits,

    async close() {
      clearInterval(sweep);
      const all = [...streamable.values(), ...sse.values()];
      streamable.clear();
      sse.clear();
      await Promise.all(all.map((session) => session.close()));
    },
  };
}
