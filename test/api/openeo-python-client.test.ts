/**
 * The official openEO Python client (`openeo` from PyPI, unmodified) against the gateway and the local STAC/COG
 * servers (docs/protocol.md §16): connect through /.well-known/openeo, authenticate_basic, list and describe the
 * collection, NDVI mean over time as GTiff (read by rasterio, i.e. GDAL: CRS, transform, statistics) and JSON,
 * band math with cube.band(), aggregate_spatial over a polygon, a result's proof record checked as the guide
 * shows, a batch job (create_job().start_and_wait(), get_results().download_files()) whose asset's record names
 * the file downloaded, and errors raised as OpenEoApiError.
 *
 * Runs when OPENEO_PYTHON names a Python whose environment has `openeo` and `rasterio`
 * (`python3 -m venv /tmp/venv-openeo && /tmp/venv-openeo/bin/pip install openeo rasterio`); skipped otherwise.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import proj4 from 'proj4';
import { verifyOpenEoReceipt } from '../../core/openeo/receipt.js';
import { VEGETATION, ndviOf, romeCellInUtm } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';

const here = dirname(fileURLToPath(import.meta.url));
const SCRIPT = join(here, '..', 'python', 'openeo_client.py');
const KEY = 'gf_python_client_key_0123456789';
const PYTHON = process.env.OPENEO_PYTHON;

interface Seen {
  api_url: string;
  api_version: string;
  user_id: string;
  collections: string[];
  bands: string[];
  gtiff: {
    crs: string;
    transform: number[];
    size: [number, number];
    count: number;
    dtype: string;
    min: number;
    max: number;
    mean: number;
    valid: number;
    description: string;
  };
  json: { order: string[]; values: number[] };
  band_math: number[];
  aggregate_spatial: { order: string[]; data: number[][] };
  masked_series: number[][];
  proof: { payload_type: string; matches: boolean; costs: number };
  batch: {
    status: string;
    files: string[];
    type: string;
    matches: boolean;
    job_id: boolean;
    receipt: string[];
    tiff: { crs: string; mean: number; valid: number };
    listed: boolean;
    estimate: number;
    costs: number;
  };
  error: { code: string; status: number } | null;
  unsupported: { code: string; message: string } | null;
}

describe('the official openEO Python client', function () {
  this.timeout(120_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let out: string;

  before(async function () {
    if (!PYTHON) this.skip();
    catalog = await startImageryCatalog();
    catalog.stac.items = [5, 12].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    gw = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url },
      config: { apiKeys: [KEY] },
    });
    out = await mkdtemp(join(tmpdir(), 'openeo-client-'));
  });
  after(async () => {
    await gw?.close();
    await catalog?.stac.close();
    if (out) await rm(out, { recursive: true, force: true });
  });

  it('connects, authenticates, loads, computes NDVI and band math, aggregates, and reads openEO errors', async () => {
    const { cx, cy } = romeCellInUtm();
    const toWgs = proj4('+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs', '+proj=longlat +datum=WGS84 +no_defs');
    const corner = (dx: number, dy: number) => toWgs.forward([cx + dx, cy + dy]) as [number, number];
    const [west, south] = corner(-200, -1200);
    const [east, north] = corner(200, -800);
    const field = { west, south, east, north };
    const ring = [corner(-100, -1100), corner(100, -1100), corner(100, -900), corner(-100, -900), corner(-100, -1100)];
    const polygon = { type: 'Polygon', coordinates: [ring] };
    const { stdout } = await promisify(execFile)(
      PYTHON!,
      [SCRIPT, gw.url, KEY, JSON.stringify(field), JSON.stringify(polygon), out],
      { timeout: 110_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as Seen;
    const ndvi = ndviOf(VEGETATION, -1000);

    assert.equal(seen.api_url, `${gw.url}/openeo/1.2`, 'found through /.well-known/openeo');
    assert.equal(seen.api_version, '1.2.0');
    assert.equal(seen.user_id, 'env-0');
    assert.deepEqual(seen.collections, ['SENTINEL2_L2A']);
    assert.ok(seen.bands.includes('B04') && seen.bands.includes('B08') && seen.bands.includes('SCL'));

    // GDAL (through rasterio) reads the GeoTIFF: UTM 33N, 10 m pixels north up, the NDVI step's value everywhere.
    assert.equal(seen.gtiff.crs, 'EPSG:32633');
    const [a, b, c, d, e, f] = seen.gtiff.transform;
    assert.deepEqual([a, b, d, e], [10, 0, 0, -10]);
    assert.ok(Math.abs(c! - (cx - 200)) <= 30 && Math.abs(f! - (cy - 800)) <= 30, `${c} ${f}`);
    assert.equal(seen.gtiff.count, 1);
    assert.equal(seen.gtiff.dtype, 'float32');
    assert.equal(seen.gtiff.valid, seen.gtiff.size[0] * seen.gtiff.size[1]);
    for (const stat of [seen.gtiff.min, seen.gtiff.max, seen.gtiff.mean]) assert.ok(Math.abs(stat - ndvi) < 1e-6);

    assert.deepEqual(seen.json.order, ['y', 'x']);
    assert.deepEqual(seen.json.values, [ndvi]);
    assert.deepEqual(seen.band_math, [ndvi]);
    assert.deepEqual(seen.aggregate_spatial.order, ['geometry', 't']);
    assert.equal(seen.aggregate_spatial.data[0]?.length, 2, 'one mean per scene date');
    for (const v of seen.aggregate_spatial.data.flat()) assert.ok(Math.abs(v - ndvi) < 1e-9);

    assert.equal(seen.masked_series[0]?.length, 2);
    for (const v of seen.masked_series.flat()) assert.ok(Math.abs(v - ndvi) < 1e-9);
    assert.deepEqual(seen.proof, { payload_type: 'imagery/openeo_result', matches: true, costs: seen.proof.costs });
    assert.ok(seen.proof.costs > 0);
    // A batch job through create_job().start_and_wait() and get_results().download_files().
    assert.equal(seen.batch.status, 'finished');
    assert.deepEqual(seen.batch.files, ['job-results.json', 'result.tif']);
    assert.equal(seen.batch.type, 'Feature');
    assert.equal(seen.batch.matches, true, 'the proof record names the downloaded file’s SHA-256');
    assert.equal(seen.batch.job_id, true);
    assert.equal(seen.batch.receipt.length, 1);
    const receipt = await fetch(seen.batch.receipt[0]!, { headers: { authorization: `Bearer basic//${KEY}` } });
    const verdict = verifyOpenEoReceipt(await receipt.json(), { allowPending: true, sealerPk: gw.node.publicKey });
    assert.equal(verdict.ok, true, JSON.stringify(verdict.checks));
    assert.equal(seen.batch.tiff.crs, 'EPSG:32633');
    assert.ok(Math.abs(seen.batch.tiff.mean - ndvi) < 1e-6);
    assert.equal(seen.batch.tiff.valid, seen.gtiff.valid, 'the same pixels as the synchronous GeoTIFF');
    assert.equal(seen.batch.listed, true);
    // The estimate counts the box's pixels at the bands' resolution on the scenes found; the run, its UTM grid's.
    assert.ok(Math.abs(seen.batch.estimate - seen.batch.costs) <= 0.25 * seen.batch.costs, JSON.stringify(seen.batch));
    assert.deepEqual(seen.error, { code: 'CollectionNotFound', status: 404 });
    assert.equal(seen.unsupported?.code, 'ProcessUnsupported');
    assert.match(seen.unsupported?.message ?? '', /resample_spatial/);
  });
});
