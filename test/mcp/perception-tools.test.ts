import assert from 'node:assert/strict';
import { runInNewContext } from 'node:vm';
import { cellToBoundary, cellToLatLng } from 'h3-js';
import { z } from 'zod';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { roundNdvi } from '../../core/ndvi.js';
import { REPORT_UI_MIME, REPORT_UI_URI, renderReportUi } from '../../mcp/perception/report-ui.js';
import { ToolError, type PerceptionTool, type PerceptionToolContext } from '../../mcp/perception/tool-def.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../../mcp/perception/tools/fetch-tile.js';
import { WEATHER_TEST_CELL, createWeatherTool, weatherStatus } from '../../mcp/perception/tools/weather.js';
import { startClassifyServer, type ClassifyServer } from '../helpers/classify-server.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';

const CELL = DEFAULT_PERCEPTION_CELL;
const AGENT = 'a'.repeat(64);
const context = (extra: Partial<PerceptionToolContext> = {}): PerceptionToolContext => ({
  agentPk: AGENT,
  now: TEST_NOW,
  ...extra,
});

/** Arguments as the MCP SDK hands them to a tool: parsed by its input schema. */
const parse = <S extends z.ZodRawShape>(tool: PerceptionTool<S>, args: unknown) =>
  z.object(tool.inputSchema).parse(args);

/** The path of the first issue when `args` are refused, or undefined when they parse. */
function refusedField<S extends z.ZodRawShape>(tool: PerceptionTool<S>, args: unknown): string | undefined {
  const result = z.object(tool.inputSchema).safeParse(args);
  return result.success ? undefined : result.error.issues[0]!.path.join('.');
}

