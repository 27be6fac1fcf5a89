/**
 * `geofabric receipt verify --recompute` (docs/protocol.md §15.6): real NDVI, flood and mixed jobs on a gateway
 * against the local STAC/COG server, sealed, their receipts fetched over HTTP; each imagery step recomputes from
 * the recorded byte ranges bit for bit; one changed pixel of a served COG differs, naming the field; the server
 * down leaves the inputs unavailable; a tile whose upstream changed says so; inference is not recomputable and
 * shows what is bound; a receipt that fails the offline checks fetches nothing.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECOMPUTERS } from '../../activities/recompute/index.js';
import { recomputeLine, recomputeReceipt } from '../../clients/typescript/src/index.js';
import type { TileConfig } from '../../activities/tiles/index.js';
import { receiptCommand } from '../../bin/receipt-commands.js';
import { guardedIo, isPublicAddress } from '../../bin/receipt-recompute.js';
import { generateKeyPair } from '../../core/identity.js';
import type { JobReceipt } from '../../core/receipt.js';
import type { StepRecomputation } from '../../core/receipt-recompute.js';
import { STEP_TYPE_SPECS, STEP_TYPES } from '../../core/step-types/index.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { ROME_CELL, pixelOffset } from '../helpers/cog-fixture.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { serveFloodScenes } from '../helpers/flood-fixture.js';
import { runGeofabricCli } from '../helpers/geofabric-process.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';
import { flip } from '../helpers/receipt-tampers.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const LOCAL = ['--allow-http', '--allow-private'];

const ndviJob = {
  h3_cell: ROME_CELL,
  steps: [
    {
      id: 'ndvi',
      type: 'image_process',
      operation: 'ndvi',
      context: { h3_cell: ROME_CELL, date_from: '2026-02-08', date_to: '2026-02-12' },
    },
    {
      id: 'clouds',
      type: 'image_process',
      operation: 'cloud_mask',
      context: { h3_cell: ROME_CELL, date_from: '2026-02-08', date_to: '2026-02-12' },
    },
  ],
  budget_credits: 0.1,
};

const floodJob = {
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
        reference_to: '2026-02-06',
      },
    },
  ],
  budget_credits: 0.1,
};

const mathJob = {
  h3_cell: ROME_CELL,
  steps: [
    {
      id: 'mndwi',
      type: 'image_process',
      operation: 'band_math',
      expression: '(B03 - B11) / (B03 + B11)',
      context: { date_from: '2026-02-20', date_to: '2026-02-28' },
    },
  ],
  budget_credits: 0.1,
};

const mixedJob = {
  h3_cell: ROME_CELL,
  steps: [
    { id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'Three parks in Rome' }], max_tokens: 64 },
    { id: 'map', type: 'tile_render', depends_on: 'ask', zoom: 12, style: 'osm-bright' },
    { id: 'search', type: 'image_process', operation: 'scene_search', context: { date_from: '2026-02-08' } },
  ],
  budget_credits: 0.1,
};

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { log: (l: string) => out.push(l), error: (l: string) => err.push(l) } };
}

describe('geofabric receipt verify --recompute (docs/protocol.md §15.6)', function () {
  this.timeout(60_000);
  const now = TEST_NOW + 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'receipt-recompute-'));
  const alice = generateKeyPair();
  let catalog: ImageryCatalog;
  let xyz: XyzServer;
  let worker: FakeRuntime;
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let catalogOpen = true;
  const files: Record<'ndvi' | 'flood' | 'mixed' | 'math', string> = { ndvi: '', flood: '', mixed: '', math: '' };

  const verify = async (args: string[]) => {
    const c = capture();
    const code = await receiptCommand(['verify', ...args], c.io);
    return { code, out: c.out, err: c.err, steps: c.out.filter((l) => /^ {2}\S+ \(/.test(l)).map((l) => l.trim()) };
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
    xyz = await startXyzServer();
    worker = await startFakeRuntime(WORKER_MODEL, () => ({
      content: 'Sure: {"text":"Villa Borghese.","locations":[{"name":"Villa Borghese","address":"Roma"}]}',
      usage: { prompt_tokens: 20, completion_tokens: 10 },
    }));
    gw = await startGateway({
      clock: () => now,
      imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000 },
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        timeoutMs: 2000,
      },
      swarm: { workerRuntimeUrl: worker.url, workerModels: [WORKER_MODEL] },
    });
    const jobs = { ndvi: ndviJob, flood: floodJob, mixed: mixedJob, math: mathJob };
    const ids: Record<string, string> = {};
    let epoch = 0;
    for (const [name, body] of Object.entries(jobs)) {
      const signed = signJob(alice, body);
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text);
      const job = res.body as { job_id: string; epoch: number; status: string };
      assert.equal(job.status, 'complete', res.text);
      ids[name] = job.job_id;
      epoch = Math.max(epoch, job.epoch);
    }
    await sealThrough(gw.proofs, gw.node, epoch);
    for (const name of Object.keys(jobs) as (keyof typeof files)[]) {
      const res = await gw.get(`/v1/compute/${ids[name]}/receipt`);
      assert.equal(res.status, 200, res.text);
      assert.equal((res.body as JobReceipt).status, 'complete');
      files[name] = join(dir, `${name}.json`);
      writeFileSync(files[name], res.text);
    }
  });
  after(async () => {
    await gw.close();
    await worker.close();
    await xyz.close();
    if (catalogOpen) await catalog.stac.close();
  });

  it('recomputes a real NDVI job and a real flood job from the recorded byte ranges, bit for bit', async () => {
    const ndvi = await verify([files.ndvi, '--recompute', ...LOCAL]);
    assert.deepEqual(ndvi.steps.length, 2, ndvi.out.join('\n'));
    assert.match(ndvi.steps[0]!, /^ndvi \(image_process ndvi\): recomputed \(every recorded byte range matches/);
    assert.match(
      ndvi.steps[1]!,
      /^clouds \(image_process cloud_mask\): recomputed \(every recorded byte range matches/,
    );
    assert.equal(ndvi.code, 0, ndvi.out.join('\n'));
    const flood = await verify([files.flood, '--recompute', ...LOCAL]);
    assert.match(flood.steps[0]!, /^flood \(image_process flood_classify\): recomputed \(/, flood.out.join('\n'));
    assert.equal(flood.code, 0);
  });

  it('recomputes a band_math step (20 m band by nearest neighbour, SCL mask) from its recorded byte ranges', async () => {
    const math = await verify([files.math, '--recompute', ...LOCAL]);
    assert.equal(math.steps.length, 1, math.out.join('\n'));
    assert.match(math.steps[0]!, /^mndwi \(image_process band_math\): recomputed \(every recorded byte range matches/);
    assert.equal(math.code, 0);
  });

  it('runs through the real CLI, printing the offline checks then one line per step', async () => {
    const run = await runGeofabricCli(['receipt', 'verify', files.ndvi, '--recompute', ...LOCAL], { env: process.env });
    assert.equal(run.code, 0, run.stderr);
    const lines = run.stdout.trim().split('\n');
    assert.equal(lines.at(-3), 'valid');
    assert.match(
      lines.at(-2)!,
      /^ {2}ndvi \(image_process ndvi\): recomputed \(every recorded byte range matches its SHA-256; output_hash [0-9a-f]{12}… equal\)$/,
    );
    assert.match(lines.at(-1)!, /^ {2}clouds \(image_process cloud_mask\): recomputed \(/);
    const usage = await runGeofabricCli(['receipt', 'verify', files.ndvi, '--allow-http'], { env: process.env });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--allow-http, --allow-private and --tile-url go with --recompute/);
  });

  it('fetches nothing without --allow-http and --allow-private: https and public addresses only by default', async () => {
    const before = catalog.stac.fileStats('rome-red.tif').rangeResponses;
    const plain = await verify([files.ndvi, '--recompute']);
    assert.match(
      plain.steps[0]!,
      /inputs unavailable \(http:\/\/127\.0\.0\.1:\d+: only https URLs are fetched \(--allow-http\)\)/,
    );
    assert.equal(plain.code, 4);
    const http = await verify([files.ndvi, '--recompute', '--allow-http']);
    assert.match(http.steps[0]!, /inputs unavailable \(127\.0\.0\.1:\d+ is a non-public address \(--allow-private\)\)/);
    assert.equal(catalog.stac.fileStats('rome-red.tif').rangeResponses, before);
    assert.equal(isPublicAddress('169.254.169.254'), false);
    assert.equal(isPublicAddress('::ffff:10.0.0.1'), false);
    assert.equal(isPublicAddress('fd00::1'), false);
    assert.equal(isPublicAddress('93.184.216.34'), true);
  });

  it('bounds what the CLI fetches: a name resolving to loopback, too many bytes, a redirect, a stalled answer', async () => {
    const server = createServer((req, res) => {
      if (req.url === '/big')
        return void res.writeHead(206, { 'content-range': 'bytes 0-9/100' }).end(Buffer.alloc(50));
      if (req.url === '/stall') return void res.writeHead(206, { 'content-range': 'bytes 0-9/100' }).write('ab');
      if (req.url === '/moved') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      res.writeHead(206, { 'content-range': 'bytes 0-9/100' }).end(Buffer.alloc(10));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const named = base.replace('127.0.0.1', 'localhost');
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => 'fetched',
        (error: Error) => `${error.name}: ${error.message.replace(base, 'BASE')}`,
      );
    try {
      const strict = guardedIo({ allowHttp: true, allowPrivate: false, tileTemplates: {} });
      assert.equal(
        await refusal(strict.fetchRange(`${named}/ok`, 0, 10)),
        'InputUnavailable: localhost resolves to the non-public address 127.0.0.1 (--allow-private)',
      );
      const local = guardedIo({ allowHttp: true, allowPrivate: true, tileTemplates: {}, timeoutMs: 500 });
      assert.equal((await local.fetchRange(`${named}/ok`, 0, 10)).length, 10);
      assert.equal(
        await refusal(local.fetchRange(`${base}/big`, 0, 10)),
        'InputUnavailable: GET BASE/big bytes=0-9: more than 10 bytes',
      );
      assert.equal(
        await refusal(local.fetchRange(`${base}/moved`, 0, 10)),
        'InputUnavailable: GET BASE/moved bytes=0-9: answered HTTP 302 (redirects are not followed)',
      );
      assert.equal(
        await refusal(local.fetchRange(`${base}/stall`, 0, 10)),
        'InputUnavailable: GET BASE/stall bytes=0-9: no answer within 0.5 s',
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('recomputes nothing, and fetches nothing, when the offline verification fails', async () => {
    const receipt = JSON.parse(readFileSync(files.ndvi, 'utf8')) as JobReceipt;
    const forged = join(dir, 'forged.json');
    const result = receipt.job!.steps[0]!.output.result as Record<string, unknown>;
    result.meanNdvi = flip(String(result.meanNdvi));
    writeFileSync(forged, JSON.stringify(receipt));
    const before = catalog.stac.fileStats('rome-red.tif').rangeResponses;
    const run = await verify([forged, '--recompute', ...LOCAL]);
    assert.equal(run.code, 1);
    assert.ok(run.out.includes('recompute: not run (the offline verification failed)'), run.out.join('\n'));
    assert.equal(catalog.stac.fileStats('rome-red.tif').rangeResponses, before);
  });

  it('a pending receipt (--allow-pending) whose step record is not synced yet: inputs unavailable, nothing fetched', async () => {
    const receipt = JSON.parse(readFileSync(files.ndvi, 'utf8')) as JobReceipt;
    const entry = receipt.records.find((r) => r.step_id === 'ndvi')!;
    Object.assign(entry, { record: null, seal: null, proof: null, anchor: null, seal_proof: null });
    Object.assign(receipt, { status: 'pending', pending: [`record ${entry.record_id} not synced yet`] });
    const pending = join(dir, 'pending.json');
    writeFileSync(pending, JSON.stringify(receipt));
    const before = catalog.stac.fileStats('rome-red.tif').rangeResponses;
    const run = await verify([pending, '--allow-pending', '--recompute', ...LOCAL]);
    assert.equal(
      run.steps[0],
      `ndvi (image_process): inputs unavailable (its record ${entry.record_id} is not in the receipt yet)`,
    );
    assert.equal(run.code, 4);
    assert.equal(catalog.stac.fileStats('rome-red.tif').rangeResponses, before);
    const client = await recomputeReceipt(receipt, { fetch, allowHttp: true, allowPending: true });
    assert.equal(client.steps![0]!.kind, 'inputs_unavailable');
  });

  it('a tile step whose upstream changed says so; inference shows what is bound; a catalog search is not recomputable', async () => {
    const template = xyz.template('png');
    const same = await verify([files.mixed, '--recompute', ...LOCAL, '--tile-url', template]);
    assert.match(
      same.steps[0]!,
      /^ask \(inference\): not recomputable \(a model's answer is not a function of public inputs; bound: model lfm2\.5-1\.2b-instruct, provider \S+, worker_pk [0-9a-f]{12}…, prompt_sha256 [0-9a-f]{12}…, answer_sha256 [0-9a-f]{12}…/,
    );
    assert.equal(same.steps[1]!, 'map (tile_render): recomputed (the upstream tile matches tile_sha256)');
    assert.match(same.steps[2]!, /^search \(image_process scene_search\): not recomputable \(a catalog search/);
    assert.equal(same.code, 0, same.out.join('\n'));
    const none = await verify([files.mixed, '--recompute', ...LOCAL]);
    assert.match(
      none.steps[1]!,
      /^map \(tile_render\): inputs unavailable \(the record names the tile upstream by host only/,
    );
    assert.equal(none.code, 4);
    xyz.change();
    const changed = await verify([files.mixed, '--recompute', ...LOCAL, '--tile-url', template]);
    assert.match(
      changed.steps[1]!,
      /^map \(tile_render\): upstream changed \(tile_sha256: recorded [0-9a-f]{12}…, 127\.0\.0\.1:\d+ now serves [0-9a-f]{12}…\)/,
    );
    assert.equal(changed.code, 4);
  });

  it('the TypeScript client (recomputeReceipt through a given fetch) recomputes the imagery steps too and agrees on every step', async () => {
    const read = (name: keyof typeof files) => JSON.parse(readFileSync(files[name], 'utf8')) as JobReceipt;
    const options = { fetch, allowHttp: true, tileTemplates: { '*': xyz.template('png') } };
    for (const name of ['ndvi', 'flood', 'math'] as const) {
      const { verdict, steps } = await recomputeReceipt(read(name), options);
      assert.equal(verdict.ok, true);
      const cli = JSON.parse((await verify([files[name], '--recompute', ...LOCAL, '--json'])).out.join('\n')) as {
        recompute: StepRecomputation[];
      };
      assert.deepEqual(steps!.map(recomputeLine), cli.recompute.map(recomputeLine));
      assert.ok(steps!.every((s) => s.kind === 'recomputed'));
    }
    const mixed = await recomputeReceipt(read('mixed'), options);
    const cli = JSON.parse(
      (await verify([files.mixed, '--recompute', ...LOCAL, '--tile-url', xyz.template('png'), '--json'])).out.join(
        '\n',
      ),
    ) as { recompute: StepRecomputation[] };
    // The tile changed in the test before: both say upstream changed; inference binds the same fields.
    assert.deepEqual(
      mixed.steps!.map((s) => [s.step_id, s.kind, s.bound ?? null]),
      cli.recompute.map((s) => [s.step_id, s.kind, s.bound ?? null]),
    );
    const forged = read('ndvi');
    (forged.job!.steps[0]!.output.result as Record<string, unknown>).meanNdvi = 0.1;
    let fetched = 0;
    const refused = await recomputeReceipt(forged, {
      fetch: (...args: Parameters<typeof fetch>) => (fetched++, fetch(...args)),
      allowHttp: true,
    });
    assert.equal(refused.verdict.failedCheck, 'step_outputs');
    assert.equal(refused.steps, null);
    assert.equal(fetched, 0);
  });

  it('one changed pixel of the served COG: differs, naming the field, recorded vs recomputed', async () => {
    const original = catalog.stac.files.get('rome-red.tif')!;
    const changed = original.slice();
    // The cell's centre pixel (vegetation, red 2000): red 5000 = nir, NDVI 0 instead of 0.6.
    const at = pixelOffset(changed, 640, 640);
    new DataView(changed.buffer).setUint16(at, 5000, true);
    catalog.stac.files.set('rome-red.tif', changed);
    try {
      const run = await verify([files.ndvi, '--recompute', ...LOCAL]);
      assert.match(
        run.steps[0]!,
        /^ndvi \(image_process ndvi\): differs \(result\.minNdvi: 0\.6 vs 0; assets\.red\.sha256: [0-9a-f]{12}… vs [0-9a-f]{12}…\)$/,
        run.out.join('\n'),
      );
      assert.equal(run.code, 3);
      const json = await verify([files.ndvi, '--recompute', ...LOCAL, '--json']);
      const parsed = JSON.parse(json.out.join('\n')) as {
        recompute: { kind: string; differences: { field: string }[] }[];
      };
      assert.equal(parsed.recompute[0]!.kind, 'differs');
      assert.deepEqual(
        parsed.recompute[0]!.differences.map((d) => d.field),
        ['result.minNdvi', 'assets.red.sha256'],
      );
      const client = await recomputeReceipt(JSON.parse(readFileSync(files.ndvi, 'utf8')), { fetch, allowHttp: true });
      assert.equal(client.steps![0]!.kind, 'differs');
      assert.deepEqual(client.steps![0]!.differences, parsed.recompute[0]!.differences);
    } finally {
      catalog.stac.files.set('rome-red.tif', original);
    }
  });

  it('the STAC server down: inputs unavailable, saying why', async () => {
    await catalog.stac.close();
    catalogOpen = false;
    const run = await verify([files.flood, '--recompute', ...LOCAL]);
    assert.match(
      run.steps[0]!,
      /^flood \(image_process flood_classify\): inputs unavailable \(GET http:\/\/127\.0\.0\.1:\d+\/files\/flood-now-green\.tif bytes=0-\d+: connection refused\)$/,
    );
    assert.equal(run.code, 4);
    const client = await recomputeReceipt(JSON.parse(readFileSync(files.flood, 'utf8')), { fetch, allowHttp: true });
    assert.equal(client.steps![0]!.kind, 'inputs_unavailable');
    assert.match(
      client.steps![0]!.detail,
      /^GET http:\/\/127\.0\.0\.1:\d+\/files\/flood-now-green\.tif bytes=0-\d+: fetch failed$/,
    );
  });

  it('has a recomputation entry for every payload type of every step type in the registry, and no other', () => {
    for (const type of STEP_TYPES) {
      const payloadTypes = STEP_TYPE_SPECS[type].records.payloadTypes;
      const expected = payloadTypes.length === 0 ? ['none'] : [...payloadTypes];
      assert.deepEqual(Object.keys(RECOMPUTERS[type]).sort(), expected.sort(), type);
    }
  });
});
