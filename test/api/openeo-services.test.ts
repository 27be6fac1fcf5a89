/**
 * openEO secondary web services of type XYZ over HTTP (docs/protocol.md §16.10) against the local STAC catalog and
 * its Rome COGs: the service type, creating, listing, changing and deleting a service (its owner only), the tiles
 * its URL serves (PNG in the colour map, the NDVI step's values, no-data transparent, a proof record per rendered
 * tile, the cache, the zoom bounds, the budget), the answers validated against openapi.yaml 1.2.0, and CORS with
 * preflight on the openEO paths.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import proj4 from 'proj4';
import sharp from 'sharp';
import { romeCellInUtm } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { OPENEO_ERRORS, openEoErrorSchemaErrors, openEoSchemaErrors } from '../helpers/openeo-api.js';

const BASE = '/openeo/1.2';
const KEY = 'gf_openeo_xyz_owner_key_0123456789';
const OTHER = 'gf_openeo_xyz_other_key_0123456789';
const AUTH = { authorization: `Bearer basic//${KEY}` };
const OTHER_AUTH = { authorization: `Bearer basic//${OTHER}` };
const UTM33N = '+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs';

/** A WGS 84 box of `half` metres around a point `dy` metres north of the Rome cell's centre (UTM 33N). */
function boxAround(dy: number, half: number) {
  const { cx, cy } = romeCellInUtm();
  const toWgs = proj4(UTM33N, '+proj=longlat +datum=WGS84 +no_defs');
  const [west, south] = toWgs.forward([cx - half, cy + dy - half]) as [number, number];
  const [east, north] = toWgs.forward([cx + half, cy + dy + half]) as [number, number];
  return { west, south, east, north };
}
/** Vegetation only (NDVI 0.6 with the BOA offset), 1 km south of the centre. */
const FIELD = boxAround(-1000, 200);
const Z = 14;

