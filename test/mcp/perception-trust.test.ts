/**
 * Trust that means something, through the MCP SDK client against a running perception server: only calls
 * that did their work count as operations, a repeated epoch roll has nothing to roll, and the trust score is
 * answered from totals kept as blocks are appended (the store is asked only for blocks not yet counted). The
 * client calls under a token of the server's own agent: anonymous calls earn nothing and cannot roll.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import type { TrustView } from '../../mcp/perception/reports.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore, BlockRange } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { agentToken, tokenVerifierOf } from '../helpers/agent-token.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';

const CELL = DEFAULT_PERCEPTION_CELL;
const DAY = 86_400_000;
const NOW = Date.parse('2026-03-01T12:00:00Z');

function text(result: unknown): string {
  return ((result as CallToolResult).content[0] as { text: string }).text;
}
function ok<T = Record<string, unknown>>(result: unknown): T {
  assert.notEqual((result as CallToolResult).isError, true, text(result));
  return JSON.parse(text(result)) as T;
}

describe('perception trust (operations, epoch rolls, maintained totals)', () => {
  let meteo: OpenMeteoServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  /** The `fromIndex` of every whole-agent block read (`blocks(agent, range)`) the server made. */
  let reads: (number | undefined)[];
  let agent: KeyPair;
  let chain: DelegationCertificate[];
  const running: { server: PerceptionServer; client: Client; url: string }[] = [];
  const governance = generateKeyPair();
  /** The Authorization header of a token of the server's own agent. */
  const auth = async () => ({
    authorization: `Bearer ${await agentToken({ issuer: governance, chain, nowMs: NOW })}`,
  });

  before(async () => {
    meteo = await startOpenMeteoServer();
  });
  after(() => meteo.close());
  beforeEach(() => {
    db = openSqlite(':memory:');
    const real = createSqliteAuditStore(db);
    reads = [];
    store = {
      ...real,
      blocks: (agentPk: string, range?: BlockRange, limit?: number) => {
        if (range?.from === undefined) reads.push(range?.fromIndex);
        return real.blocks(agentPk, range, limit);
      },
    } as AuditStore;
    agent = generateKeyPair();
    const human = generateKeyPair();
    chain = [
      issueCertificate(human.secretKey, {
        agent_pk: agent.publicKey,
        h3_cells: [CELL],
        facets: ['perception', 'compliance'],
        not_before: new Date(NOW - DAY).toISOString(),
        not_after: new Date(NOW + 30 * DAY).toISOString(),
        max_depth: 0,
        constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
      }),
    ];
  });
  afterEach(async () => {
    for (const { server, client } of running.splice(0)) {
      await client.close();
      await server.close();
    }
    await store.close();
    db.close();
  });

  async function start(): Promise<{ server: PerceptionServer; client: Client; url: string }> {
    const clock = () => NOW;
    const server = createPerceptionServer({
      store,
      agent,
      chain,
      principalLocal: false,
      clock,
      tokenVerifier: tokenVerifierOf(governance),
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock }),
        createClassifyTool({ classifyUrl: undefined, timeoutMs: 2000 }),
        createEmbedTool(),
      ],
    });
    const { url } = await server.listen(0, '127.0.0.1');
    const client = new Client({ name: 'trust-test', version: '1.0.0' });
    const requestInit = { headers: await auth() };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit }));
    const started = { server, client, url };
    running.push(started);
    return started;
  }

  const trust = async (client: Client) => ok<TrustView>(await client.callTool({ name: 'idn_get_trust_score' }));

  it('counts only calls that did their work: not_available and not_configured calls earn nothing', async () => {
    const { client } = await start();
    for (let i = 0; i < 40; i++) {
      const embed = (await client.callTool({
        name: 'perception_embed',
        arguments: { h3_cell: CELL },
      })) as CallToolResult;
      assert.equal(embed.isError, true);
    }
    const classify = (await client.callTool({
      name: 'perception_classify',
      arguments: { h3_cell: CELL, model: 'm', task: 'flood_detection' },
    })) as CallToolResult;
    assert.match(text(classify), /not_configured/);
    const before = await trust(client);
    assert.equal(before.total_operations, 0);
    assert.equal(before.parts.operations, 0);
    assert.equal(before.unique_cells, 0);

    ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
    const after = await trust(client);
    // The weather call and the first trust reading did their work.
    assert.equal(after.total_operations, 2);
    assert.equal(after.unique_cells, 1);

    const roll = ok<{ tier_at_close: string }>(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
    assert.equal(roll.tier_at_close, 'provisioned');
  });

  it('a repeated idn_roll_epoch has nothing to roll, as POST /epoch/roll says; both roll once more happened', async () => {
    const started = await start();
    const { client } = started;
    ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
    const first = ok<{ end_block: number }>(await client.callTool({ name: 'idn_roll_epoch', arguments: {} }));
    assert.equal(first.end_block, 0);
    for (let i = 0; i < 3; i++) {
      const again = (await client.callTool({ name: 'idn_roll_epoch', arguments: {} })) as CallToolResult;
      assert.equal(again.isError, true);
      assert.match(text(again), /epoch_empty.*EPOCH: no blocks to roll since block_index 1/);
    }
    const http = await fetch(`${started.url}/epoch/roll`, { method: 'POST', headers: await auth() });
    assert.equal(http.status, 500);
    assert.deepEqual(await http.json(), { error: 'EPOCH: no blocks to roll since block_index 1' });
    assert.equal((await store.epochs(agent.publicKey)).length, 1);

    ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
    const second = ok<{ start_block: number; end_block: number }>(
      await client.callTool({ name: 'idn_roll_epoch', arguments: {} }),
    );
    assert.deepEqual([second.start_block, second.end_block], [1, 5]);
  });

  it('answers the trust score from maintained totals: only new blocks are read, and they agree with a fresh count', async () => {
    const { client, url } = await start();
    for (let i = 0; i < 5; i++) ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
    reads.length = 0;
    const first = await trust(client);
    assert.deepEqual(reads, [0], 'the first question judges the whole chain once');
    for (let i = 0; i < 3; i++) ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: CELL } }));
    // The compliance report counts afresh from every block (and leaves no breadcrumb).
    const report = (await (await fetch(`${url}/compliance`)).json()) as {
      total_operations: number;
      trust_score: number;
    };
    reads.length = 0;
    const second = await trust(client);
    // Blocks 0..4 were counted (a call's own breadcrumb lands after it answers); 5 (that trust call) to 8 are new.
    assert.deepEqual(reads, [5]);
    assert.equal(second.total_operations, first.total_operations + 4);
    assert.equal(second.total_operations, report.total_operations);
    assert.equal(second.trust_score, report.trust_score);
    assert.equal(second.chain_valid, true);
  });
});
