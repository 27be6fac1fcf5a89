import assert from 'node:assert/strict';
import { latLngToCell } from 'h3-js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { cellTile } from '../../core/tile-coords.js';
import { startTileGateway, TILE_TEST_EPOCH as EPOCH } from '../helpers/tile-gateway.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const ROME = latLngToCell(41.9028, 12.4964, 9);

describe('tile grid, stats and parameters over HTTP (/v1/tiles)', () => {
  let xyz: XyzServer;
  let t: Awaited<ReturnType<typeof startTileGateway>>;

  beforeEach(async () => {
    xyz = await startXyzServer();
    t = await startTileGateway(xyz);
  });
  afterEach(async () => {
    await t.gw.close();
    await xyz.close();
  });

  describe('grid', () => {
    it('lists one URL of this service per distinct tile of the cell and its rings', async () => {
      const res = await t.gw.get(`/v1/tiles/grid/${ROME}/14/dark?rings=2`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers.get('access-control-allow-origin'), '*');
      const urls = res.body as string[];
      const pattern = new RegExp(`^${t.gw.url}/v1/tiles/([0-9a-f]{15})/14/dark\\.png$`);
      const tiles = urls.map((u) => {
        const cell = pattern.exec(u)?.[1];
        assert.ok(cell, u);
        return Object.values(cellTile(cell, 14)).join('/');
      });
      assert.ok(urls.length > 1 && urls.length <= 19);
      assert.equal(new Set(tiles).size, urls.length, 'no tile twice');
      assert.equal(urls[0], `${t.gw.url}/v1/tiles/${ROME}/14/dark.png`);
      const lowZoom = await t.gw.get(`/v1/tiles/grid/${ROME}/4/dark?rings=10`);
      assert.equal((lowZoom.body as string[]).length, 1);
      const followed = await t.tile(new URL(urls[1]!).pathname);
      assert.equal(followed.status, 200);
    });

    it('defaults rings to 0 and refuses rings outside 0..10', async () => {
      const none = await t.gw.get(`/v1/tiles/grid/${ROME}/10/terrain`);
      assert.deepEqual(none.body, [`${t.gw.url}/v1/tiles/${ROME}/10/terrain.png`]);
      assert.equal((await t.gw.get(`/v1/tiles/grid/${ROME}/10/terrain?rings=10`)).status, 200);
      for (const rings of ['11', '-1', '1.5', 'two', '']) {
        const res = await t.gw.get(`/v1/tiles/grid/${ROME}/10/terrain?rings=${rings}`);
        assert.equal(res.status, 400, rings);
        assert.equal((res.body as { error: string }).error, 'invalid_rings');
      }
    });
  });

  describe('stats', () => {
    it('counts hits, misses, bytes and cost per hour and style', async () => {
      const miss = await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      await t.tile(`/v1/tiles/${ROME}/10/terrain.png`);
      await t.tile(`/v1/tiles/${ROME}/10/terrain.png`, { 'if-none-match': miss.headers.get('etag')! });
      t.advanceEpoch();
      const satellite = await t.tile(`/v1/tiles/${ROME}/10/satellite.jpg`);
      const res = await t.gw.get('/v1/tiles/stats?hours=2');
      assert.equal(res.status, 200);
      const body = res.body as {
        hours: number;
        buckets: {
          epoch: number;
          start: string;
          styles: Record<string, Record<string, number>>;
          totals: Record<string, number>;
        }[];
        totals: Record<string, number>;
      };
      assert.equal(body.hours, 2);
      assert.deepEqual(
        body.buckets.map((b) => b.epoch),
        [EPOCH, EPOCH + 1],
      );
      assert.equal(body.buckets[0]!.start, new Date(DEFAULT_EPOCH_GENESIS_MS + EPOCH * EPOCH_MS).toISOString());
      assert.deepEqual(body.buckets[0]!.styles.terrain, {
        hits: 2,
        misses: 1,
        errors: 0,
        bytes: 2 * miss.bytes.length,
        cost: 0.00012,
      });
      assert.deepEqual(body.buckets[1]!.styles.satellite, {
        hits: 0,
        misses: 1,
        errors: 0,
        bytes: satellite.bytes.length,
        cost: 0.0001,
      });
      assert.equal(body.totals.hits, 2);
      assert.equal(body.totals.misses, 2);
      assert.equal(((await t.gw.get('/v1/tiles/stats')).body as { buckets: unknown[] }).buckets.length, 24);
    });

    it('refuses hours outside 1..168', async () => {
      assert.equal((await t.gw.get('/v1/tiles/stats?hours=168')).status, 200);
      for (const hours of ['0', '169', '1.5', 'day']) {
        const res = await t.gw.get(`/v1/tiles/stats?hours=${hours}`);
        assert.equal(res.status, 400, hours);
        assert.equal((res.body as { error: string }).error, 'invalid_hours');
      }
    });
  });

  it('refuses each bad parameter with its own 400 code', async () => {
    const cases: [string, string][] = [
      ['/v1/tiles/not-a-cell/10/dark.png', 'invalid_cell'],
      ['/v1/tiles/861e8050fffffffff/10/dark.png', 'invalid_cell'],
      ['/v1/tiles/grid/zzz/10/dark', 'invalid_cell'],
      [`/v1/tiles/${ROME}/21/dark.png`, 'invalid_zoom'],
      [`/v1/tiles/${ROME}/-1/dark.png`, 'invalid_zoom'],
      [`/v1/tiles/${ROME}/ten/dark.png`, 'invalid_zoom'],
      [`/v1/tiles/${ROME}/1.5/dark.png`, 'invalid_zoom'],
      [`/v1/tiles/grid/${ROME}/99/dark`, 'invalid_zoom'],
      [`/v1/tiles/${ROME}/10/toner.png`, 'invalid_style'],
      [`/v1/tiles/grid/${ROME}/10/toner`, 'invalid_style'],
      [`/v1/tiles/${ROME}/10/dark.gif`, 'invalid_format'],
      [`/v1/tiles/${ROME}/10/dark`, 'invalid_format'],
    ];
    for (const [path, code] of cases) {
      const res = await t.gw.get(path);
      assert.equal(res.status, 400, path);
      assert.equal((res.body as { error: string }).error, code, path);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', `${path}: a browser can read the error`);
    }
    const style = await t.gw.get(`/v1/tiles/${ROME}/10/toner.png`);
    assert.match((style.body as { detail: string }).detail, /osm-bright, osm-standard, dark, terrain, satellite/);
    assert.equal(xyz.count(), 0);
  });
});
