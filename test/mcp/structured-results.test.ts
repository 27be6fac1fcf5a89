import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { cellToLatLng } from 'h3-js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';
import { sentinelItem, startStacServer, type StacServer } from '../helpers/stac-server.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
const [LAT, LON] = cellToLatLng(CELL);

/** Arguments that make each tool do its work (or fail cleanly). */
const ARGS: Record<string, Record<string, unknown>> = {
  perception_weather: { h3_cell: CELL },
  perception_fetch_tile: { h3_cell: CELL, days_back: 60 },
  perception_classify: { h3_cell: CELL },
  perception_embed: { h3_cell: CELL },
  idn_get_compliance_report: {},
  idn_get_trust_score: {},
  idn_verify_chain: {},
  idn_roll_epoch: {},
  verify_jurisdiction: { h3_cell: CELL, facet: 'perception' },
  check_delegation_chain: { tool_name: 'perception_weather' },
  generate_audit_proof: {},
};

describe('structured tool results: outputSchema, structuredContent, described arguments', function () {
  this.timeout(30_000);
  let meteo: OpenMeteoServer;
  let stac: StacServer;
  let db: SqliteDatabase;
  const closers: Array<() => Promise<void>> = [];

  before(async () => {
    [meteo, stac] = await Promise.all([startOpenMeteoServer(), startStacServer()]);
  });
  after(() => Promise.all([meteo.close(), stac.close()]));
  beforeEach(() => {
    db = openSqlite(':memory:');
    stac.searches.length = 0;
    stac.items = [
      sentinelItem('S2A_0120', '2026-01-20T10:00:00Z', {
        properties: { 'eo:cloud_cover': 4 },
        assets: { blue: stac.fileUrl('B02.tif'), green: stac.fileUrl('B03.tif') },
      }),
    ];
  });
  afterEach(async () => {
    await Promise.all(closers.splice(0).map((close) => close()));
    db.close();
  });

  async function servers(): Promise<string[]> {
    const store = createSqliteAuditStore(db);
    const agent = generateKeyPair();
    const cert = issueCertificate(generateKeyPair().secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(NOW - DAY).toISOString(),
      not_after: new Date(NOW + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
    });
    const clock = () => NOW;
    const perception = createPerceptionServer({
      store,
      agent,
      chain: [cert],
      principalLocal: false,
      clock,
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'test', clock }),
        createFetchTileTool({
          stac: { stacUrl: stac.url, collection: 'sentinel-2-l2a', timeoutMs: 2000, userAgent: 'test' },
        }),
        createClassifyTool({ classifyUrl: undefined, timeoutMs: 500 }),
        createEmbedTool(),
      ],
    });
    const governance = createGovernanceServer({ store, key: generateKeyPair(), chain: [cert], clock });
    closers.push(
      () => perception.close(),
      () => governance.close(),
    );
    const urls = await Promise.all([perception.listen(0, '127.0.0.1'), governance.listen(0, '127.0.0.1')]);
    return urls.map(({ url }) => `${url}/mcp`);
  }

  async function connect(url: string): Promise<Client> {
    const client = new Client({ name: 'structured-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    closers.push(() => client.close());
    return client;
  }

  it('every tool of both servers declares an outputSchema, and every call matches it (the SDK client validates)', async () => {
    const seen: string[] = [];
    for (const url of await servers()) {
      const client = await connect(url);
      // listTools caches the output validators: callTool then rejects structuredContent that does not match.
      const { tools } = await client.listTools();
      for (const tool of tools) {
        seen.push(tool.name);
        const output = tool.outputSchema as { type: string; properties: Record<string, unknown> } | undefined;
        assert.equal(output?.type, 'object', `${tool.name} declares an object outputSchema`);
        assert.ok(output.properties.status, `${tool.name}: status`);
        for (const [name, schema] of Object.entries(
          (tool.inputSchema.properties ?? {}) as Record<string, Tool['inputSchema']>,
        )) {
          assert.equal(
            typeof (schema as { description?: unknown }).description,
            'string',
            `${tool.name}.${name} is described`,
          );
        }
        assert.equal((tool.inputSchema as { additionalProperties?: unknown }).additionalProperties, false);
        const args = ARGS[tool.name];
        assert.ok(args, `arguments for ${tool.name}`);
        const result = (await client.callTool({ name: tool.name, arguments: args })) as CallToolResult;
        const structured = result.structuredContent as Record<string, unknown> | undefined;
        assert.ok(structured, `${tool.name} answers structuredContent`);
        assert.deepEqual(structured.status, result.isError === true ? 'error' : 'ok');
        if (result.isError === true) {
          assert.equal(typeof structured.code, 'string');
          assert.equal(typeof structured.detail, 'string');
        } else {
          const text = result.content[0];
          assert.equal(text?.type, 'text');
          // A signed audit bundle stays as signed in the text; structured, it sits under `bundle`.
          const expected = tool.name === 'generate_audit_proof' ? structured.bundle : structured;
          assert.deepEqual(
            JSON.parse((text as { text: string }).text),
            expected,
            `${tool.name}: the same JSON as text`,
          );
        }
        if (result.isError !== true && 'h3_cell' in args) {
          assert.equal(structured.lat, LAT, `${tool.name}: lat`);
          assert.equal(structured.lon, LON, `${tool.name}: lon`);
        }
      }
    }
    assert.deepEqual(seen.sort(), Object.keys(ARGS).sort());
  });

  it('h3_cell tells an LLM what it is: pattern, description and example', async () => {
    const [perceptionUrl] = await servers();
    const client = await connect(perceptionUrl as string);
    const { tools } = await client.listTools();
    const weather = tools.find((t) => t.name === 'perception_weather');
    const cell = (weather?.inputSchema.properties as Record<string, Record<string, unknown>>).h3_cell;
    assert.equal(cell?.pattern, '^[0-9a-f]{15}$');
    assert.match(String(cell?.description), /H3 cell/);
    assert.deepEqual(cell?.examples, [CELL]);
  });

  it('perception_fetch_tile honours days_back (the search window) and refuses unknown arguments', async () => {
    const [perceptionUrl] = await servers();
    const client = await connect(perceptionUrl as string);
    const found = (await client.callTool({
      name: 'perception_fetch_tile',
      arguments: { h3_cell: CELL, days_back: 60 },
    })) as CallToolResult;
    assert.notEqual(found.isError, true, JSON.stringify(found.content));
    const window = (found.structuredContent as { window: { from: string; to: string } }).window;
    assert.equal(Date.parse(window.to) - Date.parse(window.from), 60 * DAY);
    // The default window (30 days) does not reach the scene of 2026-01-20.
    const none = (await client.callTool({
      name: 'perception_fetch_tile',
      arguments: { h3_cell: CELL },
    })) as CallToolResult;
    assert.equal(none.isError, true);
    assert.equal((none.structuredContent as { code: string }).code, 'no_scenes');

    const unknown = (await client.callTool({
      name: 'perception_fetch_tile',
      arguments: { h3_cell: CELL, day_back: 3 },
    })) as CallToolResult;
    assert.equal(unknown.isError, true);
    assert.match(JSON.stringify(unknown.content), /day_back/);
  });
});
