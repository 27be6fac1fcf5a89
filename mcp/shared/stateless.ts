/**
 * The stateless MCP revision 2026-07-28 on `/mcp` (docs/protocol.md §4.2, "MCP revisions"), beside the
 * session-based revisions the SDK serves. A POST whose `params._meta` carries
 * `io.modelcontextprotocol/protocolVersion` is one self-contained request: no `initialize`, no session (an
 * `Mcp-Session-Id` header is ignored), the bearer token checked by the route for this request alone.
 *
 * The SDK (1.x) speaks only the handshake revisions, so this shell checks what the revision asks of a request
 * (version, the `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` headers, client capabilities), answers
 * `server/discover` itself and hands every other method to a fresh McpServer from the same `buildServer` the
 * sessions use, over an in-memory transport: the same tool registry, argument validation and (perception)
 * auditor, so a stateless call is pre-flighted and leaves its breadcrumb exactly as a session's does. Its
 * answer gets what the revision adds: `resultType`, the server's identity in `_meta`, and the cache hints
 * (`ttlMs`, `cacheScope`) of list and read results.
 */
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import {
  ErrorCode,
  isJSONRPCNotification,
  isJSONRPCRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type ServerCapabilities,
} from '@modelcontextprotocol/sdk/types.js';

/** The stateless revisions served; the SDK's list (2025-11-25 and earlier) is served with sessions. */
export const STATELESS_PROTOCOL_VERSIONS: readonly string[] = ['2026-07-28'];
/** Every revision `/mcp` speaks, newest first, as `server/discover` and -32022 name them. */
export const MCP_PROTOCOL_VERSIONS: readonly string[] = [
  ...STATELESS_PROTOCOL_VERSIONS,
  ...SUPPORTED_PROTOCOL_VERSIONS,
];

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** Error codes of revision 2026-07-28 (its schema's MCP range). */
export const HEADER_MISMATCH = -32020;
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** How long a client may cache a list or read result: the tools and resources are fixed for a process's life. */
export const LIST_TTL_MS = 5 * 60_000;
const CACHEABLE = new Set([
  'tools/list',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'prompts/list',
]);
/** Methods whose `Mcp-Name` header mirrors a param. */
const NAMED: Record<string, 'name' | 'uri'> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' };

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * True when a POST body is addressed to the stateless revision: a JSON object (never a batch: the revision has
 * none, so an array goes to the session transport like any other) whose `params._meta` names a protocol
 * version, `initialize` excepted. Its JSON-RPC envelope is judged next (envelopeProblem): what this
 * recognises is answered, never left waiting.
 */
export function isStatelessRequest(body: unknown): body is JsonObject {
  if (!isObject(body) || body.method === 'initialize') return false;
  const params = body.params;
  return isObject(params) && isObject(params._meta) && params._meta[META_PROTOCOL_VERSION] !== undefined;
}

/** A JSON-RPC id MCP accepts: a string or an integer, never null (MCP 2025-11-25 "Requests"). */
const isRequestId = (id: unknown): id is string | number =>
  typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));
const ENVELOPE_MEMBERS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * Why `body` is not a JSON-RPC 2.0 request or notification as MCP defines them, or undefined when it is one:
 * `jsonrpc` exactly "2.0", `method` a string, `params` an object, `id` absent (a notification) or a string or
 * integer, and no other member. The SDK drops any other message without an answer, so each of these is
 * refused here (-32600) instead; the SDK's own schemas are the last word.
 */
export function envelopeProblem(body: JsonObject): string | undefined {
  if (body.jsonrpc !== '2.0') return 'jsonrpc must be "2.0"';
  if (typeof body.method !== 'string') return 'method must be a string';
  if ('id' in body && !isRequestId(body.id)) return 'id must be a string or an integer (not null)';
  const extra = Object.keys(body).find((key) => !ENVELOPE_MEMBERS.has(key));
  if (extra !== undefined) return `unknown member ${JSON.stringify(extra)}`;
  if (!('id' in body ? isJSONRPCRequest(body) : isJSONRPCNotification(body))) return 'not a JSON-RPC request';
  return undefined;
}

export interface StatelessAnswer {
  status: number;
  /** The JSON-RPC response; undefined for an accepted notification (202). */
  body?: JsonObject;
}

export interface StatelessShell {
  answer(
    body: JsonObject,
    request: { header(name: string): string; auth: AuthInfo | undefined; signal: AbortSignal },
  ): Promise<StatelessAnswer>;
}

/** A `Mcp-Name` value, Base64 sentinel decoded (`=?base64?…?=`). */
function decodeHeader(value: string): string {
  const sentinel = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  return sentinel === null ? value : Buffer.from(sentinel[1] as string, 'base64').toString('utf8');
}

