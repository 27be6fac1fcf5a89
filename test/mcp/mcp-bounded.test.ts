/**
 * Bounded MCP (docs/security.md §5): a stateless request with a malformed JSON-RPC envelope is answered -32600 at
 * once, every request is answered by its deadline, the POSTs one address has waiting are bounded, and `/sse`
 * streams are bounded per client address and ended when idle. Raw HTTP where an attacker sends raw bodies, the
 * official SDK client where a client would.
 */
import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { HttpLimits } from '../../api/http-limits.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import type { PerceptionTool } from '../../mcp/perception/tool-def.js';
import { DEFAULT_SESSION_LIMITS, type SessionLimits } from '../../mcp/shared/session-table.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';

const MODERN = '2026-07-28';
const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const META = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': MODERN,
};

interface Reply {
  status: number;
  body: { id?: unknown; error?: { code: number; message: string }; result?: unknown } & Record<string, unknown>;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, 'mcp-method': 'tools/list', ...headers },
    body: JSON.stringify(body),
  });
  const json = res.headers.get('content-type')?.includes('json') === true;
  return { status: res.status, body: json ? ((await res.json()) as Reply['body']) : (await res.text(), {}) };
}

/** A stateless tools/call of `name` with its mirrored headers. */
const callBody = (name: string, id: number) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: {}, _meta: META },
});
const callHeaders = (name: string) => ({ 'mcp-method': 'tools/call', 'mcp-name': name });

/** Turns of the event loop until `done` holds (a bounded wait for the server's own bookkeeping). */
async function until(done: () => boolean): Promise<void> {
  for (let turn = 0; turn < 10_000 && !done(); turn += 1) await nextTurn();
  assert.ok(done(), 'the condition never held');
}

