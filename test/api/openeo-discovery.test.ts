/**
 * openEO discovery over HTTP (docs/protocol.md §16.1): the well-known document, capabilities, conformance, file
 * formats, the collection backed by the catalog, the processes, and openEO's error shape, with `GET /processes`,
 * `GET /collections` and the other answers validated against the openEO API 1.2.0 document.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PROCESS_IMPLEMENTATIONS } from '../../core/openeo/processes.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { OPENEO_ERRORS, openEoErrorSchemaErrors, openEoSchemaErrors } from '../helpers/openeo-api.js';

const here = dirname(fileURLToPath(import.meta.url));
const BASE = '/openeo/1.2';

describe('openEO discovery', function () {
  this.timeout(20_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.collection = {
      ...catalog.stac.collection,
      extent: { spatial: { bbox: [[-10, 30, 40, 70]] }, temporal: { interval: [['2017-03-28T00:00:00Z', null]] } },
    };
    gw = await startGateway({ clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url } });
  });
  after(async () => {
    await gw?.close();
    await catalog?.stac.close();
  });

  const valid = (path: string, body: unknown, status = 200) =>
    assert.deepEqual(openEoSchemaErrors(path, 'get', status, body), [], `${path} against openapi.yaml`);

  it('is found through /.well-known/openeo at the gateway root, with an absolute URL', async () => {
    const res = await gw.get('/.well-known/openeo');
    assert.equal(res.status, 200);
    valid('/.well-known/openeo', res.body);
    assert.deepEqual(res.body, { versions: [{ url: `${gw.url}${BASE}`, production: true, api_version: '1.2.0' }] });
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
  });

  it('states its capabilities: API 1.2.0, the endpoints built (and only those), billing in credits', async () => {
    for (const path of [BASE, `${BASE}/`]) {
      const res = await gw.get(path);
      assert.equal(res.status, 200, path);
      valid('/', res.body);
      const caps = res.body as {
        api_version: string;
        stac_version: string;
        endpoints: { path: string; methods: string[] }[];
        billing: { currency: string };
        links: { rel: string; href: string }[];
        conformsTo: string[];
      };
      assert.equal(caps.api_version, '1.2.0');
      assert.equal(caps.billing.currency, 'credits');
      const endpoints = Object.fromEntries(caps.endpoints.map((e) => [e.path, e.methods]));
      for (const path of ['/collections', '/collections/{collection_id}', '/processes', '/credentials/basic', '/me']) {
        assert.deepEqual(endpoints[path], ['GET'], path);
      }
      assert.deepEqual(endpoints['/services'], ['GET', 'POST']);
      for (const path of ['/files', '/credentials/oidc', '/']) assert.equal(endpoints[path], undefined, path);
      assert.ok(caps.links.some((l) => l.rel === 'version-history' && l.href === `${gw.url}/.well-known/openeo`));
      const conformance = await gw.get(`${BASE}/conformance`);
      valid('/conformance', conformance.body);
      assert.deepEqual((conformance.body as { conformsTo: string[] }).conformsTo, caps.conformsTo);
    }
  });

  it('lists GTiff, PNG and JSON as output formats', async () => {
    const res = await gw.get(`${BASE}/file_formats`);
    valid('/file_formats', res.body);
    assert.deepEqual(Object.keys((res.body as { output: object }).output).sort(), ['GTiff', 'JSON', 'PNG']);
  });

  it('lists SENTINEL2_L2A with the extent of the configured catalog (validated against openapi.yaml)', async () => {
    const res = await gw.get(`${BASE}/collections`);
    assert.equal(res.status, 200);
    valid('/collections', res.body);
    const [collection] = (res.body as { collections: { id: string; extent: unknown }[] }).collections;
    assert.equal(collection?.id, 'SENTINEL2_L2A');
    assert.deepEqual(collection?.extent, catalog.stac.collection.extent);
  });

  it('describes SENTINEL2_L2A: cube:dimensions x, y, t, bands and eo:bands with their common names', async () => {
    const res = await gw.get(`${BASE}/collections/SENTINEL2_L2A`);
    assert.equal(res.status, 200);
    valid('/collections/{collection_id}', res.body);
    const body = res.body as {
      'cube:dimensions': Record<string, { type: string; values?: string[] }>;
      summaries: { 'eo:bands': { name: string; common_name?: string }[] };
    };
    assert.deepEqual(Object.keys(body['cube:dimensions']), ['x', 'y', 't', 'bands']);
    assert.deepEqual(body['cube:dimensions'].bands?.values, [
      'B01',
      'B02',
      'B03',
      'B04',
      'B05',
      'B06',
      'B07',
      'B08',
      'B8A',
      'B09',
      'B11',
      'B12',
      'SCL',
    ]);
    const common = Object.fromEntries(body.summaries['eo:bands'].map((b) => [b.name, b.common_name]));
    assert.equal(common.B04, 'red');
    assert.equal(common.B08, 'nir');
    assert.equal(common.SCL, undefined);
  });

  it('serves the default extent when the catalog cannot describe its collection', async () => {
    const other = await startGateway({ clock: () => TEST_NOW }); // the catalog is a closed port
    try {
      const res = await other.get(`${BASE}/collections/SENTINEL2_L2A`);
      assert.equal(res.status, 200);
      valid('/collections/{collection_id}', res.body);
    } finally {
      await other.close();
    }
  });

  it('answers CollectionNotFound for another collection, in openEO’s error shape', async () => {
    const res = await gw.get(`${BASE}/collections/LANDSAT8`);
    assert.equal(res.status, 404);
    assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
    const body = res.body as { id: string; code: string; message: string; links: unknown[] };
    assert.equal(body.code, 'CollectionNotFound');
    assert.equal(OPENEO_ERRORS.CollectionNotFound?.http, 404);
    assert.equal(body.id, res.headers.get('x-request-id'));
    assert.deepEqual(body.links, []);
  });

  it('serves exactly the implemented processes, each with its official definition (validated)', async () => {
    const res = await gw.get(`${BASE}/processes`);
    assert.equal(res.status, 200);
    valid('/processes', res.body);
    const processes = (res.body as { processes: { id: string }[] }).processes;
    assert.deepEqual(processes.map((p) => p.id).sort(), [...PROCESS_IMPLEMENTATIONS.keys()].sort());
    const folder = join(here, '..', '..', 'api', 'openeo', 'processes');
    const files = readdirSync(folder).filter((f) => f.endsWith('.json'));
    assert.equal(files.length, processes.length);
    for (const process of processes) {
      assert.deepEqual(process, JSON.parse(readFileSync(join(folder, `${process.id}.json`), 'utf8')), process.id);
    }
  });

  it('offers no UDF runtimes', async () => {
    for (const path of ['/udf_runtimes']) {
      const res = await gw.get(`${BASE}${path}`);
      assert.equal(res.status, 200);
      valid(path, res.body);
      assert.deepEqual(res.body, {});
    }
  });

  it('answers FeatureUnsupported (501) on the endpoints not built, NotFound elsewhere under the base', async () => {
    for (const [method, path] of [
      ['GET', '/files'],
      ['POST', '/validation'],
      ['GET', '/credentials/oidc'],
    ] as const) {
      const res = await gw.request(method, `${BASE}${path}`, method === 'POST' ? { body: {} } : {});
      assert.equal(res.status, 501, `${method} ${path}`);
      assert.equal((res.body as { code: string }).code, 'FeatureUnsupported');
      assert.equal(OPENEO_ERRORS.FeatureUnsupported?.http, 501);
    }
    const missing = await gw.get(`${BASE}/nothing-here`);
    assert.equal(missing.status, 404);
    assert.equal((missing.body as { code: string }).code, 'NotFound');
    assert.deepEqual(openEoErrorSchemaErrors(missing.body), []);
  });
});
