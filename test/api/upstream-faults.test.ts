/**
 * Faults: an upstream tile server or STAC API that is slow or answers garbage. What must hold:
 * the client gets 504 upstream_timeout within the configured timeout (never a hang) or 502
 * upstream_unavailable, as JSON, never a 500; nothing bad is cached, so once the upstream recovers the next
 * request gets the right answer (tiles: a MISS with the upstream's bytes, then a HIT with the same bytes).
 *
 * tiles.test.ts and imagery.test.ts cover an upstream that is down, slow to send headers, 5xx, 404 and an
 * HTML page; this file covers what happens after the headers: a body that stalls, is cut short, is garbage
 * under an image content-type, is an image cut in half, or is too large. Each fault comes from a small
 * server of this file that misbehaves exactly as a test says.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import type { TileConfig } from '../../activities/tiles/index.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { startGateway } from '../helpers/gateway.js';
import { SHARES, S3_ASSETS } from '../helpers/imagery-fixtures.js';
import { sentinelItem } from '../helpers/stac-server.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server whose every answer `respond` writes; requests are counted. Closing it ends stalled answers too. */
interface FaultyServer {
  url: string;
  requests: number;
  respond: (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;
  close(): Promise<void>;
}

async function startFaultyServer(respond: FaultyServer['respond']): Promise<FaultyServer> {
  const server: Server = createServer((req, res) => {
    state.requests++;
    req.resume();
    void Promise.resolve(state.respond(req, res)).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const state: FaultyServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: 0,
    respond,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  return state;
}

/** 200 with `headers`, `bytes` of the body, then the socket is destroyed, ended, or left open (stalled). */
async function partial(
  res: ServerResponse,
  headers: Record<string, string>,
  bytes: Buffer | string,
  then: 'destroy' | 'end' | 'stall',
): Promise<void> {
  res.writeHead(200, headers);
  res.write(bytes);
  await pause(20);
  if (then === 'destroy') res.destroy();
  else if (then === 'end') res.socket?.end();
}

/**
 * Streams `head`, about `total` bytes of filler in 64 KiB chunks, then `tail` (no content-length: chunked),
 * stopping if the client leaves.
 */
async function stream(res: ServerResponse, headers: Record<string, string>, total: number, head: Buffer, tail = '') {
  res.writeHead(res.statusCode === 206 ? 206 : 200, headers);
  res.write(head);
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  for (let sent = head.length; sent < total && !res.destroyed; sent += chunk.length) {
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done).off('close', done);
          resolve();
        };
        res.on('drain', done).on('close', done);
      });
    }
  }
  res.end(tail);
}

