import assert from 'node:assert/strict';
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToChildren } from 'h3-js';
import { z } from 'zod';
import type { Violation } from '../../core/breadcrumb-types.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL, isCell } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { buildIdnTokenClaims, GENESIS_CHAIN_TIP } from '../../core/idn-token-claims.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { issueIdnToken } from '../../mcp/governance/token.js';
import type { AnyPerceptionTool } from '../../mcp/perception/audit.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import type { PerceptionTool } from '../../mcp/perception/tool-def.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createFetchTileTool } from '../../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';

/** The error code of a refusal: `error` of `{error, detail}`, or `error.data.reason` of the JSON-RPC body MCP routes answer. */
function errorCode(body: unknown): string {
  const error = (body as { error?: unknown }).error;
  return typeof error === 'string'
    ? error
    : String((error as { data?: { reason?: unknown } } | undefined)?.data?.reason);
}

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
/** Cells inside the server's certificate: the token agent may act in the first only. */
const AGENT_CELL = cellToChildren(CELL, 6)[1] as string;
const INSIDE_AGENT = cellToChildren(AGENT_CELL, 8)[4] as string;
const OUTSIDE_AGENT = cellToChildren(CELL, 6)[3] as string;
const ISSUER = 'https://governance.test';
const AUDIENCE = 'geofabric-perception';
const INITIALIZE = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
};

function text(result: unknown): string {
  const content = (result as CallToolResult).content[0];
  return (content as { text: string }).text;
}

function agentChain(agent: KeyPair, cells: string[], human = generateKeyPair()): DelegationCertificate[] {
  return [
    issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: cells,
      facets: ['perception'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + DAY).toISOString(),
      max_depth: 0,
    }),
  ];
}

