import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { pino } from 'pino';
import { sealDueEpochs } from '../../activities/proof/epoch-sealer.js';
import { createSyncAgent } from '../../activities/proof/sync-agent.js';
import { createMetrics, type GatewayMetrics } from '../../api/metrics.js';
import { requestIdOf } from '../../api/request-context.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { inferenceEntry } from '../helpers/proofs.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';
import { sample } from '../helpers/metrics-sample.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type LogLine = Record<string, unknown> & { level: number; msg: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TILE = `/v1/tiles/${DEFAULT_JOB_CELL}/12/osm-bright.png`;

/** A pino logger whose lines land in `lines`, parsed. */
function capturingLogger(level = 'debug') {
  const lines: LogLine[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  return { logger, lines };
}

/** Responses close just after the client has them: wait until the line of `requestId` is logged. */
async function lineOf(lines: LogLine[], requestId: string): Promise<LogLine> {
  for (let i = 0; i < 100; i++) {
    const line = lines.find((l) => l.msg === 'request' && l.request_id === requestId);
    if (line) return line;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no request line for ${requestId}`);
}

describe('metrics, request ids and request logs', () => {
  let xyz: XyzServer;
  before(async () => {
    xyz = await startXyzServer();
  });
  after(() => xyz.close());

  describe('GET /metrics after real requests', () => {
    let gw: Gateway;
    let metrics: GatewayMetrics;
    let capture: ReturnType<typeof capturingLogger>;
    before(async () => {
      metrics = createMetrics({ processMetrics: false });
      capture = capturingLogger();
      gw = await startGateway({
        metrics,
        logger: capture.logger,
        config: { apiKeys: ['sk-metrics'] },
        tiles: { templates: { ...templatesOf(xyz), dark: 'http://127.0.0.1:9/dark/{z}/{x}/{y}' } },
      });
    });
    after(() => gw.close());

    const scrape = async () => {
      const res = await gw.get('/metrics');
      assert.equal(res.status, 200, res.text);
      return res;
    };

    it('answers in the text exposition format, no-store', async () => {
      const res = await scrape();
      assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.match(res.text, /^# HELP http_requests_total /m);
      assert.match(res.text, /^# TYPE http_request_duration_seconds histogram$/m);
      assert.match(res.text, /^# TYPE job_duration_seconds histogram$/m);
      assert.match(res.text, /^# TYPE seal_duration_seconds histogram$/m);
      // Without CENTRAL_STORE_URL nothing syncs: no lag to report.
      assert.doesNotMatch(res.text, /sync_lag_seconds/);
    });

    it('counts requests by route pattern and status, never by raw path', async () => {
      const jobId = '00000000-0000-8000-8000-000000000000';
      assert.equal((await gw.get('/health')).status, 200);
      assert.equal((await gw.get('/v1/nothing-here/12345')).status, 404);
      assert.equal((await gw.get(`/v1/compute/${jobId}`)).status, 404);
      assert.equal((await gw.get('/v1/compute')).status, 405);
      const { text } = await scrape();
      assert.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/health', status: '200' }), 1);
      assert.equal(sample(text, 'http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
      assert.equal(
        sample(text, 'http_requests_total', { method: 'GET', route: '/v1/compute/:jobId', status: '404' }),
        1,
      );
      assert.equal(sample(text, 'http_requests_total', { method: 'GET', route: '/v1/compute', status: '405' }), 1);
      assert.equal(
        sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: '/health', status: '200' }),
        1,
      );
      assert.equal(sample(text, 'http_requests_in_flight'), 1, 'the scrape itself');
      assert.ok(text.includes('route="/v1/compute/:jobId"'));
      assert.ok(!text.includes(jobId) && !text.includes('nothing-here'), 'no raw path in a label');
    });

    it('counts gate rejections by gate and code', async () => {
      const unsigned = await gw.post('/v1/compute', inferenceJob('hi'));
      assert.equal(unsigned.status, 401);
      assert.equal((unsigned.body as { error: string }).error, 'signature_required');
      const keyless = await gw.post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(keyless.status, 401);
      const badCell = await gw.get('/v1/tiles/not-a-cell/12/osm-bright.png');
      assert.equal(badCell.status, 400);
      const badZoom = await gw.get(`/v1/tiles/${DEFAULT_JOB_CELL}/99/osm-bright.png`);
      assert.equal((badZoom.body as { error: string }).error, 'invalid_zoom');
      const { text } = await scrape();
      assert.equal(sample(text, 'gate_rejections_total', { gate: 'signature', code: 'signature_required' }), 1);
      assert.equal(sample(text, 'gate_rejections_total', { gate: 'jurisdiction', code: 'invalid_cell' }), 1);
      assert.equal(sample(text, 'gate_rejections_total', { gate: 'api_key', code: 'unauthorized' }), 1);
      assert.equal(sample(text, 'gate_rejections_total', { gate: 'preflight', code: 'invalid_zoom' }), 1);
      assert.equal(sample(text, 'http_requests_total', { method: 'POST', route: '/v1/compute', status: '401' }), 1);
    });

    it('counts tile cache hits, misses and upstream errors, with the hit ratio and the cache size', async () => {
      assert.equal((await gw.get(TILE)).headers.get('x-svc-cache'), 'MISS');
      assert.equal((await gw.get(TILE)).headers.get('x-svc-cache'), 'HIT');
      assert.equal((await gw.get(TILE)).headers.get('x-svc-cache'), 'HIT');
      assert.equal((await gw.get(TILE.replace('osm-bright', 'dark'))).status, 502);
      const { text } = await scrape();
      assert.equal(sample(text, 'tile_cache_hits_total', { style: 'osm-bright' }), 2);
      assert.equal(sample(text, 'tile_cache_misses_total', { style: 'osm-bright' }), 1);
      assert.equal(sample(text, 'tile_upstream_errors_total', { style: 'dark' }), 1);
      assert.equal(sample(text, 'tile_cache_hit_ratio'), 2 / 3);
      assert.equal(sample(text, 'tile_cache_entries'), 1);
      assert.ok(sample(text, 'tile_cache_bytes')! > 512);
    });

    it('times compute jobs by final status', async () => {
      const tileJob = (id: string, style: string) =>
        signJob(generateKeyPair(), {
          h3_cell: DEFAULT_JOB_CELL,
          steps: [{ id, type: 'tile_render', zoom: 12, style }],
          budget_credits: 0.1,
        });
      const ok = tileJob('map', 'osm-bright');
      const done = await gw.post('/v1/compute', ok.body, ok.headers);
      assert.equal(done.status, 200, done.text);
      const broken = tileJob('map', 'dark'); // its upstream is a closed port
      const failed = await gw.post('/v1/compute', broken.body, broken.headers);
      assert.equal(failed.status, 502, failed.text);
      const { text } = await scrape();
      assert.equal(sample(text, 'jobs_total', { status: 'complete' }), 1);
      assert.equal(sample(text, 'jobs_total', { status: 'failed' }), 1);
      assert.equal(sample(text, 'job_duration_seconds_count', { status: 'complete' }), 1);
      assert.equal(sample(text, 'job_duration_seconds_bucket', { status: 'complete', le: '+Inf' }), 1);
      assert.ok(sample(text, 'job_duration_seconds_sum', { status: 'complete' })! >= 0);
    });

    it('logs one line per request: id, method, route, path, status, duration, and the gate and code of a refusal', async () => {
      const unsigned = await gw.post('/v1/compute', inferenceJob('hi'), { 'x-request-id': 'refused-1' });
      assert.equal(unsigned.status, 401);
      const refused = await lineOf(capture.lines, 'refused-1');
      assert.equal(refused.level, 30);
      assert.equal(refused.method, 'POST');
      assert.equal(refused.route, '/v1/compute');
      assert.equal(refused.path, '/v1/compute');
      assert.equal(refused.status, 401);
      assert.equal(refused.error, 'signature_required');
      assert.equal(refused.gate, 'signature');
      assert.equal(typeof refused.duration_ms, 'number');

      // A model the route does not know is the route's own pre-flight refusing, not the geometry check.
      const unknownModel = await gw.post(
        '/v1/chat/completions',
        { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
        { authorization: 'Bearer sk-metrics', 'x-request-id': 'model-1' },
      );
      assert.equal(unknownModel.status, 404);
      const byRoute = await lineOf(capture.lines, 'model-1');
      assert.equal(byRoute.error, 'invalid_model');
      assert.equal(byRoute.gate, 'preflight');

      await gw.get(TILE, { 'x-request-id': 'tile-1' });
      const served = await lineOf(capture.lines, 'tile-1');
      assert.equal(served.route, '/v1/tiles/:h3_cell/:zoom/:file');
      assert.equal(served.path, TILE);
      assert.equal(served.status, 200);
      assert.ok(!('error' in served) && !('gate' in served));

      // Polled routes log their successes at debug, so scrapes and health checks do not bury the rest.
      await gw.get('/health', { 'x-request-id': 'health-1' });
      assert.equal((await lineOf(capture.lines, 'health-1')).level, 20);
      assert.equal(capture.lines.filter((l) => l.request_id === 'refused-1').length, 1, 'one line per request');
    });
  });

  describe('request ids', () => {
    let gw: Gateway;
    before(async () => {
      gw = await startGateway();
    });
    after(() => gw.close());

    it('echoes a sane X-Request-Id and replaces anything else with a UUID', async () => {
      const sane = 'trace.ABC_123-x:7';
      assert.equal((await gw.get('/health', { 'x-request-id': sane })).headers.get('x-request-id'), sane);
      for (const given of ['has space', 'quote"d', 'a'.repeat(129), 'ünïcode', '<script>']) {
        const echoed = (await gw.get('/health', { 'x-request-id': given })).headers.get('x-request-id');
        assert.match(echoed ?? '', UUID, given);
      }
      assert.match((await gw.get('/health')).headers.get('x-request-id') ?? '', UUID);
      const a = (await gw.get('/nope')).headers.get('x-request-id');
      const b = (await gw.get('/nope')).headers.get('x-request-id');
      assert.notEqual(a, b);
      assert.equal(requestIdOf('a'.repeat(128)), 'a'.repeat(128));
      assert.match(requestIdOf(''), UUID);
      assert.match(requestIdOf(undefined), UUID);
    });
  });

  describe('METRICS_TOKEN', () => {
    let gw: Gateway;
    before(async () => {
      gw = await startGateway({ config: { metricsToken: 's3cret-token' } });
    });
    after(() => gw.close());

    it('requires the bearer token when set: 401 JSON without it or with another', async () => {
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong' },
        { authorization: 's3cret-token' },
      ];
      for (const headers of attempts) {
        const res = await gw.get('/metrics', headers);
        assert.equal(res.status, 401);
        assert.equal((res.body as { error: string }).error, 'unauthorized');
        assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      }
      const ok = await gw.get('/metrics', { authorization: 'Bearer s3cret-token' });
      assert.equal(ok.status, 200);
      assert.match(ok.text, /http_requests_total\{[^}]*status="401"[^}]*\} 3/);
      // The token guards /metrics only.
      assert.equal((await gw.get('/health')).status, 200);
    });
  });

  describe('while draining', () => {
    it('answers a new request 503 shutting_down and asks the client to close the connection', async () => {
      const gw = await startGateway({ draining: () => true });
      try {
        const { status, headers, body } = await new Promise<{
          status: number;
          headers: Record<string, unknown>;
          body: string;
        }>((resolve, reject) => {
          httpRequest(`${gw.url}/health`, (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => (body += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
          })
            .on('error', reject)
            .end();
        });
        assert.equal(status, 503);
        assert.equal(headers.connection, 'close');
        assert.equal(headers['retry-after'], '1');
        assert.match(String(headers['x-request-id']), UUID);
        assert.equal((JSON.parse(body) as { error: string }).error, 'shutting_down');
      } finally {
        await gw.close();
      }
    });
  });

  describe('seals and sync', () => {
    const GENESIS = DEFAULT_EPOCH_GENESIS_MS;

    it('times each seal with the injected timer and counts the epochs sealed', async () => {
      const metrics = createMetrics({ processMetrics: false });
      const db = openSqlite(':memory:');
      const store = createSqliteProofStore(db);
      const node = generateKeyPair();
      await store.appendRecords(node, [inferenceEntry('r1', 10)]);
      let t = 0;
      const made = await sealDueEpochs({
        store,
        signer: node,
        now: GENESIS + 12 * EPOCH_MS + 120_000, // epochs 10 and 11 are due
        genesisMs: GENESIS,
        graceMs: 60_000,
        onEpochSealed: metrics.epochSealed,
        timer: () => (t += 125), // each seal reads it twice: 125 ms apart
      });
      assert.equal(made.length, 2);
      const text = await metrics.registry.metrics();
      assert.equal(sample(text, 'epochs_sealed_total'), 2);
      assert.equal(sample(text, 'seal_duration_seconds_count'), 2);
      assert.equal(sample(text, 'seal_duration_seconds_sum'), 0.25);
      assert.equal(sample(text, 'seal_duration_seconds_bucket', { le: '0.1' }), 0);
      assert.equal(sample(text, 'seal_duration_seconds_bucket', { le: '0.25' }), 2);
      db.close();
    });

    it('reports sync lag as the time since the last successful round, once the process syncs', async () => {
      let now = 1_000_000;
      const metrics = createMetrics({ processMetrics: false, clock: () => now });
      metrics.trackSync();
      now += 40_000;
      assert.equal(sample(await metrics.registry.metrics(), 'sync_lag_seconds'), 40);
      metrics.syncRound({ ok: false });
      now += 5_000;
      assert.equal(sample(await metrics.registry.metrics(), 'sync_lag_seconds'), 45);
      metrics.syncRound({ ok: true });
      now += 2_000;
      const text = await metrics.registry.metrics();
      assert.equal(sample(text, 'sync_lag_seconds'), 2);
      assert.equal(sample(text, 'sync_rounds_total', { result: 'ok' }), 1);
      assert.equal(sample(text, 'sync_rounds_total', { result: 'error' }), 1);
    });

    it("is told each of the sync agent's scheduled rounds", async () => {
      const db = openSqlite(':memory:');
      const rounds: boolean[] = [];
      const agent = createSyncAgent({
        store: createSqliteProofStore(db),
        centralUrl: 'http://127.0.0.1:9',
        signer: generateKeyPair(),
        intervalMs: 60_000,
        onRound: ({ ok }) => rounds.push(ok),
      });
      agent.start();
      for (let i = 0; i < 100 && rounds.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      await agent.stop();
      assert.deepEqual(rounds, [true]); // nothing to push: a successful round
      db.close();
    });

    it('counts settlements by final state, and keeps each registry apart', async () => {
      const a = createMetrics({ processMetrics: false });
      const b = createMetrics({ processMetrics: false });
      a.settled({ status: 'submitted' });
      a.settled({ status: 'failed' });
      a.settled({ status: 'submitted' });
      assert.equal(sample(await a.registry.metrics(), 'settlements_total', { status: 'submitted' }), 2);
      assert.equal(sample(await a.registry.metrics(), 'settlements_total', { status: 'failed' }), 1);
      assert.equal(sample(await b.registry.metrics(), 'settlements_total', { status: 'submitted' }), undefined);
    });

    it('adds the Node.js process metrics by default', async () => {
      const text = await createMetrics().registry.metrics();
      assert.match(text, /^process_cpu_user_seconds_total /m);
      assert.match(text, /^nodejs_eventloop_lag_seconds /m);
    });
  });
});

function templatesOf(xyz: XyzServer) {
  return {
    'osm-bright': xyz.template('png'),
    'osm-standard': xyz.template('png'),
    dark: xyz.template('webp'),
    terrain: xyz.template('png'),
    satellite: xyz.template('jpg', 'zyx'),
  };
}
