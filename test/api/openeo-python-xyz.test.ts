/**
 * The official openEO Python client (`openeo` from PyPI, unmodified) publishing an XYZ map layer
 * (docs/protocol.md §16.10): `cube.tiled_viewing_service(type="XYZ")`, `list_services`, `describe_service`, a
 * tile fetched without credentials from the service's `url` with its proof record, the logs, `delete_service`,
 * and the refusals raised as OpenEoApiError.
 *
 * Runs when OPENEO_PYTHON names a Python whose environment has `openeo`; skipped otherwise.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import proj4 from 'proj4';
import { romeCellInUtm } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';

const here = dirname(fileURLToPath(import.meta.url));
const SCRIPT = join(here, '..', 'python', 'openeo_xyz.py');
const KEY = 'gf_python_xyz_key_0123456789';
const PYTHON = process.env.OPENEO_PYTHON;

describe('the official openEO Python client and XYZ services', function () {
  this.timeout(120_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async function () {
    if (!PYTHON) this.skip();
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

  it('publishes an NDVI layer with tiled_viewing_service, whose tiles are PNG proof records', async () => {
    const { cx, cy } = romeCellInUtm();
    const toWgs = proj4('+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs', '+proj=longlat +datum=WGS84 +no_defs');
    const [west, south] = toWgs.forward([cx - 200, cy - 1200]) as [number, number];
    const [east, north] = toWgs.forward([cx + 200, cy - 800]) as [number, number];
    // The zoom-14 tile holding the field's centre.
    const n = 2 ** 14;
    const lat = (((south + north) / 2) * Math.PI) / 180;
    const tile = [
      14,
      Math.floor((((west + east) / 2 + 180) / 360) * n),
      Math.floor(((1 - Math.log(Math.tan(lat) + 1 / Math.cos(lat)) / Math.PI) / 2) * n),
    ];
    const { stdout } = await promisify(execFile)(
      PYTHON!,
      [SCRIPT, gw.url, KEY, JSON.stringify({ west, south, east, north }), JSON.stringify(tile)],
      { timeout: 110_000, maxBuffer: 16 * 1024 * 1024 },
    );
    const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
      service_types: string[];
      listed: boolean;
      type: string;
      configuration: { colormap: string; range: number[] };
      tile: { status: number; content_type: string; png: boolean; record: string | null };
      proof: { payload_type: string; matches: boolean; service_id: boolean };
      costs: number;
      logs: number;
      errors: Record<string, unknown>;
    };
    assert.deepEqual(seen.service_types, ['XYZ']);
    assert.equal(seen.listed, true);
    assert.equal(seen.type, 'XYZ');
    assert.deepEqual(seen.configuration, { colormap: 'RdYlGn', range: [-1, 1] });
    assert.deepEqual(seen.tile, { status: 200, content_type: 'image/png', png: true, record: seen.tile.record });
    assert.match(seen.tile.record ?? '', /^openeo-tile:/);
    assert.deepEqual(seen.proof, { payload_type: 'imagery/openeo_tile', matches: true, service_id: true });
    assert.ok(seen.costs > 0);
    assert.equal(seen.logs, 1);
    assert.deepEqual(seen.errors, {
      two_bands: 'FormatUnsuitable',
      wms: 'ServiceUnsupported',
      deleted: ['ServiceNotFound', 404],
    });
  });
});
