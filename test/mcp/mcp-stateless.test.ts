import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';

const MODERN = '2026-07-28';
const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;

interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | null;
}

/** A raw JSON-RPC POST of the stateless revision: `_meta` in params and the mirrored headers. */
async function modern(
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  options: { version?: string; headers?: Record<string, string>; meta?: Record<string, unknown> } = {},
): Promise<Reply> {
  const version = options.version ?? MODERN;
  const name: Record<string, string> = typeof params.name === 'string' ? { 'mcp-name': params.name } : {};
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
      'mcp-method': method,
      ...name,
      ...options.headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1.0.0' },
          'io.modelcontextprotocol/clientCapabilities': {},
          ...options.meta,
        },
      },
    }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? null : (JSON.parse(text) as Reply['body']) };
}

const result = (reply: Reply) => {
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  assert.equal(reply.body?.error, undefined, JSON.stringify(reply.body));
  return reply.body?.result as Record<string, unknown>;
};

describe('MCP revision 2026-07-28 (stateless) beside the session revisions on /mcp', function () {
  this.timeout(30_000);
  let db: SqliteDatabase;
  const closers: Array<() => Promise<void>> = [];

  beforeEach(() => {
    db = openSqlite(':memory:');
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
    db.close();
  });

  async function governance(): Promise<{ url: string; server: GovernanceServer }> {
    const server = createGovernanceServer({ store: createSqliteAuditStore(db), key: generateKeyPair(), chain: null });
    closers.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    return { url: `${url}/mcp`, server };
  }

  async function perception(options: { verifierPk?: string } = {}): Promise<{ url: string; server: PerceptionServer }> {
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const cert = issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [DEFAULT_PERCEPTION_CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
    });
    const server = createPerceptionServer({
      store: createSqliteAuditStore(db),
      agent,
      chain: [cert],
      principalLocal: false,
      clock: () => NOW,
      tools: [createEmbedTool()],
      ...(options.verifierPk === undefined
        ? {}
        : { tokenVerifier: { issuerPk: options.verifierPk, issuer: 'i', audience: 'a' } }),
    });
    closers.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    return { url: `${url}/mcp`, server };
  }

  it('server/discover names both eras, the capabilities and the server, with cache hints', async () => {
    const { url } = await governance();
    const discovered = result(await modern(url, 'server/discover'));
    assert.deepEqual((discovered.supportedVersions as string[]).slice(0, 2), [MODERN, '2025-11-25']);
    assert.ok((discovered.supportedVersions as string[]).includes('2024-11-05'));
    assert.deepEqual(discovered.capabilities, { tools: {} });
    assert.equal(discovered.resultType, 'complete');
    assert.equal(typeof discovered.ttlMs, 'number');
    assert.equal(discovered.cacheScope, 'public');
    assert.deepEqual((discovered._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo'], {
      name: 'geofabric-governance',
      version: '0.1.0',
    });
  });

  it('tools/list and tools/call without a session: no Mcp-Session-Id minted, results typed and cacheable', async () => {
    const { url } = await governance();
    const listed = await modern(url, 'tools/list');
    assert.equal(listed.headers.get('mcp-session-id'), null);
    const list = result(listed);
    assert.equal(list.resultType, 'complete');
    assert.equal(list.ttlMs, 300_000);
    assert.equal(list.cacheScope, 'public');
    assert.deepEqual((list.tools as Array<{ name: string }>).map((t) => t.name).sort(), [
      'check_delegation_chain',
      'generate_audit_proof',
      'verify_jurisdiction',
    ]);
    // An Mcp-Session-Id on a stateless request is ignored, not looked up.
    const called = await modern(
      url,
      'tools/call',
      { name: 'check_delegation_chain', arguments: { tool_name: 'perception_weather' } },
      { headers: { 'mcp-session-id': 'no-such-session' } },
    );
    assert.equal(called.headers.get('mcp-session-id'), null);
    const call = result(called);
    assert.equal(call.resultType, 'complete');
    assert.equal(call.isError, true); // no certificate is configured: a tool error naming why
    assert.match(JSON.stringify(call.content), /delegation_required/);
  });

  it('an unknown version is -32022 with the supported list; headers must match the body (-32020)', async () => {
    const { url } = await governance();
    const unknown = await modern(url, 'tools/list', {}, { version: '2099-01-01' });
    assert.equal(unknown.status, 400);
    const error = unknown.body?.error as { code: number; data: { supported: string[]; requested: string } };
    assert.equal(error.code, -32022);
    assert.equal(error.data.requested, '2099-01-01');
    assert.ok(error.data.supported.includes(MODERN));
    assert.equal(unknown.body?.id, 7);

    const mismatch = await modern(url, 'tools/list', {}, { headers: { 'mcp-method': 'tools/call' } });
    assert.equal(mismatch.status, 400);
    assert.equal((mismatch.body?.error as { code: number }).code, -32020);
    const noName = await modern(
      url,
      'tools/call',
      { name: 'verify_jurisdiction', arguments: {} },
      {
        headers: { 'mcp-name': '=?base64?' + Buffer.from('other').toString('base64') + '?=' },
      },
    );
    assert.equal((noName.body?.error as { code: number }).code, -32020);
    const noCapabilities = await modern(
      url,
      'tools/list',
      {},
      {
        meta: { 'io.modelcontextprotocol/clientCapabilities': undefined },
      },
    );
    assert.equal((noCapabilities.body?.error as { code: number }).code, -32602);
    const unknownMethod = await modern(url, 'subscriptions/listen', { notifications: {} });
    assert.equal(unknownMethod.status, 404);
    assert.equal((unknownMethod.body?.error as { code: number }).code, -32601);
  });

  it('a legacy initialize session still works beside stateless requests, and /sse stays legacy', async () => {
    const { url } = await governance();
    const client = new Client({ name: 'legacy', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url));
    await client.connect(transport);
    assert.equal(typeof transport.sessionId, 'string');
    assert.equal(transport.protocolVersion, '2025-11-25');
    result(await modern(url, 'tools/list'));
    const { tools } = await client.listTools();
    assert.equal(tools.length, 3);
    await client.close();
  });

  it('perception: stateless calls run through the auditor and chain their breadcrumbs as session calls do', async () => {
    const { url, server } = await perception();
    const tip = async () => server.auditor.nextIndex();
    assert.equal(await tip(), 0);
    const first = result(
      await modern(url, 'tools/call', { name: 'perception_embed', arguments: { h3_cell: DEFAULT_PERCEPTION_CELL } }),
    );
    assert.equal(first.isError, true);
    assert.match(JSON.stringify(first.content), /not_available/);
    assert.equal(await tip(), 1);
    const client = new Client({ name: 'legacy', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    await client.callTool({ name: 'perception_embed', arguments: { h3_cell: DEFAULT_PERCEPTION_CELL } });
    await client.close();
    assert.equal(await tip(), 2);
    result(await modern(url, 'tools/call', { name: 'idn_verify_chain', arguments: {} }));
    assert.equal(await tip(), 3);
    const verified = await server.reports.report(server.auditor.agentPk, {
      from: '2020-01-01T00:00:00.000Z',
      to: new Date(NOW + DAY).toISOString(),
    });
    assert.equal(verified.chain_verification.is_valid, true);
    assert.equal(verified.chain_verification.block_count, 3);
    const discovered = result(await modern(url, 'server/discover'));
    assert.deepEqual(discovered.capabilities, { tools: {}, resources: {} });
  });

  it('perception: the bearer token is checked on every stateless request', async () => {
    const { url } = await perception({ verifierPk: generateKeyPair().publicKey });
    const reply = await modern(url, 'tools/list', {}, { headers: { authorization: 'Bearer not-a-token' } });
    assert.equal(reply.status, 401);
    assert.match(
      reply.headers.get('www-authenticate') ?? '',
      /^Bearer realm="geofabric-perception", error="invalid_token", error_description="token is not a compact JWT/,
    );
    // A JSON-RPC error body, so an SDK surfaces the reason.
    assert.deepEqual(Object.keys(reply.body ?? {}).sort(), ['error', 'id', 'jsonrpc']);
    const error = reply.body?.error as { code: number; message: string; data: { reason: string } };
    assert.equal(error.code, -32000);
    assert.equal(error.data.reason, 'token_invalid');
    // The SDK client (legacy era) shows it too.
    const client = new Client({ name: 'bad-token', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: 'Bearer not-a-token' } },
    });
    await assert.rejects(client.connect(transport), /token is not a compact JWT.*token_invalid/);
  });
});
