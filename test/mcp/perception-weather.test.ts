/**
 * perception_weather through the MCP SDK client against a running perception server, with local archive
 * and forecast APIs: the instants the replaced tool's own scripts ask for, each answered by the right source.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';

const CELL = DEFAULT_PERCEPTION_CELL;
const DAY = 86_400_000;

describe('perception_weather over MCP (archive and forecast)', () => {
  let forecast: OpenMeteoServer;
  let archive: OpenMeteoServer;
  let server: PerceptionServer;
  let client: Client;
  const db = openSqlite(':memory:');
  const store = createSqliteAuditStore(db);

  before(async () => {
    [forecast, archive] = await Promise.all([startOpenMeteoServer(), startOpenMeteoServer({ kind: 'archive' })]);
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const now = Date.now();
    const cert = issueCertificate(human.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(now - DAY).toISOString(),
      not_after: new Date(now + 30 * DAY).toISOString(),
      max_depth: 0,
      constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
    });
    server = createPerceptionServer({
      store,
      agent,
      chain: [cert],
      principalLocal: false,
      clock: Date.now,
      tools: [
        createWeatherTool({
          weatherUrl: forecast.url,
          archiveUrl: archive.url,
          timeoutMs: 2000,
          userAgent: 'geofabric-test',
          clock: Date.now,
        }),
      ],
    });
    const { url } = await server.listen(0, '127.0.0.1');
    client = new Client({ name: 'weather-parity', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  });
  after(async () => {
    await client.close();
    await server.close();
    await Promise.all([forecast.close(), archive.close()]);
    await store.close();
    db.close();
  });
  beforeEach(() => {
    forecast.requests.length = 0;
    archive.requests.length = 0;
  });

  async function weather(timestamp: string): Promise<Record<string, unknown>> {
    const result = (await client.callTool({
      name: 'perception_weather',
      arguments: { h3_cell: CELL, timestamp },
    })) as CallToolResult;
    const text = (result.content[0] as { text: string }).text;
    assert.notEqual(result.isError, true, text);
    return JSON.parse(text) as Record<string, unknown>;
  }

  it('answers 2026-03-15T12:00:00Z from the archive', async () => {
    archive.setHourly('2026-03-15T12:00', { temperature_2m: 16.2, wind_direction_10m: 200, weather_code: 1 });
    const w = await weather('2026-03-15T12:00:00Z');
    assert.equal(w.source, 'archive');
    assert.equal(w.status, 'ok');
    assert.equal(w.temperature_c, 16.2);
    assert.equal(w.wind_direction_deg, 200);
    assert.equal(w.observed_at, '2026-03-15T12:00:00.000Z');
    assert.equal(typeof w.lat, 'number');
    assert.equal(typeof w.lon, 'number');
    assert.equal(archive.requests.length, 1);
    assert.equal(forecast.requests.length, 0);
  });

  it('answers 1995-07-01T00:00:00Z from the archive', async () => {
    archive.setHourly('1995-07-01T00:00', { temperature_2m: 19.8 });
    const w = await weather('1995-07-01T00:00:00Z');
    assert.equal(w.source, 'archive');
    assert.equal(w.temperature_c, 19.8);
    assert.equal(archive.requests[0]!.query.get('start_date'), '1995-07-01');
    assert.equal(forecast.requests.length, 0);
  });

  it('answers tomorrow from the forecast API', async () => {
    const hour = new Date(Math.floor((Date.now() + DAY) / 3_600_000) * 3_600_000).toISOString();
    forecast.setHourly(hour.slice(0, 16), { temperature_2m: 9.5 });
    const w = await weather(hour);
    assert.equal(w.source, 'forecast');
    assert.equal(w.mode, 'hourly');
    assert.equal(w.temperature_c, 9.5);
    assert.equal(forecast.requests[0]!.query.get('start_hour'), hour.slice(0, 16));
    assert.equal(archive.requests.length, 0);
  });
});
