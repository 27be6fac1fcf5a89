import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { generateKeyPair } from '../../core/identity.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { DEFAULT_SESSION_LIMITS, SessionTable, type SessionLimits } from '../../mcp/shared/session-table.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';

/** Clients that connect and leave without a DELETE (the SDK's Client.close() sends none) never lock others out. */
describe('MCP sessions: bounded, least recently used idle one closed to make room', function () {
  this.timeout(180_000);
  let db: SqliteDatabase;
  let server: GovernanceServer | undefined;

  beforeEach(() => {
    db = openSqlite(':memory:');
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    db.close();
  });

  async function start(sessionLimits?: SessionLimits): Promise<string> {
    server = createGovernanceServer({
      store: createSqliteAuditStore(db),
      key: generateKeyPair(),
      chain: null,
      ...(sessionLimits === undefined ? {} : { sessionLimits }),
    });
    const { url } = await server.listen(0, '127.0.0.1');
    return `${url}/mcp`;
  }

  async function connectAndLeave(url: string, cycles: number): Promise<void> {
    for (let i = 0; i < cycles; i += 1) {
      const client = new Client({ name: `leaver-${i}`, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      await client.close();
    }
  }

  async function stillServes(url: string): Promise<void> {
    const client = new Client({ name: 'late', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    const { tools } = await client.listTools();
    assert.ok(tools.length > 0);
    await client.close();
  }

  it('200 connect-and-close clients against a cap of 50: the 201st still connects', async () => {
    const url = await start({ max: 50, perClient: 1000, perPrincipal: 1000, idleMs: 600_000 });
    await connectAndLeave(url, 200);
    await stillServes(url);
  });

  it('a client address is held to its own bound, closing its own oldest sessions', async () => {
    const url = await start({ max: 1000, perClient: 5, perPrincipal: 1000, idleMs: 600_000 });
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const opened = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'first', version: '1' } },
      }),
    });
    const sessionId = opened.headers.get('mcp-session-id') ?? '';
    await opened.text();
    const list = () =>
      fetch(url, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
    assert.equal((await list()).status, 200);
    await connectAndLeave(url, 5);
    // The first session was the address's least recently used idle one: it was closed.
    assert.equal((await list()).status, 404);
    await stillServes(url);
  });

  it('2,000 clients at the default limits: the 2,001st still connects', async () => {
    const url = await start();
    const started = Date.now();
    await connectAndLeave(url, 2000);
    await stillServes(url);
    // Not an assertion: the run is reported so its cost is seen.
    console.log(`      2,000 connect-and-close cycles in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  describe('SessionTable', () => {
    const entry = (client: string, principal: string | null = null) => ({
      client,
      principal,
      lastSeen: 0,
      inflight: 0,
      closed: false,
      async close() {
        this.closed = true;
      },
    });

    it('never evicts a busy session: a full table of busy sessions refuses', () => {
      const table = new SessionTable({ ...DEFAULT_SESSION_LIMITS, max: 2 });
      const a = { ...entry('a'), inflight: 1 };
      const b = { ...entry('b'), inflight: 1 };
      table.set('a', a);
      table.set('b', b);
      assert.equal(table.admit('c', null), false);
      b.inflight = 0;
      assert.equal(table.admit('c', null), true);
      assert.equal(b.closed, true);
      assert.equal(a.closed, false);
    });

    it('holds a principal to its bound across addresses, and sweeps idle sessions', () => {
      let now = 0;
      const table = new SessionTable({ max: 100, perClient: 100, perPrincipal: 2, idleMs: 1000 }, () => now);
      const one = entry('x', 'agent');
      const two = entry('y', 'agent');
      table.set('1', one);
      table.set('2', two);
      table.touch('1'); // now 2 is the least recently used
      assert.equal(table.admit('z', 'agent'), true);
      assert.equal(two.closed, true);
      assert.equal(one.closed, false);
      now = 5000;
      table.set('3', { ...entry('z'), lastSeen: now });
      assert.equal(table.sweep(), 1);
      assert.equal(one.closed, true);
      assert.equal(table.size, 1);
    });
  });
});
