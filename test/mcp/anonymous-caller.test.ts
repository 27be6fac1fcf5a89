/**
 * Anonymous is least (docs/security.md §5): a caller without a bearer token is judged at the lowest trust tier,
 * never raises the server agent's trust, and cannot roll its epoch; a presented token that does not verify is
 * 401 `invalid_token` on both servers, never served as anonymous. Through the official MCP SDK client, and raw
 * HTTP where a client would send the request as it is.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToChildren } from 'h3-js';
import { rollAgentEpoch } from '../../core/agent-epoch.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import type { TrustView } from '../../mcp/perception/reports.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { agentToken, tokenVerifierOf } from '../helpers/agent-token.js';
import { startClassifyServer, type ClassifyServer } from '../helpers/classify-server.js';
import { textOf } from '../helpers/mcp-refusal.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
/** Inside the certificate's cell, in Italy: perception_classify there needs tier observed (eu-classify-observed). */
const INSIDE = cellToChildren(CELL, 7)[3] as string;

const certificate = (principal: KeyPair, agent: KeyPair): DelegationCertificate =>
  issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [CELL],
    facets: ['perception', 'compliance'],
    not_before: new Date(NOW - DAY).toISOString(),
    not_after: new Date(NOW + 30 * DAY).toISOString(),
    max_depth: 0,
    constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
  });

const ok = <T>(result: unknown): T => {
  assert.notEqual((result as CallToolResult).isError, true, textOf(result as CallToolResult));
  return JSON.parse(textOf(result as CallToolResult)) as T;
};

