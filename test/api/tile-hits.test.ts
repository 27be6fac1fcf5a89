import assert from 'node:assert/strict';
import { request } from 'node:http';
import { latLngToCell } from 'h3-js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { startGateway } from '../helpers/gateway.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const ROME = latLngToCell(41.9028, 12.4964, 9);
const TILE = `/v1/tiles/${ROME}/10/osm-bright.png`;
// Headers that differ between any two answers: when, which request, which record.
const PER_ANSWER = new Set(['date', 'x-request-id', 'x-svc-record']);

interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request with exactly these headers (fetch would add its own), answered raw. */
function send(url: string, method: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

const stable = (answer: RawAnswer) =>
  Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !PER_ANSWER.has(name)));

// Tile cache hits are answered before Koa makes a context (api/tile-hits.ts); a hit with a query string still
// goes through Koa's route. Both must answer alike.
describe('tile cache hits answered before Koa', () => {
  let xyz: XyzServer;
  const now = DEFAULT_EPOCH_GENESIS_MS + 5000 * EPOCH_MS + 60_000;
  const tiles = () => ({ templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as never });

  before(async () => {
    xyz = await startXyzServer();
  });
  after(async () => {
    await xyz.close();
  });

  it("answers GET, HEAD and a 304 with the same status, headers and bytes as Koa's route", async () => {
    const gw = await startGateway({ clock: () => now, tiles: tiles() });
    try {
      assert.equal((await send(gw.url + TILE, 'GET')).headers['x-svc-cache'], 'MISS');
      for (const [method, headers] of [
        ['GET', {}],
        ['HEAD', {}],
        ['GET', { 'if-none-match': 'W/"x", *' }],
      ] as const) {
        const early = await send(gw.url + TILE, method, headers);
        const koa = await send(`${gw.url + TILE}?through=koa`, method, headers);
        assert.equal(early.status, koa.status, `${method} ${JSON.stringify(headers)}`);
        assert.deepEqual(stable(early), stable(koa), `${method} ${JSON.stringify(headers)}`);
        assert.deepEqual(early.body, koa.body);
        assert.equal(early.headers['x-svc-cache'], 'HIT');
      }
      const get = await send(gw.url + TILE, 'GET');
      assert.deepEqual(get.body, await xyz.bytesAt('/png/10/547/380'));
      assert.equal(get.headers['content-length'], String(get.body.length));
      assert.equal((await send(gw.url + TILE, 'GET', { 'if-none-match': get.headers.etag as string })).status, 304);
      // Koa saw the miss and the `?through=koa` requests only: every other hit was answered before it.
      const throughKoa = `${TILE}?through=koa`;
      assert.deepEqual(gw.koaRequests, [TILE, throughKoa, throughKoa, throughKoa]);
    } finally {
      await gw.close();
    }
  });

  it("echoes a sane X-Request-Id, lists it in the tile's record, and replaces one that is not", async () => {
    const gw = await startGateway({ clock: () => now, tiles: tiles() });
    try {
      await send(gw.url + TILE, 'GET');
      const given = await send(gw.url + TILE, 'GET', { 'x-request-id': 'map-client:42' });
      assert.equal(given.headers['x-request-id'], 'map-client:42');
      const replaced = await send(gw.url + TILE, 'GET', { 'x-request-id': 'no spaces please' });
      assert.match(replaced.headers['x-request-id'] as string, /^[0-9a-f-]{36}$/);
      await gw.writer.flush();
      const { records } = await gw.proofs.queryRecords({ collection: 'tile', limit: 10 });
      const serves = records.flatMap((r) => (r.payload as { serves?: { request_id: string }[] }).serves ?? []);
      assert.ok(serves.some((s) => s.request_id === 'map-client:42'));
      assert.ok(serves.some((s) => s.request_id === replaced.headers['x-request-id']));
    } finally {
      await gw.close();
    }
  });

  it("counts hits against the client address's request limit, with its headers, then refuses with 429", async () => {
    const httpLimits = {
      ipPerMinute: 60,
      principalPerMinute: 0,
      burstSeconds: 3, // a bucket of 3
      trustProxy: true,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 20_000,
    };
    const gw = await startGateway({ clock: () => now, tiles: tiles(), config: { httpLimits } });
    try {
      const from = (address: string) => ({ 'x-forwarded-for': address });
      const first = await send(gw.url + TILE, 'GET', from('203.0.113.7')); // the miss, through Koa
      assert.equal(first.headers['ratelimit-remaining'], '2');
      const hits = [
        await send(gw.url + TILE, 'GET', from('203.0.113.7')),
        await send(gw.url + TILE, 'GET', from('203.0.113.7')),
      ];
      assert.deepEqual(
        hits.map((h) => [
          h.status,
          h.headers['x-svc-cache'],
          h.headers['ratelimit-limit'],
          h.headers['ratelimit-remaining'],
        ]),
        [
          [200, 'HIT', '3', '1'],
          [200, 'HIT', '3', '0'],
        ],
      );
      const refused = await send(gw.url + TILE, 'GET', from('203.0.113.7'));
      assert.equal(refused.status, 429);
      assert.equal(JSON.parse(refused.body.toString()).error, 'rate_limit');
      assert.ok(Number(refused.headers['retry-after']) >= 1);
      // The trusted proxy's forwarded address is the client: another one has its own bucket.
      const other = await send(gw.url + TILE, 'GET', from('198.51.100.9'));
      assert.deepEqual([other.status, other.headers['ratelimit-remaining']], [200, '2']);
    } finally {
      await gw.close();
    }
  });

  it('refuses a hit once the server drains, as every other request', async () => {
    let draining = false;
    const gw = await startGateway({ clock: () => now, tiles: tiles(), draining: () => draining });
    try {
      assert.equal((await send(gw.url + TILE, 'GET')).status, 200);
      draining = true;
      const refused = await send(gw.url + TILE, 'GET');
      assert.equal(refused.status, 503);
      assert.equal(JSON.parse(refused.body.toString()).error, 'shutting_down');
    } finally {
      await gw.close();
    }
  });
});