describe('perception server with agent tokens', function () {
  let meteo: OpenMeteoServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  let now: number;
  const governance = generateKeyPair();
  const agentA = generateKeyPair();
  const agentB = generateKeyPair();
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    meteo = await startOpenMeteoServer();
  });
  after(() => meteo.close());
  beforeEach(() => {
    now = NOW;
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    meteo.requests.length = 0;
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await store.close();
    db.close();
  });

  async function token(
    agent: KeyPair,
    options: { key?: KeyPair; nowMs?: number; ttlSeconds?: number; cells?: string[]; principal?: KeyPair } = {},
  ) {
    const claims = buildIdnTokenClaims({
      chain: agentChain(agent, options.cells ?? [AGENT_CELL], options.principal),
      trustTier: 'observed',
      epochIndex: 0,
      chainTipHash: GENESIS_CHAIN_TIP,
    });
    return issueIdnToken({
      key: options.key ?? governance,
      claims,
      nowMs: options.nowMs ?? now,
      ttlSeconds: options.ttlSeconds ?? 600,
      issuer: ISSUER,
      audience: AUDIENCE,
    });
  }

  async function start(
    options: {
      requireToken?: boolean;
      verifier?: boolean;
      extraTools?: AnyPerceptionTool[];
      testRoutes?: boolean;
    } = {},
  ) {
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const cert = issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS, 'test_tool'] },
    });
    const clock = () => now;
    const server: PerceptionServer = createPerceptionServer({
      store,
      agent,
      chain: [cert],
      principalLocal: false,
      clock,
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock }),
        createFetchTileTool({
          stac: { stacUrl: 'http://127.0.0.1:9', collection: 'sentinel-2-l2a', timeoutMs: 500, userAgent: 'test' },
        }),
        createClassifyTool({ classifyUrl: undefined, timeoutMs: 500 }),
        ...(options.extraTools ?? []),
      ],
      ...(options.verifier === false
        ? {}
        : { tokenVerifier: { issuerPk: governance.publicKey, issuer: ISSUER, audience: AUDIENCE } }),
      ...(options.requireToken ? { requireToken: true } : {}),
      ...(options.testRoutes ? { testRoutes: true } : {}),
    });
    const { url } = await server.listen(0, '127.0.0.1');
    closers.push(() => server.close());
    const connect = async (headers: Record<string, string>, kind: 'streamable' | 'sse' = 'streamable') => {
      const client = new Client({ name: 'token-test', version: '1.0.0' });
      const transport =
        kind === 'sse'
          ? new SSEClientTransport(new URL(`${url}/sse`), { requestInit: { headers } })
          : new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } });
      await client.connect(transport);
      closers.push(() => client.close());
      return { client, transport };
    };
    /** A raw MCP initialize POST, for the answers the SDK client turns into exceptions. */
    const initialize = async (headers: Record<string, string>) => {
      const res = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(INITIALIZE),
      });
      const body = res.headers.get('content-type')?.includes('json')
        ? ((await res.json()) as Record<string, unknown>)
        : {};
      return { status: res.status, body, challenge: res.headers.get('www-authenticate') };
    };
    return { url, agent, human, server, connect, initialize };
  }

  const blocks = async (agentPk: string) =>
    (await store.blocks(agentPk)).map(
      (b) => JSON.parse(b.data_to_sign) as Record<string, unknown> & { meta: Record<string, unknown> },
    );
  const violations = (agentPk: string): Promise<Violation[]> =>
    store.violations(agentPk, '2020-01-01T00:00:00Z', '2030-01-01T00:00:00Z');

  describe('bearer tokens on /mcp', () => {
    it('accepts an issued token through the MCP SDK client and runs the call on behalf of its agent', async () => {
      const h = await start({ requireToken: true });
      const issued = await token(agentA);
      const { client } = await h.connect({ Authorization: `Bearer ${issued.token}` });
      const result = await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE_AGENT } });
      assert.notEqual(result.isError, true, text(result));
      assert.equal(meteo.requests.length, 1);

      // The server's own chain, signed by its key, records for whom and under which token it acted.
      const [block] = await blocks(h.agent.publicKey);
      assert.equal(block?.identity, h.agent.publicKey);
      assert.equal(block?.meta.on_behalf_of, agentA.publicKey);
      assert.equal(block?.meta.jti, issued.jti);
      assert.deepEqual(block?.meta.coaz, {
        subject: agentA.publicKey,
        action: 'perception_weather',
        resource: INSIDE_AGENT,
      });
      assert.deepEqual(await store.blocks(agentA.publicKey), []);
    });

    it('without a token (not required), calls run for the server agent as before', async () => {
      const h = await start();
      const { client } = await h.connect({});
      const result = await client.callTool({ name: 'perception_weather', arguments: { h3_cell: OUTSIDE_AGENT } });
      assert.notEqual(result.isError, true, text(result));
      const [block] = await blocks(h.agent.publicKey);
      assert.equal(block?.meta.on_behalf_of, undefined);
      assert.equal((block?.meta.coaz as { subject: string }).subject, h.agent.publicKey);
    });

    it('answers 401 token_invalid (never 500) to an expired, wrongly signed, tampered or alg-none token', async () => {
      const h = await start();
      const expired = await token(agentA, { nowMs: NOW - 3_600_000, ttlSeconds: 600 });
      const wrongKey = await token(agentA, { key: generateKeyPair() });
      const good = await token(agentA);
      const [header, payload, signature] = good.token.split('.') as [string, string, string];
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
      const reencode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
      const tampered = `${header}.${reencode({ ...claims, idn_h3_cells: [CELL] })}.${signature}`;
      const none = `${reencode({ alg: 'none', typ: 'JWT' })}.${payload}.`;
      const cases: [string, string, RegExp][] = [
        ['expired', expired.token, /expired at/],
        ['wrong key', wrongKey.token, /signature does not verify/],
        ['tampered claim', tampered, /signature does not verify/],
        ['alg none', none, /alg "none" is not accepted/],
        ['not a JWT', 'not-a-jwt', /not a compact JWT/],
      ];
      for (const [name, value, detail] of cases) {
        const res = await h.initialize({ authorization: `Bearer ${value}` });
        assert.equal(res.status, 401, name);
        assert.equal(errorCode(res.body), 'token_invalid', name);
        assert.match(String((res.body.error as { message: string }).message), detail, name);
        assert.match(String(res.challenge), /^Bearer realm="geofabric-perception", error="invalid_token"/, name);
      }
      const basic = await h.initialize({ authorization: 'Basic dXNlcjpwYXNz' });
      assert.equal(basic.status, 401);
      assert.equal((await h.initialize({ authorization: `Bearer ${good.token}` })).status, 200);
      // The SDK client gets the 401 as an error too.
      await assert.rejects(h.connect({ Authorization: `Bearer ${expired.token}` }));
    });

    it('with requireToken, refuses a request without a token; without a verifier, refuses any token', async () => {
      const required = await start({ requireToken: true });
      const res = await required.initialize({});
      assert.equal(res.status, 401);
      assert.equal(errorCode(res.body), 'token_invalid');
      assert.equal(res.challenge, 'Bearer realm="geofabric-perception"');
      const sse = await fetch(`${required.url}/sse`);
      assert.equal(sse.status, 401);

      const plain = await start({ verifier: false });
      const refused = await plain.initialize({ authorization: `Bearer ${(await token(agentA)).token}` });
      assert.equal(refused.status, 401);
      assert.match(String((refused.body.error as { message: string }).message), /accepts no bearer tokens/);
      assert.match(String(refused.challenge), /error_description="this server accepts no bearer tokens/);
      assert.equal((await plain.initialize({})).status, 200);
      assert.throws(
        () =>
          createPerceptionServer({
            store,
            agent: agentA,
            chain: agentChain(agentA, [CELL]),
            principalLocal: false,
            tools: [],
            requireToken: true,
          }),
        /requireToken needs a tokenVerifier/,
      );
    });
  });

  describe('the HTTP routes beside /mcp', () => {
    it('with requireToken, /epoch/roll, /compliance, /approvals and /test/weather need a token like /mcp', async () => {
      const h = await start({ requireToken: true, testRoutes: true });
      const routes: [string, string][] = [
        ['GET', '/test/weather'],
        ['POST', '/epoch/roll'],
        ['GET', '/compliance'],
        ['GET', `/compliance/${h.agent.publicKey}`],
        ['POST', '/approvals'],
      ];
      for (const [method, path] of routes) {
        const res = await fetch(`${h.url}${path}`, { method });
        assert.equal(res.status, 401, `${method} ${path}`);
        assert.equal(errorCode(await res.json()), 'token_invalid');
        assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
        const forged = await fetch(`${h.url}${path}`, { method, headers: { authorization: 'Bearer x.y.z' } });
        assert.equal(forged.status, 401, `${method} ${path} with a forged token`);
      }
      assert.equal(meteo.requests.length, 0);
      assert.deepEqual(await store.blocks(h.agent.publicKey), [], 'no anonymous call left a breadcrumb');
      assert.deepEqual(await store.epochs(h.agent.publicKey), []);
      // With a token they answer (/test/weather on behalf of its agent, whose cells must hold the test city).
      const { token: bearer } = await token(agentA, { cells: [CELL] });
      const authorization = `Bearer ${bearer}`;
      assert.equal((await fetch(`${h.url}/test/weather`, { headers: { authorization } })).status, 200);
      // Rolling needs more: an agent of the server's own principal (403 for agentA's).
      assert.equal((await fetch(`${h.url}/epoch/roll`, { method: 'POST', headers: { authorization } })).status, 403);
      const own = `Bearer ${(await token(agentB, { principal: h.human })).token}`;
      const rolled = await fetch(`${h.url}/epoch/roll`, { method: 'POST', headers: { authorization: own } });
      assert.equal(rolled.status, 200);
      assert.equal((await fetch(`${h.url}/compliance`, { headers: { authorization } })).status, 200);
      // /health stays open for liveness probes.
      assert.equal((await fetch(`${h.url}/health`)).status, 200);
    });

    it('serves /test/weather only when enabled (PERCEPTION_TEST_ROUTES)', async () => {
      const h = await start();
      const res = await fetch(`${h.url}/test/weather`);
      assert.equal(res.status, 404);
      assert.equal(meteo.requests.length, 0);
      assert.deepEqual(await store.blocks(h.agent.publicKey), []);
    });

    it('refuses a foreign Origin and a rebinding Host on every route: a cross-site text/plain POST rolls nothing', async () => {
      const h = await start({ testRoutes: true });
      const evil = { origin: 'http://evil.example' };
      const plain = { ...evil, 'content-type': 'text/plain' };
      for (const [method, path, headers] of [
        ['POST', '/epoch/roll', plain],
        ['POST', '/approvals', plain],
        ['GET', '/test/weather', evil],
        ['GET', '/compliance', evil],
        ['GET', '/health', evil],
      ] as const) {
        const res = await fetch(`${h.url}${path}`, { method, headers, ...(method === 'POST' ? { body: '{}' } : {}) });
        assert.equal(res.status, 403, `${method} ${path}`);
        assert.equal(errorCode(await res.json()), 'origin_not_allowed');
      }
      // A rebound name: the browser's Origin and Host are the attacker's, the socket is ours.
      const port = new URL(h.url).port;
      const rebound = await new Promise<number>((resolve, reject) => {
        const req = request(
          { host: '127.0.0.1', port, path: '/epoch/roll', method: 'POST', headers: { host: `rebind.example:${port}` } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end('{}');
      });
      assert.equal(rebound, 403);
      assert.equal(meteo.requests.length, 0);
      assert.deepEqual(await store.epochs(h.agent.publicKey), []);
      // A loopback origin (a local tool's page) still works.
      const local = await fetch(`${h.url}/test/weather`, { headers: { origin: 'http://localhost:3000' } });
      assert.equal(local.status, 200);
    });
  });

  describe('session binding', () => {
    it('binds a Streamable HTTP session to its token agent: another agent 403, no token 401, a fresh token of the agent ok', async () => {
      const h = await start();
      const headers: Record<string, string> = { Authorization: `Bearer ${(await token(agentA)).token}` };
      const { client, transport } = await h.connect(headers);
      const sessionId = (transport as StreamableHTTPClientTransport).sessionId as string;
      const raw = (extra: Record<string, string>) =>
        fetch(`${h.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sessionId,
            'mcp-protocol-version': '2025-03-26',
            ...extra,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
        });

      const asB = await raw({ authorization: `Bearer ${(await token(agentB)).token}` });
      assert.equal(asB.status, 403);
      assert.match(
        asB.headers.get('www-authenticate') ?? '',
        /error="insufficient_scope", error_description="this MCP session/,
      );
      assert.equal(errorCode(await asB.json()), 'token_agent_mismatch');
      const anonymous = await raw({});
      assert.equal(anonymous.status, 401);
      const refusal = (await anonymous.json()) as {
        jsonrpc: string;
        id: null;
        error: { code: number; message: string };
      };
      assert.equal(refusal.jsonrpc, '2.0');
      assert.equal(refusal.id, null);
      assert.equal(refusal.error.code, -32000);
      assert.match(refusal.error.message, /bound to agent/);

      // Through the SDK client: a refreshed token of A keeps working, B's token is refused.
      now += 60_000;
      const refreshed = await token(agentA);
      headers.Authorization = `Bearer ${refreshed.token}`;
      const result = await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE_AGENT } });
      assert.notEqual(result.isError, true, text(result));
      assert.equal((await blocks(h.agent.publicKey))[0]?.meta.jti, refreshed.jti);
      headers.Authorization = `Bearer ${(await token(agentB)).token}`;
      await assert.rejects(
        client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE_AGENT } }),
        /403|token_agent_mismatch/,
      );
      assert.equal(meteo.requests.length, 1);

      // A session opened without a token never takes one.
      const { transport: open } = await h.connect({});
      const late = await fetch(`${h.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': (open as StreamableHTTPClientTransport).sessionId as string,
          authorization: `Bearer ${(await token(agentA)).token}`,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      assert.equal(late.status, 403);
    });

    it('an expired token on a bound session is 401', async () => {
      const h = await start();
      const headers: Record<string, string> = {
        Authorization: `Bearer ${(await token(agentA, { ttlSeconds: 60 })).token}`,
      };
      const { client } = await h.connect(headers);
      now += 61_000;
      await assert.rejects(client.listTools(), /401|token/i);
    });

    it('binds an SSE session too, and runs its calls on behalf of the token agent', async () => {
      const h = await start();
      const issued = await token(agentA);
      const { client, transport } = await h.connect({ Authorization: `Bearer ${issued.token}` }, 'sse');
      const result = await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE_AGENT } });
      assert.notEqual(result.isError, true, text(result));
      assert.equal((await blocks(h.agent.publicKey))[0]?.meta.on_behalf_of, agentA.publicKey);

      const endpoint = (transport as unknown as { _endpoint: URL })._endpoint;
      const post = (headers: Record<string, string>) =>
        fetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/list' }),
        });
      const asB = await post({ authorization: `Bearer ${(await token(agentB)).token}` });
      assert.equal(asB.status, 403);
      assert.equal((await post({})).status, 401);
      assert.equal((await post({ authorization: `Bearer ${issued.token}` })).status, 202);
    });
  });

  describe('the token limits the call', () => {
    it("blocks a call outside the token's cells (inside the server's): the tool never runs", async () => {
      const h = await start();
      const { client } = await h.connect({ Authorization: `Bearer ${(await token(agentA)).token}` });
      const result = await client.callTool({ name: 'perception_weather', arguments: { h3_cell: OUTSIDE_AGENT } });
      assert.equal(result.isError, true);
      assert.match(text(result), /jurisdiction_breach/);
      assert.match(text(result), /outside the bearer token's cells/);
      assert.equal(meteo.requests.length, 0);
      const [block] = await blocks(h.agent.publicKey);
      assert.equal((block?.context as { outcome: string }).outcome, 'blocked');
      assert.equal(block?.meta.violation, 'jurisdiction_breach');
      assert.equal(block?.meta.on_behalf_of, agentA.publicKey);
      const [violation] = await violations(h.agent.publicKey);
      assert.equal(violation?.type, 'jurisdiction_breach');
      assert.match(String(violation?.detail), new RegExp(`on behalf of ${agentA.publicKey}`));
    });

    it('lets the token agent use the cell-less idn_* tools of the server', async () => {
      const h = await start();
      const { client } = await h.connect({ Authorization: `Bearer ${(await token(agentA)).token}` });
      const result = await client.callTool({ name: 'idn_verify_chain', arguments: {} });
      assert.notEqual(result.isError, true, text(result));
      assert.equal((await blocks(h.agent.publicKey))[0]?.meta.on_behalf_of, agentA.publicKey);
    });
  });

  describe('authorization mappings', () => {
    it('tools/list shows coaz: true and the x-coaz-mapping of the perception tools', async () => {
      const h = await start();
      const { client } = await h.connect({});
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((t) => [t.name, t]));
      for (const name of ['perception_weather', 'perception_fetch_tile', 'perception_classify']) {
        const meta = byName.get(name)?._meta as { coaz?: boolean; 'x-coaz-mapping'?: Record<string, unknown> };
        assert.equal(meta?.coaz, true, name);
        assert.equal(meta['x-coaz-mapping']?.resource, 'params.h3_cell', name);
        assert.equal(meta['x-coaz-mapping']?.action, 'tool', name);
        assert.match(String(meta['x-coaz-mapping']?.subject), /claims\.idn_agent_pk/);
        assert.equal(
          (meta['x-coaz-mapping']?.context as Record<string, string>).regulation,
          'context.jurisdiction.regulation',
        );
      }
      assert.equal(byName.get('idn_verify_chain')?._meta, undefined);
      assert.deepEqual(Object.keys(byName.get('idn_get_compliance_report')?._meta ?? {}), ['ui']);
    });

    function testTool(coaz: PerceptionTool['coaz'], runs: { count: number }): AnyPerceptionTool {
      const tool: PerceptionTool<{ h3_cell: z.ZodString }> = {
        name: 'test_tool',
        title: 'test',
        description: 'a tool with a given mapping',
        inputSchema: { h3_cell: z.string().refine(isCell) },
        facet: 'perception',
        cellOf: (args) => args.h3_cell,
        coaz,
        async run() {
          runs.count++;
          return { ran: true };
        },
      };
      return tool as AnyPerceptionTool;
    }

    it('blocks a call whose mapping has a CEL error, naming the expression; the tool never runs, no violation', async () => {
      const runs = { count: 0 };
      const broken = { subject: 'context.agent_identity', action: 'tool', resource: 'params.h3_cell +' };
      const h = await start({ extraTools: [testTool(broken, runs)] });
      const { client } = await h.connect({});
      const result = await client.callTool({ name: 'test_tool', arguments: { h3_cell: OUTSIDE_AGENT } });
      assert.equal(result.isError, true);
      assert.match(text(result), /blocked by its authorization mapping \(coaz_error\)/);
      assert.match(text(result), /expression resource \("params\.h3_cell \+"\)/);
      assert.equal(runs.count, 0);
      const [block] = await blocks(h.agent.publicKey);
      assert.equal((block?.context as { outcome: string }).outcome, 'blocked');
      assert.match(String(block?.meta.coaz_error), /expression resource/);
      assert.equal(block?.meta.violation, undefined);
      assert.deepEqual(await violations(h.agent.publicKey), []);

      const missing = { subject: 'claims.idn_agent_pk', action: 'tool', resource: 'params.h3_cell' };
      const h2 = await start({ extraTools: [testTool(missing, runs)] });
      const message = text(
        await (await h2.connect({})).client.callTool({ name: 'test_tool', arguments: { h3_cell: CELL } }),
      );
      assert.match(message, /expression subject .*No such key: idn_agent_pk/);
      assert.equal(runs.count, 0);
    });

    it("gives the mapping the server's current epoch and chain tip, fresh after an epoch roll", async () => {
      const runs = { count: 0 };
      // Allowed only while the chain is empty and no epoch has been rolled: a probe of the audit context.
      const probe = {
        subject: 'context.agent_identity',
        action: 'tool',
        resource: `context.audit.epoch_index == 0 ? params.h3_cell : "8a1fb46622dffff"`,
        context: { tip: 'context.audit.chain_tip_hash', tier: 'context.delegation.trust_tier' },
      };
      const h = await start({ extraTools: [testTool(probe, runs)] });
      const { client } = await h.connect({});
      const first = await client.callTool({ name: 'test_tool', arguments: { h3_cell: CELL } });
      assert.notEqual(first.isError, true, text(first));
      assert.equal((await client.callTool({ name: 'test_tool', arguments: { h3_cell: CELL } })).isError, undefined);
      const own = `Bearer ${(await token(agentB, { principal: h.human })).token}`;
      const roll = await fetch(`${h.url}/epoch/roll`, { method: 'POST', headers: { authorization: own } });
      assert.equal(roll.status, 200);
      const after = await client.callTool({ name: 'test_tool', arguments: { h3_cell: CELL } });
      assert.equal(after.isError, true);
      assert.match(text(after), /resource 8a1fb46622dffff/);
      assert.equal(runs.count, 2);
    });

    it('blocks a call whose mapped request the certificate refuses, and stores the violation', async () => {
      const runs = { count: 0 };
      const elsewhere = { subject: 'context.agent_identity', action: 'tool', resource: '"8a1fb46622dffff"' };
      const h = await start({ extraTools: [testTool(elsewhere, runs)] });
      const { client } = await h.connect({});
      const result = await client.callTool({ name: 'test_tool', arguments: { h3_cell: CELL } });
      assert.equal(result.isError, true);
      assert.match(
        text(result),
        /blocked \(jurisdiction_breach\): authorization mapping refused: resource 8a1fb46622dffff/,
      );
      assert.equal(runs.count, 0);
      const [violation] = await violations(h.agent.publicKey);
      assert.equal(violation?.type, 'jurisdiction_breach');
      assert.equal(violation?.severity, 'critical');

      // A token call whose mapping names the server as subject is refused as a facet_violation.
      const server = { subject: 'context.agent_identity', action: 'tool', resource: 'params.h3_cell' };
      const h2 = await start({ extraTools: [testTool(server, runs)] });
      const { client: asA } = await h2.connect({ Authorization: `Bearer ${(await token(agentA)).token}` });
      const refused = await asA.callTool({ name: 'test_tool', arguments: { h3_cell: INSIDE_AGENT } });
      assert.match(text(refused), /facet_violation.*not the acting agent/);
      assert.equal(runs.count, 0);
    });
  });
});
