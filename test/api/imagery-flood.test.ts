import assert from 'node:assert/strict';
import { imageryPayloadSchema } from '../../activities/imagery/imagery-record.js';
import { imageCost } from '../../core/pricing.js';
import { generateKeyPair } from '../../core/identity.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { startClassifyServer } from '../helpers/classify-server.js';
import { serveFloodScenes } from '../helpers/flood-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { signJob } from '../helpers/jobs.js';

interface Flood {
  method: string;
  scene_id: string;
  datetime: string;
  water_fraction: number | null;
  flood_fraction: number | null;
  valid_pixels: number;
  masked_pixels: number;
  dropped_pixels: number;
  cell_pixels: number;
  compared_pixels: number | null;
  reference_scene_id: string | null;
  reference_datetime: string | null;
  offset_applied: boolean;
  megapixels: number;
  cost: number;
  description: string;
}
interface Processed {
  operation: string;
  result: Flood;
  cost: number;
  record_id: string;
}

describe('flood_classify: MNDWI water and new water over a cell (POST /v1/imagery/process, image_process)', () => {
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let assets: ReturnType<typeof serveFloodScenes>;

  before(async () => {
    catalog = await startImageryCatalog();
    assets = serveFloodScenes(catalog.stac);
  });
  after(() => catalog.stac.close());
  beforeEach(async () => {
    gw = await startGateway({ clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000 } });
  });
  afterEach(() => gw.close());

  const BASELINE = { 's2:processing_baseline': '04.00' };
  const scenes = () => [
    catalog.item('S2B_flood_0225', 25, assets('now'), BASELINE),
    catalog.item('S2A_dry_0205', 5, assets('before'), BASELINE),
  ];

  async function process(body: Record<string, unknown>): Promise<Processed> {
    const res = await gw.post('/v1/imagery/process', { operation: 'flood_classify', h3_cell: ROME_CELL, ...body });
    assert.equal(res.status, 200, res.text);
    return res.body as Processed;
  }

  it('gives the water fraction over the valid pixels, clouds masked by SCL, B11 taken from its 20 m pixel', async () => {
    catalog.stac.items = scenes();
    const { operation, result, cost } = await process({ date_from: '2026-02-20', date_to: '2026-02-28' });
    assert.equal(operation, 'flood_classify');
    assert.equal(result.method, 'mndwi');
    assert.equal(result.scene_id, 'S2B_flood_0225');
    assert.equal(result.datetime, '2026-02-25T10:00:00.000Z');
    assert.equal(result.valid_pixels, 9600); // the 100×100 square less the 400 cloud pixels
    assert.equal(result.water_fraction, Math.round((2000 / 9600) * 1e6) / 1e6); // 0.208333
    assert.equal(result.dropped_pixels, 0);
    assert.equal(result.masked_pixels, result.cell_pixels - 9600, 'every other pixel of the cell is SCL-masked');
    assert.ok(result.cell_pixels > 200_000, String(result.cell_pixels));
    assert.equal(result.flood_fraction, null);
    assert.equal(result.reference_scene_id, null);
    assert.equal(result.offset_applied, true);
    assert.ok(result.megapixels > 0.5);
    assert.equal(cost, imageCost(result.megapixels));
    assert.equal(result.cost, cost);
  });

  it('gives the flood fraction against the reference window: new water among pixels valid in both scenes', async () => {
    catalog.stac.items = scenes();
    const { result, record_id } = await process({
      date_from: '2026-02-20',
      date_to: '2026-02-28',
      reference_from: '2026-02-01',
      reference_to: '2026-02-10',
    });
    assert.equal(result.reference_scene_id, 'S2A_dry_0205');
    assert.equal(result.reference_datetime, '2026-02-05T10:00:00.000Z');
    assert.equal(result.compared_pixels, 9200); // 10 000 less the cloud of each scene (disjoint)
    assert.equal(result.flood_fraction, Math.round((800 / 9200) * 1e6) / 1e6); // 0.086957
    assert.equal(result.water_fraction, Math.round((2000 / 9600) * 1e6) / 1e6);
    assert.match(result.description, /800 of 9200 pixels valid in both scenes/);

    await gw.writer.flush();
    const record = await gw.proofs.getRecord(record_id);
    assert.ok(record);
    assert.equal(record.payload_type, 'imagery/flood_classify');
    const payload = imageryPayloadSchema.parse(record.payload);
    assert.equal(payload.item_id, 'S2B_flood_0225');
    assert.equal((payload as { reference_item_id?: string }).reference_item_id, 'S2A_dry_0205');
    assert.deepEqual(
      payload.assets.map((a) => a.band),
      ['green', 'swir16', 'scl', 'reference_green', 'reference_swir16', 'reference_scl'],
    );
    assert.equal(payload.cost, result.cost);
  });

  it('refuses a half reference window, a reference on another operation, and a scene without the bands', async () => {
    catalog.stac.items = scenes();
    const half = await gw.post('/v1/imagery/process', {
      operation: 'flood_classify',
      h3_cell: ROME_CELL,
      reference_from: '2026-02-01',
    });
    assert.equal(half.status, 400);
    assert.equal((half.body as { error: string }).error, 'invalid_date');
    const ndvi = await gw.post('/v1/imagery/process', {
      operation: 'ndvi',
      h3_cell: ROME_CELL,
      reference_from: '2026-02-01',
      reference_to: '2026-02-02',
    });
    assert.equal(ndvi.status, 400);
    assert.equal((ndvi.body as { error: string }).error, 'invalid_request');

    catalog.stac.items = [catalog.item('S2A_rgb', 25, catalog.romeAssets(), BASELINE)];
    const bandless = await gw.post('/v1/imagery/process', { operation: 'flood_classify', h3_cell: ROME_CELL });
    assert.equal(bandless.status, 422, bandless.text);
    const body = bandless.body as { error: string; detail: string };
    assert.equal(body.error, 'imagery_unavailable');
    assert.match(body.detail, /swir16/);
  });

  it('classifies with the named model when a classify endpoint is configured, with the same fields', async () => {
    const classify = await startClassifyServer();
    const withModel = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000, classifyUrl: classify.url, classifyTimeoutMs: 5000 },
    });
    try {
      catalog.stac.items = scenes();
      const res = await withModel.post('/v1/imagery/process', {
        operation: 'flood_classify',
        h3_cell: ROME_CELL,
        model: 'prithvi-flood',
      });
      assert.equal(res.status, 200, res.text);
      const { result, cost } = res.body as { result: Flood & { model: string }; cost: number };
      assert.equal(result.method, 'model');
      assert.equal(result.model, 'prithvi-flood');
      assert.equal(result.flood_fraction, 0.12);
      assert.equal(result.water_fraction, 0.15); // flood_water 0.12 + permanent_water 0.03
      assert.equal(result.scene_id, 'S2B_33TTG_20260225_0_L2A');
      assert.equal(result.valid_pixels, null);
      assert.equal(cost, imageCost(result.megapixels));
      assert.deepEqual(classify.requests.at(-1)?.model, 'prithvi-flood');

      const unknown = await withModel.post('/v1/imagery/process', {
        operation: 'flood_classify',
        h3_cell: ROME_CELL,
        model: 'no-such-model',
      });
      assert.equal(unknown.status, 400);
      assert.equal((unknown.body as { error: string }).error, 'invalid_model');
      // Without a model the endpoint is not asked: MNDWI.
      const before = classify.requests.length;
      const plain = await withModel.post('/v1/imagery/process', { operation: 'flood_classify', h3_cell: ROME_CELL });
      assert.equal((plain.body as Processed).result.method, 'mndwi');
      assert.equal(classify.requests.length, before);
    } finally {
      await withModel.close();
      await classify.close();
    }
  });

  it('runs as an image_process step of a compute job, with the reference window from the step context', async () => {
    catalog.stac.items = scenes();
    const alice = generateKeyPair();
    const signed = signJob(alice, {
      h3_cell: ROME_CELL,
      steps: [
        {
          id: 'flood',
          type: 'image_process',
          operation: 'flood_classify',
          context: {
            date_from: '2026-02-20',
            date_to: '2026-02-28',
            reference_from: '2026-02-01',
            reference_to: '2026-02-10',
          },
        },
      ],
      budget_credits: 0.1,
    });
    const res = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as { status: string; steps: { status: string; cost: number; output: Processed }[] };
    assert.equal(job.status, 'complete', res.text);
    const step = job.steps[0]!;
    assert.equal(step.output.operation, 'flood_classify');
    assert.equal(step.output.result.flood_fraction, Math.round((800 / 9200) * 1e6) / 1e6);
    assert.equal(step.cost, step.output.result.cost);
  });
});
