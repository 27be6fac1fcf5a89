/**
 * The dashboard's openEO layer (dashboard/openeo-layer.js) over what the gateway really answers: the `url` of an
 * XYZ service becomes a MapLibre raster source whose tile template, filled in as MapLibre fills it, fetches the
 * service's PNG tiles; anything else pasted is refused with a reason.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog } from '../helpers/imagery-fixtures.js';

interface LayerModule {
  OPENEO_LAYER_MIN_ZOOM: number;
  OPENEO_LAYER_MAX_ZOOM: number;
  openEoLayerSource(
    text: string,
  ):
    | { ok: true; source: { type: string; tiles: string[]; tileSize: number; minzoom: number; maxzoom: number } }
    | { ok: false; reason: string };
}

const KEY = 'gf_dashboard_openeo_layer_key_0123';
const BASE = '/openeo/1.2';

describe('dashboard openEO layer (dashboard/openeo-layer.js)', function () {
  this.timeout(30_000);

  it('turns an XYZ service url into a raster source whose tiles the gateway serves', async () => {
    const layer = (await import(
      pathToFileURL(resolve(import.meta.dirname, '../../dashboard/openeo-layer.js')).href
    )) as LayerModule;
    const catalog = await startImageryCatalog();
    catalog.stac.items = [5].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    const gw = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url },
      config: { apiKeys: [KEY] },
    });
    try {
      const auth = { authorization: `Bearer basic//${KEY}` };
      const graph = {
        load: {
          process_id: 'load_collection',
          arguments: {
            id: 'SENTINEL2_L2A',
            spatial_extent: { from_parameter: 'spatial_extent' },
            temporal_extent: ['2026-02-01', '2026-03-01'],
            bands: ['B04', 'B08'],
          },
        },
        ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
        mean: {
          process_id: 'reduce_dimension',
          arguments: {
            data: { from_node: 'ndvi' },
            dimension: 't',
            reducer: {
              process_graph: {
                mean: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true },
              },
            },
          },
          result: true,
        },
      };
      const created = await gw.request('POST', `${BASE}/services`, {
        body: { process: { process_graph: graph }, type: 'XYZ' },
        headers: auth,
      });
      assert.equal(created.status, 201, created.text);
      const service = await gw.get(`${BASE}/services/${created.headers.get('openeo-identifier')}`, auth);
      const { url } = service.body as { url: string };

      const answer = layer.openEoLayerSource(`  ${url}\n`);
      assert.ok(answer.ok);
      assert.deepEqual(answer.source.tiles, [url]);
      assert.equal(answer.source.tileSize, 256);
      const attributes = (service.body as { attributes: { minzoom: number; maxzoom: number } }).attributes;
      assert.deepEqual([answer.source.minzoom, answer.source.maxzoom], [attributes.minzoom, attributes.maxzoom]);

      // The tile over Rome at zoom 14, as MapLibre names it from the template.
      const tile = answer.source.tiles[0]!.replace('{z}', '14').replace('{x}', '8762').replace('{y}', '6090');
      const res = await fetch(tile);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
      assert.deepEqual([meta.width, meta.height], [256, 256]);

      for (const [text, reason] of [
        ['not a url', /not a URL/],
        ['ftp://example.org/{z}/{x}/{y}', /http/],
        [`${gw.url}${BASE}/services/abc`, /\{z\}/],
      ] as const) {
        const refused = layer.openEoLayerSource(text);
        assert.equal(refused.ok, false, text);
        assert.match((refused as { reason: string }).reason, reason);
      }
    } finally {
      await gw.close();
      await catalog.stac.close();
    }
  });
});
