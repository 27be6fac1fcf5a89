import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { imageryPayloadSchema } from '../../activities/imagery/imagery-record.js';
import { imageCost } from '../../core/pricing.js';
import { pino } from 'pino';
import { startGateway } from '../helpers/gateway.js';
import { startOrigin, type LocalOrigin } from '../helpers/redirect-servers.js';
import { startStacServer } from '../helpers/stac-server.js';
import { CLOUD, ROME_CELL, VEGETATION, ndviOf } from '../helpers/cog-fixture.js';
import { S3_ASSETS, SHARES, TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';

interface Ndvi {
  sceneId: string;
  meanNdvi: number | null;
  minNdvi: number | null;
  maxNdvi: number | null;
  healthStatus: string | null;
  cloudCover: number;
  description: string;
  method: string;
  processingBaseline: string | null;
  offsetApplied: boolean;
  megapixels: number;
  cost: number;
  validPixels: number | null;
  recordId: string;
}
interface AssetEntry {
  band: string;
  href: string;
  sha256: string;
  ranges: [number, number][];
}

const near = (actual: number | null, expected: number, tolerance = 1e-4) =>
  assert.ok(actual !== null && Math.abs(actual - expected) <= tolerance, `${actual} ≉ ${expected}`);

describe('imagery over HTTP: GET /v1/imagery/ndvi and its proof records', () => {
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
  });
  after(() => catalog.stac.close());
  beforeEach(async () => {
    gw = await startGateway({ clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url } });
  });
  afterEach(() => gw.close());

  async function ndvi(items: ReturnType<ImageryCatalog['item']>[]): Promise<Ndvi> {
    catalog.stac.items = items;
    const res = await gw.get(`/v1/imagery/ndvi?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`);
    assert.equal(res.status, 200, res.text);
    return res.body as Ndvi;
  }
  const records = async () => {
    await gw.writer.flush();
    return (await gw.proofs.queryRecords({ collection: 'imagery', limit: 100 })).records;
  };

  describe('pixels', () => {
    it('computes the known NDVI over the cloud-free pixels inside the cell (baseline 04.00: offset applied)', async () => {
      const result = await ndvi([
        catalog.item('S2A_post', 10, catalog.romeAssets(), { 's2:processing_baseline': '04.00' }),
      ]);
      assert.equal(result.method, 'pixels');
      near(result.meanNdvi, ndviOf(VEGETATION, -1000)); // 0.6: no cloud, no bare ground, no no-data in the mean
      near(result.minNdvi, 0.6);
      near(result.maxNdvi, 0.6);
      assert.equal(result.healthStatus, 'healthy');
      assert.equal(result.processingBaseline, '04.00');
      assert.equal(result.offsetApplied, true);
      assert.ok(result.validPixels! > 250_000, String(result.validPixels));
      assert.ok(result.megapixels > 0.5 && result.megapixels < 0.6, String(result.megapixels));
      assert.equal(result.cost, imageCost(result.megapixels));
      assert.match(result.description, /masked by the scene classification/);
    });

    it('includes the clouds when the scene has no classification band, so the mean drops', async () => {
      const result = await ndvi([catalog.item('S2A_noscl', 10, catalog.romeAssets({ scl: 'none' }))]);
      assert.equal(result.method, 'pixels');
      assert.ok(result.meanNdvi! < 0.55, String(result.meanNdvi));
      near(result.minNdvi, ndviOf(CLOUD, -1000));
      assert.match(result.description, /clouds are not masked/);
    });

    it('gives the offset rule its predicted values: pre-baseline and catalog-applied offsets add nothing', async () => {
      const pre = await ndvi([
        catalog.item('S2A_pre', 10, catalog.romeAssets(), { 's2:processing_baseline': '03.01' }),
      ]);
      near(pre.meanNdvi, ndviOf(VEGETATION, 0)); // 3/7
      assert.equal(pre.healthStatus, 'moderate');
      assert.equal(pre.offsetApplied, false);
      const applied = await ndvi([
        catalog.item('S2A_applied', 10, catalog.romeAssets(), { 'earthsearch:boa_offset_applied': true }),
      ]);
      near(applied.meanNdvi, ndviOf(VEGETATION, 0));
      assert.equal(applied.offsetApplied, false);
    });

    it('reads only ranges of the files: the header and the tiles under the cell', async () => {
      const before = { ...catalog.stac.fileStats('rome-red.tif') };
      await ndvi([catalog.item('S2A_post', 10, catalog.romeAssets())]);
      const after = catalog.stac.fileStats('rome-red.tif');
      assert.ok(after.rangeResponses - before.rangeResponses > 1);
      assert.equal(after.fullResponses, 0);
      const sent = after.bytesSent - before.bytesSent;
      assert.ok(sent < 0.5 * catalog.rome.red.length, `${sent} of ${catalog.rome.red.length} bytes`);
    });

    it('reads EPSG:4326 images too', async () => {
      const result = await ndvi([catalog.item('S2A_wgs84', 10, catalog.wgs84Assets())]);
      assert.equal(result.method, 'pixels');
      near(result.meanNdvi, 0.6);
    });

    it('chooses the least cloudy scene of the window, the newest among equals', async () => {
      const result = await ndvi([
        catalog.item('S2A_0220', 20, S3_ASSETS, { 'eo:cloud_cover': 10 }),
        catalog.item('S2A_0205', 5, S3_ASSETS, { 'eo:cloud_cover': 3 }),
        catalog.item('S2A_0215', 15, S3_ASSETS, { 'eo:cloud_cover': 3 }),
      ]);
      assert.equal(result.sceneId, 'S2A_0215');
      assert.equal(result.cloudCover, 3);
    });

    it('answers 404 no_scenes for an empty window, naming the window searched and how to widen it', async () => {
      catalog.stac.items = [];
      const res = await gw.get(`/v1/imagery/ndvi?cell=${ROME_CELL}`);
      assert.equal(res.status, 404);
      const body = res.body as { error: string; detail: string };
      assert.equal(body.error, 'no_scenes');
      const to = new Date(TEST_NOW).toISOString();
      const from = new Date(TEST_NOW - 30 * 86_400_000).toISOString();
      assert.ok(body.detail.includes(`between ${from} and ${to}`), body.detail);
      assert.match(body.detail, /from not given: the last 30 days\)/);
      assert.match(body.detail, /widen the window with from and to \(YYYY-MM-DD or ISO 8601 UTC\)/);

      const dated = await gw.get(`/v1/imagery/ndvi?cell=${ROME_CELL}&from=2025-01-01`);
      const detail = (dated.body as { detail: string }).detail;
      assert.ok(detail.includes('between 2025-01-01T00:00:00.000Z and'), detail);
      assert.doesNotMatch(detail, /not given/);
    });

    it('requires the cell', async () => {
      const res = await gw.get('/v1/imagery/ndvi?from=2026-02-01');
      assert.equal(res.status, 400);
      assert.equal((res.body as { error: string }).error, 'cell_required');
    });
  });

  describe('metadata', () => {
    it('estimates from the classification shares when the assets are on S3, saying why', async () => {
      const result = await ndvi([catalog.item('S2A_s3', 10, S3_ASSETS, SHARES)]);
      assert.equal(result.method, 'metadata');
      assert.equal(result.meanNdvi, 0.3688); // (40·0.7 + 30·0.15 + 10·(−0.3)) / 80 = 0.36875
      assert.equal(result.minNdvi, -0.3);
      assert.equal(result.maxNdvi, 0.7);
      assert.equal(result.healthStatus, 'stressed');
      assert.equal(result.validPixels, null);
      assert.equal(result.megapixels, 0);
      assert.equal(result.cost, 0);
      assert.match(result.description, /scene metadata/);
      assert.match(result.description, /s3:\/\//);
    });

    it('falls back when an asset cannot be read (HTTP 404), naming the failure', async () => {
      const assets = { ...catalog.romeAssets(), red: catalog.stac.fileUrl('missing.tif') };
      const result = await ndvi([catalog.item('S2A_404', 10, assets, SHARES)]);
      assert.equal(result.method, 'metadata');
      assert.equal(result.meanNdvi, 0.3688);
      // What failed (HTTP 404) goes to the logs: the public answer says only that the bands were unavailable.
      assert.match(result.description, /reading the band pixels failed: band data unavailable\./);
      assert.doesNotMatch(result.description, /404/);
      assert.equal(result.cost, 0);
    });

    it('falls back when every pixel of the cell is clouded, still charging the pixels read', async () => {
      const result = await ndvi([catalog.item('S2A_cloudy', 10, catalog.romeAssets({ scl: 'cloudy' }), SHARES)]);
      assert.equal(result.method, 'metadata');
      assert.equal(result.meanNdvi, 0.3688);
      assert.match(result.description, /every one of the cell's \d+ pixels is masked/);
      assert.ok(result.megapixels > 0.5);
      assert.equal(result.cost, imageCost(result.megapixels));
    });

    it('says so, with null values, when the metadata has no classification shares either', async () => {
      const result = await ndvi([catalog.item('S2A_bare', 10, S3_ASSETS)]);
      assert.equal(result.method, 'metadata');
      assert.equal(result.meanNdvi, null);
      assert.equal(result.healthStatus, null);
      assert.match(result.description, /no surface classification shares/);
    });
  });

  describe('proof records', () => {
    it('records each processing with item id, method, baseline, offset flag and asset hashes', async () => {
      const pixels = await ndvi([
        catalog.item('S2A_post', 10, catalog.romeAssets(), { 's2:processing_baseline': '04.00' }),
      ]);
      const metadata = await ndvi([catalog.item('S2A_s3', 11, S3_ASSETS, SHARES)]);
      await gw.post('/v1/imagery/process', { operation: 'scene_search', h3_cell: ROME_CELL, date_from: '2026-02-01' });
      const all = await records();
      assert.deepEqual(all.map((r) => r.payload_type).sort(), ['imagery/ndvi', 'imagery/ndvi', 'imagery/scene_search']);
      for (const r of all) assert.ok(imageryPayloadSchema.safeParse(r.payload).success, r.id);

      const record = all.find((r) => r.id === pixels.recordId)!;
      assert.equal(record.collection_type, 'imagery');
      assert.equal(record.address.h3_cell, ROME_CELL);
      const payload = record.payload as Record<string, unknown>;
      assert.equal(payload.item_id, 'S2A_post');
      assert.equal(payload.method, 'pixels');
      assert.equal(payload.processing_baseline, '04.00');
      assert.equal(payload.offset_applied, true);
      assert.equal(payload.boa_offset, -1000);
      assert.equal(payload.megapixels, pixels.megapixels);
      assert.equal(payload.cost, pixels.cost);
      const raster = payload.raster as { width: number; height: number };
      assert.equal((raster.width * raster.height) / 1e6, pixels.megapixels);
      const assets = payload.assets as AssetEntry[];
      assert.deepEqual(
        assets.map((a) => a.band),
        ['red', 'nir', 'scl'],
      );
      // The hash covers exactly the listed byte ranges, in offset order: a verifier can recompute it.
      const red = assets[0]!;
      assert.equal(red.href, catalog.romeAssets().red);
      const hash = createHash('sha256');
      for (const [offset, length] of red.ranges) hash.update(catalog.rome.red.subarray(offset, offset + length));
      assert.equal(red.sha256, hash.digest('hex'));

      const meta = all.find((r) => r.id === metadata.recordId)!.payload as Record<string, unknown>;
      assert.equal(meta.method, 'metadata');
      assert.deepEqual(meta.assets, []);
      assert.equal(meta.cost, 0);
      assert.match(meta.fallback_reason as string, /s3:\/\//);
    });
  });

  describe('a catalog pointing elsewhere (allowed asset origins)', () => {
    let target: LocalOrigin;
    beforeEach(async () => {
      // Another local origin (an internal service): whatever it would answer, it must never be asked.
      target = await startOrigin((_path, _req, res) => res.writeHead(404).end('not here'));
    });
    afterEach(() => target.close());

    /** A gateway on `catalog` whose log lines land in `lines`. */
    async function gatewayLogging(lines: string[], assetOrigins?: string[]) {
      const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
      return startGateway({
        clock: () => TEST_NOW,
        logger,
        imagery: { stacUrl: catalog.stac.url, ...(assetOrigins ? { assetOrigins } : {}) },
      });
    }

    it('reads no band from another origin, directly or through a redirect, and does not describe it', async () => {
      const lines: string[] = [];
      const hostile = await gatewayLogging(lines);
      const closedPort = 'http://127.0.0.1:9';
      catalog.stac.redirects.set('moved-red.tif', `${target.url}/B04.tif`);
      catalog.stac.redirects.set('moved-nir.tif', `${target.url}/B08.tif`);
      catalog.stac.redirects.set('moved-scl.tif', `${target.url}/SCL.tif`);
      const cases = {
        direct: { red: `${target.url}/B04.tif`, nir: `${target.url}/B08.tif`, scl: `${target.url}/SCL.tif` },
        redirected: {
          red: catalog.stac.fileUrl('moved-red.tif'),
          nir: catalog.stac.fileUrl('moved-nir.tif'),
          scl: catalog.stac.fileUrl('moved-scl.tif'),
        },
        closed: { red: `${closedPort}/B04.tif`, nir: `${closedPort}/B08.tif`, scl: `${closedPort}/SCL.tif` },
      };
      try {
        const descriptions: string[] = [];
        for (const [name, assets] of Object.entries(cases)) {
          catalog.stac.items = [catalog.item(`S2A_${name}`, 10, assets, SHARES)];
          const res = await hostile.get(`/v1/imagery/ndvi?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`);
          assert.equal(res.status, 200, res.text);
          const result = res.body as Ndvi;
          assert.equal(result.method, 'metadata', name);
          assert.match(result.description, /reading the band pixels failed: band data unavailable\./, name);
          descriptions.push(result.description);
          const mask = await hostile.post('/v1/imagery/process', {
            operation: 'cloud_mask',
            h3_cell: ROME_CELL,
            date_from: '2026-02-01',
            date_to: '2026-02-28',
          });
          assert.equal(mask.status, 200, mask.text);
          const masked = (mask.body as { result: { method: string; description: string } }).result;
          assert.equal(masked.method, 'metadata', name);
          assert.match(masked.description, /reading the scl band failed: band data unavailable\./, name);
        }
        assert.deepEqual(target.seen, [], 'the other origin got no request');
        // The same words whatever lies behind the link: no port or status scanner.
        assert.equal(new Set(descriptions.map((d) => d.replace(/S2A_\w+/, ''))).size, 1, descriptions.join('\n'));
        await hostile.writer.flush();
        const { records } = await hostile.proofs.queryRecords({ collection: 'imagery', limit: 100 });
        for (const record of records) {
          const text = JSON.stringify(record.payload);
          assert.doesNotMatch(text, /origin not allowed|HTTP 404|ECONNREFUSED|fetch failed/, record.id);
        }
        // The operator sees what happened.
        assert.ok(lines.some((l) => l.includes('origin not allowed') && l.includes(target.url)));
      } finally {
        catalog.stac.redirects.clear();
        await hostile.close();
      }
    });

    it('reads from an origin IMAGERY_ASSET_ORIGINS adds', async () => {
      const mirror = await startStacServer();
      mirror.files.set('red.tif', catalog.rome.red);
      mirror.files.set('nir.tif', catalog.rome.nir);
      const assets = { red: mirror.fileUrl('red.tif'), nir: mirror.fileUrl('nir.tif') };
      catalog.stac.items = [catalog.item('S2A_mirror', 10, assets, SHARES)];
      const path = `/v1/imagery/ndvi?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`;
      const listed = await gatewayLogging([], [mirror.url]);
      const unlisted = await gatewayLogging([]);
      try {
        assert.equal(((await listed.get(path)).body as Ndvi).method, 'pixels');
        assert.equal(((await unlisted.get(path)).body as Ndvi).method, 'metadata');
      } finally {
        await Promise.all([listed.close(), unlisted.close(), mirror.close()]);
      }
    });

    it('hands clients http(s) links only: a javascript: thumbnail or band is dropped', async () => {
      catalog.stac.items = [
        catalog.item('S2A_links', 10, {
          ...catalog.romeAssets(),
          thumbnail: 'javascript:alert(1)',
          visual: 'data:text/html,<script>alert(1)</script>',
          blue: 's3://sentinel-cogs/B02.tif',
        }),
      ];
      const res = await gw.get(`/v1/imagery/scenes?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`);
      assert.equal(res.status, 200, res.text);
      const scene = (res.body as { scenes: { thumbnail: string | null; bands: Record<string, string> }[] }).scenes[0]!;
      assert.equal(scene.thumbnail, null);
      assert.deepEqual(Object.keys(scene.bands).sort(), ['nir', 'red', 'scl']);
      const corrected = await gw.post('/v1/imagery/process', {
        operation: 'atmospheric_correction',
        h3_cell: ROME_CELL,
        date_from: '2026-02-01',
        date_to: '2026-02-28',
      });
      assert.deepEqual(Object.keys((corrected.body as { result: { bands: object } }).result.bands).sort(), [
        'nir',
        'red',
        'scl',
      ]);
    });
  });
});