/** The tile holding a point, and the point's pixel in it. */
function tileAt(lng: number, lat: number, z = Z) {
  const n = 2 ** z;
  const fx = ((lng + 180) / 360) * n;
  const rad = (lat * Math.PI) / 180;
  const fy = ((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n;
  const x = Math.floor(fx);
  const y = Math.floor(fy);
  return { z, x, y, px: Math.floor((fx - x) * 256), py: Math.floor((fy - y) * 256) };
}
const centre = tileAt((FIELD.west + FIELD.east) / 2, (FIELD.south + FIELD.north) / 2);

type Graph = Record<string, { process_id: string; arguments: Record<string, unknown>; result?: boolean }>;
const load = (extent: unknown = FIELD, bands = ['B04', 'B08']) => ({
  process_id: 'load_collection',
  arguments: { id: 'SENTINEL2_L2A', spatial_extent: extent, temporal_extent: ['2026-02-01', '2026-03-01'], bands },
});
const ndviMean = (extent: unknown = FIELD): Graph => ({
  load: load(extent),
  ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
  mean: {
    process_id: 'reduce_dimension',
    arguments: {
      data: { from_node: 'ndvi' },
      dimension: 't',
      reducer: {
        process_graph: { mean: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } },
      },
    },
    result: true,
  },
});

describe('openEO XYZ services', function () {
  this.timeout(30_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [5, 12].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    gw = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url },
      config: { apiKeys: [KEY, OTHER] },
    });
  });
  after(async () => {
    await gw?.close();
    await catalog?.stac.close();
  });

  const valid = (path: string, method: string, status: number, body: unknown) =>
    assert.deepEqual(openEoSchemaErrors(path, method, status, body), [], `${method} ${path} against openapi.yaml`);

  async function failure(res: { status: number; body: unknown }, code: string): Promise<string> {
    assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
    const body = res.body as { code: string; message: string };
    assert.equal(body.code, code, body.message);
    assert.equal(res.status, OPENEO_ERRORS[code]?.http ?? 400);
    return body.message;
  }

  async function create(body: Record<string, unknown>, headers = AUTH): Promise<string> {
    const res = await gw.request('POST', `${BASE}/services`, { body, headers });
    assert.equal(res.status, 201, res.text);
    const id = res.headers.get('openeo-identifier')!;
    assert.match(id, /^[\w\-.~]+$/);
    assert.equal(res.headers.get('location'), `${gw.url}${BASE}/services/${id}`);
    return id;
  }

  async function describe_(id: string) {
    const res = await gw.get(`${BASE}/services/${id}`, AUTH);
    assert.equal(res.status, 200, res.text);
    valid('/services/{service_id}', 'get', 200, res.body);
    return res.body as { url: string; costs: number; configuration: { colormap: string }; enabled: boolean };
  }

  async function tile(url: string, t: { z: number; x: number; y: number }, headers: Record<string, string> = {}) {
    const res = await fetch(url.replace('{z}', String(t.z)).replace('{x}', String(t.x)).replace('{y}', String(t.y)), {
      headers,
    });
    return { res, bytes: Buffer.from(await res.arrayBuffer()) };
  }

  async function pixels(bytes: Buffer) {
    const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    assert.deepEqual([info.width, info.height, info.channels], [256, 256, 4]);
    return (px: number, py: number) => [...data.subarray((py * 256 + px) * 4, (py * 256 + px) * 4 + 4)];
  }

  it('lists XYZ in /service_types with its configuration and process parameters', async () => {
    const res = await gw.get(`${BASE}/service_types`);
    assert.equal(res.status, 200);
    valid('/service_types', 'get', 200, res.body);
    const xyz = (res.body as Record<string, { configuration: Record<string, { enum?: string[] }> }>).XYZ!;
    assert.deepEqual(xyz.configuration.colormap?.enum, ['RdYlGn', 'water', 'greys']);
    assert.ok(xyz.configuration.range);
  });

  it('serves an NDVI layer: tiles in RdYlGn with the NDVI step’s value, transparent outside, each a proof record', async () => {
    const id = await create({ title: 'NDVI', process: { process_graph: ndviMean() }, type: 'xyz' });
    const list = await gw.get(`${BASE}/services`, AUTH);
    valid('/services', 'get', 200, list.body);
    assert.deepEqual(
      (list.body as { services: { id: string }[] }).services.map((s) => s.id),
      [id],
    );
    const service = await describe_(id);
    assert.match(service.url, new RegExp(`^${gw.url}${BASE}/xyz/[\\w-]{20,}/\\{z\\}/\\{x\\}/\\{y\\}$`));
    assert.equal(service.costs, 0);

    // Tiles need no credentials: the URL is the capability.
    const first = await tile(service.url, centre);
    assert.equal(first.res.status, 200, first.bytes.toString('utf8').slice(0, 300));
    assert.equal(first.res.headers.get('content-type'), 'image/png');
    assert.equal(first.res.headers.get('x-svc-cache'), 'MISS');
    assert.equal(first.res.headers.get('access-control-allow-origin'), '*');
    const sha = createHash('sha256').update(first.bytes).digest('hex');
    assert.equal(first.res.headers.get('x-svc-proof'), sha);
    const at = await pixels(first.bytes);
    // NDVI (5000 − 1000 − (2000 − 1000)) / (5000 − 1000 + 2000 − 1000) = 0.6: RdYlGn at 0.8 of [−1, 1].
    const [r, g, b, a] = at(centre.px, centre.py);
    assert.deepEqual([r, g, b, a], [102, 189, 99, 255]);
    // Outside the field's extent: transparent.
    const corner = centre.px > 128 ? 0 : 255;
    assert.equal(at(corner, corner)[3], 0);

    const recordId = first.res.headers.get('x-svc-record')!;
    const proof = await gw.get(`/store/proof/${encodeURIComponent(recordId)}`);
    assert.equal(proof.status, 200, proof.text);
    const record = (proof.body as { record: { payload_type: string; payload: Record<string, unknown> } }).record;
    assert.equal(record.payload_type, 'imagery/openeo_tile');
    const payload = record.payload as {
      service_id: string;
      tile: { z: number; x: number; y: number; bbox: number[] };
      result: { sha256: string; format: string };
      scenes: { id: string }[];
      assets: { band: string; sha256: string; ranges: [number, number][] }[];
      cost: number;
      process_graph_sha256: string;
      charged_to: { api_key_id: string };
    };
    assert.equal(payload.service_id, id);
    assert.deepEqual(payload.tile, {
      z: centre.z,
      x: centre.x,
      y: centre.y,
      bbox: payload.tile.bbox,
    });
    assert.deepEqual(payload.result, {
      sha256: sha,
      bytes: first.bytes.length,
      format: 'PNG',
      media_type: 'image/png',
    });
    assert.deepEqual(
      payload.scenes.map((s) => s.id),
      ['S2B_ROME_5', 'S2B_ROME_12'],
    );
    assert.equal(payload.assets.length, 4);
    assert.ok(payload.assets.every((a) => a.ranges.length > 0 && /^[0-9a-f]{64}$/.test(a.sha256)));
    assert.ok(payload.cost > 0);
    assert.equal(Number(first.res.headers.get('x-svc-cost')), payload.cost);
    assert.equal(payload.charged_to.api_key_id, 'env:0');

    // The second request is the cache's: the same bytes, no new record, nothing charged.
    const second = await tile(service.url, centre);
    assert.equal(second.res.headers.get('x-svc-cache'), 'HIT');
    assert.deepEqual(second.bytes, first.bytes);
    assert.equal(second.res.headers.get('x-svc-record'), recordId);
    assert.equal(second.res.headers.get('x-svc-cost'), '0');
    const notModified = await tile(service.url, centre, { 'if-none-match': `"${sha}"` });
    assert.equal(notModified.res.status, 304);
    assert.equal((await describe_(id)).costs, payload.cost);

    // A tile away from the field is transparent and reads nothing.
    const away = await tile(service.url, { z: Z, x: centre.x + 3, y: centre.y });
    assert.equal(away.res.status, 200);
    assert.equal(away.res.headers.get('x-svc-record'), null);
    const far = await pixels(away.bytes);
    assert.equal(far(128, 128)[3], 0);

    const logs = await gw.get(`${BASE}/services/${id}/logs`, AUTH);
    valid('/services/{service_id}/logs', 'get', 200, logs.body);
    assert.equal((logs.body as { logs: { message: string }[] }).logs.length, 1);
  });

  it('takes the tile as the spatial_extent parameter, and bounds the zoom', async () => {
    const id = await create({
      process: { process_graph: ndviMean({ from_parameter: 'spatial_extent' }) },
      type: 'XYZ',
      configuration: { colormap: 'greys', range: [0, 1] },
    });
    const { url } = await describe_(id);
    const t = await tile(url, centre);
    assert.equal(t.res.status, 200);
    const at = await pixels(t.bytes);
    // 0.6 of [0, 1] in grey, and the whole tile is inside the scene: no transparent corner.
    assert.deepEqual(at(centre.px, centre.py), [153, 153, 153, 255]);
    for (const [z, label] of [
      [11, 'too far out'],
      [19, 'too far in'],
    ] as const) {
      const out = tileAt((FIELD.west + FIELD.east) / 2, (FIELD.south + FIELD.north) / 2, z);
      const res = await gw.get(
        new URL(url.replace('{z}', String(z)).replace('{x}', String(out.x)).replace('{y}', String(out.y))).pathname,
      );
      assert.equal(res.status, 400, label);
      assert.equal((res.body as { code: string }).code, 'TileZoomUnsupported');
      assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
    }
    const unknown = await gw.get(`${BASE}/xyz/not-a-token/${centre.z}/${centre.x}/${centre.y}`);
    await failure(unknown, 'ServiceNotFound');
  });

  it('paints a band-math mask in the two water colours', async () => {
    const element = (label: string) => ({
      process_id: 'array_element',
      arguments: { data: { from_parameter: 'data' }, label },
    });
    const mask: Graph = {
      load: load(),
      index: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'load' },
          dimension: 'bands',
          reducer: {
            process_graph: {
              red: element('B04'),
              nir: element('B08'),
              nd: {
                process_id: 'normalized_difference',
                arguments: { x: { from_node: 'nir' }, y: { from_node: 'red' } },
              },
              wet: { process_id: 'gt', arguments: { x: { from_node: 'nd' }, y: 0.5 }, result: true },
            },
          },
        },
      },
      latest: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'index' },
          dimension: 't',
          reducer: {
            process_graph: {
              max: { process_id: 'max', arguments: { data: { from_parameter: 'data' } }, result: true },
            },
          },
        },
        result: true,
      },
    };
    const id = await create({
      process: { process_graph: mask },
      type: 'XYZ',
      configuration: { colormap: 'water', range: [0, 1] },
    });
    const t = await tile((await describe_(id)).url, centre);
    assert.equal(t.res.status, 200);
    // NDVI 0.6 > 0.5: 1, the water colour.
    assert.deepEqual((await pixels(t.bytes))(centre.px, centre.py), [33, 102, 172, 255]);
  });

  it('refuses a graph that yields more than one band, another type, and a bad configuration', async () => {
    const bands: Graph = { load: { ...load(), result: true } };
    const message = await failure(
      await gw.request('POST', `${BASE}/services`, {
        body: { process: { process_graph: bands }, type: 'XYZ' },
        headers: AUTH,
      }),
      'FormatUnsuitable',
    );
    assert.match(message, /one band/);
    await failure(
      await gw.request('POST', `${BASE}/services`, {
        body: { process: { process_graph: ndviMean() }, type: 'WMS' },
        headers: AUTH,
      }),
      'ServiceUnsupported',
    );
    await failure(
      await gw.request('POST', `${BASE}/services`, {
        body: { process: { process_graph: ndviMean() }, type: 'XYZ', configuration: { colormap: 'jet' } },
        headers: AUTH,
      }),
      'ServiceConfigInvalid',
    );
    await failure(
      await gw.request('POST', `${BASE}/services`, {
        body: { process: { process_graph: ndviMean() }, type: 'XYZ', configuration: { opacity: 1 } },
        headers: AUTH,
      }),
      'ServiceConfigUnsupported',
    );
    await failure(
      await gw.request('POST', `${BASE}/services`, { body: { process: { process_graph: ndviMean() }, type: 'XYZ' } }),
      'AuthenticationRequired',
    );
  });

  it('lets only its owner see, change and delete a service; a change shows in new tiles, deletion ends the URL', async () => {
    const id = await create({ process: { process_graph: ndviMean() }, type: 'XYZ' });
    const { url } = await describe_(id);
    const before = await tile(url, centre);
    assert.equal(before.res.status, 200);

    assert.deepEqual(((await gw.get(`${BASE}/services`, OTHER_AUTH)).body as { services: unknown[] }).services, []);
    await failure(await gw.get(`${BASE}/services/${id}`, OTHER_AUTH), 'ServiceNotFound');
    await failure(
      await gw.request('PATCH', `${BASE}/services/${id}`, { body: { enabled: false }, headers: OTHER_AUTH }),
      'ServiceNotFound',
    );
    await failure(await gw.request('DELETE', `${BASE}/services/${id}`, { headers: OTHER_AUTH }), 'ServiceNotFound');

    const patched = await gw.request('PATCH', `${BASE}/services/${id}`, {
      body: { configuration: { colormap: 'greys', range: [0, 1] }, title: 'grey' },
      headers: AUTH,
    });
    assert.equal(patched.status, 204, patched.text);
    const after = await tile(url, centre);
    assert.equal(after.res.headers.get('x-svc-cache'), 'MISS');
    assert.deepEqual((await pixels(after.bytes))(centre.px, centre.py), [153, 153, 153, 255]);

    assert.equal(
      (await gw.request('PATCH', `${BASE}/services/${id}`, { body: { enabled: false }, headers: AUTH })).status,
      204,
    );
    assert.equal((await tile(url, centre)).res.status, 404);
    assert.equal(
      (await gw.request('PATCH', `${BASE}/services/${id}`, { body: { enabled: true }, headers: AUTH })).status,
      204,
    );
    assert.equal((await tile(url, centre)).res.status, 200);

    const deleted = await gw.request('DELETE', `${BASE}/services/${id}`, { headers: AUTH });
    assert.equal(deleted.status, 204);
    await failure(await gw.get(`${BASE}/services/${id}`, AUTH), 'ServiceNotFound');
    const gone = await tile(url, centre);
    assert.equal(gone.res.status, 404);
  });

  it('charges tiles to the service’s budget and refuses one beyond it', async () => {
    const id = await create({ process: { process_graph: ndviMean() }, type: 'XYZ', budget: 1e-9 });
    const { url } = await describe_(id);
    const t = await tile(url, centre);
    assert.equal(t.res.status, 402);
    const body = JSON.parse(t.bytes.toString('utf8')) as { code: string };
    assert.equal(body.code, 'PaymentRequired');
    assert.equal((await describe_(id)).costs, 0);
  });

  it('answers CORS on every openEO path, preflight with 204, and FeatureUnsupported for a method not routed', async () => {
    const preflight = await fetch(`${gw.url}${BASE}/services`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://editor.openeo.org',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.deepEqual(preflight.headers.get('access-control-allow-methods')?.split(', '), ['OPTIONS', 'GET', 'POST']);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /Authorization/);
    const patchPreflight = await fetch(`${gw.url}${BASE}/services/x`, { method: 'OPTIONS' });
    assert.equal(patchPreflight.status, 204);
    assert.match(patchPreflight.headers.get('access-control-allow-methods') ?? '', /PATCH/);

    const created = await gw.request('POST', `${BASE}/services`, {
      body: { process: { process_graph: ndviMean() }, type: 'XYZ' },
      headers: { ...AUTH, origin: 'https://editor.openeo.org' },
    });
    assert.equal(created.headers.get('access-control-allow-origin'), '*');
    const exposed = (created.headers.get('access-control-expose-headers') ?? '').split(', ');
    for (const header of ['Link', 'Location', 'OpenEO-Costs', 'OpenEO-Identifier']) assert.ok(exposed.includes(header));
    // A refusal is readable too.
    const refused = await gw.get(`${BASE}/me`);
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.get('access-control-allow-origin'), '*');

    const put = await gw.request('PUT', `${BASE}/services`, { body: {}, headers: AUTH });
    await failure(put, 'FeatureUnsupported');
    assert.equal(put.headers.get('access-control-allow-origin'), '*');
  });
});
