/**
 * recomputeReceipt (docs/protocol.md §15.6): on the conformance vectors, inference steps are not recomputable and
 * show what their records bind, and a receipt that fails the offline checks fetches nothing. Against a gateway and
 * the local STAC/COG server, through the client's own API (submitJob, getReceipt): real NDVI, cloud mask, flood and
 * band math jobs recompute from their recorded byte ranges through the given fetch, bit for bit; one changed pixel
 * of a served COG differs, naming the field; the server down leaves the inputs unavailable; and for every receipt
 * the client gives the verdict `geofabric receipt verify --recompute` gives.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GeofabricClient, recomputeLine, recomputeReceipt, type StepRecomputation } from '../src/index.js';
import { receiptCommand } from '../../../bin/receipt-commands.js';
import { generateKeyPair } from '../../../core/identity.js';
import { ROME_CELL, pixelOffset } from '../../../test/helpers/cog-fixture.js';
import { serveFloodScenes } from '../../../test/helpers/flood-fixture.js';
import { startGateway } from '../../../test/helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../../../test/helpers/imagery-fixtures.js';
import { sealThrough } from '../../../test/helpers/proofs.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures/conformance');
const load = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as Record<string, unknown>;

describe('recomputeReceipt', () => {
  const refusing = (): typeof fetch => async () => {
    throw new Error('nothing may be fetched');
  };

  it('says an inference step is not recomputable and shows its model, provider and hashes', async () => {
    const { verdict, steps } = await recomputeReceipt(load('receipt-valid.json'), { fetch: refusing() });
    assert.equal(verdict.ok, true);
    assert.deepEqual(
      steps!.map((s) => [s.step_id, s.kind]),
      [
        ['ask', 'not_recomputable'],
        ['pick', 'not_recomputable'],
      ],
    );
    assert.deepEqual(Object.keys(steps![0]!.bound!).slice(0, 2), ['model', 'provider']);
    assert.match(
      recomputeLine(steps![0]!),
      /^ask \(inference\): not recomputable \(a model's answer is not a function of public inputs; bound: model \S+, provider \S+, worker_pk [0-9a-f]{12}…, prompt_sha256 [0-9a-f]{12}…, answer_sha256 [0-9a-f]{12}…/,
    );
  });

  it('fetches nothing and recomputes nothing when the receipt does not verify', async () => {
    const receipt = load('receipt-valid.json');
    (receipt.job as { status: string }).status = 'failed';
    let calls = 0;
    const { verdict, steps } = await recomputeReceipt(receipt, {
      fetch: async () => {
        calls++;
        throw new Error('unexpected');
      },
    });
    assert.equal(verdict.ok, false);
    assert.equal(steps, null);
    assert.equal(calls, 0);
  });
});

const imageStep = (id: string, operation: string, context: Record<string, unknown>, extra = {}) => ({
  id,
  type: 'image_process',
  operation,
  context,
  ...extra,
});

const JOBS = {
  ndvi: {
    h3_cell: ROME_CELL,
    steps: [
      imageStep('ndvi', 'ndvi', { h3_cell: ROME_CELL, date_from: '2026-02-08', date_to: '2026-02-12' }),
      imageStep('clouds', 'cloud_mask', { h3_cell: ROME_CELL, date_from: '2026-02-08', date_to: '2026-02-12' }),
    ],
    budget_credits: 0.1,
  },
  flood: {
    h3_cell: ROME_CELL,
    steps: [
      imageStep('flood', 'flood_classify', {
        date_from: '2026-02-20',
        date_to: '2026-02-28',
        reference_from: '2026-02-01',
        reference_to: '2026-02-06',
      }),
    ],
    budget_credits: 0.1,
  },
  math: {
    h3_cell: ROME_CELL,
    steps: [
      imageStep(
        'mndwi',
        'band_math',
        { date_from: '2026-02-20', date_to: '2026-02-28' },
        { expression: '(B03 - B11) / (B03 + B11)' },
      ),
    ],
    budget_credits: 0.1,
  },
};
type JobName = keyof typeof JOBS;

/** The imagery assets a receipt's step records list: every URL recomputing may fetch. */
const recordedHrefs = (receipt: Record<string, unknown>): Set<string> =>
  new Set(
    (receipt.records as { record?: { payload?: { assets?: { href: string }[] } } | null }[]).flatMap(
      (e) => e.record?.payload?.assets?.map((a) => a.href) ?? [],
    ),
  );

