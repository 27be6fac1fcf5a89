/**
 * band_math (docs/protocol.md §2.5): an expression of Sentinel-2 bands over a cell, through
 * `POST /v1/imagery/process` and as an `image_process` step, against the local STAC catalog and its in-memory
 * COGs. NDVI by expression is the NDVI operation bit for bit; bad expressions are 400s that say what is wrong.
 */
import assert from 'node:assert/strict';
import { verifyReceipt as clientVerifyReceipt } from '../../clients/typescript/src/receipt.js';
import { imageryPayloadSchema } from '../../activities/imagery/imagery-record.js';
import { readNdviPixels } from '../../activities/imagery/ndvi-pixels.js';
import { originSet } from '../../activities/safe-fetch.js';
import { BAND_MATH_BANDS, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH } from '../../core/band-math.js';
import { generateKeyPair } from '../../core/identity.js';
import { roundNdvi } from '../../core/ndvi.js';
import { imageCost } from '../../core/pricing.js';
import { verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { ROME_CELL, romeScene, writeTiledGeoTiff } from '../helpers/cog-fixture.js';
import { floodScenes } from '../helpers/flood-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, SHARES, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';

interface BandMath {
  method: string;
  expression: string;
  bands: string[];
  sceneId: string;
  datetime: string;
  h3Cell: string;
  cloudCover: number | null;
  mean: number | null;
  min: number | null;
  max: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
  validPixels: number;
  maskedPixels: number;
  droppedPixels: number;
  cellPixels: number;
  processingBaseline: string | null;
  offsetApplied: boolean;
  megapixels: number;
  cost: number;
}
interface Ndvi {
  sceneId: string;
  datetime: string;
  h3Cell: string;
  cloudCover: number | null;
  meanNdvi: number | null;
  minNdvi: number | null;
  maxNdvi: number | null;
  method: string;
  processingBaseline: string | null;
  offsetApplied: boolean;
  validPixels: number | null;
}
interface Processed<R> {
  operation: string;
  result: R;
  cost: number;
  record_id: string;
}
interface Asset {
  band: string;
  href: string;
  sha256: string;
  bytes_read: number;
  requests: number;
  ranges: [number, number][];
  window?: [number, number, number, number];
}

const NDVI = '(B08-B04)/(B08+B04)';
const BASELINE = { 's2:processing_baseline': '04.00' };

/**
 * Red and near-infrared with a different digital number in every pixel (a seeded generator), so sums, extremes
 * and rounding are exercised; on the Rome grid, with the Rome scene's SCL (cloud north of the cell, no data west).
 */
function variedScene() {
  const { grid } = romeScene();
  let seed = 0x2545f491;
  const next = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
  const red = new Uint16Array(grid.width * grid.height);
  const nir = new Uint16Array(grid.width * grid.height);
  for (let i = 0; i < red.length; i++) {
    // Some DN 0 (no data) and some below the offset (clamped to 0), as real scenes have.
    red[i] = next() < 0.01 ? 0 : Math.floor(500 + next() * 4000);
    nir[i] = next() < 0.01 ? 0 : Math.floor(800 + next() * 6000);
  }
  return { red: writeTiledGeoTiff(grid, red), nir: writeTiledGeoTiff(grid, nir) };
}

describe('band_math: band expressions over a cell (POST /v1/imagery/process, image_process)', function () {
  this.timeout(60_000);
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    catalog = await startImageryCatalog();
    const varied = variedScene();
    catalog.stac.files.set('varied-red.tif', varied.red);
    catalog.stac.files.set('varied-nir.tif', varied.nir);
    const { now } = floodScenes();
    catalog.stac.files.set('flood-green.tif', now.green);
    catalog.stac.files.set('flood-swir16.tif', now.swir16);
    catalog.stac.files.set('flood-scl.tif', now.scl);
  });
  after(() => catalog.stac.close());
  beforeEach(async () => {
    gw = await startGateway({ clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000 } });
  });
  afterEach(() => gw.close());

  const variedAssets = () => ({
    ...catalog.romeAssets(),
    red: catalog.stac.fileUrl('varied-red.tif'),
    nir: catalog.stac.fileUrl('varied-nir.tif'),
  });
  const floodAssets = () => ({
    green: catalog.stac.fileUrl('flood-green.tif'),
    swir16: catalog.stac.fileUrl('flood-swir16.tif'),
    scl: catalog.stac.fileUrl('flood-scl.tif'),
  });

  async function process<R>(body: Record<string, unknown>): Promise<Processed<R>> {
    const res = await gw.post('/v1/imagery/process', { h3_cell: ROME_CELL, ...body });
    assert.equal(res.status, 200, res.text);
    return res.body as Processed<R>;
  }
  async function payloadOf(recordId: string) {
    await gw.writer.flush();
    const record = await gw.proofs.getRecord(recordId);
    assert.ok(record, recordId);
    return { type: record.payload_type, payload: imageryPayloadSchema.parse(record.payload) };
  }
  const refusal = async (body: Record<string, unknown>) => {
    const res = await gw.post('/v1/imagery/process', { h3_cell: ROME_CELL, operation: 'band_math', ...body });
    assert.equal(res.status, 400, res.text);
    const answer = res.body as { error: string; detail: string };
    assert.equal(answer.error, 'invalid_request');
    return answer.detail;
  };

  const scenes = {
    'varied pixels, SCL': () => catalog.item('S2A_varied', 10, variedAssets(), BASELINE),
    'the Rome scene, SCL': () => catalog.item('S2A_rome', 10, catalog.romeAssets(), BASELINE),
    'the Rome scene, no SCL, no offset': () =>
      catalog.item('S2A_rome_nosc', 10, catalog.romeAssets({ scl: 'none' }), { 's2:processing_baseline': '03.01' }),
    'the Rome scene in EPSG:4326': () => catalog.item('S2A_wgs84', 10, catalog.wgs84Assets(), BASELINE),
    'the Rome scene under cloud': () =>
      catalog.item('S2A_cloudy', 10, catalog.romeAssets({ scl: 'cloudy' }), { ...BASELINE, ...SHARES }),
  };

  for (const [name, item] of Object.entries(scenes)) {
    it(`gives NDVI by expression bit for bit as the ndvi operation: ${name}`, async () => {
      const scene = item();
      catalog.stac.items = [scene];
      const ndvi = await process<Ndvi>({ operation: 'ndvi' });
      const math = await process<BandMath>({ operation: 'band_math', expression: NDVI });
      const n = ndvi.result;
      const m = math.result;
      assert.equal(math.operation, 'band_math');
      assert.equal(m.expression, NDVI);
      assert.deepEqual(m.bands, ['B04', 'B08']);
      // The fields both report, as JSON values.
      const shared = (r: Ndvi | BandMath) => ({
        sceneId: r.sceneId,
        datetime: r.datetime,
        h3Cell: r.h3Cell,
        cloudCover: r.cloudCover,
        processingBaseline: r.processingBaseline,
      });
      assert.deepEqual(shared(m), shared(n));

      // Pixel for pixel: the same reads (same byte ranges, same hashes) and the same raster accounting.
      const ndviRecord = await payloadOf(ndvi.record_id);
      const mathRecord = await payloadOf(math.record_id);
      assert.equal(mathRecord.type, 'imagery/band_math');
      const raster = (payload: Record<string, unknown>) => payload.raster;
      assert.deepEqual(raster(mathRecord.payload), raster(ndviRecord.payload));
      const reads = (assets: Asset[], names: Record<string, string>) =>
        assets.map((a) => ({
          band: names[a.band] ?? a.band,
          href: a.href,
          sha256: a.sha256,
          bytes_read: a.bytes_read,
          requests: a.requests,
          ranges: a.ranges,
        }));
      assert.deepEqual(
        reads(mathRecord.payload.assets as Asset[], { B04: 'red', B08: 'nir', SCL: 'scl' }),
        reads(ndviRecord.payload.assets as Asset[], {}),
      );
      assert.deepEqual(
        (mathRecord.payload as { expression?: string }).expression,
        NDVI,
        'the record names the expression',
      );
      assert.equal(mathRecord.payload.item_id, scene.id, 'and the scene');

      if (n.method === 'pixels') {
        assert.equal(m.validPixels, n.validPixels);
        assert.equal(m.offsetApplied, n.offsetApplied);
        // NDVI reports 4 decimals; band_math full precision, which its own rounding gives back exactly.
        assert.equal(roundNdvi(m.mean!), n.meanNdvi);
        assert.equal(roundNdvi(m.min!), n.minNdvi);
        assert.equal(roundNdvi(m.max!), n.maxNdvi);
        // And before rounding: the NDVI pixel reader's own statistics, to the last bit.
        const assets = scene.assets as Record<string, { href: string }>;
        const pixels = await readNdviPixels(
          ROME_CELL,
          { red: assets.red!.href, nir: assets.nir!.href, scl: assets.scl?.href ?? null },
          m.offsetApplied ? -1000 : 0,
          { timeoutMs: 20_000, userAgent: 'test', origins: originSet([catalog.stac.url]) },
        );
        assert.ok(Object.is(m.mean, pixels.stats.mean), `${m.mean} vs ${pixels.stats.mean}`);
        assert.ok(Object.is(m.min, pixels.stats.min));
        assert.ok(Object.is(m.max, pixels.stats.max));
        assert.equal(m.droppedPixels, pixels.stats.droppedPixels);
        assert.equal(m.maskedPixels, pixels.sclMaskedPixels);
        assert.ok(m.p10! <= m.p50! && m.p50! <= m.p90! && m.min! <= m.p10! && m.p90! <= m.max!);
      } else {
        // Every pixel masked: NDVI falls back to the metadata estimate; band_math has none and says so.
        assert.equal(m.validPixels, 0);
        assert.equal(m.mean, null);
        assert.equal(m.p50, null);
        assert.equal(m.maskedPixels, m.cellPixels);
      }
    });
  }

  it('brings 20 m bands to 10 m by nearest neighbour, masks by SCL and gives percentiles by nearest rank', async () => {
    catalog.stac.items = [catalog.item('S2B_flood', 25, floodAssets(), BASELINE)];
    const flood = await process<{ valid_pixels: number; masked_pixels: number; cell_pixels: number }>({
      operation: 'flood_classify',
    });
    // MNDWI by expression over the flood fixture: 2000 water pixels of 9600 valid (cloud masked).
    const {
      result: m,
      cost,
      record_id,
    } = await process<BandMath>({
      operation: 'band_math',
      expression: '(B03 - B11) / (B03 + B11)',
    });
    const water = (1900 - 1000 - (1200 - 1000)) / (1900 - 1000 + (1200 - 1000));
    const land = (1600 - 1000 - (2500 - 1000)) / (1600 - 1000 + (2500 - 1000));
    assert.equal(m.validPixels, 9600);
    assert.equal(m.validPixels, flood.result.valid_pixels);
    assert.equal(m.maskedPixels, flood.result.masked_pixels);
    assert.equal(m.cellPixels, flood.result.cell_pixels);
    assert.equal(m.min, land);
    assert.equal(m.max, water);
    assert.equal(m.p10, land);
    assert.equal(m.p50, land); // 7600 of 9600 are land
    assert.equal(m.p90, water);
    assert.ok(Math.abs(m.mean! - (2000 * water + 7600 * land) / 9600) < 1e-12);
    // Every window read is priced: green at 10 m, swir16 and scl at 20 m.
    const { payload } = await payloadOf(record_id);
    const assets = payload.assets as Asset[];
    assert.deepEqual(
      assets.map((a) => a.band),
      ['B03', 'B11', 'SCL'],
    );
    const area = (w: [number, number, number, number]) => ((w[2] - w[0]) * (w[3] - w[1])) / 1e6;
    assert.equal(
      m.megapixels,
      assets.reduce((sum, a) => sum + area(a.window!), 0),
    );
    assert.equal(cost, imageCost(m.megapixels));
    assert.equal(payload.cost, cost);

    // Only 20 m bands: the 10 m grid is theirs subdivided, so the cell's pixels are the same.
    const coarse = await process<BandMath>({ operation: 'band_math', expression: 'B11 / 10000' });
    assert.equal(coarse.result.cellPixels, flood.result.cell_pixels);
    assert.equal(coarse.result.validPixels, 9600);
    assert.equal(coarse.result.max, (2500 - 1000) / 10000);
  });

  it('gives no value for a division by zero, never Infinity', async () => {
    catalog.stac.items = [catalog.item('S2B_flood', 25, floodAssets(), BASELINE)];
    const { result } = await process<BandMath>({ operation: 'band_math', expression: 'B03 / (B11 - B11)' });
    assert.equal(result.validPixels, 0);
    assert.equal(result.droppedPixels, 9600);
    assert.equal(result.mean, null);
    assert.equal(result.max, null);
  });

  it('refuses a malformed, too long or too deep expression, naming the problem', async () => {
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets(), BASELINE)];
    const searches = catalog.stac.searches.length;
    assert.match(await refusal({ expression: '(B08-B04' }), /expression: expected \) at the end/);
    assert.match(await refusal({ expression: 'B08 ** B04' }), /unexpected \* at character 6/);
    assert.match(await refusal({ expression: 'B08 + 1; drop' }), /unexpected ";" at character 8/);
    assert.match(
      await refusal({ expression: 'B04+'.repeat(64) + 'B04' }),
      new RegExp(`259 characters; at most ${MAX_EXPRESSION_LENGTH}`),
    );
    const deep = '('.repeat(MAX_EXPRESSION_DEPTH + 1) + 'B04' + ')'.repeat(MAX_EXPRESSION_DEPTH + 1);
    assert.match(await refusal({ expression: deep }), new RegExp(`nested more than ${MAX_EXPRESSION_DEPTH} levels`));
    assert.match(await refusal({}), /a band_math expression is required/);
    assert.match(await refusal({ expression: 7 }), /a band_math expression is required/);
    assert.match(await refusal({ expression: '2 * 3' }), /names no band/);
    const other = await gw.post('/v1/imagery/process', { h3_cell: ROME_CELL, operation: 'ndvi', expression: NDVI });
    assert.equal(other.status, 400);
    assert.match((other.body as { detail: string }).detail, /expression applies to the band_math operation only/);
    assert.equal(catalog.stac.searches.length, searches, 'no refused expression reached the catalog');
  });

  it('refuses an unknown band, naming the bands', async () => {
    const detail = await refusal({ expression: '(B09 - B04) / 2' });
    assert.match(detail, /unknown band B09 at character 2/);
    assert.match(detail, new RegExp(`the bands are ${BAND_MATH_BANDS.join(', ')}`));
    assert.deepEqual(BAND_MATH_BANDS, ['B02', 'B03', 'B04', 'B05', 'B06', 'B07', 'B08', 'B8A', 'B11', 'B12']);
  });

  it('says which bands a scene lacks (422 imagery_unavailable)', async () => {
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets(), BASELINE)];
    const res = await gw.post('/v1/imagery/process', {
      h3_cell: ROME_CELL,
      operation: 'band_math',
      expression: '(B8A - B12) / (B8A + B12)',
    });
    assert.equal(res.status, 422, res.text);
    const body = res.body as { error: string; detail: string };
    assert.equal(body.error, 'imagery_unavailable');
    assert.match(body.detail, /lists no B8A, B12 asset/);
  });

  describe('as an image_process step', () => {
    const alice = generateKeyPair();
    const job = (step: Record<string, unknown>) =>
      signJob(alice, {
        h3_cell: ROME_CELL,
        steps: [
          {
            id: 'math',
            type: 'image_process',
            operation: 'band_math',
            context: { date_from: '2026-02-01', date_to: '2026-02-28' },
            ...step,
          },
        ],
        budget_credits: 0.1,
      });

    it('completes, is charged what it read, and its receipt verifies (core and the TypeScript client)', async () => {
      catalog.stac.items = [catalog.item('S2A_varied', 10, variedAssets(), BASELINE)];
      const signed = job({ expression: NDVI });
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text);
      const done = res.body as {
        job_id: string;
        status: string;
        epoch: number;
        steps: { status: string; cost: number; record_id: string; output: Processed<BandMath> }[];
        settlement: { total_credits: number };
      };
      assert.equal(done.status, 'complete', res.text);
      const step = done.steps[0]!;
      assert.equal(step.output.operation, 'band_math');
      assert.ok(step.cost > 0);
      assert.equal(step.cost, step.output.result.cost);
      assert.equal(step.cost, imageCost(step.output.result.megapixels));
      assert.ok(done.settlement.total_credits >= step.cost);
      const direct = await process<BandMath>({ operation: 'band_math', expression: NDVI });
      assert.ok(Object.is(step.output.result.mean, direct.result.mean));
      assert.equal(step.output.result.p50, direct.result.p50);

      await sealThrough(gw.proofs, gw.node, done.epoch);
      const receiptRes = await gw.get(`/v1/compute/${done.job_id}/receipt`);
      assert.equal(receiptRes.status, 200, receiptRes.text);
      const receipt = receiptRes.body as JobReceipt;
      const stepRecord = receipt.records.find((r) => r.role === 'step');
      assert.equal(stepRecord?.record?.payload_type, 'imagery/band_math');
      const verdict = verifyReceipt(receipt, { sealerPk: gw.node.publicKey });
      assert.deepEqual(
        verdict.checks.filter((c) => !c.ok),
        [],
      );
      assert.equal(verdict.ok, true);
      const client = clientVerifyReceipt(receipt, { sealerPk: gw.node.publicKey });
      assert.deepEqual(
        client.checks.filter((c) => !c.ok),
        [],
      );
    });

    it('refuses a bad expression at entry (400, nothing charged), and an expression on another operation', async () => {
      for (const [expression, pattern] of [
        ['(B08-B04', /step "math": expression: expected \) at the end/],
        ['B13 + B04', /unknown band B13 .*the bands are B02, B03/],
        ['('.repeat(MAX_EXPRESSION_DEPTH + 1) + 'B04' + ')'.repeat(MAX_EXPRESSION_DEPTH + 1), /nested more than/],
        ['B04+'.repeat(64) + 'B04', /at most 256/],
      ] as const) {
        const signed = job({ expression });
        const res = await gw.post('/v1/compute', signed.body, signed.headers);
        assert.equal(res.status, 400, res.text);
        assert.equal((res.body as { error: string }).error, 'invalid_request');
        assert.match((res.body as { detail: string }).detail, pattern);
      }
      const missing = job({});
      const none = await gw.post('/v1/compute', missing.body, missing.headers);
      assert.equal(none.status, 400, none.text);
      assert.match((none.body as { detail: string }).detail, /expression is required/);
      const ndvi = job({ operation: 'ndvi', expression: NDVI });
      const other = await gw.post('/v1/compute', ndvi.body, ndvi.headers);
      assert.equal(other.status, 400, other.text);
      assert.match((other.body as { detail: string }).detail, /expression applies to the band_math operation only/);
    });
  });
});
