/**
 * `POST /openeo/1.2/result` over HTTP (docs/protocol.md §16.5–16.7) against the local STAC catalog and its Rome
 * COGs: NDVI as a georeferenced GeoTIFF and as JSON, band math, the SCL cloud mask, zonal means, the pixel budget,
 * the request budget, openEO's errors, the gates, and the proof record of every result.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { fromArrayBuffer } from 'geotiff';
import { cellToLatLng } from 'h3-js';
import proj4 from 'proj4';
import sharp from 'sharp';
import { issueCertificate } from '../../core/delegation-cert.js';
import { generateKeyPair } from '../../core/identity.js';
import { imageCost } from '../../core/pricing.js';
import { CLOUD, ROME_CELL, VEGETATION, ndviOf, romeCellInUtm } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { OPENEO_ERRORS, openEoErrorSchemaErrors } from '../helpers/openeo-api.js';

const BASE = '/openeo/1.2';
const KEY = 'gf_openeo_result_key_0123456789';
const AUTH = { authorization: `Bearer basic//${KEY}` };
const UTM33N = '+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs';

/** A WGS 84 box of `half` metres around a point `dy` metres north of the Rome cell's centre (UTM 33N). */
function boxAround(dy: number, half: number) {
  const { cx, cy } = romeCellInUtm();
  const toWgs = proj4(UTM33N, '+proj=longlat +datum=WGS84 +no_defs');
  const [west, south] = toWgs.forward([cx - half, cy + dy - half]) as [number, number];
  const [east, north] = toWgs.forward([cx + half, cy + dy + half]) as [number, number];
  return { west, south, east, north };
}
/** Vegetation only: 1 km south of the centre, well inside the cell and below the cloud band. */
const FIELD = boxAround(-1000, 200);

type Graph = Record<string, { process_id: string; arguments: Record<string, unknown>; result?: boolean }>;

const load = (extent: unknown = FIELD, bands = ['B04', 'B08'], temporal = ['2026-02-01', '2026-03-01']) => ({
  process_id: 'load_collection',
  arguments: { id: 'SENTINEL2_L2A', spatial_extent: extent, temporal_extent: temporal, bands },
});
const meanOver = (node: string, dimension: string) => ({
  process_id: 'reduce_dimension',
  arguments: {
    data: { from_node: node },
    dimension,
    reducer: {
      process_graph: { mean: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } },
    },
  },
});
const save = (node: string, format: string) => ({
  process_id: 'save_result',
  arguments: { data: { from_node: node }, format },
  result: true,
});
const ndviGraph = (format: string, extent: unknown = FIELD): Graph => ({
  load: load(extent),
  ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
  mean: meanOver('ndvi', 't'),
  save: save('mean', format),
});

interface DataCubeJson {
  type: 'datacube';
  order: string[];
  dimensions: Record<string, { type: string; values: unknown[]; reference_system?: string }>;
  data: unknown;
}

