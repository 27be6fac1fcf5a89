import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { cellToChildren, latLngToCell } from 'h3-js';
import Koa from 'koa';
import { pino } from 'pino';
import { createMetrics } from '../../api/metrics.js';
import { requestContext, requestLog } from '../../api/request-context.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { cellTile } from '../../core/tile-coords.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { startGateway } from '../helpers/gateway.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';
import { sample } from '../helpers/metrics-sample.js';

type LogLine = Record<string, unknown> & { msg: string };
const EPOCH = 5000;
const ROUTE = '/v1/tiles/:h3_cell/:zoom/:file';

interface Serve {
  request_id: string;
  cache: string;
  status: number;
  cost: number;
}

describe('tile cache hits through the gateway: what a burst leaves behind', () => {
  let xyz: XyzServer;
  before(async () => {
    xyz = await startXyzServer();
  });
  after(async () => {
    await xyz.close();
  });

  it('lists every serve of a burst once in its record, counts it in metrics, stats and one log line each', async () => {
    const lines: LogLine[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
    const metrics = createMetrics({ processMetrics: false });
    const now = DEFAULT_EPOCH_GENESIS_MS + EPOCH * EPOCH_MS + 60_000;
    const gw = await startGateway({
      clock: () => now,
      logger,
      metrics,
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as never,
      },
    });
    try {
      // Three cells of one z12 tile, in two formats: one upstream fetch, six aggregate records.
      const parent = latLngToCell(41.9028, 12.4964, 6);
      const cells = cellToChildren(parent, 8).filter(
        (c, _, all) => JSON.stringify(cellTile(c, 12)) === JSON.stringify(cellTile(all[0]!, 12)),
      );
      assert.ok(cells.length >= 3);
      const paths = cells
        .slice(0, 3)
        .flatMap((c) => [`/v1/tiles/${c}/12/terrain.png`, `/v1/tiles/${c}/12/terrain.webp`]);
      for (const path of paths) assert.equal((await gw.get(path, { 'x-request-id': `warm-${path}` })).status, 200);
      const etag = (await fetch(gw.url + paths[0]!, { headers: { 'x-request-id': 'etag' } })).headers.get('etag')!;

      // The burst: 240 concurrent hits, every tenth one conditional (a 304 is a serve too).
      const burst = await Promise.all(
        Array.from({ length: 240 }, async (_, i) => {
          const path = paths[i % paths.length]!;
          const conditional = i % 10 === 0 && path === paths[0];
          const res = await fetch(gw.url + path, {
            headers: { 'x-request-id': `burst-${i}`, ...(conditional ? { 'if-none-match': etag } : {}) },
          });
          await res.arrayBuffer();
          return { path, res };
        }),
      );
      await gw.writer.flush();

      const notModified = burst.filter(({ res }) => res.status === 304);
      assert.ok(notModified.length > 0);
      for (const { res } of notModified) {
        assert.equal(res.headers.get('content-type'), null, 'a 304 carries no body type');
        assert.equal(res.headers.get('etag'), etag);
      }
      for (const { res } of burst) {
        assert.ok(res.status === 200 || res.status === 304);
        assert.equal(res.headers.get('x-svc-cache'), 'HIT');
        assert.equal(res.headers.get('x-svc-cost'), '0.00001');
        assert.equal(res.headers.get('x-svc-epoch'), String(EPOCH));
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
        if (res.status === 200) {
          assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
          assert.match(res.headers.get('content-type') ?? '', /^image\/(png|webp)$/);
        }
      }

      // Every serve, warm-up and burst, in exactly one record: the one its X-Svc-Record names.
      const { records } = await gw.proofs.queryRecords({ collection: 'tile', limit: 1000 });
      // One aggregate per cell and format per flush of the writer (its 1 s timer may flush within the burst).
      assert.ok(records.length >= paths.length, `${records.length} records`);
      const byId = new Map(records.map((r) => [r.id, r]));
      const serves = new Map<string, { record: string; serve: Serve }>();
      for (const record of records) {
        const payload = record.payload as { serves: Serve[]; serve_count: number };
        assert.equal(payload.serve_count, payload.serves.length);
        for (const serve of payload.serves) {
          assert.ok(!serves.has(serve.request_id), `${serve.request_id} listed once`);
          serves.set(serve.request_id, { record: record.id, serve });
        }
      }
      assert.equal(serves.size, paths.length + 1 + burst.length);
      for (const [i, { path, res }] of burst.entries()) {
        const listed = serves.get(`burst-${i}`);
        assert.ok(listed, `burst-${i} is listed`);
        assert.equal(listed.record, res.headers.get('x-svc-record'));
        const record = byId.get(listed.record)!;
        const [, , , cell, , file] = path.split('/');
        assert.equal(record.address.h3_cell, cell);
        assert.equal((record.payload as { format: string }).format, file!.split('.')[1]);
        assert.deepEqual(listed.serve, { request_id: `burst-${i}`, cache: 'HIT', status: res.status, cost: 0.00001 });
      }

      // Metrics and stats count the same serves; one log line per request, by route pattern.
      const text = (await gw.get('/metrics')).text;
      const ok = burst.length - notModified.length;
      assert.equal(
        sample(text, 'http_requests_total', { method: 'GET', route: ROUTE, status: '200' }),
        ok + paths.length + 1,
      );
      assert.equal(
        sample(text, 'http_requests_total', { method: 'GET', route: ROUTE, status: '304' }),
        notModified.length,
      );
      assert.equal(
        sample(text, 'http_request_duration_seconds_count', { method: 'GET', route: ROUTE, status: '200' }),
        ok + paths.length + 1,
      );
      assert.equal(sample(text, 'http_requests_in_flight'), 1, 'only the scrape itself');
      assert.equal(sample(text, 'tile_cache_hits_total', { style: 'terrain' }), burst.length + paths.length);
      assert.equal(sample(text, 'tile_cache_misses_total', { style: 'terrain' }), 1);
      const stats = (await gw.get('/v1/tiles/stats?hours=1')).body as { totals: { hits: number; misses: number } };
      assert.deepEqual([stats.totals.hits, stats.totals.misses], [burst.length + paths.length, 1]);
      for (let i = 0; i < 100 && lines.filter((l) => String(l.request_id).startsWith('burst-')).length < 240; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const burstLines = lines.filter((l) => l.msg === 'request' && String(l.request_id).startsWith('burst-'));
      assert.equal(burstLines.length, burst.length);
      assert.equal(new Set(burstLines.map((l) => l.request_id)).size, burst.length);
      for (const line of burstLines) assert.equal(line.route, ROUTE);
    } finally {
      await gw.close();
    }
  });
});

describe('request context (api/request-context.ts)', () => {
  it("gives a route a child logger bound to the request's id, made on first use", async () => {
    const lines: LogLine[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
    const app = new Koa();
    app.use(requestContext({ logger, metrics: createMetrics({ processMetrics: false }) }));
    app.use((ctx) => {
      const log = requestLog(ctx, logger);
      assert.equal(requestLog(ctx, logger), log, 'one child per request');
      log.info('inside');
      ctx.body = 'ok';
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const res = await fetch(url, { headers: { 'x-request-id': 'ctx-1' } });
      assert.equal(res.headers.get('x-request-id'), 'ctx-1');
      const fresh = await fetch(url);
      const freshId = fresh.headers.get('x-request-id');
      assert.match(freshId ?? '', /^[0-9a-f-]{36}$/);
      assert.deepEqual(
        lines.filter((l) => l.msg === 'inside').map((l) => l.request_id),
        ['ctx-1', freshId],
      );
    } finally {
      server.close();
    }
  });
});
