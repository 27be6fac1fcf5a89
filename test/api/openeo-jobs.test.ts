/**
 * openEO batch jobs over HTTP (docs/protocol.md §16.11–16.12) against the local STAC catalog and its Rome COGs:
 * create, list, describe, update, start, cancel and delete; the results as a STAC Item whose asset is a proof
 * record; logs and estimates; answers validated against the standard's openapi.yaml; only the owner's key sees a
 * job; results that survive a gateway restart; signed job bodies; and the job's receipt, verified offline.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromArrayBuffer } from 'geotiff';
import proj4 from 'proj4';
import { setTimeout as sleep } from 'node:timers/promises';
import { createOpenEoBatchActivities } from '../../activities/imagery/openeo-batch.js';
import type { OpenEoBatchRunner, OpenEoBatchStart } from '../../api/openeo/batch-runner.js';
import { receiptCommand } from '../../bin/receipt-commands.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { epochAt } from '../../core/epoch.js';
import { verifyOpenEoReceipt, type OpenEoReceipt } from '../../core/openeo/receipt.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteOpenEoJobStore } from '../../store/sqlite/openeo-job-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { VEGETATION, ndviOf, romeCellInUtm } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { OPENEO_ERRORS, openEoErrorSchemaErrors, openEoSchemaErrors } from '../helpers/openeo-api.js';
import { sealThrough } from '../helpers/proofs.js';

const BASE = '/openeo/1.2';
const KEY = 'gf_openeo_jobs_key_0123456789';
const OTHER = 'gf_openeo_jobs_other_0123456789';
const AUTH = { authorization: `Bearer basic//${KEY}` };
const STRANGER = { authorization: `Bearer basic//${OTHER}` };

function field() {
  const { cx, cy } = romeCellInUtm();
  const toWgs = proj4('+proj=utm +zone=33 +datum=WGS84 +units=m +no_defs', '+proj=longlat +datum=WGS84 +no_defs');
  const [west, south] = toWgs.forward([cx - 200, cy - 1200]) as [number, number];
  const [east, north] = toWgs.forward([cx + 200, cy - 800]) as [number, number];
  return { west, south, east, north };
}

const ndviGraph = (format = 'GTiff') => ({
  load: {
    process_id: 'load_collection',
    arguments: {
      id: 'SENTINEL2_L2A',
      spatial_extent: field(),
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
        process_graph: { mean: { process_id: 'mean', arguments: { data: { from_parameter: 'data' } }, result: true } },
      },
    },
  },
  save: { process_id: 'save_result', arguments: { data: { from_node: 'mean' }, format }, result: true },
});

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/** A runner that only records what it was asked: jobs stay queued until a test runs them. */
function heldRunner() {
  const started: OpenEoBatchStart[] = [];
  const canceled: string[] = [];
  const runner: OpenEoBatchRunner = {
    mode: 'embedded',
    start: async (job) => void started.push(job),
    cancel: async (job) => void canceled.push(job.job_id),
    close: async () => undefined,
  };
  return { runner, started, canceled };
}

async function failure(res: { status: number; body: unknown }, code: string, status?: number): Promise<string> {
  assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
  const body = res.body as { code: string; message: string };
  assert.equal(body.code, code, body.message);
  assert.equal(res.status, status ?? OPENEO_ERRORS[code]?.http ?? 400);
  return body.message;
}

async function create(gw: Gateway, body: Record<string, unknown>, headers: Record<string, string> = AUTH) {
  const res = await gw.request('POST', `${BASE}/jobs`, { body, headers });
  assert.equal(res.status, 201, res.text);
  const id = res.headers.get('openeo-identifier')!;
  assert.match(id, /^[\w\-.~]+$/);
  assert.equal(res.headers.get('location'), `${gw.url}${BASE}/jobs/${id}`);
  return id;
}

async function waitFor(gw: Gateway, id: string, statuses: string[]) {
  for (let i = 0; i < 400; i++) {
    const res = await gw.get(`${BASE}/jobs/${id}`, AUTH);
    const status = (res.body as { status: string }).status;
    if (statuses.includes(status)) return res.body as Record<string, unknown>;
    await sleep(25);
  }
  const logs = await gw.get(`${BASE}/jobs/${id}/logs`, AUTH);
  throw new Error(`job ${id} did not reach ${statuses.join('/')}: ${logs.text}`);
}