export function createStatelessShell(deps: {
  buildServer: () => McpServer;
  serverInfo: { name: string; version: string; title?: string };
  capabilities: ServerCapabilities;
  instructions?: string;
  onError?: (error: unknown) => void;
  /** Wraps the in-memory transport as the sessions' transports are (mcp-transports.ts answerInvalidParams). */
  wrapTransport?: (transport: InMemoryTransport) => void;
}): StatelessShell {
  const serverMeta = { [META_SERVER_INFO]: deps.serverInfo };
  const error = (status: number, id: unknown, code: number, message: string, data?: unknown): StatelessAnswer => ({
    status,
    body: { jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data === undefined ? {} : { data }) } },
  });
  /** What the revision adds to every result. */
  const complete = (method: string, result: JsonObject): JsonObject => ({
    ...result,
    resultType: 'complete',
    ...(CACHEABLE.has(method) ? { ttlMs: LIST_TTL_MS, cacheScope: 'public' } : {}),
    _meta: { ...(isObject(result._meta) ? result._meta : {}), ...serverMeta },
  });

  /** Runs one request on a fresh McpServer (the sessions' registry) and returns its JSON-RPC response. */
  async function viaServer(
    message: JsonObject,
    auth: AuthInfo | undefined,
    signal: AbortSignal,
  ): Promise<JsonObject | undefined> {
    const server = deps.buildServer();
    const [client, serverSide] = InMemoryTransport.createLinkedPair();
    try {
      await server.connect(serverSide);
      deps.wrapTransport?.(serverSide);
      const response = new Promise<JsonObject | undefined>((resolve) => {
        client.onmessage = (reply: JSONRPCMessage) => {
          const r = reply as JsonObject;
          if (r.id === message.id && ('result' in r || 'error' in r)) resolve(r);
        };
        // The HTTP client went away: cancel the call (its handler sees the abort) and answer nothing.
        const cancel = () => {
          void client
            .send({
              jsonrpc: '2.0',
              method: 'notifications/cancelled',
              params: { requestId: message.id as string | number, reason: 'the HTTP request was closed' },
            })
            .catch(() => undefined);
          resolve(undefined);
        };
        if (signal.aborted) cancel();
        else signal.addEventListener('abort', cancel, { once: true });
      });
      await client.start();
      await client.send(message as JSONRPCMessage, auth === undefined ? undefined : { authInfo: auth });
      return await response;
    } finally {
      await server.close().catch((failure: unknown) => deps.onError?.(failure));
    }
  }

  return {
    async answer(body, request) {
      const problem = envelopeProblem(body);
      if (problem !== undefined) {
        // JSON-RPC 2.0 §5: the id of an Invalid Request is null when it cannot be read.
        return error(
          400,
          isRequestId(body.id) ? body.id : null,
          ErrorCode.InvalidRequest,
          `Invalid Request: ${problem}`,
        );
      }
      const id = body.id;
      const method = body.method as string;
      const params = body.params as JsonObject;
      const meta = params._meta as JsonObject;
      const version = meta[META_PROTOCOL_VERSION];
      if (typeof version !== 'string' || !STATELESS_PROTOCOL_VERSIONS.includes(version)) {
        return error(400, id, UNSUPPORTED_PROTOCOL_VERSION, 'Unsupported protocol version', {
          supported: MCP_PROTOCOL_VERSIONS,
          requested: typeof version === 'string' ? version : String(JSON.stringify(version)),
        });
      }
      // This revision defines no client notifications on HTTP: accept and drop one.
      if (id === undefined) return { status: 202 };
      const headerVersion = request.header('mcp-protocol-version');
      if (headerVersion !== version) {
        return error(
          400,
          id,
          HEADER_MISMATCH,
          `Header mismatch: MCP-Protocol-Version ${headerVersion === '' ? 'is missing' : `'${headerVersion}'`}, body ${version}`,
        );
      }
      const headerMethod = request.header('mcp-method');
      if (headerMethod !== method) {
        return error(
          400,
          id,
          HEADER_MISMATCH,
          `Header mismatch: Mcp-Method ${headerMethod === '' ? 'is missing' : `'${headerMethod}'`}, body ${method}`,
        );
      }
      const nameField = NAMED[method];
      if (nameField !== undefined && typeof params[nameField] === 'string') {
        const headerName = decodeHeader(request.header('mcp-name'));
        if (headerName !== params[nameField]) {
          return error(
            400,
            id,
            HEADER_MISMATCH,
            `Header mismatch: Mcp-Name ${headerName === '' ? 'is missing' : `'${headerName}'`}, body ${String(params[nameField])}`,
          );
        }
      }
      if (!isObject(meta[META_CLIENT_CAPABILITIES])) {
        return error(
          400,
          id,
          ErrorCode.InvalidParams,
          `params._meta["${META_CLIENT_CAPABILITIES}"] is required: the client's capabilities for this request ({} for none)`,
        );
      }

      if (method === 'server/discover') {
        return {
          status: 200,
          body: {
            jsonrpc: '2.0',
            id,
            result: complete('server/discover', {
              supportedVersions: MCP_PROTOCOL_VERSIONS,
              capabilities: deps.capabilities,
              ...(deps.instructions === undefined ? {} : { instructions: deps.instructions }),
              ttlMs: LIST_TTL_MS,
              cacheScope: 'public',
            }),
          },
        };
      }
      const reply = await viaServer(body, request.auth, request.signal);
      if (reply === undefined) return { status: 204 }; // the caller went away; nothing is sent
      if (isObject(reply.error)) {
        // A modern client tells "no such method here" from a legacy server's 404 by this JSON-RPC body.
        return { status: reply.error.code === ErrorCode.MethodNotFound ? 404 : 200, body: reply };
      }
      return { status: 200, body: { ...reply, result: complete(method, (reply.result ?? {}) as JsonObject) } };
    },
  };
}