describe('openEO POST /result', function () {
  this.timeout(30_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [5, 12].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    gw = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url },
      config: { apiKeys: [KEY] },
    });
  });
  after(async () => {
    await gw?.close();
    await catalog?.stac.close();
  });

  const run = (graph: Graph, extra: Record<string, unknown> = {}, headers: Record<string, string> = AUTH) =>
    gw.request('POST', `${BASE}/result`, { body: { process: { process_graph: graph }, ...extra }, headers });

  async function raw(graph: Graph): Promise<{ bytes: Buffer; headers: Headers }> {
    const res = await fetch(`${gw.url}${BASE}/result`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ process: { process_graph: graph } }),
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, bytes.toString('utf8').slice(0, 500));
    return { bytes, headers: res.headers };
  }

  async function failure(res: { status: number; body: unknown }, code: string): Promise<string> {
    assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
    const body = res.body as { code: string; message: string };
    assert.equal(body.code, code, body.message);
    assert.equal(res.status, OPENEO_ERRORS[code]?.http ?? 400);
    return body.message;
  }

  it('answers the NDVI mean over time as a georeferenced GeoTIFF, the NDVI step’s value on every pixel', async () => {
    const { bytes, headers } = await raw(ndviGraph('GTiff'));
    assert.match(headers.get('content-type') ?? '', /^image\/tiff/);
    const tiff = await fromArrayBuffer(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const image = await tiff.getImage();
    assert.equal((image.getGeoKeys() as { ProjectedCSTypeGeoKey?: number }).ProjectedCSTypeGeoKey, 32633);
    assert.deepEqual(image.getResolution().slice(0, 2), [10, -10]);
    const [originX, originY] = image.getOrigin() as [number, number];
    const { cx, cy } = romeCellInUtm();
    // The WGS 84 box drawn around the UTM square is a little larger in UTM again (its edges curve): within 30 m.
    assert.ok(
      Math.abs(originX - (cx - 200)) <= 30 && Math.abs(originY - (cy - 1000 + 200)) <= 30,
      `${originX} ${originY}`,
    );
    assert.equal(originX % 10, romeOriginRemainder(), 'aligned to the scene’s pixel grid');
    const [values] = (await image.readRasters()) as unknown as Float32Array[];
    assert.ok(values!.length >= 40 * 40);
    for (const v of values!) assert.ok(Math.abs(v - ndviOf(VEGETATION, -1000)) < 1e-6, String(v));

    // The NDVI step on the cell reads the same pixels of the same scenes: its mean is the same 0.6.
    const step = await gw.get(`/v1/imagery/ndvi?cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`);
    assert.ok(Math.abs((step.body as { meanNdvi: number }).meanNdvi - values![0]!) < 1e-4);
  });

  it('makes every result a proof record: file hash, scenes, byte ranges and their hashes, graph hash, cost', async () => {
    const graph = ndviGraph('GTiff');
    const { bytes, headers } = await raw(graph);
    const id = headers.get('x-svc-record')!;
    assert.match(id, /^openeo:/);
    const sha = createHash('sha256').update(bytes).digest('hex');
    assert.equal(headers.get('x-svc-proof'), sha);
    const cost = Number(headers.get('openeo-costs'));
    assert.equal(headers.get('x-svc-cost'), String(cost));
    const proof = await gw.get(`/store/proof/${encodeURIComponent(id)}`);
    assert.equal(proof.status, 200, proof.text);
    const record = (proof.body as { record: { payload_type: string; payload: Record<string, unknown> } }).record;
    assert.equal(record.payload_type, 'imagery/openeo_result');
    const payload = record.payload as {
      process_graph_sha256: string;
      result: { sha256: string; bytes: number; format: string };
      scenes: { id: string; boa_offset: number }[];
      assets: { scene: string; band: string; href: string; sha256: string; ranges: [number, number][] }[];
      samples: number;
      cost: number;
      authenticated_by: { api_key_id: string };
    };
    assert.deepEqual(payload.result, {
      sha256: sha,
      bytes: bytes.length,
      format: 'GTiff',
      media_type: 'image/tiff; application=geotiff',
    });
    const { canonicalJson } = await import('../../core/canonical-json.js');
    assert.equal(payload.process_graph_sha256, createHash('sha256').update(canonicalJson(graph)).digest('hex'));
    assert.deepEqual(
      payload.scenes.map((s) => [s.id, s.boa_offset]),
      [
        ['S2B_ROME_5', -1000],
        ['S2B_ROME_12', -1000],
      ],
    );
    assert.equal(payload.assets.length, 4);
    assert.equal(payload.authenticated_by.api_key_id, 'env:0');
    assert.equal(payload.cost, cost);
    assert.equal(cost, imageCost(payload.samples / 1e6));
    // Each asset's hash is that of exactly the byte ranges listed, as the catalog serves them.
    const files: Record<string, Uint8Array> = { 'rome-red.tif': catalog.rome.red, 'rome-nir.tif': catalog.rome.nir };
    for (const asset of payload.assets) {
      const file = files[decodeURIComponent(asset.href.split('/files/')[1]!)]!;
      const hash = createHash('sha256');
      for (const [offset, length] of asset.ranges) hash.update(file.subarray(offset, offset + length));
      assert.equal(hash.digest('hex'), asset.sha256, `${asset.scene} ${asset.band}`);
      assert.ok(asset.ranges.reduce((n, [, length]) => n + length, 0) < file.length / 4, 'a window, not the file');
    }
  });

  it('answers JSON: the cube’s dimensions and values, no-data as null', async () => {
    const res = await run(ndviGraph('JSON'));
    assert.equal(res.status, 200, res.text);
    const cube = res.body as DataCubeJson;
    assert.deepEqual(cube.order, ['y', 'x']);
    assert.equal(cube.dimensions.x?.reference_system, 'EPSG:32633');
    const rows = cube.data as number[][];
    assert.equal(rows.length, cube.dimensions.y?.values.length);
    assert.ok(rows.flat().every((v) => Math.abs(v - 0.6) < 1e-9));
  });

  it('computes band math by label as ndvi does (reduce_dimension over bands)', async () => {
    const element = (band: string) => ({
      process_id: 'array_element',
      arguments: { data: { from_parameter: 'data' }, label: band },
    });
    const res = await run({
      load: load(FIELD, ['B04', 'B08'], ['2026-02-05', '2026-02-06']),
      math: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'load' },
          dimension: 'bands',
          reducer: {
            process_graph: {
              nir: element('B08'),
              red: element('B04'),
              diff: { process_id: 'subtract', arguments: { x: { from_node: 'nir' }, y: { from_node: 'red' } } },
              sum: { process_id: 'add', arguments: { x: { from_node: 'nir' }, y: { from_node: 'red' } } },
              ratio: {
                process_id: 'divide',
                arguments: { x: { from_node: 'diff' }, y: { from_node: 'sum' } },
                result: true,
              },
            },
          },
        },
      },
      save: save('math', 'JSON'),
    });
    assert.equal(res.status, 200, res.text);
    const cube = res.body as DataCubeJson;
    assert.deepEqual(cube.order, ['t', 'y', 'x']);
    assert.deepEqual(cube.dimensions.t?.values, ['2026-02-05T10:00:00.000Z']);
    assert.ok((cube.data as number[][][]).flat(2).every((v) => Math.abs(v - 0.6) < 1e-9));
  });

  it('masks clouds with the scene classification (SCL 8 or 9) and averages a polygon over time', async () => {
    // A box across the cloud edge (1.5 km north of the centre): its north part is cloud (SCL 9).
    const edge = boxAround(1500, 300);
    const polygon = {
      type: 'Polygon',
      coordinates: [
        [
          [edge.west, edge.south],
          [edge.east, edge.south],
          [edge.east, edge.north],
          [edge.west, edge.north],
          [edge.west, edge.south],
        ],
      ],
    };
    const scl = (value: number, name: string) => ({
      process_id: 'eq',
      arguments: { x: { from_node: 'scl' }, y: value },
      ...(name === 'cloud' ? {} : {}),
    });
    const graph = (masked: boolean): Graph => ({
      load: load(edge, ['B04', 'B08', 'SCL']),
      clouds: {
        process_id: 'reduce_dimension',
        arguments: {
          data: { from_node: 'load' },
          dimension: 'bands',
          reducer: {
            process_graph: {
              scl: { process_id: 'array_element', arguments: { data: { from_parameter: 'data' }, label: 'SCL' } },
              medium: scl(8, 'medium'),
              high: scl(9, 'high'),
              cloud: {
                process_id: 'or',
                arguments: { x: { from_node: 'medium' }, y: { from_node: 'high' } },
                result: true,
              },
            },
          },
        },
      },
      masked: masked
        ? { process_id: 'mask', arguments: { data: { from_node: 'load' }, mask: { from_node: 'clouds' } } }
        : { process_id: 'filter_bands', arguments: { data: { from_node: 'load' }, bands: ['B04', 'B08', 'SCL'] } },
      ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'masked' } } },
      zones: {
        process_id: 'aggregate_spatial',
        arguments: {
          data: { from_node: 'ndvi' },
          geometries: polygon,
          reducer: {
            process_graph: {
              mean: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true },
            },
          },
        },
      },
      save: save('zones', 'JSON'),
    });
    const clean = await run(graph(true));
    assert.equal(clean.status, 200, clean.text);
    const cube = clean.body as DataCubeJson;
    assert.deepEqual(cube.order, ['geometry', 't']);
    assert.deepEqual(cube.dimensions.geometry?.values, [polygon]);
    for (const v of (cube.data as number[][]).flat())
      assert.ok(Math.abs(v - ndviOf(VEGETATION, -1000)) < 1e-9, String(v));
    // Unmasked, the cloud's pixels pull the mean down towards the cloud's NDVI.
    const cloudy = (await run(graph(false))).body as DataCubeJson;
    const mixed = (cloudy.data as number[][]).flat();
    for (const v of mixed) assert.ok(v < 0.55 && v > ndviOf(CLOUD, -1000), String(v));
  });

  it('loads a GeoJSON extent as its box with no-data outside the polygon', async () => {
    const { west, south, east, north } = FIELD;
    const triangle = {
      type: 'Polygon',
      coordinates: [
        [
          [west, south],
          [east, south],
          [west, north],
          [west, south],
        ],
      ],
    };
    const res = await run({
      load: load(triangle),
      ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
      mean: meanOver('ndvi', 't'),
      save: save('mean', 'JSON'),
    });
    assert.equal(res.status, 200, res.text);
    const values = ((res.body as DataCubeJson).data as (number | null)[][]).flat();
    const inside = values.filter((v) => v !== null);
    // About half the grid (which is the box drawn in UTM, a little larger than the triangle's box).
    assert.ok(
      inside.length / values.length > 0.4 && inside.length / values.length < 0.5,
      `${inside.length} of ${values.length}`,
    );
    assert.ok(inside.every((v) => Math.abs(v! - ndviOf(VEGETATION, -1000)) < 1e-9));
  });

  it('answers PNG: grey with an alpha channel for no-data', async () => {
    const { bytes } = await raw({
      load: load(),
      ndvi: { process_id: 'ndvi', arguments: { data: { from_node: 'load' } } },
      mean: meanOver('ndvi', 't'),
      scale: {
        process_id: 'apply',
        arguments: {
          data: { from_node: 'mean' },
          process: {
            process_graph: {
              s: {
                process_id: 'linear_scale_range',
                arguments: { x: { from_parameter: 'x' }, inputMin: -1, inputMax: 1, outputMin: 0, outputMax: 255 },
                result: true,
              },
            },
          },
        },
      },
      save: save('scale', 'PNG'),
    });
    const metadata = await sharp(bytes).metadata();
    assert.deepEqual([metadata.format, metadata.channels, metadata.hasAlpha], ['png', 2, true]);
    // Decoded as RGBA: grey in the three colours, then alpha.
    const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    assert.equal(info.channels, 4);
    assert.equal(data[0], Math.round(((0.6 + 1) / 2) * 255));
    assert.equal(data[3], 255);
  });

  it('refuses a request larger than the synchronous pixel budget with ProcessGraphComplexity, pointing to batch jobs', async () => {
    const searches = catalog.stac.searches.length;
    const res = await run(ndviGraph('GTiff', { west: 11, south: 41, east: 13, north: 43 }));
    assert.match(await failure(res, 'ProcessGraphComplexity'), /batch job/);
    assert.equal(catalog.stac.searches.length, searches, 'refused before the catalog was asked');
  });

  it('refuses a result above the request’s budget with PaymentRequired', async () => {
    await failure(await run(ndviGraph('GTiff'), { budget: 1e-9 }), 'PaymentRequired');
    await failure(await run(ndviGraph('GTiff'), { budget: -1 }), 'BudgetInvalid');
  });

  it('answers openEO’s errors: unsupported process, missing graph, no data, unknown collection, unsuitable format', async () => {
    const message = await failure(
      await run({
        load: load(),
        r: { process_id: 'resample_spatial', arguments: { data: { from_node: 'load' } }, result: true },
      }),
      'ProcessUnsupported',
    );
    assert.match(message, /resample_spatial/);
    await failure(
      await gw.request('POST', `${BASE}/result`, { body: { process: {} }, headers: AUTH }),
      'ProcessGraphMissing',
    );
    await failure(
      await run({ load: load(FIELD, ['B04'], ['2025-01-01', '2025-02-01']), save: save('load', 'JSON') }),
      'NoDataAvailable',
    );
    await failure(
      await run({
        load: { ...load(), arguments: { ...load().arguments, id: 'LANDSAT8' } },
        save: save('load', 'JSON'),
      }),
      'CollectionNotFound',
    );
    await failure(await run({ load: load(), save: save('load', 'GTiff') }), 'FormatUnsuitable');
    await failure(await run({ load: load(), save: save('load', 'netCDF') }), 'ProcessParameterInvalid');
    await failure(
      await run({
        load: load(),
        n: { process_id: 'ndvi', arguments: { data: { from_node: 'load' }, colour: 1 }, result: true },
      }),
      'ProcessParameterUnsupported',
    );
    await failure(await run(ndviGraph('GTiff'), {}, {}), 'AuthenticationRequired');
  });

  it('passes gate 3 with the extent’s cells: a delegation for another place is refused', async () => {
    const human = generateKeyPair();
    const agent = generateKeyPair();
    const [lat, lng] = cellToLatLng(ROME_CELL);
    assert.ok(lat > 41 && lng > 12);
    const certificate = (cells: string[]) =>
      Buffer.from(
        JSON.stringify(
          issueCertificate(human.secretKey, {
            agent_pk: agent.publicKey,
            h3_cells: cells,
            facets: ['image_process'],
            not_before: '2026-02-01T00:00:00Z',
            not_after: '2026-04-01T00:00:00Z',
            max_depth: 0,
          }),
        ),
      ).toString('base64');
    const paris = '831fb4fffffffff';
    const refused = await run(ndviGraph('JSON'), {}, { ...AUTH, 'x-svc-delegation-cert': certificate([paris]) });
    await failure(refused, 'PermissionsInsufficient');
    const allowed = await run(
      ndviGraph('JSON'),
      {},
      { ...AUTH, 'x-svc-delegation-cert': certificate(['831e80fffffffff']) },
    );
    assert.equal(allowed.status, 200, allowed.text);
  });
});

/** The Rome scene's origin modulo 10 m (its grid is aligned to 20 m): a result grid keeps that lattice. */
function romeOriginRemainder(): number {
  const { cx } = romeCellInUtm();
  const originX = Math.round(cx / 20) * 20 - 640 * 10;
  return ((originX % 10) + 10) % 10;
}
