import assert from 'node:assert/strict';
import { cellToBoundary } from 'h3-js';
import { startGateway } from '../helpers/gateway.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { S3_ASSETS, SHARES, TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';

interface ErrorBody {
  error: string;
  detail?: string;
}
interface Scene {
  id: string;
  datetime: string;
  cloudCover: number;
  thumbnail: string;
  bands: Record<string, string>;
}

describe('imagery over HTTP: scenes, process, upstream failures', () => {
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
  });
  after(() => catalog.stac.close());
  beforeEach(async () => {
    catalog.stac.searches.length = 0;
    for (const key of Object.keys(catalog.stac.faults)) delete catalog.stac.faults[key as 'searchStatus'];
    gw = await startGateway({ clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url, timeoutMs: 1000 } });
  });
  afterEach(() => gw.close());

  describe('GET /v1/imagery/scenes', () => {
    beforeEach(() => {
      const assets = catalog.romeAssets();
      catalog.stac.items = [
        catalog.item('S2A_0210', 10, assets, { 'eo:cloud_cover': 30 }),
        catalog.item('S2B_0225', 25, assets, { 'eo:cloud_cover': 10 }),
        catalog.item('S2A_0218', 18, assets, { 'eo:cloud_cover': 50 }),
        { ...catalog.item('S2A_berlin', 20, assets), bbox: [13.0, 52.3, 13.8, 52.7] },
      ];
    });

    it('lists the scenes over the cell, newest first, with cloud cover, thumbnail and band URLs', async () => {
      const res = await gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28&cloud=40&limit=5`);
      assert.equal(res.status, 200, res.text);
      const body = res.body as { scenes: Scene[]; count: number; recordId: string; cloud: number };
      assert.deepEqual(
        body.scenes.map((s) => s.id),
        ['S2B_0225', 'S2A_0210'],
      );
      const [first] = body.scenes;
      assert.equal(first!.datetime, '2026-02-25T10:00:00.000Z');
      assert.equal(first!.cloudCover, 10);
      assert.equal(first!.thumbnail, catalog.romeAssets().thumbnail);
      for (const band of ['red', 'nir', 'scl', 'visual']) assert.equal(first!.bands[band], catalog.romeAssets()[band]);
      assert.equal(body.count, 2);
      assert.match(body.recordId, /^imagery:[0-9a-f-]{36}$/);
    });

    it('sends the cell polygon, the datetime interval, the cloud filter and the limit upstream', async () => {
      await gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28T12:00:00Z&cloud=40&limit=5`);
      const [body] = catalog.stac.searches as Record<string, unknown>[];
      assert.deepEqual(body!.collections, ['sentinel-2-l2a']);
      const ring = (body!.intersects as { type: string; coordinates: number[][][] }).coordinates[0]!;
      assert.equal((body!.intersects as { type: string }).type, 'Polygon');
      assert.deepEqual(ring, cellToBoundary(ROME_CELL, true));
      assert.deepEqual(ring[0], ring[ring.length - 1]);
      assert.ok(Math.abs(ring[0]![0]! - 12.49) < 0.01, 'longitude first');
      assert.equal(body!.datetime, '2026-02-01T00:00:00.000Z/2026-02-28T12:00:00.000Z');
      assert.deepEqual(body!.query, { 'eo:cloud_cover': { lte: 40 } });
      assert.deepEqual(body!.sortby, [{ field: 'properties.datetime', direction: 'desc' }]);
      assert.equal(body!.limit, 5);
    });

    it('defaults to the 30 days before now, every cloud cover and 10 scenes', async () => {
      const res = await gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}`);
      assert.equal(res.status, 200, res.text);
      const [body] = catalog.stac.searches;
      const now = new Date(TEST_NOW).toISOString();
      const monthAgo = new Date(TEST_NOW - 30 * 86_400_000).toISOString();
      assert.equal(body!.datetime, `${monthAgo}/${now}`);
      assert.deepEqual(body!.query, { 'eo:cloud_cover': { lte: 100 } });
      assert.equal(body!.limit, 10);
      assert.equal((res.body as { scenes: Scene[] }).scenes.length, 3);
    });

    const bad: [string, number, string][] = [
      ['', 400, 'cell_required'],
      ['from=2026-02-01', 400, 'cell_required'],
      ['cell=861e8050fffffzz', 400, 'invalid_cell'],
      ['cell=861E8050FFFFFFF', 400, 'invalid_cell'],
      [`cell=${ROME_CELL}&from=yesterday`, 400, 'invalid_date'],
      [`cell=${ROME_CELL}&from=2026-13-01`, 400, 'invalid_date'],
      [`cell=${ROME_CELL}&to=2026-02-30`, 400, 'invalid_date'],
      [`cell=${ROME_CELL}&from=2026-02-01T10:00:00%2B02:00`, 400, 'invalid_date'],
      [`cell=${ROME_CELL}&from=2026-02-20&to=2026-02-10`, 400, 'invalid_date'],
      [`cell=${ROME_CELL}&from=2026-04-01`, 400, 'invalid_date'], // after the default `to` (now)
      [`cell=${ROME_CELL}&cloud=-1`, 400, 'invalid_cloud'],
      [`cell=${ROME_CELL}&cloud=101`, 400, 'invalid_cloud'],
      [`cell=${ROME_CELL}&cloud=abc`, 400, 'invalid_cloud'],
      [`cell=${ROME_CELL}&cloud=`, 400, 'invalid_cloud'],
      [`cell=${ROME_CELL}&limit=0`, 400, 'invalid_limit'],
      [`cell=${ROME_CELL}&limit=101`, 400, 'invalid_limit'],
      [`cell=${ROME_CELL}&limit=1.5`, 400, 'invalid_limit'],
      [`cell=${ROME_CELL}&limit=5&limit=6`, 400, 'invalid_limit'],
    ];
    for (const [query, status, error] of bad) {
      it(`answers ${status} ${error} to ?${query || '(nothing)'}, asking nothing upstream`, async () => {
        const res = await gw.get(`/v1/imagery/scenes?${query}`);
        assert.equal(res.status, status, res.text);
        assert.equal((res.body as ErrorBody).error, error);
        assert.equal(catalog.stac.searches.length, 0);
      });
    }

    it('accepts the boundary values cloud=0, cloud=100, limit=1 and limit=100', async () => {
      for (const query of ['cloud=0', 'cloud=100', 'cloud=12.5', 'limit=1', 'limit=100']) {
        const res = await gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}&${query}`);
        assert.equal(res.status, 200, `${query}: ${res.text}`);
      }
    });
  });

  describe('POST /v1/imagery/process', () => {
    beforeEach(() => {
      catalog.stac.items = [
        catalog.item('S2A_0210', 10, catalog.romeAssets(), { 'eo:cloud_cover': 3, ...SHARES }),
        catalog.item('S2B_0225', 25, S3_ASSETS, { 'eo:cloud_cover': 40, ...SHARES }),
      ];
    });
    const process = (body: Record<string, unknown>) => gw.post('/v1/imagery/process', body);
    const window = { date_from: '2026-02-01', date_to: '2026-02-28' };

    it('ndvi: the NDVI result in the envelope, priced by megapixels read', async () => {
      const res = await process({ operation: 'ndvi', h3_cell: ROME_CELL, ...window });
      assert.equal(res.status, 200, res.text);
      const body = res.body as { operation: string; h3_cell: string; result: Record<string, unknown>; cost: number };
      assert.equal(body.operation, 'ndvi');
      assert.equal(body.h3_cell, ROME_CELL);
      assert.equal(body.result.sceneId, 'S2A_0210');
      assert.equal(body.result.method, 'pixels');
      assert.equal(body.result.meanNdvi, 0.6);
      assert.ok(body.cost > 0);
      assert.equal(body.cost, body.result.cost);
      assert.match((res.body as { record_id: string }).record_id, /^imagery:/);
    });

    it('cloud_mask: the newest scene cloud cover and the cell cloud share from its SCL band', async () => {
      catalog.stac.items = [catalog.item('S2A_0210', 10, catalog.romeAssets(), { 'eo:cloud_cover': 3 })];
      const res = await process({ operation: 'cloud_mask', h3_cell: ROME_CELL, ...window });
      assert.equal(res.status, 200, res.text);
      const result = (res.body as { result: Record<string, number | string> }).result;
      assert.equal(result.cloudCover, 3);
      assert.equal(result.method, 'pixels');
      assert.ok((result.cellCloudCover as number) > 10 && (result.cellCloudCover as number) < 40, res.text);
      assert.equal(result.cellCloudShadow, 0);
    });

    it('cloud_mask: the scene cloud cover alone when the SCL band is on S3, saying so', async () => {
      const res = await process({ operation: 'cloud_mask', h3_cell: ROME_CELL, ...window });
      const result = (res.body as { result: Record<string, unknown> }).result;
      assert.equal(result.sceneId, 'S2B_0225'); // the newest
      assert.equal(result.cloudCover, 40);
      assert.equal(result.cellCloudCover, null);
      assert.match(result.description as string, /s3:\/\//);
      assert.equal((res.body as { cost: number }).cost, 0);
    });

    it('scene_search: the scenes, newest first', async () => {
      const res = await process({ operation: 'scene_search', h3_cell: ROME_CELL, ...window, limit: 1 });
      assert.equal(res.status, 200, res.text);
      const result = (res.body as { result: { scenes: Scene[] } }).result;
      assert.deepEqual(
        result.scenes.map((s) => s.id),
        ['S2B_0225'],
      );
    });

    it('atmospheric_correction: the L2A scene, stated as already corrected', async () => {
      const res = await process({ operation: 'atmospheric_correction', h3_cell: ROME_CELL, ...window });
      assert.equal(res.status, 200, res.text);
      const result = (res.body as { result: Record<string, unknown> }).result;
      assert.equal(result.sceneId, 'S2A_0210'); // the least cloudy
      assert.equal(result.alreadyCorrected, true);
      assert.equal(result.processingLevel, 'L2A');
      assert.equal(result.boaOffset, -1000);
      assert.match(result.description as string, /already atmospherically corrected/);
    });

    it('refuses flood_classify on a scene without the green and swir16 bands (pixels only, no estimate)', async () => {
      const res = await process({ operation: 'flood_classify', h3_cell: ROME_CELL });
      assert.equal(res.status, 422);
      assert.equal((res.body as ErrorBody).error, 'imagery_unavailable');
    });

    const bad: [string, Record<string, unknown> | unknown[], string][] = [
      ['an unknown operation', { operation: 'sharpen', h3_cell: ROME_CELL }, 'invalid_operation'],
      ['no operation', { h3_cell: ROME_CELL }, 'invalid_request'],
      ['no h3_cell', { operation: 'ndvi' }, 'invalid_request'],
      ['a malformed h3_cell', { operation: 'ndvi', h3_cell: 'rome' }, 'invalid_cell'],
      ['a numeric h3_cell', { operation: 'ndvi', h3_cell: 42 }, 'invalid_cell'],
      ['a bad date_from', { operation: 'ndvi', h3_cell: ROME_CELL, date_from: '01/02/2026' }, 'invalid_date'],
      [
        'date_from after date_to',
        { operation: 'ndvi', h3_cell: ROME_CELL, date_from: '2026-02-10', date_to: '2026-02-01' },
        'invalid_date',
      ],
      ['an unknown field', { operation: 'ndvi', h3_cell: ROME_CELL, band: 'B04' }, 'invalid_request'],
      ['cloud on ndvi', { operation: 'ndvi', h3_cell: ROME_CELL, cloud: 10 }, 'invalid_request'],
      ['a bad limit', { operation: 'scene_search', h3_cell: ROME_CELL, limit: 0 }, 'invalid_limit'],
      ['an array body', [], 'invalid_request'],
    ];
    for (const [what, body, error] of bad) {
      it(`answers 400 ${error} to ${what}`, async () => {
        const res = await process(body as Record<string, unknown>);
        assert.equal(res.status, 400, res.text);
        assert.equal((res.body as ErrorBody).error, error);
      });
    }

    it('answers 404 no_scenes when no scene covers the window', async () => {
      const res = await process({
        operation: 'ndvi',
        h3_cell: ROME_CELL,
        date_from: '2025-12-01',
        date_to: '2025-12-31',
      });
      assert.equal(res.status, 404);
      assert.equal((res.body as ErrorBody).error, 'no_scenes');
      const detail = (res.body as ErrorBody).detail ?? '';
      assert.ok(detail.includes('between 2025-12-01T00:00:00.000Z and 2025-12-31T23:59:59.999Z'), detail);
      assert.match(detail, /widen the window with date_from and date_to/);
    });
  });

  describe('cached and bounded per client (docs/security.md §9)', () => {
    const window = { date_from: '2026-02-01', date_to: '2026-02-28' };
    const BANDS = ['rome-red.tif', 'rome-nir.tif', 'rome-scl.tif'];
    /** Responses the COG files got (range or whole) so far. */
    const cogReads = () =>
      BANDS.reduce((sum, name) => {
        const stats = catalog.stac.fileStats(name);
        return sum + stats.rangeResponses + stats.fullResponses;
      }, 0);
    beforeEach(() => {
      catalog.stac.items = [catalog.item('S2A_0210', 10, catalog.romeAssets(), { 'eo:cloud_cover': 3, ...SHARES })];
    });

    it('answers an identical request, and a window that finds the same scene, without reading the COGs again', async () => {
      const before = cogReads();
      const first = await gw.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
      assert.equal(first.status, 200, first.text);
      const read = cogReads();
      assert.ok(read > before, 'the first run read the bands');
      const again = await gw.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
      assert.equal(again.status, 200, again.text);
      const wider = await gw.post('/v1/imagery/process', {
        operation: 'ndvi',
        h3_cell: ROME_CELL,
        date_from: '2026-01-15',
        date_to: '2026-02-28',
      });
      assert.equal(wider.status, 200, wider.text);
      assert.equal(cogReads(), read, 'no COG request after the first run');
      type Processed = { result: Record<string, unknown>; cost: number };
      for (const res of [again, wider]) {
        assert.deepEqual((res.body as Processed).result, (first.body as Processed).result);
        assert.equal((res.body as Processed).cost, (first.body as Processed).cost);
      }
      // Another scene is another computation.
      catalog.stac.items.push(catalog.item('S2B_0220', 20, catalog.romeAssets(), { 'eo:cloud_cover': 1 }));
      const newer = await gw.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
      assert.equal((newer.body as Processed).result.sceneId, 'S2B_0220');
      assert.ok(cogReads() > read);
    });

    it('keeps no answer made after a failed read: the next request reads the pixels', async () => {
      const red = catalog.stac.files.get('rome-red.tif')!;
      catalog.stac.files.delete('rome-red.tif');
      try {
        const failed = await gw.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
        assert.equal((failed.body as { result: { method: string } }).result.method, 'metadata', failed.text);
      } finally {
        catalog.stac.files.set('rome-red.tif', red);
      }
      const read = await gw.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
      assert.equal((read.body as { result: { method: string } }).result.method, 'pixels', read.text);
    });

    it('refuses a run beyond the concurrent bound of a client with 429 rate_limit and retry-after', async () => {
      const bounded = await startGateway({
        clock: () => TEST_NOW,
        imagery: { stacUrl: catalog.stac.url, timeoutMs: 10_000 },
        config: { imageryBounds: { concurrentPerClient: 2, perMinutePerClient: 0 } },
      });
      try {
        catalog.stac.faults.searchDelayMs = 1000; // each run waits on the catalog
        const run = () => bounded.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
        const running = [run(), bounded.get(`/v1/imagery/ndvi?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`)];
        // Both are under way once the catalog has their searches.
        while (catalog.stac.searches.length < 2) await new Promise((resolve) => setTimeout(resolve, 10));
        const refused = await run();
        assert.equal(refused.status, 429, refused.text);
        assert.equal((refused.body as ErrorBody).error, 'rate_limit');
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
        for (const res of await Promise.all(running)) assert.equal(res.status, 200, res.text);
        delete catalog.stac.faults.searchDelayMs;
        assert.equal((await run()).status, 200, 'a slot is free again');
      } finally {
        await bounded.close();
      }
    });

    it('refuses runs beyond the per-minute bound of a client with 429 rate_limit and retry-after', async () => {
      const bounded = await startGateway({
        clock: () => TEST_NOW,
        imagery: { stacUrl: catalog.stac.url, timeoutMs: 1000 },
        config: { imageryBounds: { concurrentPerClient: 2, perMinutePerClient: 6 } }, // 2 at once
      });
      try {
        const run = () => bounded.post('/v1/imagery/process', { operation: 'ndvi', h3_cell: ROME_CELL, ...window });
        assert.equal((await run()).status, 200);
        assert.equal((await run()).status, 200);
        const refused = await run();
        assert.equal(refused.status, 429, refused.text);
        assert.equal((refused.body as ErrorBody).error, 'rate_limit');
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      } finally {
        await bounded.close();
      }
    });
  });

  describe('upstream failures', () => {
    const get = () => gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}`);

    it('answers 502 upstream_unavailable when the catalog refuses connections', async () => {
      const down = await startGateway({ clock: () => TEST_NOW }); // STAC URL: a closed port
      try {
        const res = await down.get(`/v1/imagery/ndvi?cell=${ROME_CELL}`);
        assert.equal(res.status, 502);
        assert.equal((res.body as ErrorBody).error, 'upstream_unavailable');
      } finally {
        await down.close();
      }
    });

    it('answers 502 upstream_unavailable when the catalog answers 5xx', async () => {
      catalog.stac.faults.searchStatus = 503;
      const res = await get();
      assert.equal(res.status, 502);
      assert.match((res.body as ErrorBody).detail!, /HTTP 503/);
    });

    it('answers 504 upstream_timeout when the catalog is slower than the timeout', async () => {
      catalog.stac.faults.searchDelayMs = 1500;
      const res = await get();
      assert.equal(res.status, 504);
      assert.equal((res.body as ErrorBody).error, 'upstream_timeout');
    });

    for (const malformed of ['not-json', 'bad-shape'] as const) {
      it(`answers 502 with a detail when the catalog answers ${malformed} STAC`, async () => {
        catalog.stac.faults.malformed = malformed;
        const res = await get();
        assert.equal(res.status, 502);
        assert.equal((res.body as ErrorBody).error, 'upstream_unavailable');
        assert.match((res.body as ErrorBody).detail!, /malformed STAC response/);
      });
    }
  });
});
