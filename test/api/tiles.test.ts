import assert from 'node:assert/strict';
import { gridDisk, latLngToCell } from 'h3-js';
import { sha256Hex } from '../../core/hash.js';
import { cellTile } from '../../core/tile-coords.js';
import { startTileGateway, TILE_TEST_EPOCH as EPOCH } from '../helpers/tile-gateway.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const ROME = latLngToCell(41.9028, 12.4964, 9); // z10 tile 547/380
const MILAN = latLngToCell(45.4642, 9.19, 9);
const BERLIN = latLngToCell(52.52, 13.405, 9);
const EXPOSED = [
  'X-Svc-Worker',
  'X-Svc-Cell',
  'X-Svc-Epoch',
  'X-Svc-Proof',
  'X-Svc-Cache',
  'X-Svc-Cost',
  'X-Svc-Record',
  'ETag',
];

const PNG_MAGIC = [0x89, 0x50, 0x4e, 0x47];
const JPEG_MAGIC = [0xff, 0xd8, 0xff];
const startsWith = (bytes: Buffer, magic: number[]) => magic.every((b, i) => bytes[i] === b);

describe('tiles over HTTP (/v1/tiles)', () => {
  let xyz: XyzServer;
  let t: Awaited<ReturnType<typeof startTileGateway>>;

  beforeEach(async () => {
    xyz = await startXyzServer();
    t = await startTileGateway(xyz, { timeoutMs: 300 });
  });
  afterEach(async () => {
    await t.gw.close();
    await xyz.close();
  });

  describe('a tile', () => {
    it('is the upstream tile holding the cell centroid, with every docs/protocol.md §2.4 header, exposed to browsers', async () => {
      const { x, y } = cellTile(ROME, 10);
      assert.deepEqual({ x, y }, { x: 547, y: 380 });
      const res = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.png`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.bytes, await xyz.bytesAt('/png/10/547/380'));
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal(res.headers.get('x-svc-worker'), 'tile-proxy');
      assert.equal(res.headers.get('x-svc-cell'), ROME);
      assert.equal(res.headers.get('x-svc-epoch'), String(EPOCH));
      assert.equal(res.headers.get('x-svc-proof'), sha256Hex(res.bytes));
      assert.equal(res.headers.get('x-svc-cache'), 'MISS');
      assert.equal(res.headers.get('x-svc-cost'), '0.0001');
      assert.match(res.headers.get('x-svc-record') ?? '', /^tile:[0-9a-f-]{36}$/);
      assert.equal(res.headers.get('etag'), `"${sha256Hex(res.bytes)}"`);
      assert.equal(res.headers.get('cache-control'), 'public, max-age=3600');
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      const exposed = (res.headers.get('access-control-expose-headers') ?? '')
        .split(/\s*,\s*/)
        .map((h) => h.toLowerCase());
      for (const header of EXPOSED) assert.ok(exposed.includes(header.toLowerCase()), header);
      assert.equal(xyz.requests[0]?.userAgent, 'geofabric-test');
    });

    it('substitutes the template placeholders in its order (satellite is z/y/x)', async () => {
      const res = await t.tile(`/v1/tiles/${ROME}/10/satellite.jpg`);
      assert.equal(res.status, 200);
      assert.deepEqual(
        xyz.requests.map((r) => r.path),
        ['/jpg/10/380/547'],
      );
      assert.equal(res.headers.get('content-type'), 'image/jpeg');
      assert.deepEqual(res.bytes, await xyz.bytesAt('/jpg/10/380/547'));
    });

    it('is converted to the format asked for, judged by its bytes, not the upstream content-type', async () => {
      xyz.contentType = 'image/png'; // the upstream lies, as docs/protocol.md §2.4 observed
      const png = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      assert.equal(png.headers.get('content-type'), 'image/png');
      assert.ok(startsWith(png.bytes, PNG_MAGIC));
      assert.equal(png.headers.get('x-svc-proof'), sha256Hex(png.bytes));
      const jpeg = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.jpeg`);
      assert.equal(jpeg.headers.get('content-type'), 'image/jpeg');
      assert.ok(startsWith(jpeg.bytes, JPEG_MAGIC));
      const webp = await t.tile(`/v1/tiles/${ROME}/10/satellite.webp`);
      assert.equal(webp.headers.get('content-type'), 'image/webp');
      assert.equal(webp.bytes.subarray(8, 12).toString(), 'WEBP');
    });

    it('is a HIT the second time, from memory, at the hit price', async () => {
      const first = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      const second = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      assert.equal(second.headers.get('x-svc-cache'), 'HIT');
      assert.equal(second.headers.get('x-svc-cost'), '0.00001');
      assert.deepEqual(second.bytes, first.bytes);
      assert.equal(second.headers.get('x-svc-proof'), first.headers.get('x-svc-proof'));
      // Both serves of the tile within one flush of the proof writer are listed in one record.
      assert.equal(second.headers.get('x-svc-record'), first.headers.get('x-svc-record'));
      assert.equal(xyz.count(), 1);
    });

    it('answers 304 to a matching If-None-Match (strong, weak, listed or *), with the headers and no body', async () => {
      const first = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      const etag = first.headers.get('etag')!;
      for (const condition of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`, { 'if-none-match': condition });
        assert.equal(res.status, 304, condition);
        assert.equal(res.bytes.length, 0);
        assert.equal(res.headers.get('etag'), etag);
        assert.equal(res.headers.get('x-svc-cache'), 'HIT');
        assert.equal(res.headers.get('x-svc-proof'), first.headers.get('x-svc-proof'));
        assert.ok(res.headers.get('x-svc-record'));
      }
      const other = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`, { 'if-none-match': '"something-else"' });
      assert.equal(other.status, 200);
      assert.equal(xyz.count(), 1);
    });

    it('coalesces 20 concurrent misses into one upstream request', async () => {
      xyz.delayMs = 150;
      const all = await Promise.all(Array.from({ length: 20 }, () => t.tile(`/v1/tiles/${ROME}/12/dark.webp`)));
      assert.equal(xyz.count(), 1);
      assert.ok(
        all.every((r) => r.status === 200 && r.headers.get('x-svc-proof') === all[0]!.headers.get('x-svc-proof')),
      );
      const caches = all.map((r) => r.headers.get('x-svc-cache'));
      assert.equal(caches.filter((c) => c === 'MISS').length, 1, 'the request that fetched is the one MISS');
    });
  });

  describe('one upstream fetch per upstream tile', () => {
    /** Three cells whose centroids lie in ROME's z10 tile. */
    const sameTile = () => {
      const { x, y } = cellTile(ROME, 10);
      const cells = gridDisk(ROME, 2).filter((c) => {
        const t = cellTile(c, 10);
        return t.x === x && t.y === y;
      });
      assert.ok(cells.length >= 3);
      return cells.slice(0, 3);
    };

    it('serves three cells of one tile, in two formats, from ONE upstream request', async () => {
      const cells = sameTile();
      const served = [];
      for (const cell of cells) {
        for (const format of ['png', 'jpg']) served.push(await t.tile(`/v1/tiles/${cell}/10/terrain.${format}`));
      }
      assert.deepEqual(
        xyz.requests.map((r) => r.path),
        ['/png/10/547/380'],
      );
      assert.deepEqual(
        served.map((r) => r.status),
        [200, 200, 200, 200, 200, 200],
      );
      // The served key stays the client's: its cell, its format's bytes, content-type, ETag and proof.
      assert.deepEqual(
        served.map((r) => r.headers.get('x-svc-cell')),
        cells.flatMap((c) => [c, c]),
      );
      const [png, jpg] = served;
      assert.deepEqual(png!.bytes, await xyz.bytesAt('/png/10/547/380'));
      assert.ok(startsWith(jpg!.bytes, JPEG_MAGIC));
      assert.equal(jpg!.headers.get('content-type'), 'image/jpeg');
      for (const [i, res] of served.entries()) {
        const first = i % 2 === 0 ? png! : jpg!;
        assert.deepEqual(res.bytes, first.bytes, 'every cell of the tile gets the same bytes per format');
        assert.equal(res.headers.get('x-svc-proof'), sha256Hex(res.bytes));
        assert.equal(res.headers.get('etag'), `"${sha256Hex(res.bytes)}"`);
      }
      assert.deepEqual(
        served.map((r) => r.headers.get('x-svc-cache')),
        ['MISS', 'HIT', 'HIT', 'HIT', 'HIT', 'HIT'],
        'only the request that made the upstream send bytes is a MISS',
      );
      // Each cell's serves are in that cell's records.
      await t.gw.writer.flush();
      const { records } = await t.gw.proofs.queryRecords({ collection: 'tile', limit: 100 });
      assert.deepEqual(new Set(records.map((r) => r.address.h3_cell)), new Set(cells));
      assert.equal(records.length, 6, 'one record per cell and format');
    });

    it('coalesces concurrent requests of three cells in two formats into ONE upstream request', async () => {
      xyz.delayMs = 150;
      const cells = sameTile();
      const all = await Promise.all(
        cells.flatMap((cell) => ['webp', 'png'].map((f) => t.tile(`/v1/tiles/${cell}/10/osm-standard.${f}`))),
      );
      assert.equal(xyz.count(), 1);
      assert.ok(all.every((r) => r.status === 200));
      assert.equal(all.filter((r) => r.headers.get('x-svc-cache') === 'MISS').length, 1);
      assert.equal(new Set(all.map((r) => r.headers.get('x-svc-proof'))).size, 2, 'one proof per format');
      // The same epoch: no further upstream request, whatever cell or format.
      await t.tile(`/v1/tiles/${cells[0]}/10/osm-standard.jpg`);
      assert.equal(xyz.count(), 1);
    });

    it('revalidates the upstream tile once per epoch for all its cells and formats', async () => {
      const cells = sameTile();
      await t.tile(`/v1/tiles/${cells[0]}/10/osm-standard.png`);
      await t.tile(`/v1/tiles/${cells[1]}/10/osm-standard.webp`);
      t.advanceEpoch();
      const next = await Promise.all([
        t.tile(`/v1/tiles/${cells[1]}/10/osm-standard.webp`),
        t.tile(`/v1/tiles/${cells[2]}/10/osm-standard.png`),
      ]);
      assert.equal(xyz.count(), 2);
      assert.equal(xyz.requests[1]?.status, 304);
      assert.deepEqual(
        next.map((r) => r.headers.get('x-svc-cache')),
        ['HIT', 'HIT'],
      );
    });
  });

  describe('refresh when the epoch advances', () => {
    it('asks the upstream conditionally and stays a HIT when the source did not change', async () => {
      const first = await t.tile(`/v1/tiles/${ROME}/10/osm-standard.png`);
      t.advanceEpoch();
      const next = await t.tile(`/v1/tiles/${ROME}/10/osm-standard.png`);
      assert.equal(xyz.count(), 2);
      assert.match(xyz.requests[1]?.ifNoneMatch ?? '', /^"/);
      assert.equal(xyz.requests[1]?.status, 304);
      assert.equal(next.headers.get('x-svc-cache'), 'HIT');
      assert.equal(next.headers.get('x-svc-epoch'), String(EPOCH + 1));
      assert.deepEqual(next.bytes, first.bytes);
      const again = await t.tile(`/v1/tiles/${ROME}/10/osm-standard.png`);
      assert.equal(again.headers.get('x-svc-cache'), 'HIT');
      assert.equal(xyz.count(), 2, 're-stamped: no further upstream request this epoch');
    });

    it('replaces the tile (MISS, new bytes) when the source changed', async () => {
      const first = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      xyz.change();
      const sameEpoch = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      assert.equal(sameEpoch.headers.get('x-svc-proof'), first.headers.get('x-svc-proof'), 'cached within the epoch');
      t.advanceEpoch();
      const next = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
      assert.equal(next.headers.get('x-svc-cache'), 'MISS');
      assert.notDeepEqual(next.bytes, first.bytes);
      assert.equal(next.headers.get('x-svc-proof'), sha256Hex(next.bytes));
      assert.ok(startsWith(next.bytes, PNG_MAGIC));
    });

    it('compares the bytes when the upstream sends no validators', async () => {
      xyz.validators = false;
      await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      t.advanceEpoch();
      const unchanged = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      assert.equal(xyz.requests[1]?.ifNoneMatch, undefined);
      assert.equal(unchanged.headers.get('x-svc-cache'), 'HIT');
      xyz.change();
      t.advanceEpoch();
      assert.equal((await t.tile(`/v1/tiles/${ROME}/10/terrain.png`)).headers.get('x-svc-cache'), 'MISS');
    });
  });

  describe('upstream failures', () => {
    it('answers 502 upstream_unavailable when the upstream is down, and caches nothing', async () => {
      const down = await startTileGateway(xyz, { templates: { terrain: 'http://127.0.0.1:9/{z}/{x}/{y}.png' } });
      try {
        const res = await down.tile(`/v1/tiles/${ROME}/10/terrain.png`);
        assert.equal(res.status, 502);
        assert.equal(res.json?.error, 'upstream_unavailable');
      } finally {
        await down.gw.close();
      }
      xyz.failWith = 500;
      assert.equal((await t.tile(`/v1/tiles/${ROME}/10/terrain.png`)).status, 502);
      assert.equal((await t.tile(`/v1/tiles/${ROME}/10/terrain.png`)).status, 502);
      assert.equal(xyz.count(), 2, 'a failure is never cached');
      xyz.failWith = null;
      const ok = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-svc-cache'), 'MISS');
    });

    it('answers 404 tile_not_found when the upstream has no such tile, to browsers too, and caches nothing', async () => {
      const missing = await startTileGateway(xyz, { templates: { dark: `${xyz.url}/none/{z}/{x}/{y}` } });
      try {
        const res = await missing.tile(`/v1/tiles/${ROME}/10/dark.png`);
        assert.equal(res.status, 404);
        assert.equal(res.json?.error, 'tile_not_found');
        assert.match(res.json?.detail ?? '', /404/);
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
        assert.equal((await missing.tile(`/v1/tiles/${ROME}/10/dark.webp`)).status, 404);
        assert.equal(xyz.count('/none/'), 2, 'a 404 is not cached');
      } finally {
        await missing.gw.close();
      }
    });

    it('answers 502 when the upstream sends no image, or another 4xx', async () => {
      xyz.failWith = 403;
      const refused = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.png`);
      assert.equal(refused.status, 502);
      assert.match(refused.json?.detail ?? '', /403/);
      xyz.failWith = null;
      xyz.garbage = true;
      const res = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.png`);
      assert.equal(res.status, 502);
      assert.equal(res.json?.error, 'upstream_unavailable');
    });

    it('answers 504 upstream_timeout when the upstream is slower than the timeout, and caches nothing', async () => {
      xyz.delayMs = 1000;
      const res = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.png`);
      assert.equal(res.status, 504);
      assert.equal(res.json?.error, 'upstream_timeout');
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      xyz.delayMs = 0;
      const ok = await t.tile(`/v1/tiles/${ROME}/10/osm-bright.png`);
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('x-svc-cache'), 'MISS');
      assert.equal(xyz.count(), 2);
    });
  });

  it('evicts the least recently used tile when the byte budget is spent', async () => {
    const paths = [ROME, MILAN, BERLIN].map((cell) => {
      const { x, y } = cellTile(cell, 10);
      return `/png/10/${x}/${y}`;
    });
    const sizes = await Promise.all(paths.map(async (p) => (await xyz.bytesAt(p)).length));
    const small = await startTileGateway(xyz, { cacheBytes: Math.max(...sizes) * 2 + 2048 }); // two tiles fit
    try {
      const get = async (cell: string) =>
        (await small.tile(`/v1/tiles/${cell}/10/terrain.png`)).headers.get('x-svc-cache');
      assert.deepEqual([await get(ROME), await get(MILAN), await get(ROME)], ['MISS', 'MISS', 'HIT']);
      assert.equal(await get(BERLIN), 'MISS'); // evicts Milan, the least recently used
      assert.deepEqual([await get(ROME), await get(MILAN)], ['HIT', 'MISS']);
      assert.deepEqual(
        paths.map((p) => xyz.count(p)),
        [1, 2, 1],
      );
    } finally {
      await small.gw.close();
    }
  });

  it('lists every serve in a tile/raster record whose sha256 is the X-Svc-Proof', async () => {
    const miss = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
    const hit = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`);
    const notModified = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`, {
      'if-none-match': hit.headers.get('etag')!,
    });
    await t.tile(`/v1/tiles/${ROME}/10/nonsense.png`); // refused: not a serve
    await t.gw.writer.flush();
    const later = await t.tile(`/v1/tiles/${ROME}/10/satellite.png`); // after the flush: a new record
    await t.gw.writer.flush();
    const { records } = await t.gw.proofs.queryRecords({ collection: 'tile', limit: 100 });
    assert.equal(records.length, 2);
    const [record, next] = records;
    assert.equal(record!.id, miss.headers.get('x-svc-record'), 'X-Svc-Record names the record');
    for (const res of [hit, notModified]) assert.equal(res.headers.get('x-svc-record'), record!.id);
    assert.equal(next!.id, later.headers.get('x-svc-record'));
    assert.equal(record!.payload_type, 'tile/raster');
    assert.equal(record!.address.h3_cell, ROME);
    assert.equal(record!.address.epoch, Number(miss.headers.get('x-svc-epoch')));
    const payload = record!.payload as Record<string, unknown>;
    assert.ok(typeof payload.first_served_at === 'string' && typeof payload.last_served_at === 'string');
    const { first_served_at: _first, last_served_at: _last, ...rest } = payload;
    const serve = (res: typeof miss, status: number) => ({
      request_id: res.headers.get('x-request-id'),
      cache: res.headers.get('x-svc-cache'),
      status,
      cost: Number(res.headers.get('x-svc-cost')),
    });
    assert.deepEqual(rest, {
      version: 1,
      kind: 'serves',
      style: 'satellite',
      zoom: 10,
      x: 547,
      y: 380,
      format: 'png',
      bytes: miss.bytes.length,
      sha256: sha256Hex(miss.bytes),
      worker: 'tile-proxy',
      upstream_host: new URL(xyz.url).host,
      serve_count: 3,
      serves: [serve(miss, 200), serve(hit, 200), serve(notModified, 304)],
    });
    assert.deepEqual(
      [miss, hit, notModified].map((r) => r.headers.get('x-svc-cache')),
      ['MISS', 'HIT', 'HIT'],
    );
    assert.equal(miss.headers.get('x-svc-proof'), sha256Hex(miss.bytes));
  });
});