describe('openEO batch jobs', function () {
  this.timeout(60_000);
  let catalog: ImageryCatalog;
  let gw: Gateway;
  let dir: string;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [5, 12].map((day) => catalog.item(`S2B_ROME_${day}`, day, catalog.romeAssets()));
    gw = await startGateway({
      clock: () => TEST_NOW,
      imagery: { stacUrl: catalog.stac.url },
      config: { apiKeys: [KEY, OTHER] },
    });
    dir = await mkdtemp(join(tmpdir(), 'openeo-jobs-'));
  });
  after(async () => {
    await gw?.close();
    await catalog?.stac.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates, lists, runs and answers a job’s results as a STAC Item whose asset is a proof record', async () => {
    const id = await create(gw, { title: 'NDVI', process: { process_graph: ndviGraph() } });

    const listed = await gw.get(`${BASE}/jobs`, AUTH);
    assert.deepEqual(openEoSchemaErrors('/jobs', 'get', 200, listed.body), []);
    const created = (listed.body as { jobs: { id: string; status: string; title: string }[] }).jobs.find(
      (j) => j.id === id,
    );
    assert.equal(created?.status, 'created');
    assert.equal(created?.title, 'NDVI');
    const described = await gw.get(`${BASE}/jobs/${id}`, AUTH);
    assert.deepEqual(openEoSchemaErrors('/jobs/{job_id}', 'get', 200, described.body), []);

    await failure(await gw.get(`${BASE}/jobs/${id}/results`, AUTH), 'JobNotFinished');
    const estimate = await gw.get(`${BASE}/jobs/${id}/estimate`, AUTH);
    assert.equal(estimate.status, 200, estimate.text);
    assert.deepEqual(openEoSchemaErrors('/jobs/{job_id}/estimate', 'get', 200, estimate.body), []);
    assert.ok((estimate.body as { costs: number }).costs > 0);

    const started = await gw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH });
    assert.equal(started.status, 202, started.text);
    const finished = await waitFor(gw, id, ['finished', 'error']);
    assert.equal(finished.status, 'finished', JSON.stringify((await gw.get(`${BASE}/jobs/${id}/logs`, AUTH)).body));
    assert.ok((finished.costs as number) > 0);

    const results = await gw.get(`${BASE}/jobs/${id}/results`, AUTH);
    assert.equal(results.status, 200, results.text);
    assert.deepEqual(openEoSchemaErrors('/jobs/{job_id}/results', 'get', 200, results.body), []);
    assert.equal(results.headers.get('openeo-costs'), String(finished.costs));
    const item = results.body as {
      type: string;
      bbox: number[];
      assets: Record<string, { href: string; type: string; roles: string[]; 'geofabric:record_id': string }>;
      links: { rel: string; href: string }[];
    };
    assert.equal(item.type, 'Feature');
    assert.equal(item.bbox.length, 4);
    const asset = item.assets['result.tif']!;
    assert.match(asset.type, /^image\/tiff/);
    assert.deepEqual(asset.roles, ['data']);
    const download = await fetch(asset.href, { headers: AUTH });
    assert.equal(download.status, 200);
    const bytes = Buffer.from(await download.arrayBuffer());
    const tiff = await (await fromArrayBuffer(new Uint8Array(bytes).buffer)).getImage();
    const [values] = (await tiff.readRasters()) as unknown as Float32Array[];
    for (const v of values!) assert.ok(Math.abs(v - ndviOf(VEGETATION, -1000)) < 1e-6, 'the NDVI step’s value');

    // The asset's proof record names the file's SHA-256, the job, the graph, the scenes and every byte range read.
    const proofLink = item.links.find((l) => l.rel === 'proof')!;
    assert.equal(proofLink.href, `${gw.url}/store/proof/${encodeURIComponent(asset['geofabric:record_id'])}`);
    const proof = (await gw.get(new URL(proofLink.href).pathname)).body as {
      record: { payload_type: string; payload: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
    };
    assert.equal(proof.record.payload_type, 'imagery/openeo_result');
    const payload = proof.record.payload;
    assert.equal(payload.result.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(payload.job_id, id);
    assert.equal(payload.cost, finished.costs);
    assert.equal(payload.scenes.length, 2);
    assert.ok(payload.assets.every((a: { ranges: unknown[]; sha256: string }) => a.ranges.length > 0 && a.sha256));
    assert.deepEqual(payload.authenticated_by, { api_key_id: 'env:0' });
    assert.ok(item.links.some((l) => l.rel === 'receipt' && l.href === `${gw.url}${BASE}/jobs/${id}/receipt`));

    const logs = await gw.get(`${BASE}/jobs/${id}/logs`, AUTH);
    assert.deepEqual(openEoSchemaErrors('/jobs/{job_id}/logs', 'get', 200, logs.body), []);
    assert.ok(
      (logs.body as { logs: { message: string }[] }).logs.some((l) => l.message.includes(asset['geofabric:record_id'])),
    );
  });

  it('shows a job only to the key that created it: another key gets JobNotFound', async () => {
    const id = await create(gw, { process: { process_graph: ndviGraph() } });
    for (const [method, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['GET', '/results'],
      ['POST', '/results'],
      ['DELETE', '/results'],
      ['GET', '/logs'],
      ['GET', '/estimate'],
      ['GET', '/receipt'],
    ] as const) {
      const res = await gw.request(method, `${BASE}/jobs/${id}${path}`, {
        headers: STRANGER,
        ...(method === 'PATCH' ? { body: { title: 'mine' } } : {}),
      });
      await failure(res, 'JobNotFound', 404);
    }
    const theirs = await gw.get(`${BASE}/jobs`, STRANGER);
    assert.deepEqual((theirs.body as { jobs: unknown[] }).jobs, []);
    await failure(await gw.get(`${BASE}/jobs/${id}`), 'AuthenticationRequired');
    assert.equal((await gw.get(`${BASE}/jobs/${id}`, AUTH)).status, 200, 'the owner still sees it');
  });

  it('refuses graphs as POST /result does, before storing anything', async () => {
    const unsupported = await gw.request('POST', `${BASE}/jobs`, {
      body: { process: { process_graph: { r: { process_id: 'resample_spatial', arguments: {}, result: true } } } },
      headers: AUTH,
    });
    assert.match(await failure(unsupported, 'ProcessUnsupported'), /resample_spatial/);
    await failure(
      await gw.request('POST', `${BASE}/jobs`, { body: { title: 'x' }, headers: AUTH }),
      'ProcessGraphMissing',
    );
  });

  it('carries a body signed with an Ed25519 key (X-Idn-Signature) into the record and the receipt', async () => {
    const requester = generateKeyPair();
    const signed = signRequestBody(requester.secretKey, {
      title: 'signed',
      process: { process_graph: ndviGraph('JSON') },
    });
    const id = await create(gw, signed.body, { ...AUTH, 'x-idn-signature': signed.signature });
    await gw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH });
    await waitFor(gw, id, ['finished']);
    const receipt = (await gw.get(`${BASE}/jobs/${id}/receipt`, AUTH)).body as OpenEoReceipt;
    assert.deepEqual(receipt.request.authenticated_by, {
      api_key_id: 'env:0',
      requester_pk: requester.publicKey,
      request_signature: signed.signature,
    });
    const verdict = verifyOpenEoReceipt(receipt, { allowPending: true });
    assert.equal(verdict.ok, true, JSON.stringify(verdict.checks));
    assert.match(verdict.checks.find((c) => c.name === 'request_signature')!.detail, new RegExp(requester.publicKey));
    const forged = JSON.parse(JSON.stringify(receipt)) as OpenEoReceipt;
    forged.request.body.title = 'forged';
    assert.equal(verifyOpenEoReceipt(forged, { allowPending: true }).failedCheck, 'request_signature');

    // A signature that does not verify is refused as gate 1 refuses it, and nothing is stored.
    const bad = await gw.request('POST', `${BASE}/jobs`, {
      body: { ...signed.body, title: 'changed' },
      headers: { ...AUTH, 'x-idn-signature': signed.signature },
    });
    assert.equal(bad.status, 401);
    assert.equal((bad.body as { code: string }).code, 'invalid_signature');

    // POST /result signed the same way: its record names the requester's key and signature.
    const sync = signRequestBody(requester.secretKey, { process: { process_graph: ndviGraph('JSON') } });
    const res = await gw.request('POST', `${BASE}/result`, {
      body: sync.body,
      headers: { ...AUTH, 'x-idn-signature': sync.signature },
    });
    assert.equal(res.status, 200, res.text);
    const record = (await gw.get(`/store/proof/${res.headers.get('x-svc-record')}`)).body as {
      record: { payload: { authenticated_by: unknown } };
    };
    assert.deepEqual(record.record.payload.authenticated_by, {
      api_key_id: 'env:0',
      requester_pk: requester.publicKey,
      request_signature: sync.signature,
    });
    assert.ok(Number(res.headers.get('openeo-costs')) > 0);
  });

  it('keeps jobs and their results across a gateway restart', async () => {
    const db = openSqlite(join(dir, 'restart.db'));
    const stores = { openEoJobs: createSqliteOpenEoJobStore(db), proofs: createSqliteProofStore(db) };
    const options = { clock: () => TEST_NOW, imagery: { stacUrl: catalog.stac.url }, config: { apiKeys: [KEY] } };
    const first = await startGateway({ ...options, ...stores });
    const id = await create(first, { process: { process_graph: ndviGraph() } });
    await first.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH });
    await waitFor(first, id, ['finished']);
    const before = (await first.get(`${BASE}/jobs/${id}/results`, AUTH)).body as {
      assets: Record<string, { href: string }>;
    };
    const bytes = Buffer.from(await (await fetch(before.assets['result.tif']!.href, { headers: AUTH })).arrayBuffer());
    await first.close();

    const second = await startGateway({ ...options, ...stores });
    try {
      const after = (await second.get(`${BASE}/jobs/${id}/results`, AUTH)).body as {
        assets: Record<string, { href: string; 'geofabric:record_id': string }>;
      };
      const again = await fetch(after.assets['result.tif']!.href, { headers: AUTH });
      assert.deepEqual(Buffer.from(await again.arrayBuffer()), bytes);
      const proof = await second.get(`/store/proof/${after.assets['result.tif']!['geofabric:record_id']}`);
      assert.equal(proof.status, 200);
    } finally {
      await second.close();
      db.close();
    }
  });

  // Seals the fixed clock's epoch: later runs in this gateway could not write records into it.
  it('writes a receipt that `geofabric receipt verify` verifies once sealed, and that fails when tampered', async () => {
    const id = await create(gw, { process: { process_graph: ndviGraph('JSON') } });
    await gw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH });
    await waitFor(gw, id, ['finished']);
    const pending = (await gw.get(`${BASE}/jobs/${id}/receipt`, AUTH)).body as OpenEoReceipt;
    assert.equal(pending.status, 'pending');
    assert.equal(verifyOpenEoReceipt(pending).failedCheck, 'sealed');
    assert.equal(verifyOpenEoReceipt(pending, { allowPending: true }).ok, true);

    await sealThrough(gw.proofs, gw.node, epochAt(TEST_NOW));
    const receipt = (await gw.get(`${BASE}/jobs/${id}/receipt`, AUTH)).body as OpenEoReceipt;
    assert.equal(receipt.status, 'complete', receipt.pending.join('; '));
    const verdict = verifyOpenEoReceipt(receipt, { sealerPk: gw.node.publicKey });
    assert.equal(verdict.ok, true, JSON.stringify(verdict.checks));
    assert.match(verdict.checks.find((c) => c.name === 'request_signature')!.detail, /API key env:0/);

    const file = join(dir, 'receipt.json');
    await writeFile(file, JSON.stringify(receipt));
    const lines: string[] = [];
    const io = { log: (l: string) => void lines.push(l), error: (l: string) => void lines.push(l) };
    assert.equal(await receiptCommand(['verify', file, '--sealer-pk', gw.node.publicKey], io), 0, lines.join('\n'));
    assert.ok(lines.some((l) => /asset_records/.test(l)));

    const tampers: [string, (r: OpenEoReceipt) => void][] = [
      [
        'process_graph',
        (r) => ((r.request.body.process as { process_graph: Record<string, unknown> }).process_graph.x = {}),
      ],
      ['asset_records', (r) => (r.job!.assets[0]!.sha256 = '0'.repeat(64))],
      ['costs', (r) => (r.job!.costs += 1)],
      ['asset_records', (r) => (r.request.authenticated_by.api_key_id = 'env:1')],
      ['inclusion', (r) => (r.records[0]!.proof!.leaf_index += 1)],
    ];
    for (const [check, tamper] of tampers) {
      const copy = JSON.parse(JSON.stringify(receipt)) as OpenEoReceipt;
      tamper(copy);
      assert.equal(verifyOpenEoReceipt(copy).failedCheck, check, check);
      await writeFile(file, JSON.stringify(copy));
      assert.equal(await receiptCommand(['verify', file], io), 1, check);
    }
  });

  describe('with runs held back', () => {
    let held: ReturnType<typeof heldRunner>;
    let hgw: Gateway;
    before(async () => {
      held = heldRunner();
      hgw = await startGateway({
        clock: () => TEST_NOW,
        imagery: { stacUrl: catalog.stac.url },
        config: { apiKeys: [KEY] },
        openEoRunner: () => held.runner,
      });
    });
    after(async () => hgw?.close());

    it('queues on start, locks updates while queued, cancels, discards a canceled run, restarts and deletes', async () => {
      const id = await create(hgw, { title: 'first', process: { process_graph: ndviGraph() } });
      const patched = await hgw.request('PATCH', `${BASE}/jobs/${id}`, { body: { title: 'second' }, headers: AUTH });
      assert.equal(patched.status, 204, patched.text);
      assert.equal((await waitFor(hgw, id, ['created'])).title, 'second');
      await failure(await hgw.request('PATCH', `${BASE}/jobs/${id}`, { body: {}, headers: AUTH }), 'NoDataForUpdate');

      assert.equal((await hgw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH })).status, 202);
      assert.deepEqual(held.started, [{ job_id: id, run: 1, h3_cell: held.started[0]?.h3_cell }]);
      assert.equal((await waitFor(hgw, id, ['queued'])).status, 'queued');
      // Starting a queued job again changes nothing.
      assert.equal((await hgw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH })).status, 202);
      assert.equal(held.started.length, 1);
      await failure(
        await hgw.request('PATCH', `${BASE}/jobs/${id}`, { body: { title: 'third' }, headers: AUTH }),
        'JobLocked',
      );

      const cancel = await hgw.request('DELETE', `${BASE}/jobs/${id}/results`, { headers: AUTH });
      assert.equal(cancel.status, 204);
      assert.deepEqual(held.canceled, [id]);
      assert.equal((await waitFor(hgw, id, ['canceled'])).status, 'canceled');

      // The run arrives after the cancel: it leaves the job canceled and writes nothing.
      const activities = createOpenEoBatchActivities({
        imagery: undefined as never,
        jobs: hgw.openEoJobs,
        registry: undefined as never,
        encodePng: undefined as never,
        clock: () => TEST_NOW,
      });
      assert.deepEqual(await activities.runOpenEoBatchJob({ job_id: id, run: 1 }), { status: 'canceled' });
      assert.equal((await hgw.openEoJobs.get(id))?.status, 'canceled');

      // Started again: a new run.
      assert.equal((await hgw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH })).status, 202);
      assert.equal(held.started.at(-1)?.run, 2);
      assert.deepEqual(await activities.runOpenEoBatchJob({ job_id: id, run: 1 }), { status: 'canceled' });
      assert.equal((await hgw.openEoJobs.get(id))?.status, 'queued', 'a stale run leaves the new one alone');

      assert.equal((await hgw.request('DELETE', `${BASE}/jobs/${id}`, { headers: AUTH })).status, 204);
      await failure(await hgw.get(`${BASE}/jobs/${id}`, AUTH), 'JobNotFound', 404);
    });

    it('holds a key to four jobs queued or running at once', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await create(hgw, { process: { process_graph: ndviGraph() } }));
      for (const id of ids.slice(0, 4)) {
        assert.equal((await hgw.request('POST', `${BASE}/jobs/${id}/results`, { headers: AUTH })).status, 202);
      }
      const refused = await hgw.request('POST', `${BASE}/jobs/${ids[4]}/results`, { headers: AUTH });
      assert.equal(refused.status, 429);
      assert.equal((refused.body as { code: string }).code, 'rate_limit');
      assert.deepEqual(openEoErrorSchemaErrors(refused.body), []);
      assert.equal((await hgw.openEoJobs.get(ids[4]!))?.status, 'created');
      // Starting one of the four again is no new run; once one is canceled the fifth may start.
      assert.equal((await hgw.request('POST', `${BASE}/jobs/${ids[0]}/results`, { headers: AUTH })).status, 202);
      assert.equal((await hgw.request('DELETE', `${BASE}/jobs/${ids[0]}/results`, { headers: AUTH })).status, 204);
      assert.equal((await hgw.request('POST', `${BASE}/jobs/${ids[4]}/results`, { headers: AUTH })).status, 202);
    });
  });

  it('lists batch jobs among the capabilities’ endpoints', async () => {
    const caps = (await gw.get(`${BASE}/`)).body as {
      endpoints: { path: string; methods: string[] }[];
      description: string;
    };
    // The description names the header POST /result really sets (it named OpenEO-Identifier, which it never set).
    assert.match(caps.description, /batch jobs/);
    assert.match(caps.description, /`x-svc-record` header/);
    const paths = new Map(caps.endpoints.map((e) => [e.path, e.methods]));
    assert.deepEqual(paths.get('/jobs'), ['GET', 'POST']);
    assert.deepEqual(paths.get('/jobs/{job_id}'), ['DELETE', 'GET', 'PATCH']);
    assert.deepEqual(paths.get('/jobs/{job_id}/results'), ['DELETE', 'GET', 'POST']);
    assert.deepEqual(paths.get('/jobs/{job_id}/logs'), ['GET']);
    assert.deepEqual(paths.get('/jobs/{job_id}/estimate'), ['GET']);
  });
});