describe('faults: a slow or garbage-answering upstream', function () {
  this.timeout(30_000);
  // An answer must come within the upstream timeout plus this slack: far below an unbounded wait (the HTTP
  // library's 300 s), yet wide enough for a loaded 2-core machine streaming a 64 MiB body locally.
  const SLACK_MS = 10_000;

  describe('the tile upstream', () => {
    // Long enough to stream 9 MiB over loopback on a loaded 2-core machine (the oversize case must be refused
    // for its size, not time out first); the stall case waits it out twice.
    const TIMEOUT_MS = 1500;
    const ROME = '871e8050cffffff'; // any valid cell: the upstream answers every path alike
    const PATH = `/v1/tiles/${ROME}/12/osm-bright.png`;
    let tilePng: Buffer;
    let upstream: FaultyServer;
    let gw: Gateway;
    let now = DEFAULT_EPOCH_GENESIS_MS + 5000 * EPOCH_MS + 60_000;
    /** What the upstream does to the next requests; `ok` serves `tilePng`. */
    let fault: TileFault = 'ok';
    /** How long the upstream waits before answering. */
    let delayMs = 0;

    type TileFault =
      | 'ok'
      | 'stall-body'
      | 'truncated'
      | 'random-bytes'
      | 'png-magic-junk'
      | 'half-png'
      | 'oversize-declared'
      | 'oversize-streamed';

    before(async () => {
      const size = 256;
      const raw = Buffer.alloc(size * size * 3);
      for (let i = 0; i < raw.length; i++) raw[i] = (i * 7919 + (i >> 9)) % 251;
      tilePng = await sharp(raw, { raw: { width: size, height: size, channels: 3 } })
        .png()
        .toBuffer();
    });

    beforeEach(async () => {
      fault = 'ok';
      delayMs = 0;
      now = DEFAULT_EPOCH_GENESIS_MS + 5000 * EPOCH_MS + 60_000;
      upstream = await startFaultyServer(async (_req, res) => {
        const png = { 'content-type': 'image/png' };
        if (delayMs > 0) await pause(delayMs);
        switch (fault) {
          case 'ok':
            return void res.writeHead(200, { ...png, 'content-length': String(tilePng.length) }).end(tilePng);
          case 'stall-body':
            return partial(res, png, tilePng.subarray(0, 100), 'stall');
          case 'truncated':
            return partial(res, { ...png, 'content-length': String(tilePng.length) }, tilePng.subarray(0, 100), 'end');
          case 'random-bytes':
            return void res
              .writeHead(200, png)
              .end(Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) & 0xff)));
          case 'png-magic-junk':
            return void res.writeHead(200, png).end(Buffer.concat([tilePng.subarray(0, 8), Buffer.alloc(4096, 0x41)]));
          case 'half-png':
            // A real PNG cut in half, sent whole: the transport is fine, the image is not.
            return void res.writeHead(200, png).end(tilePng.subarray(0, tilePng.length >> 1));
          case 'oversize-declared':
            return partial(res, { ...png, 'content-length': String(64 * 1024 * 1024) }, tilePng, 'destroy');
          case 'oversize-streamed':
            return stream(res, png, 9 * 1024 * 1024, tilePng);
        }
      });
      gw = await startGateway({
        clock: () => now,
        tiles: {
          templates: Object.fromEntries(
            TILE_STYLES.map((s) => [s, `${upstream.url}/${s}/{z}/{x}/{y}.png`]),
          ) as TileConfig['templates'],
          timeoutMs: TIMEOUT_MS,
        },
      });
    });
    afterEach(async () => {
      await gw.close();
      await upstream.close();
    });

    const tile = async (path = PATH) => {
      const started = performance.now();
      const res = await fetch(gw.url + path);
      const bytes = Buffer.from(await res.arrayBuffer());
      const json = res.headers.get('content-type')?.startsWith('application/json')
        ? (JSON.parse(bytes.toString()) as { error?: string; detail?: string })
        : undefined;
      return { status: res.status, headers: res.headers, bytes, json, ms: performance.now() - started };
    };

    /** The upstream is fine again: a MISS with its bytes, then a HIT with the same bytes. Nothing bad was kept. */
    async function recovers(path = PATH, expected = tilePng) {
      fault = 'ok';
      const before = upstream.requests;
      const miss = await tile(path);
      assert.equal(miss.status, 200, miss.json?.detail);
      assert.equal(miss.headers.get('x-svc-cache'), 'MISS');
      assert.equal(miss.headers.get('x-svc-proof'), sha256(expected));
      assert.deepEqual(miss.bytes, expected);
      const hit = await tile(path);
      assert.equal(hit.status, 200);
      assert.equal(hit.headers.get('x-svc-cache'), 'HIT');
      assert.deepEqual(hit.bytes, expected);
      assert.equal(upstream.requests, before + 1, 'one upstream request for the MISS, none for the HIT');
    }

    const cases: [TileFault, number, string, RegExp][] = [
      ['stall-body', 504, 'upstream_timeout', new RegExp(`within ${TIMEOUT_MS} ms`)],
      ['truncated', 502, 'upstream_unavailable', /could not be reached/],
      ['random-bytes', 502, 'upstream_unavailable', /not a PNG, JPEG or WebP/],
      ['png-magic-junk', 502, 'upstream_unavailable', /could not be decoded/],
      ['half-png', 502, 'upstream_unavailable', /could not be decoded/],
      ['oversize-declared', 502, 'upstream_unavailable', /more than 8388608 bytes/],
      ['oversize-streamed', 502, 'upstream_unavailable', /more than 8388608 bytes/],
    ];
    for (const [name, status, code, detail] of cases) {
      it(`answers ${status} ${code} to a body that is "${name}", caches nothing, and serves the tile once recovered`, async () => {
        fault = name;
        const res = await tile();
        assert.equal(res.status, status, res.json?.detail ?? `${res.bytes.length} bytes`);
        assert.equal(res.json?.error, code);
        assert.match(res.json?.detail ?? '', detail);
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
        assert.equal(res.headers.get('x-svc-cache'), null);
        // Within the timeout (plus slack for a loaded machine), never a hang.
        assert.ok(res.ms < TIMEOUT_MS + SLACK_MS, `answered after ${Math.round(res.ms)} ms`);
        // Still broken: asked again, not served from a cache.
        const again = await tile();
        assert.equal(again.status, status);
        assert.equal(upstream.requests, 2);
        await recovers();
      });
    }

    it('converts nothing undecodable: a half PNG asked for as JPEG or WebP is a 502, then the right tile', async () => {
      fault = 'half-png';
      for (const format of ['jpg', 'webp']) {
        const res = await tile(`/v1/tiles/${ROME}/12/terrain.${format}`);
        assert.equal(res.status, 502);
        assert.equal(res.json?.error, 'upstream_unavailable');
      }
      fault = 'ok';
      const jpeg = await tile(`/v1/tiles/${ROME}/12/terrain.jpg`);
      assert.equal(jpeg.status, 200);
      assert.equal(jpeg.headers.get('x-svc-cache'), 'MISS');
      assert.equal(jpeg.headers.get('content-type'), 'image/jpeg');
      const decoded = await sharp(jpeg.bytes).metadata();
      assert.deepEqual([decoded.format, decoded.width, decoded.height], ['jpeg', 256, 256]);
      assert.equal((await tile(`/v1/tiles/${ROME}/12/terrain.jpg`)).headers.get('x-svc-cache'), 'HIT');
    });

    it('fails every request that joined a garbage load, and keeps nothing of it', async () => {
      fault = 'png-magic-junk';
      delayMs = 150; // the load is still in flight when the last request arrives
      const answers = await Promise.all(Array.from({ length: 8 }, () => tile()));
      for (const res of answers) {
        assert.equal(res.status, 502);
        assert.equal(res.json?.error, 'upstream_unavailable');
      }
      assert.equal(upstream.requests, 1, 'concurrent misses shared one upstream request');
      delayMs = 0;
      await recovers();
    });

    it('keeps the good tile when a revalidation in a new epoch gets garbage, and never serves it unconfirmed', async () => {
      const first = await tile();
      assert.equal(first.headers.get('x-svc-cache'), 'MISS');
      now += EPOCH_MS;
      for (const name of ['half-png', 'png-magic-junk', 'truncated', 'stall-body'] as const) {
        fault = name;
        const res = await tile();
        assert.ok([502, 504].includes(res.status), `${name}: ${res.status}`);
        assert.notEqual(res.headers.get('content-type'), 'image/png');
      }
      // The upstream sends the same bytes again: the kept tile is confirmed for this epoch (a HIT, no new bytes).
      fault = 'ok';
      const revalidated = await tile();
      assert.equal(revalidated.status, 200);
      assert.equal(revalidated.headers.get('x-svc-cache'), 'HIT');
      assert.deepEqual(revalidated.bytes, tilePng);
      assert.equal(revalidated.headers.get('x-svc-epoch'), String(Number(first.headers.get('x-svc-epoch')) + 1));
    });
  });

  describe('the STAC API', () => {
    // As the tile upstream's: streaming 16 MiB must be refused for its size before the timeout, under load too.
    const TIMEOUT_MS = 1500;
    const LIMIT_BYTES = 16 * 1024 * 1024;
    const ASSET_LIMIT_BYTES = 64 * 1024 * 1024;
    let stac: FaultyServer;
    let gw: Gateway;
    let fault: StacFault = 'ok';
    const item = sentinelItem('S2A_rome_0215', '2026-02-15T10:00:00Z', { assets: S3_ASSETS, properties: SHARES });
    const collection = (features: unknown) => JSON.stringify({ type: 'FeatureCollection', features, links: [] });

    type StacFault =
      | 'ok'
      | 'not-json'
      | 'truncated-json'
      | 'truncated-body'
      | 'stall-body'
      | 'features-not-array'
      | 'top-level-array'
      | 'item-without-properties'
      | 'item-without-datetime'
      | 'item-wrong-types'
      | 'huge-declared'
      | 'huge-streamed'
      | 'huge-but-small-enough-to-parse'
      /** A good search whose item's band assets are on this server (GET /files/…), answered as `assetFault` says. */
      | 'http-assets';
    let assetFault: 'garbage' | 'stall' | 'huge' = 'garbage';
    const httpItem = () =>
      sentinelItem('S2A_rome_0215', '2026-02-15T10:00:00Z', {
        assets: {
          red: `${stac.url}/files/red.tif`,
          nir: `${stac.url}/files/nir.tif`,
          scl: `${stac.url}/files/scl.tif`,
        },
        properties: SHARES,
      });

    /** A band asset: 206 to every range request, with bytes that are no GeoTIFF, that stall, or that never end. */
    async function asset(req: IncomingMessage, res: ServerResponse): Promise<void> {
      const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
      const [start, end] = range ? [Number(range[1]), Number(range[2])] : [0, 65_535];
      const headers = {
        'content-type': 'image/tiff',
        'accept-ranges': 'bytes',
        'content-range': `bytes ${start}-${end}/${1 << 30}`,
      };
      const junk = Buffer.alloc(end + 1 - start, 0x5a);
      if (assetFault === 'garbage') return void res.writeHead(206, headers).end(junk);
      if (assetFault === 'stall') {
        res.writeHead(206, headers);
        return void res.write(junk.subarray(0, 16));
      }
      // Far more than the range asked for, and more than any range read may hold.
      res.statusCode = 206;
      return stream(res, headers, ASSET_LIMIT_BYTES + 4 * 1024 * 1024, Buffer.from('II*\0'));
    }

    before(async () => {
      stac = await startFaultyServer((req, res) => {
        if (req.method === 'GET' && req.url?.startsWith('/files/')) return asset(req, res);
        if (req.method !== 'POST' || !req.url?.startsWith('/search')) return void res.writeHead(404).end();
        const json = { 'content-type': 'application/geo+json' };
        const good = collection(fault === 'http-assets' ? [httpItem()] : [item]);
        const send = (body: string) => void res.writeHead(200, json).end(body);
        switch (fault) {
          case 'ok':
          case 'http-assets':
            return send(good);
          case 'not-json':
            return send('<html><body>Service temporarily unavailable</body></html>');
          case 'truncated-json':
            // Well delivered, but the document itself stops half-way.
            return send(good.slice(0, good.length >> 1));
          case 'truncated-body':
            return partial(res, { ...json, 'content-length': String(good.length) }, good.slice(0, 200), 'end');
          case 'stall-body':
            return partial(res, json, good.slice(0, 200), 'stall');
          case 'features-not-array':
            return send(collection({ 0: item }));
          case 'top-level-array':
            return send(JSON.stringify([item]));
          case 'item-without-properties': {
            const { properties: _p, ...rest } = item;
            return send(collection([rest]));
          }
          case 'item-without-datetime':
            return send(collection([{ ...item, properties: { ...item.properties, datetime: null } }]));
          case 'item-wrong-types':
            return send(collection([{ ...item, properties: { ...item.properties, 'eo:cloud_cover': 'low' } }]));
          case 'huge-declared':
            return partial(res, { ...json, 'content-length': String(LIMIT_BYTES * 4) }, good, 'destroy');
          case 'huge-streamed': {
            // A valid collection padded past the bound: refused, never read whole.
            const head = Buffer.from(`{"type":"FeatureCollection","features":[${JSON.stringify(item)}],"padding":"`);
            return stream(res, json, LIMIT_BYTES + 1024 * 1024, head, '"}');
          }
          case 'huge-but-small-enough-to-parse':
            // 5000 items where 10 were asked for: answered, cut to the limit.
            return send(
              collection([
                ...Array.from({ length: 5000 }, (_, i) => ({
                  ...item,
                  id: `S2A_extra_${i}`,
                  properties: { ...item.properties, datetime: '2026-02-01T10:00:00Z' },
                })),
                item,
              ]),
            );
        }
      });
    });
    after(() => stac.close());
    beforeEach(async () => {
      fault = 'ok';
      gw = await startGateway({
        clock: () => Date.parse('2026-03-01T12:00:00Z'),
        imagery: { stacUrl: stac.url, timeoutMs: TIMEOUT_MS },
      });
    });
    afterEach(() => gw.close());

    const query = `cell=${ROME_CELL}&from=2026-02-01&to=2026-02-28`;
    const timed = async (run: () => ReturnType<Gateway['get']>) => {
      const started = performance.now();
      const res = await run();
      return { ...res, ms: performance.now() - started };
    };
    const endpoints = {
      scenes: () => timed(() => gw.get(`/v1/imagery/scenes?${query}`)),
      ndvi: () => timed(() => gw.get(`/v1/imagery/ndvi?${query}`)),
      process: () =>
        timed(() =>
          gw.post('/v1/imagery/process', {
            operation: 'cloud_mask',
            h3_cell: ROME_CELL,
            date_from: '2026-02-01',
            date_to: '2026-02-28',
          }),
        ),
    };

    /** A good answer after the fault, on every endpoint: nothing of the garbage lingers. */
    async function recovers() {
      fault = 'ok';
      const scenes = await endpoints.scenes();
      assert.equal(scenes.status, 200, scenes.text);
      const body = scenes.body as { count: number; scenes: { id: string; cloudCover: number }[] };
      assert.equal(body.count, 1);
      assert.deepEqual(
        body.scenes.map((s) => [s.id, s.cloudCover]),
        [['S2A_rome_0215', 5]],
      );
      const ndvi = await endpoints.ndvi();
      assert.equal(ndvi.status, 200, ndvi.text);
      const result = ndvi.body as { sceneId: string; method: string; meanNdvi: number };
      assert.deepEqual([result.sceneId, result.method, result.meanNdvi], ['S2A_rome_0215', 'metadata', 0.3688]);
    }

    const cases: [StacFault, number, string, RegExp][] = [
      ['not-json', 502, 'upstream_unavailable', /not JSON/],
      ['truncated-json', 502, 'upstream_unavailable', /not JSON/],
      ['truncated-body', 502, 'upstream_unavailable', /unreachable|terminated|STAC/],
      ['stall-body', 504, 'upstream_timeout', new RegExp(`within ${TIMEOUT_MS} ms`)],
      ['features-not-array', 502, 'upstream_unavailable', /malformed STAC response: features/],
      ['top-level-array', 502, 'upstream_unavailable', /malformed STAC response/],
      ['item-without-properties', 502, 'upstream_unavailable', /malformed STAC response: features\.0\.properties/],
      ['item-without-datetime', 502, 'upstream_unavailable', /has no valid datetime/],
      ['item-wrong-types', 502, 'upstream_unavailable', /malformed STAC response: features\.0\.properties/],
      ['huge-declared', 502, 'upstream_unavailable', /more than 16777216 bytes/],
      ['huge-streamed', 502, 'upstream_unavailable', /more than 16777216 bytes/],
    ];
    for (const [name, status, code, detail] of cases) {
      it(`answers ${status} ${code} as JSON to a "${name}" search answer, then serves the good one`, async () => {
        fault = name;
        for (const [endpoint, call] of Object.entries(endpoints)) {
          const res = await call();
          assert.equal(res.status, status, `${endpoint}: ${res.text.slice(0, 300)}`);
          assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
          const body = res.body as { error: string; detail: string };
          assert.equal(body.error, code, endpoint);
          assert.match(body.detail, detail, endpoint);
          assert.ok(res.ms < TIMEOUT_MS + SLACK_MS, `${endpoint} answered after ${Math.round(res.ms)} ms`);
        }
        await recovers();
      });
    }

    for (const [name, reason] of [
      // Which fault it was goes to the logs only: the public answer must not describe the upstream.
      ['garbage', /reading the band pixels failed: band data unavailable\./],
      ['stall', /reading the band pixels failed: band data unavailable\./],
      ['huge', /reading the band pixels failed: band data unavailable\./],
    ] as const) {
      it(`falls back to the metadata NDVI when the band assets are ${name}, within the timeout`, async () => {
        fault = 'http-assets';
        assetFault = name;
        const res = await endpoints.ndvi();
        assert.equal(res.status, 200, res.text.slice(0, 300));
        const result = res.body as { method: string; meanNdvi: number; description: string; cost: number };
        assert.deepEqual([result.method, result.meanNdvi, result.cost], ['metadata', 0.3688, 0]);
        assert.match(result.description, reason);
        assert.ok(res.ms < TIMEOUT_MS + SLACK_MS, `answered after ${Math.round(res.ms)} ms`);
        await recovers();
      });
    }

    it('answers a catalog that returns far more items than asked for, cut to the limit', async () => {
      fault = 'huge-but-small-enough-to-parse';
      const res = await endpoints.scenes();
      assert.equal(res.status, 200, res.text.slice(0, 300));
      const body = res.body as { count: number; limit: number; scenes: { id: string }[] };
      assert.equal(body.limit, 10);
      assert.equal(body.count, 10);
      assert.equal(body.scenes[0]!.id, 'S2A_rome_0215', 'newest first');
      await recovers();
    });
  });
});