describe('bounded MCP: envelopes, deadlines, in-flight requests, SSE streams', function () {
  this.timeout(60_000);
  let db: SqliteDatabase;
  const closers: Array<() => Promise<void>> = [];

  beforeEach(() => {
    db = openSqlite(':memory:');
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    db.close();
  });

  /** Calls of `test_hang` never finish on their own; each records the signal it got. */
  const signals: AbortSignal[] = [];
  const hang: PerceptionTool = {
    name: 'test_hang',
    title: 'Never answers',
    description: 'a tool whose handler never finishes',
    inputSchema: {},
    facet: 'perception',
    run: (_args, context) => {
      if (context.signal !== undefined) signals.push(context.signal);
      return new Promise<never>(() => undefined);
    },
  };

  async function perception(
    sessionLimits: Partial<SessionLimits> = {},
    limits?: HttpLimits,
  ): Promise<{ url: string; server: PerceptionServer }> {
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const cert = issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [DEFAULT_PERCEPTION_CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS, 'test_hang'] },
    });
    const server = createPerceptionServer({
      store: createSqliteAuditStore(db),
      agent,
      chain: [cert],
      principalLocal: false,
      clock: () => NOW,
      tools: [hang],
      sessionLimits: { ...DEFAULT_SESSION_LIMITS, ...sessionLimits },
      ...(limits === undefined ? {} : { limits }),
    });
    closers.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    return { url, server };
  }

  describe('stateless envelopes', () => {
    const valid = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } };
    const malformed: Array<[string, unknown]> = [
      ['id null', { ...valid, id: null }],
      ['object id', { ...valid, id: { a: 1 } }],
      ['float id', { ...valid, id: 1.5 }],
      ['boolean id', { ...valid, id: true }],
      ['jsonrpc "1.0"', { ...valid, jsonrpc: '1.0' }],
      ['jsonrpc missing', { id: 1, method: 'tools/list', params: { _meta: META } }],
      ['method not a string', { ...valid, method: 42 }],
      ['an unknown member', { ...valid, extra: true }],
      ['a notification with jsonrpc "1.0"', { jsonrpc: '1.0', method: 'notifications/x', params: { _meta: META } }],
    ];

    it('answers each malformed envelope 400 -32600 at once, on both servers', async () => {
      const governance = createGovernanceServer({
        store: createSqliteAuditStore(db),
        key: generateKeyPair(),
        chain: null,
      });
      closers.push(() => governance.close());
      const urls = [(await governance.listen(0, '127.0.0.1')).url, (await perception()).url];
      for (const url of urls) {
        for (const [name, body] of malformed) {
          const reply = await post(`${url}/mcp`, body);
          assert.equal(reply.status, 400, `${name}: ${JSON.stringify(reply.body)}`);
          assert.equal(reply.body.error?.code, ErrorCode.InvalidRequest, name);
          assert.equal(reply.body.jsonrpc, '2.0', name);
        }
        // The id is echoed when it can be read, else null (JSON-RPC 2.0 §5).
        assert.equal((await post(`${url}/mcp`, { ...valid, jsonrpc: '1.0', id: 'x' })).body.id, 'x');
        assert.equal((await post(`${url}/mcp`, { ...valid, id: null })).body.id, null);
        // Well-formed requests and notifications are served as before.
        assert.equal((await post(`${url}/mcp`, valid)).status, 200);
        const notification = { jsonrpc: '2.0', method: 'notifications/x', params: { _meta: META } };
        assert.equal((await post(`${url}/mcp`, notification)).status, 202);
        // A batch is never stateless: the session transport answers it as before (no session: 400).
        const batch = await post(`${url}/mcp`, [valid, { ...valid, id: null }]);
        assert.equal(batch.status, 400);
      }
    });

    it('answers 1,000 malformed stateless requests sent at once, every one -32600, and keeps none in flight', async () => {
      const { url, server } = await perception();
      const shapes = malformed.map(([, body]) => body);
      const replies = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => post(`${url}/mcp`, shapes[i % shapes.length])),
      );
      for (const reply of replies) {
        assert.equal(reply.status, 400);
        assert.equal(reply.body.error?.code, ErrorCode.InvalidRequest);
      }
      await until(() => server.mcp.inFlight() === 0);
      assert.deepEqual(server.mcp.sessions(), { streamable: 0, sse: 0 });
    });
  });

  describe('deadlines', () => {
    it('answers a stateless call whose handler never finishes -32001 at the deadline, and cancels the handler', async () => {
      signals.length = 0;
      const { url, server } = await perception({ deadlineMs: 300 });
      const reply = await post(`${url}/mcp`, callBody('test_hang', 3), callHeaders('test_hang'));
      assert.equal(reply.body.id, 3);
      assert.equal(reply.body.error?.code, ErrorCode.RequestTimeout, JSON.stringify(reply.body));
      assert.equal(signals.length, 1);
      assert.equal(signals[0]?.aborted, true);
      await until(() => server.mcp.inFlight() === 0);
    });

    it('answers a session call (the SDK client) whose handler never finishes with -32001 at the deadline', async () => {
      signals.length = 0;
      const { url, server } = await perception({ deadlineMs: 300 });
      const client = new Client({ name: 'deadline-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
      closers.push(() => client.close());
      // The SDK's own timeout (60 s) is far beyond the server's deadline: the answer is the server's.
      const refused = await client.callTool({ name: 'test_hang', arguments: {} }).then(
        () => assert.fail('a call that never finishes was answered with a result'),
        (error: unknown) => error,
      );
      assert.ok(refused instanceof McpError, String(refused));
      assert.equal(refused.code, ErrorCode.RequestTimeout);
      assert.equal(signals[0]?.aborted, true);
      // The session still serves.
      assert.ok((await client.listTools()).tools.length > 0);
      await until(() => server.mcp.inFlight() === 0);
    });
  });

  it('bounds the POSTs one address has waiting on the server: 429 rate_limit past the bound', async () => {
    const { url, server } = await perception({ deadlineMs: 2000, inFlightPerClient: 2 });
    const waiting = [1, 2].map((id) => post(`${url}/mcp`, callBody('test_hang', id), callHeaders('test_hang')));
    await until(() => server.mcp.inFlight() === 2);
    const res = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { ...HEADERS, ...callHeaders('test_hang') },
      body: JSON.stringify(callBody('test_hang', 3)),
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '1');
    assert.equal(((await res.json()) as { error: string }).error, 'rate_limit');
    // A malformed request is still answered: it never waits on a server.
    assert.equal((await post(`${url}/mcp`, { ...callBody('test_hang', 4), id: null })).status, 400);
    for (const reply of await Promise.all(waiting)) assert.equal(reply.body.error?.code, ErrorCode.RequestTimeout);
    await until(() => server.mcp.inFlight() === 0);
    assert.equal(
      (await post(`${url}/mcp`, { jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: META } })).status,
      200,
    );
  });

  describe('/sse streams', () => {
    const proxied: HttpLimits = {
      ipPerMinute: 0,
      principalPerMinute: 0,
      burstSeconds: 1,
      trustProxy: true,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 30_000,
    };

    /** Opens a legacy SSE stream as client address `address`; `ended` settles when the server ends it. */
    async function openStream(url: string, address: string) {
      const controller = new AbortController();
      closers.push(async () => controller.abort());
      const res = await fetch(`${url}/sse`, {
        headers: { accept: 'text/event-stream', 'x-forwarded-for': address },
        signal: controller.signal,
      });
      if (res.status !== 200 || res.body === null) return { status: res.status, ended: Promise.resolve() };
      const reader = res.body.getReader();
      const ended = (async () => {
        try {
          while (!(await reader.read()).done);
        } catch {
          // aborted by the test's cleanup
        }
      })();
      return { status: res.status, ended };
    }

    it('holds one address to its own bound, so another address still gets a stream', async () => {
      const { url, server } = await perception({ max: 4, perClient: 2 }, proxied);
      const greedy = [];
      for (let i = 0; i < 4; i += 1) greedy.push(await openStream(url, '203.0.113.7'));
      assert.deepEqual(
        greedy.map((s) => s.status),
        [200, 200, 200, 200],
      );
      // Its two oldest idle streams were ended to make room for its newer ones.
      await Promise.all([greedy[0]?.ended, greedy[1]?.ended]);
      assert.equal(server.mcp.sessions().sse, 2);
      const other = await openStream(url, '198.51.100.9');
      assert.equal(other.status, 200);
      assert.equal(server.mcp.sessions().sse, 3);
    });

    it('ends a stream idle past MCP_SESSION_IDLE_SECONDS', async () => {
      const { url, server } = await perception({ idleMs: 1000 }, proxied);
      const stream = await openStream(url, '203.0.113.8');
      assert.equal(stream.status, 200);
      await stream.ended;
      await until(() => server.mcp.sessions().sse === 0);
    });
  });
});
