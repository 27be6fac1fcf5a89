/**
 * An unreachable tile upstream is said once, with what to do, not once per tile: an offline `npm start` filled
 * its log with a warning for every tile the dashboard asked for.
 */
import assert from 'node:assert/strict';
import pino from 'pino';
import { latLngToCell } from 'h3-js';
import { createTileSource } from '../../../activities/tiles/tile-source.js';
import { TILE_STYLES } from '../../../core/tile-styles.js';
import { startXyzServer, type XyzServer } from '../../helpers/xyz-server.js';

describe('tile upstream outages in the log', () => {
  let xyz: XyzServer;
  before(async () => {
    xyz = await startXyzServer();
  });
  after(() => xyz.close());

  it('warns once per outage with the way out (DEMO=true), then logs at debug until the host answers again', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const templates = Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')]));
    const source = createTileSource({
      config: { templates: templates as never, timeoutMs: 1000, cacheBytes: 1 << 20, userAgent: 'test' },
      logger,
    });
    const tile = (lng: number) => ({
      cell: latLngToCell(41.89, lng, 9),
      zoom: 12,
      style: 'osm-bright' as const,
      format: 'png' as const,
    });
    xyz.failWith = 503;
    for (const lng of [12.49, 12.6, 12.7]) await assert.rejects(async () => source.lookup(tile(lng), 1));
    const levels = (level: number) => lines.filter((l) => l.level === level);
    assert.equal(levels(40).length, 1, 'one warning for the outage');
    assert.match(levels(40)[0]!.msg, /DEMO=true/);
    assert.equal(levels(20).length, 2, 'the other failures at debug level');

    xyz.failWith = null;
    await source.lookup(tile(12.8), 1);
    assert.equal(levels(30).length, 1, 'an info line when the host answers again');
    xyz.failWith = 503;
    await assert.rejects(async () => source.lookup(tile(12.9), 1));
    assert.equal(levels(40).length, 2, 'a new outage is said again');
  });
});
