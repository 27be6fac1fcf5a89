/**
 * The perception server's two MCP transports in Koa (DESIGN section 5): Streamable HTTP at `/mcp` (stateful
 * sessions, one McpServer per session) and the older SSE transport at `GET /sse` + `POST /message?sessionId=`.
 * The routes read no body themselves: the SDK reads the raw request stream (`ctx.respond = false`), with its
 * own size bound. Every session gets a fresh McpServer from `buildServer`, which registers the tools through
 * the auditor, so no transport can reach an unaudited tool.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ServiceError } from '../../core/errors.js';

/** Open sessions per transport; past this a new session is refused until one closes. */
export const MAX_SESSIONS = 1000;
/**
 * A Streamable HTTP session with no request for this long is closed (its client may have gone without a
 * DELETE); a client coming back gets 404 and initializes again, as the MCP spec has it. SSE sessions end
 * with their stream.
 */
export const SESSION_IDLE_MS = 30 * 60_000;
const SWEEP_MS = 60_000;

interface Session {
  server: McpServer;
  lastSeen: number;
  close(): Promise<void>;
}

export interface McpTransports {
  /** POST, GET and DELETE /mcp. */
  streamable(ctx: Context): Promise<void>;
  /** GET /sse. */
  sse(ctx: Context): Promise<void>;
  /** POST /message?sessionId=. */
  message(ctx: Context): Promise<void>;
  sessions(): { streamable: number; sse: number };
  /** Closes every session (ends open SSE streams). */
  close(): Promise<void>;
}

export function createMcpTransports(deps: {
  buildServer: () => McpServer;
  onError?: (error: unknown) => void;
}): McpTransports {
  const streamable = new Map<string, Session & { transport: StreamableHTTPServerTransport }>();
  const sse = new Map<string, Session & { transport: SSEServerTransport }>();

  const closeQuietly = (server: McpServer) => server.close().catch((error: unknown) => deps.onError?.(error));
  const sweep = setInterval(() => {
    const idleSince = Date.now() - SESSION_IDLE_MS;
    for (const [id, session] of streamable) {
      if (session.lastSeen >= idleSince) continue;
      streamable.delete(id);
      void session.close();
    }
  }, SWEEP_MS);
  sweep.unref();

  return {
    async streamable(ctx) {
      const sessionId = ctx.get('mcp-session-id');
      if (sessionId !== '') {
        const session = streamable.get(sessionId);
        // 404 tells an MCP client its session is gone and it should initialize a new one.
        if (session === undefined) throw new ServiceError('not_found', 'unknown or closed MCP session');
        session.lastSeen = Date.now();
        ctx.respond = false;
        await session.transport.handleRequest(ctx.req, ctx.res);
        return;
      }
      if (ctx.method !== 'POST') {
        throw new ServiceError('invalid_request', 'an Mcp-Session-Id header is required; initialize with POST first');
      }
      if (streamable.size >= MAX_SESSIONS) throw new ServiceError('quota_exceeded', 'too many open MCP sessions');
      const server = deps.buildServer();
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (id) => {
          streamable.set(id, { server, transport, lastSeen: Date.now(), close: () => closeQuietly(server) });
        },
        onsessionclosed: (id) => {
          streamable.delete(id);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId !== undefined) streamable.delete(transport.sessionId);
      };
      await server.connect(transport);
      ctx.respond = false;
      await transport.handleRequest(ctx.req, ctx.res);
      // Anything but a successful initialize leaves no session behind.
      if (transport.sessionId === undefined || !streamable.has(transport.sessionId)) await closeQuietly(server);
    },

    async sse(ctx) {
      if (sse.size >= MAX_SESSIONS) throw new ServiceError('quota_exceeded', 'too many open MCP sessions');
      ctx.respond = false;
      const transport = new SSEServerTransport('/message', ctx.res);
      const server = deps.buildServer();
      const id = transport.sessionId;
      sse.set(id, { server, transport, lastSeen: Date.now(), close: () => closeQuietly(server) });
      transport.onclose = () => {
        sse.delete(id);
      };
      ctx.res.on('close', () => {
        if (sse.delete(id)) void closeQuietly(server);
      });
      await server.connect(transport); // writes the stream's headers and the `endpoint` event
    },

    async message(ctx) {
      const id = typeof ctx.query.sessionId === 'string' ? ctx.query.sessionId : '';
      if (id === '') throw new ServiceError('invalid_request', 'the sessionId query parameter is required');
      const session = sse.get(id);
      if (session === undefined) throw new ServiceError('not_found', 'unknown or closed SSE session');
      ctx.respond = false;
      await session.transport.handlePostMessage(ctx.req, ctx.res);
    },

    sessions: () => ({ streamable: streamable.size, sse: sse.size }),

    async close() {
      clearInterval(sweep);
      const all = [...streamable.values(), ...sse.values()];
      streamable.clear();
      sse.clear();
      await Promise.all(all.map((session) => session.close()));
    },
  };
}