describe('recomputeReceipt on imagery jobs against the local STAC server (the same verdicts as the CLI)', function () {
  this.timeout(60_000);
  const now = TEST_NOW + 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'client-recompute-'));
  let catalog: ImageryCatalog;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let catalogOpen = true;
  const receipts = {} as Record<JobName, Record<string, unknown>>;
  const files = {} as Record<JobName, string>;
  /** Every request recomputing made, through the fetch the test gives it. */
  let requests: { url: string; range: string | null }[] = [];
  const countingFetch: typeof fetch = (input, init) => {
    requests.push({ url: String(input), range: new Headers(init?.headers).get('range') });
    return fetch(input, init);
  };
  const recompute = (name: JobName) =>
    recomputeReceipt(structuredClone(receipts[name]), {
      fetch: countingFetch,
      allowHttp: true,
      sealerPk: gw.node.publicKey,
    });
  /** What `geofabric receipt verify FILE --recompute --json` says per step (local servers allowed). */
  const cli = async (name: JobName): Promise<{ code: number; steps: StepRecomputation[] }> => {
    const out: string[] = [];
    const code = await receiptCommand(
      ['verify', files[name], '--recompute', '--allow-http', '--allow-private', '--json'],
      { log: (l) => out.push(l), error: (l) => out.push(l) },
    );
    return { code, steps: (JSON.parse(out.join('\n')) as { recompute: StepRecomputation[] }).recompute };
  };

  before(async () => {
    catalog = await startImageryCatalog();
    const floodAssets = serveFloodScenes(catalog.stac);
    const baseline = { 's2:processing_baseline': '04.00' };
    catalog.stac.items = [
      catalog.item('S2A_rome', 10, catalog.romeAssets()),
      catalog.item('S2B_flood_0225', 25, floodAssets('now'), baseline),
      catalog.item('S2A_dry_0205', 5, floodAssets('before'), baseline),
    ];
    gw = await startGateway({ clock: () => now, imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000 } });
    const client = new GeofabricClient({ baseUrl: gw.url, secretKey: generateKeyPair().secretKey });
    const ids = {} as Record<JobName, string>;
    let epoch = 0;
    for (const name of Object.keys(JOBS) as JobName[]) {
      const job = await client.submitJob(JOBS[name], { wait: true });
      assert.equal(job.status, 'complete', JSON.stringify(job));
      ids[name] = job.job_id as string;
      epoch = Math.max(epoch, job.epoch as number);
    }
    await sealThrough(gw.proofs, gw.node, epoch);
    for (const name of Object.keys(JOBS) as JobName[]) {
      receipts[name] = await client.getReceipt(ids[name], { waitSealedMs: 5000 });
      assert.equal(receipts[name].status, 'complete');
      files[name] = join(dir, `${name}.json`);
      writeFileSync(files[name], JSON.stringify(receipts[name]));
    }
  });
  after(async () => {
    await gw.close();
    if (catalogOpen) await catalog.stac.close();
  });
  beforeEach(() => (requests = []));

  it('recomputes a real NDVI job and a real flood job (and cloud mask, band math) bit for bit, fetching only through the given fetch', async () => {
    const expected: Record<JobName, string[]> = {
      ndvi: ['ndvi (image_process ndvi)', 'clouds (image_process cloud_mask)'],
      flood: ['flood (image_process flood_classify)'],
      math: ['mndwi (image_process band_math)'],
    };
    for (const name of Object.keys(JOBS) as JobName[]) {
      requests = [];
      const { verdict, steps } = await recompute(name);
      assert.equal(verdict.ok, true, verdict.failedCheck);
      assert.deepEqual(
        steps!.map((s) => [`${s.step_id} (${s.what})`, s.kind]),
        expected[name].map((head) => [head, 'recomputed']),
        steps!.map(recomputeLine).join('\n'),
      );
      for (const step of steps!) {
        assert.match(
          recomputeLine(step),
          /: recomputed \(every recorded byte range matches its SHA-256; output_hash [0-9a-f]{12}… equal\)$/,
        );
      }
      // Every byte came through our fetch, as ranged requests of the assets the records list.
      assert.ok(requests.length > 0, name);
      const hrefs = recordedHrefs(receipts[name]);
      for (const r of requests) {
        assert.ok(hrefs.has(r.url), r.url);
        assert.match(r.range ?? '', /^bytes=\d+-\d+$/);
      }
    }
  });

  it('gives the same verdict, step by step, as geofabric receipt verify --recompute', async () => {
    for (const name of Object.keys(JOBS) as JobName[]) {
      const { steps } = await recompute(name);
      const { code, steps: expected } = await cli(name);
      assert.equal(code, 0);
      assert.deepEqual(steps, expected, name);
    }
  });

  it('one changed pixel of the served COG: differs, naming the field, recorded vs recomputed (as the CLI says)', async () => {
    const original = catalog.stac.files.get('rome-red.tif')!;
    const changed = original.slice();
    // The cell's centre pixel (vegetation, red 2000): red 5000 = nir, NDVI 0 instead of 0.6.
    new DataView(changed.buffer).setUint16(pixelOffset(changed, 640, 640), 5000, true);
    catalog.stac.files.set('rome-red.tif', changed);
    try {
      const { steps } = await recompute('ndvi');
      const ndvi = steps![0]!;
      assert.equal(ndvi.kind, 'differs');
      assert.deepEqual(
        ndvi.differences!.map((d) => [d.field, d.recorded, typeof d.recomputed]),
        [
          ['result.minNdvi', 0.6, 'number'],
          ['assets.red.sha256', recordedRedHash(receipts.ndvi), 'string'],
        ],
      );
      assert.match(
        recomputeLine(ndvi),
        /^ndvi \(image_process ndvi\): differs \(result\.minNdvi: 0\.6 vs 0; assets\.red\.sha256: [0-9a-f]{12}… vs [0-9a-f]{12}…\)$/,
      );
      // The cloud mask reads only the classification: still recomputed.
      assert.equal(steps![1]!.kind, 'recomputed');
      const { code, steps: expected } = await cli('ndvi');
      assert.equal(code, 3);
      assert.deepEqual(steps, expected);
    } finally {
      catalog.stac.files.set('rome-red.tif', original);
    }
  });

  it('the STAC server down: inputs unavailable, saying why (as the CLI says); a fetch that still has the bytes recomputes', async () => {
    const served = new Map(catalog.stac.files);
    const fileUrl = catalog.stac.fileUrl('');
    await catalog.stac.close();
    catalogOpen = false;
    const { steps } = await recompute('flood');
    assert.equal(steps![0]!.kind, 'inputs_unavailable');
    assert.match(
      recomputeLine(steps![0]!),
      /^flood \(image_process flood_classify\): inputs unavailable \(GET http:\/\/127\.0\.0\.1:\d+\/files\/flood-now-green\.tif bytes=0-\d+: fetch failed\)$/,
    );
    const { code, steps: expected } = await cli('flood');
    assert.equal(code, 4);
    assert.deepEqual(
      steps!.map((s) => [s.step_id, s.what, s.kind]),
      expected.map((s) => [s.step_id, s.what, s.kind]),
    );
    // The client has no network of its own: a fetch that answers the ranges from elsewhere is all it needs.
    const offline: typeof fetch = async (input, init) => {
      const url = String(input);
      const bytes = served.get(decodeURIComponent(url.slice(fileUrl.length)));
      const range = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init?.headers).get('range') ?? '');
      if (!url.startsWith(fileUrl) || !bytes || !range) return new Response(null, { status: 404 });
      const [start, end] = [Number(range[1]), Math.min(Number(range[2]), bytes.length - 1)];
      return new Response(bytes.slice(start, end + 1), {
        status: 206,
        headers: { 'content-range': `bytes ${start}-${end}/${bytes.length}` },
      });
    };
    const again = await recomputeReceipt(structuredClone(receipts.flood), { fetch: offline, allowHttp: true });
    assert.equal(again.steps![0]!.kind, 'recomputed', recomputeLine(again.steps![0]!));
  });
});

const recordedRedHash = (receipt: Record<string, unknown>): string => {
  const entry = (receipt.records as { step_id: string; record: { payload: { assets: Record<string, string>[] } } }[])
    .filter((e) => e.step_id === 'ndvi' && e.record)
    .map((e) => e.record.payload.assets.find((a) => a.band === 'red'))[0];
  return entry!.sha256!;
};