async function toolError(promise: Promise<unknown>): Promise<ToolError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ToolError, `expected a ToolError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the tool to fail');
}

describe('perception tools', () => {
  it('all four are perception-facet tools acting in the cell they are given', () => {
    const tools: PerceptionTool[] = [
      createWeatherTool({ weatherUrl: 'http://127.0.0.1:1', timeoutMs: 1000, userAgent: 'test', clock: Date.now }),
      createFetchTileTool({
        stac: { stacUrl: 'http://127.0.0.1:1', collection: 'sentinel-2-l2a', timeoutMs: 1000, userAgent: 'test' },
      }),
      createClassifyTool({ classifyUrl: undefined, timeoutMs: 1000 }),
      createEmbedTool(),
    ];
    assert.deepEqual(
      tools.map((t) => t.name),
      ['perception_weather', 'perception_fetch_tile', 'perception_classify', 'perception_embed'],
    );
    for (const tool of tools) {
      assert.equal(tool.facet, 'perception');
      assert.equal(tool.cellOf?.(parse(tool, { h3_cell: CELL })), CELL);
      assert.equal(refusedField(tool, { h3_cell: 'rome' }), 'h3_cell', tool.name);
      assert.equal(refusedField(tool, { h3_cell: CELL.toUpperCase() }), 'h3_cell', tool.name);
      assert.equal(refusedField(tool, {}), 'h3_cell', tool.name);
    }
  });

  describe('perception_weather', () => {
    let meteo: OpenMeteoServer;
    let ticks = 0;
    const tool = () =>
      createWeatherTool({
        weatherUrl: meteo.url,
        timeoutMs: 300,
        userAgent: 'geofabric-test/1',
        clock: () => (ticks += 7),
      });

    beforeEach(async () => {
      meteo = await startOpenMeteoServer();
    });
    afterEach(() => meteo.close());

    it('asks for the current weather at the cell centroid in °C, m/s and mm, in UTC', async () => {
      await tool().run(parse(tool(), { h3_cell: CELL }), context());
      assert.equal(meteo.requests.length, 1);
      const [{ path, query, headers }] = meteo.requests as [(typeof meteo.requests)[0]];
      const [lat, lng] = cellToLatLng(CELL);
      assert.equal(path, '/v1/forecast');
      assert.ok(Math.abs(Number(query.get('latitude')) - lat) < 1e-6);
      assert.ok(Math.abs(Number(query.get('longitude')) - lng) < 1e-6);
      assert.equal(query.get('current'), 'temperature_2m,wind_speed_10m,wind_direction_10m,precipitation,weather_code');
      assert.equal(query.get('wind_speed_unit'), 'ms');
      assert.equal(query.get('timezone'), 'UTC');
      assert.equal(query.has('hourly'), false);
      assert.equal(headers['user-agent'], 'geofabric-test/1');
    });

    it('returns the protocol fields, the centroid, the host and the spatial-memory note', async () => {
      meteo.setCurrent({
        time: '2026-03-01T11:45',
        temperature_2m: 17.5,
        wind_speed_10m: 4.25,
        precipitation: 0.4,
        weather_code: 61,
      });
      const t = tool();
      const result = await t.run(parse(t, { h3_cell: CELL }), context());
      const [lat, lng] = cellToLatLng(CELL);
      assert.deepEqual(result, {
        h3_cell: CELL,
        timestamp: new Date(TEST_NOW).toISOString(),
        observed_at: '2026-03-01T11:45:00.000Z',
        mode: 'current',
        source: 'forecast',
        temperature_c: 17.5,
        wind_speed_ms: 4.25, // asked in m/s: the fake would answer 15.3 km/h otherwise
        wind_direction_deg: 250,
        precipitation_mm: 0.4,
        weather_code: 61,
        status: 'ok',
        conditions: 'rain',
        data_source: new URL(meteo.url).host,
        latitude: lat, // the centroid, not the grid point the API snapped to
        longitude: lng,
        lat,
        lon: lng,
        upstream_ms: 7,
        write_to_spatial_memory: false,
        spatial_memory: 'not available',
      });
    });

    it('says the weather in a short word per WMO code', async () => {
      const expected: [number, string][] = [
        [0, 'clear'],
        [2, 'partly cloudy'],
        [3, 'cloudy'],
        [45, 'fog'],
        [53, 'drizzle'],
        [65, 'rain'],
        [75, 'snow'],
        [81, 'showers'],
        [95, 'thunderstorm'],
        [99, 'thunderstorm with hail'],
      ];
      const t = tool();
      for (const [code, word] of expected) {
        meteo.setCurrent({ weather_code: code });
        const result = (await t.run(parse(t, { h3_cell: CELL }), context())) as { conditions: string };
        assert.equal(result.conditions, word, `code ${code}`);
      }
      assert.equal(weatherStatus(42), 'unknown');
      assert.equal(weatherStatus(null), 'unknown');
    });

    it('answers a past timestamp from the hourly values of its UTC hour, and echoes write_to_spatial_memory', async () => {
      meteo.setHourly('2026-02-20T09:00', {
        temperature_2m: 8.1,
        wind_speed_10m: 6,
        precipitation: 1.2,
        weather_code: 80,
      });
      const t = tool();
      const result = await t.run(
        parse(t, { h3_cell: CELL, timestamp: '2026-02-20T10:40:00+01:00', write_to_spatial_memory: true }),
        context(),
      );
      const query = meteo.requests[0]!.query;
      assert.equal(query.get('hourly'), 'temperature_2m,wind_speed_10m,wind_direction_10m,precipitation,weather_code');
      assert.equal(query.get('start_hour'), '2026-02-20T09:00');
      assert.equal(query.get('end_hour'), '2026-02-20T09:00');
      assert.equal(query.has('current'), false);
      assert.deepEqual(
        {
          ...(result as Record<string, unknown>),
          latitude: undefined,
          longitude: undefined,
          lat: undefined,
          lon: undefined,
          data_source: undefined,
        },
        {
          h3_cell: CELL,
          timestamp: '2026-02-20T09:40:00.000Z',
          observed_at: '2026-02-20T09:00:00.000Z',
          mode: 'hourly',
          source: 'forecast',
          temperature_c: 8.1,
          wind_speed_ms: 6,
          wind_direction_deg: 250,
          precipitation_mm: 1.2,
          weather_code: 80,
          status: 'ok',
          conditions: 'showers',
          latitude: undefined,
          longitude: undefined,
          lat: undefined,
          lon: undefined,
          data_source: undefined,
          upstream_ms: 7,
          write_to_spatial_memory: true,
          spatial_memory: 'not available',
        },
      );
    });

    it('treats a timestamp within 30 minutes of now as now, and refuses one outside the API range unasked', async () => {
      const t = tool();
      const near = (await t.run(parse(t, { h3_cell: CELL, timestamp: '2026-03-01T12:20:00Z' }), context())) as {
        mode: string;
        timestamp: string;
      };
      assert.equal(near.mode, 'current');
      assert.equal(near.timestamp, '2026-03-01T12:20:00.000Z');
      for (const timestamp of ['2025-11-01T00:00:00Z', '2026-03-20T00:00:00Z']) {
        const error = await toolError(t.run(parse(t, { h3_cell: CELL, timestamp }), context()));
        assert.equal(error.code, 'timestamp_out_of_range');
      }
      assert.equal(meteo.requests.length, 1);
    });

    it('refuses a timestamp that is not ISO 8601, naming the field', () => {
      for (const timestamp of ['yesterday', '2026-02-30T10:00:00Z', 1700000000]) {
        assert.equal(refusedField(tool(), { h3_cell: CELL, timestamp }), 'timestamp');
      }
      assert.equal(refusedField(tool(), { h3_cell: CELL, write_to_spatial_memory: 'yes' }), 'write_to_spatial_memory');
    });

    it('turns an upstream error status into upstream_unavailable with its reason', async () => {
      meteo.failWith(500);
      const t = tool();
      const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
      assert.equal(error.code, 'upstream_unavailable');
      assert.match(error.message, /HTTP 500: Internal server error/);
    });

    it('turns a silent upstream into upstream_timeout after timeoutMs', async () => {
      meteo.failWith('hang');
      const t = tool();
      const started = Date.now();
      const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
      assert.equal(error.code, 'upstream_timeout');
      assert.match(error.message, /300 ms/);
      assert.ok(Date.now() - started < 2000);
    });

    it('reports a refused connection as upstream_unavailable and a caller that went away as cancelled', async () => {
      const gone = await startOpenMeteoServer();
      await gone.close();
      const offline = createWeatherTool({ weatherUrl: gone.url, timeoutMs: 1000, userAgent: 'test', clock: () => 0 });
      const refused = await toolError(offline.run(parse(offline, { h3_cell: CELL }), context()));
      assert.equal(refused.code, 'upstream_unavailable');
      assert.match(refused.message, /unreachable/);

      meteo.failWith('hang');
      const t = tool();
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      const cancelled = await toolError(t.run(parse(t, { h3_cell: CELL }), context({ signal: controller.signal })));
      assert.equal(cancelled.code, 'cancelled');
    });

    it('refuses an answer that is not the Open-Meteo shape', async () => {
      const t = createWeatherTool({
        weatherUrl: `${meteo.url}/nowhere`,
        timeoutMs: 1000,
        userAgent: 'test',
        clock: () => 0,
      });
      const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
      assert.equal(error.code, 'upstream_unavailable');
      assert.match(error.message, /HTTP 404/);
    });

    it('uses the Rome perception cell for GET /test/weather', async () => {
      assert.equal(WEATHER_TEST_CELL, '851e8053fffffff');
      const t = tool();
      const result = (await t.run(parse(t, { h3_cell: WEATHER_TEST_CELL }), context())) as Record<string, unknown>;
      assert.equal(typeof result.temperature_c, 'number');
      assert.equal(result.status, 'ok');
    });

    describe('with the ERA5 archive', () => {
      let archive: OpenMeteoServer;
      const both = () =>
        createWeatherTool({
          weatherUrl: meteo.url,
          archiveUrl: archive.url,
          timeoutMs: 300,
          userAgent: 'geofabric-test/1',
          clock: () => 0,
        });
      const at = async (timestamp: string, now = TEST_NOW) => {
        const t = both();
        return (await t.run(parse(t, { h3_cell: CELL, timestamp }), context({ now }))) as Record<string, unknown>;
      };

      beforeEach(async () => {
        archive = await startOpenMeteoServer({ kind: 'archive' });
      });
      afterEach(() => archive.close());

      it('asks the archive for instants older than 5 days, one whole UTC day, and picks the hour', async () => {
        archive.setHourly('1995-07-01T00:00', { temperature_2m: 21.4, wind_direction_10m: 310, weather_code: 0 });
        const result = await at('1995-07-01T00:20:00Z');
        assert.equal(meteo.requests.length, 0);
        assert.equal(archive.requests.length, 1);
        const { path, query } = archive.requests[0]!;
        assert.equal(path, '/v1/archive');
        assert.equal(query.get('start_date'), '1995-07-01');
        assert.equal(query.get('end_date'), '1995-07-01');
        assert.equal(
          query.get('hourly'),
          'temperature_2m,wind_speed_10m,wind_direction_10m,precipitation,weather_code',
        );
        assert.equal(query.get('timezone'), 'UTC');
        assert.equal(query.get('wind_speed_unit'), 'ms');
        assert.equal(query.has('start_hour'), false);
        assert.equal(result.source, 'archive');
        assert.equal(result.data_source, new URL(archive.url).host);
        assert.equal(result.observed_at, '1995-07-01T00:00:00.000Z');
        assert.equal(result.temperature_c, 21.4);
        assert.equal(result.wind_direction_deg, 310);
        assert.equal(result.conditions, 'clear');
        assert.equal(result.status, 'ok');
      });

      it('draws the line at 5 days: just older → archive, just newer → forecast', async () => {
        const fiveDays = 5 * 86_400_000;
        const older = await at(new Date(TEST_NOW - fiveDays - 3_600_000).toISOString());
        const newer = await at(new Date(TEST_NOW - fiveDays + 3_600_000).toISOString());
        assert.equal(older.source, 'archive');
        assert.equal(newer.source, 'forecast');
        assert.equal(archive.requests.length, 1);
        assert.equal(meteo.requests.length, 1);
      });

      it('asks the forecast API for an hour the archive has not filled yet', async () => {
        await archive.close();
        archive = await startOpenMeteoServer({ kind: 'archive', filledUntil: '2026-02-20T00:00' });
        const result = await at('2026-02-22T06:00:00Z');
        assert.equal(archive.requests.length, 1);
        assert.equal(meteo.requests.length, 1);
        assert.equal(meteo.requests[0]!.query.get('start_hour'), '2026-02-22T06:00');
        assert.equal(result.source, 'forecast');
        assert.equal(result.temperature_c, 14.3);
      });

      it('serves 1940-01-01 on, refuses earlier and more than 16 days ahead, unasked', async () => {
        assert.equal((await at('1940-01-01T00:00:00Z')).source, 'archive');
        for (const timestamp of ['1939-12-31T23:00:00Z', '2026-03-20T00:00:00Z']) {
          const t = both();
          const error = await toolError(t.run(parse(t, { h3_cell: CELL, timestamp }), context()));
          assert.equal(error.code, 'timestamp_out_of_range');
          assert.match(error.message, /1940-01-01/);
        }
        assert.equal(archive.requests.length, 1);
        assert.equal(meteo.requests.length, 0);
      });
    });
  });

  describe('perception_fetch_tile', () => {
    let catalog: ImageryCatalog;
    const tool = (timeoutMs = 300) =>
      createFetchTileTool({
        stac: {
          stacUrl: catalog.stac.url,
          collection: 'sentinel-2-l2a',
          timeoutMs,
          userAgent: 'geofabric-test/1',
        },
      });
    const earthSearchAssets = (): Record<string, string> => ({
      ...catalog.romeAssets(),
      coastal: catalog.stac.fileUrl('B01.tif'),
      blue: catalog.stac.fileUrl('B02.tif'),
      green: catalog.stac.fileUrl('B03.tif'),
      nir08: catalog.stac.fileUrl('B8A.tif'),
      swir16: catalog.stac.fileUrl('B11.tif'),
      swir22: catalog.stac.fileUrl('B12.tif'),
    });

    before(async () => {
      catalog = await startImageryCatalog();
    });
    after(() => catalog.stac.close());
    beforeEach(() => {
      catalog.stac.searches.length = 0;
      for (const key of Object.keys(catalog.stac.faults)) delete catalog.stac.faults[key as 'searchStatus'];
      const assets = earthSearchAssets();
      const mgrs = { 'mgrs:utm_zone': 33, 'mgrs:latitude_band': 'T', 'mgrs:grid_square': 'TG', 'proj:epsg': 32633 };
      catalog.stac.items = [
        catalog.item('S2A_0210', 10, assets, { 'eo:cloud_cover': 30 }),
        catalog.item('S2B_0215', 15, assets, { 'eo:cloud_cover': 5, ...mgrs }),
        catalog.item('S2B_0220', 20, assets, { 'eo:cloud_cover': 5, ...mgrs, platform: 'sentinel-2b' }),
        catalog.item('S2A_0225', 25, assets, { 'eo:cloud_cover': 12 }),
        { ...catalog.item('S2A_berlin', 22, assets, { 'eo:cloud_cover': 0 }), bbox: [13.0, 52.3, 13.8, 52.7] },
      ];
    });

    it('returns the least cloudy scene (ties → newest) with its metadata, band URLs and the scene count', async () => {
      const t = tool();
      const result = await t.run(parse(t, { h3_cell: CELL }), context());
      const assets = earthSearchAssets();
      assert.deepEqual(result, {
        h3_cell: CELL,
        collection: 'sentinel-2-l2a',
        data_source: new URL(catalog.stac.url).host,
        window: { from: '2026-01-30T12:00:00.000Z', to: '2026-03-01T12:00:00.000Z' },
        max_cloud_cover: 20,
        scene_count: 3,
        scene: {
          id: 'S2B_0220',
          datetime: '2026-02-20T10:00:00.000Z',
          cloud_cover: 5,
          platform: 'sentinel-2b',
          mgrs_tile: '33TTG',
          proj_epsg: 32633,
          processing_baseline: '05.10',
          thumbnail: assets.thumbnail,
        },
        band_urls: { B02: assets.blue, B03: assets.green, B04: assets.red, B08: assets.nir },
        missing_bands: [],
      });
    });

    it('adds band_math statistics over the chosen scene for an expression, and refuses a bad expression', async () => {
      const t = tool(20_000); // pixel reads, not only a search
      const result = (await t.run(parse(t, { h3_cell: ROME_CELL, expression: '(B08-B04)/(B08+B04)' }), context())) as {
        scene: { id: string };
        band_math?: Record<string, unknown>;
      };
      const math = result.band_math;
      assert.ok(math, 'band_math is in the answer');
      assert.equal(math.sceneId, result.scene.id);
      assert.equal(math.expression, '(B08-B04)/(B08+B04)');
      assert.ok((math.validPixels as number) > 0);
      assert.equal(roundNdvi(math.mean as number), 0.6); // the fixture's vegetation, baseline 05.10 offset
      assert.equal(refusedField(t, { h3_cell: ROME_CELL, expression: '(B08-B04' }), 'expression');
      const unknown = z.object(t.inputSchema).safeParse({ h3_cell: ROME_CELL, expression: 'B09 + B04' });
      assert.equal(unknown.success, false);
      assert.match(unknown.error!.issues[0]!.message, /unknown band B09 .*the bands are B02, B03, B04/);
      const plain = (await t.run(parse(t, { h3_cell: ROME_CELL }), context())) as object;
      assert.equal('band_math' in plain, false);
    });

    it('searches the cell polygon, the 30 days before now and the cloud limit, clearest first', async () => {
      const t = tool();
      await t.run(parse(t, { h3_cell: CELL, max_cloud_cover: 7.5 }), context());
      const [body] = catalog.stac.searches as [Record<string, unknown>];
      assert.deepEqual(body.collections, ['sentinel-2-l2a']);
      assert.deepEqual(body.intersects, { type: 'Polygon', coordinates: [cellToBoundary(CELL, true)] });
      assert.equal(body.datetime, '2026-01-30T12:00:00.000Z/2026-03-01T12:00:00.000Z');
      assert.deepEqual(body.query, { 'eo:cloud_cover': { lte: 7.5 } });
      assert.deepEqual(body.sortby, [
        { field: 'properties.eo:cloud_cover', direction: 'asc' },
        { field: 'properties.datetime', direction: 'desc' },
      ]);
    });

    it('maps band codes to Earth Search names and to code-keyed assets, listing what the scene lacks', async () => {
      const t = tool();
      const es = (await t.run(
        parse(t, { h3_cell: CELL, bands: ['B01', 'B8A', 'B11', 'B12', 'SCL', 'B05'] }),
        context(),
      )) as {
        band_urls: Record<string, string>;
        missing_bands: string[];
      };
      const assets = earthSearchAssets();
      assert.deepEqual(es.band_urls, {
        B01: assets.coastal,
        B8A: assets.nir08,
        B11: assets.swir16,
        B12: assets.swir22,
        SCL: assets.scl,
      });
      assert.deepEqual(es.missing_bands, ['B05']);

      const coded = {
        B04: catalog.stac.fileUrl('x-B04.tif'),
        B8A: catalog.stac.fileUrl('x-B8A.tif'),
        SCL: catalog.stac.fileUrl('x-SCL.tif'),
      };
      catalog.stac.items = [
        catalog.item('S2_coded', 26, coded, {
          'eo:cloud_cover': 1,
          's2:mgrs_tile': '33TTG',
          'proj:code': 'EPSG:32633',
        }),
      ];
      const pc = (await t.run(parse(t, { h3_cell: CELL, bands: ['B04', 'B8A', 'SCL', 'B11'] }), context())) as {
        band_urls: Record<string, string>;
        missing_bands: string[];
        scene: { mgrs_tile: string; proj_epsg: number };
      };
      assert.deepEqual(pc.band_urls, coded);
      assert.deepEqual(pc.missing_bands, ['B11']);
      assert.equal(pc.scene.mgrs_tile, '33TTG');
      assert.equal(pc.scene.proj_epsg, 32633);
    });

    it('validates max_cloud_cover (0..100) and band names, naming the field', () => {
      const t = tool();
      assert.equal(refusedField(t, { h3_cell: CELL, max_cloud_cover: 120 }), 'max_cloud_cover');
      assert.equal(refusedField(t, { h3_cell: CELL, max_cloud_cover: -1 }), 'max_cloud_cover');
      assert.equal(refusedField(t, { h3_cell: CELL, bands: ['B04', 'B10'] }), 'bands.1');
      assert.equal(refusedField(t, { h3_cell: CELL, bands: [] }), 'bands');
      const defaults = parse(t, { h3_cell: CELL });
      assert.equal(defaults.max_cloud_cover, 20);
      assert.deepEqual(defaults.bands, ['B02', 'B03', 'B04', 'B08']);
    });

    it('answers no_scenes when nothing matches', async () => {
      const t = tool();
      const error = await toolError(t.run(parse(t, { h3_cell: CELL, max_cloud_cover: 1 }), context()));
      assert.equal(error.code, 'no_scenes');
      assert.match(error.message, /cloud cover ≤ 1 %/);
    });

    it('turns catalog failures into upstream_unavailable and upstream_timeout', async () => {
      const t = tool();
      catalog.stac.faults.searchStatus = 503;
      assert.equal((await toolError(t.run(parse(t, { h3_cell: CELL }), context()))).code, 'upstream_unavailable');
      delete catalog.stac.faults.searchStatus;
      catalog.stac.faults.malformed = 'bad-shape';
      const malformed = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
      assert.equal(malformed.code, 'upstream_unavailable');
      assert.match(malformed.message, /malformed STAC response/);
      delete catalog.stac.faults.malformed;
      catalog.stac.faults.searchDelayMs = 1000;
      assert.equal((await toolError(t.run(parse(t, { h3_cell: CELL }), context()))).code, 'upstream_timeout');
    });
  });

  describe('perception_classify', () => {
    let endpoint: ClassifyServer;
    const tool = () => createClassifyTool({ classifyUrl: `${endpoint.url}/`, timeoutMs: 300 });

    beforeEach(async () => {
      endpoint = await startClassifyServer();
    });
    afterEach(() => endpoint.close());

    it('says it needs CLASSIFY_URL when no endpoint is configured', async () => {
      const t = createClassifyTool({ classifyUrl: undefined, timeoutMs: 300 });
      const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
      assert.equal(error.code, 'not_configured');
      assert.equal(error.message, 'perception_classify needs a GPU inference endpoint: set CLASSIFY_URL');
    });

    it('posts the cell, model, task, bbox and polygon, and returns the validated answer with the cell', async () => {
      const t = tool();
      const result = await t.run(parse(t, { h3_cell: CELL }), context());
      const [body] = endpoint.requests as [Record<string, unknown>];
      assert.equal(body.h3_cell, CELL);
      assert.equal(body.model, 'prithvi-flood');
      assert.equal(body.task, 'flood_detection');
      const [west, south, east, north] = body.bbox as number[];
      const [lat, lng] = cellToLatLng(CELL);
      assert.ok(west! < lng && lng < east! && south! < lat && lat < north!);
      assert.deepEqual(body.geometry, { type: 'Polygon', coordinates: [cellToBoundary(CELL, true)] });
      assert.deepEqual(result, {
        model: 'prithvi-flood',
        task: 'flood_detection',
        flood_fraction: 0.12,
        classes: { flood_water: 0.12, permanent_water: 0.03, land: 0.85 },
        confidence: 0.93,
        scene_id: 'S2B_33TTG_20260225_0_L2A',
        model_version: '2.0.0',
        inference_ms: 37,
        h3_cell: CELL,
        data_source: new URL(endpoint.url).host,
      });
    });

    it('refuses answers outside the protocol', async () => {
      const t = tool();
      const cases: [unknown, RegExp][] = [
        [{ model: 'prithvi-flood', task: 'flood_detection' }, /flood_fraction: flood_fraction is required/],
        [{ model: 'prithvi-flood', task: 'flood_detection', flood_fraction: 1.5 }, /flood_fraction/],
        [{ model: 'prithvi-flood', task: 'burn_scars', flood_fraction: 0.1 }, /answered task burn_scars/],
        [{ task: 'flood_detection', flood_fraction: 0.1 }, /model/],
        [['not', 'an', 'object'], /body|expected object/],
      ];
      for (const [body, message] of cases) {
        endpoint.respondWith(body);
        const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
        assert.equal(error.code, 'upstream_unavailable', JSON.stringify(body));
        assert.match(error.message, message);
      }
    });

    it('passes the endpoint refusal on as classify_rejected, and failures as upstream errors', async () => {
      const t = tool();
      const rejected = await toolError(t.run(parse(t, { h3_cell: CELL, model: 'prithvi-burn' }), context()));
      assert.equal(rejected.code, 'classify_rejected');
      assert.match(rejected.message, /unknown_model.*prithvi-burn is not loaded/);

      endpoint.failWith(500);
      assert.equal((await toolError(t.run(parse(t, { h3_cell: CELL }), context()))).code, 'upstream_unavailable');
      endpoint.failWith('hang');
      assert.equal((await toolError(t.run(parse(t, { h3_cell: CELL }), context()))).code, 'upstream_timeout');
    });

    it('supports the flood_detection task only, and model names without odd characters', () => {
      const t = tool();
      assert.equal(refusedField(t, { h3_cell: CELL, task: 'land_cover' }), 'task');
      assert.equal(refusedField(t, { h3_cell: CELL, model: '../../etc' }), 'model');
      assert.deepEqual(parse(t, { h3_cell: CELL }), { h3_cell: CELL, model: 'prithvi-flood', task: 'flood_detection' });
    });
  });

  it('perception_embed is listed and answers not_available (planned)', async () => {
    const t = createEmbedTool();
    const error = await toolError(t.run(parse(t, { h3_cell: CELL }), context()));
    assert.equal(error.code, 'not_available');
    assert.equal(error.message, 'perception_embed is not available (planned)');
  });

  describe('the compliance report MCP App', () => {
    const html = renderReportUi();
    const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;

    it('is a ui:// resource of the MCP App profile, self-contained and never parsing data as HTML', () => {
      assert.equal(REPORT_UI_URI, 'ui://geofabric/compliance-report.html');
      assert.equal(REPORT_UI_MIME, 'text/html;profile=mcp-app');
      assert.doesNotMatch(html, /https?:\/\//);
      assert.doesNotMatch(html, /\s(src|href)\s*=/i);
      assert.doesNotMatch(html, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(/);
      assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
      for (const field of [
        'trust_score',
        'current_tier',
        'chain_verification',
        'operations_by_tool',
        'jurisdiction_cells',
        'violations',
        'ui/notifications/tool-result',
      ]) {
        assert.ok(html.includes(field), field);
      }
    });

    it('initializes with the host and renders the report of a tool result', async () => {
      const rendered = runReportUi(script);
      const [init] = rendered.sent as [Record<string, unknown>];
      assert.equal(init.method, 'ui/initialize');
      assert.equal((init.params as { protocolVersion: string }).protocolVersion, '2026-01-26');
      rendered.deliver({ jsonrpc: '2.0', id: init.id, result: { hostContext: { theme: 'dark' } } });
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal((rendered.sent[1] as { method: string }).method, 'ui/notifications/initialized');
      assert.equal(rendered.theme(), 'dark');

      const report = {
        version: 1,
        agent_pk: AGENT,
        agent_handle: 'rome-agent',
        principal_pk: 'b'.repeat(64),
        reporting_period: { from: '2020-01-01T00:00:00Z', to: '2026-03-01T12:00:00Z' },
        total_operations: 12,
        operations_by_tool: { perception_weather: 9, perception_fetch_tile: 3 },
        jurisdiction_cells: [CELL],
        chain_verification: { is_valid: false, block_count: 12, issues: ['block 4: block_hash mismatch'] },
        epochs: [],
        current_tier: 'observed',
        trust_score: 42.5,
        violations: [{ type: 'jurisdiction_breach', severity: 'critical', tool_name: '<img src=x onerror=alert(1)>' }],
      };
      rendered.deliver({
        jsonrpc: '2.0',
        method: 'ui/notifications/tool-result',
        params: { content: [{ type: 'text', text: JSON.stringify(report) }] },
      });
      const text = rendered.text();
      for (const expected of [
        '42.5',
        'observed',
        'broken',
        'block 4: block_hash mismatch',
        'perception_weather9',
        'perception_fetch_tile3',
        CELL,
        'jurisdiction_breach',
        'critical',
        'tool_name: <img src=x onerror=alert(1)>',
      ]) {
        assert.ok(text.includes(expected), `${expected} in ${text}`);
      }

      rendered.deliver({
        jsonrpc: '2.0',
        method: 'ui/notifications/tool-result',
        params: {
          structuredContent: { ...report, trust_score: 77, violations: [], chain_verification: { is_valid: true } },
        },
      });
      assert.ok(rendered.text().includes('77.0'));
      assert.ok(rendered.text().includes('no violations'));
      assert.ok(rendered.text().includes('valid'));
    });
  });
});

/** Runs the page's script against a minimal DOM: enough to see what it sends and what text it renders. */
function runReportUi(script: string) {
  class Node {
    children: Node[] = [];
    className = '';
    style: Record<string, string> = {};
    attributes: Record<string, string> = {};
    private own = '';
    constructor(readonly tagName: string) {}
    get firstChild(): Node | null {
      return this.children[0] ?? null;
    }
    get lastChild(): Node | null {
      return this.children[this.children.length - 1] ?? null;
    }
    appendChild(child: Node) {
      this.children.push(child);
      return child;
    }
    removeChild(child: Node) {
      this.children = this.children.filter((c) => c !== child);
      this.own = '';
      return child;
    }
    setAttribute(name: string, value: string) {
      this.attributes[name] = value;
    }
    get textContent(): string {
      return this.own + this.children.map((c) => c.textContent).join('');
    }
    set textContent(value: string) {
      this.children = [];
      this.own = value;
    }
  }
  const root = new Node('main');
  root.textContent = 'Waiting…';
  const html = new Node('html');
  const sent: unknown[] = [];
  const listeners = new Map<string, ((event: unknown) => void)[]>();
  const parent = { postMessage: (message: unknown) => sent.push(message) };
  const window = {
    parent,
    addEventListener: (type: string, fn: (event: unknown) => void) =>
      listeners.set(type, [...(listeners.get(type) ?? []), fn]),
  };
  const document = {
    documentElement: html,
    getElementById: (id: string) => (id === 'report' ? root : null),
    createElement: (tag: string) => new Node(tag),
  };
  runInNewContext(script, { window, document });
  return {
    sent,
    deliver: (data: unknown) => {
      for (const fn of listeners.get('message') ?? []) fn({ source: parent, data });
    },
    text: () => root.textContent,
    theme: () => html.attributes['data-theme'],
  };
}