describe('anonymous callers are the least trusted; a presented invalid token is 401', function () {
  this.timeout(30_000);
  let meteo: OpenMeteoServer;
  let classify: ClassifyServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  const governanceKey = generateKeyPair();
  const closers: Array<() => Promise<void>> = [];

  before(async () => {
    [meteo, classify] = await Promise.all([startOpenMeteoServer(), startClassifyServer()]);
  });
  after(() => Promise.all([meteo.close(), classify.close()]));
  beforeEach(() => {
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    classify.requests.length = 0;
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await store.close();
    db.close();
  });

  /** A perception server whose agent acts for `human`; tokens of `governanceKey` verify. */
  async function perception(identity: { agent: KeyPair; human: KeyPair } = fresh()) {
    const { agent, human } = identity;
    const clock = () => NOW;
    const server = createPerceptionServer({
      store,
      agent,
      chain: [certificate(human, agent)],
      principalLocal: false,
      clock,
      toolPolicy: examplePolicy(),
      tokenVerifier: tokenVerifierOf(governanceKey),
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock }),
        createClassifyTool({ classifyUrl: classify.url, timeoutMs: 2000 }),
      ],
    });
    closers.push(() => server.close());
    const { url } = await server.listen(0, '127.0.0.1');
    /** A token of a fresh agent delegated by `principal` (default: the server's own human). */
    const token = (principal: KeyPair = human) => {
      const other = generateKeyPair();
      return agentToken({ issuer: governanceKey, chain: [certificate(principal, other)], nowMs: NOW });
    };
    const connect = async (bearer?: string) => {
      const client = new Client({ name: 'anonymous-test', version: '1.0.0' });
      const headers: Record<string, string> = bearer === undefined ? {} : { authorization: `Bearer ${bearer}` };
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
      closers.push(() => client.close());
      return client;
    };
    return { url, agent, human, token, connect };
  }

  const fresh = () => ({ agent: generateKeyPair(), human: generateKeyPair() });
  const trust = async (client: Client) => ok<TrustView>(await client.callTool({ name: 'idn_get_trust_score' }));

  it("anonymous calls never count as the agent's operations; calls under a token do", async () => {
    const p = await perception();
    const anonymous = await p.connect();
    for (let i = 0; i < 20; i += 1) await trust(anonymous);
    ok(await anonymous.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
    const seen = await trust(anonymous);
    assert.equal(seen.total_operations, 0);
    assert.equal(seen.unique_cells, 0);
    assert.equal(seen.parts.operations, 0);
    const blocks = await store.blocks(p.agent.publicKey);
    assert.equal(blocks.length, 22, 'every anonymous call is still audited');
    for (const block of blocks) {
      assert.equal((JSON.parse(block.data_to_sign) as { meta: { anonymous?: boolean } }).meta.anonymous, true);
    }

    const withToken = await p.connect(await p.token());
    ok(await withToken.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
    const after = await trust(withToken);
    assert.equal(after.total_operations, 1);
    assert.equal(after.unique_cells, 1);
  });

  it("the tool policy judges an anonymous caller at the least tier, not at the server agent's own", async () => {
    // The server agent's last epoch closed at `trusted` (above the rule's `observed`) before this server started.
    const identity = fresh();
    const earlier = await perception(identity);
    ok(await (await earlier.connect()).callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
    const blocks = await store.blocks(identity.agent.publicKey);
    await store.appendEpoch(
      rollAgentEpoch({ agent: identity.agent, blocks, previous: null, tier: 'trusted', nowMs: NOW }),
    );
    const p = await perception(identity);
    const anonymous = await p.connect();

    const refused = (await anonymous.callTool({
      name: 'perception_classify',
      arguments: { h3_cell: INSIDE },
    })) as CallToolResult;
    assert.equal(refused.isError, true);
    assert.match(
      textOf(refused),
      /eu-classify-observed: it needs agent trust tier observed; the caller is provisioned/,
    );
    assert.equal(classify.requests.length, 0, 'the classify upstream was never called');
  });

  it("rolling an epoch needs a token of an agent of the server's own principal: 401 without, 403 with another's", async () => {
    const p = await perception();
    const anonymous = await p.connect();
    ok(await anonymous.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));

    const roll = (headers: Record<string, string> = {}) => fetch(`${p.url}/epoch/roll`, { method: 'POST', headers });
    const bare = await roll();
    assert.equal(bare.status, 401);
    assert.equal(((await bare.json()) as { error: string }).error, 'token_invalid');
    assert.equal(bare.headers.get('www-authenticate'), 'Bearer realm="geofabric-perception"');
    const foreign = await roll({ authorization: `Bearer ${await p.token(generateKeyPair())}` });
    assert.equal(foreign.status, 403);
    assert.equal(((await foreign.json()) as { error: string }).error, 'delegation_invalid');
    assert.match(foreign.headers.get('www-authenticate') ?? '', /error="insufficient_scope"/);
    const tool = (await anonymous.callTool({ name: 'idn_roll_epoch', arguments: {} })) as CallToolResult;
    assert.equal(tool.isError, true);
    assert.match(textOf(tool), /needs a bearer token of an agent delegated by this server's principal/);
    assert.deepEqual(await store.epochs(p.agent.publicKey), []);

    const own = await roll({ authorization: `Bearer ${await p.token()}` });
    assert.equal(own.status, 200, await own.clone().text());
    const principal = await p.connect(await p.token());
    ok(await principal.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
    ok(await principal.callTool({ name: 'idn_roll_epoch', arguments: {} }));
    assert.equal((await store.epochs(p.agent.publicKey)).length, 2);
  });

  it('a presented bearer token that does not verify is 401 invalid_token on both servers, a valid one served', async () => {
    const governance = createGovernanceServer({ store, key: governanceKey, chain: null });
    closers.push(() => governance.close());
    const governanceUrl = (await governance.listen(0, '127.0.0.1')).url;
    const p = await perception();
    const initialize = (url: string, authorization: string) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        }),
      });
    const forgedKey = await agentToken({
      issuer: generateKeyPair(),
      chain: [certificate(generateKeyPair(), generateKeyPair())],
      nowMs: NOW,
    });
    for (const [url, realm] of [
      [governanceUrl, 'geofabric-governance'],
      [p.url, 'geofabric-perception'],
    ] as const) {
      for (const bad of ['Bearer not-a-jwt', `Bearer ${forgedKey}`, 'Basic dXNlcjpwYXNz']) {
        const res = await initialize(url, bad);
        assert.equal(res.status, 401, `${url} ${bad.slice(0, 12)}`);
        assert.match(
          res.headers.get('www-authenticate') ?? '',
          new RegExp(`^Bearer realm="${realm}", error="invalid_token"`),
        );
        const body = (await res.json()) as { error: { code: number; data: { reason: string } } };
        assert.equal(body.error.code, -32000);
        assert.equal(body.error.data.reason, 'token_invalid');
      }
    }
    // The official SDK client gets the refusal as an error; the server's own valid token is served.
    const client = new Client({ name: 'token-test', version: '1.0.0' });
    const forged = { requestInit: { headers: { authorization: 'Bearer not-a-jwt' } } };
    await assert.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${governanceUrl}/mcp`), forged)));
    const valid = await agentToken({
      issuer: governanceKey,
      chain: [certificate(generateKeyPair(), generateKeyPair())],
      nowMs: Date.now(),
    });
    const served = new Client({ name: 'token-test', version: '1.0.0' });
    const headers = { requestInit: { headers: { authorization: `Bearer ${valid}` } } };
    await served.connect(new StreamableHTTPClientTransport(new URL(`${governanceUrl}/mcp`), headers));
    closers.push(() => served.close());
    assert.ok((await served.listTools()).tools.length > 0);
  });
});
