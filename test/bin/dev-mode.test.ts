/**
 * The development settings behind the quickstart (docs/quickstart.md): DEMO and EPOCH_SECONDS, what they imply,
 * everything they are refused with, one epoch length per store, the demo tile upstream over HTTP, and short
 * epochs in the sealer.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { lastDueEpoch } from '../../activities/proof/epoch-sealer.js';
import { ConfigError, DEFAULT_TILE_TEMPLATES, loadConfig } from '../../bin/config.js';
import { startDemoUpstream, type DemoUpstream } from '../../bin/demo-upstream.js';
import { checkStoreEpochLength } from '../../bin/epoch-length.js';
import { storeSyncCommand } from '../../bin/store-sync.js';
import { EPOCH_MS, epochAt, epochWindow } from '../../core/epoch.js';

describe('development mode: DEMO and EPOCH_SECONDS', () => {
  describe('configuration', () => {
    it('is off by default: hourly epochs, ./data, the public tile upstreams, the usual seal timing', () => {
      const config = loadConfig({});
      assert.equal(config.demo, false);
      assert.equal(config.epochMs, EPOCH_MS);
      assert.equal(config.dataDir, './data');
      assert.equal(config.sealGraceMs, 60_000);
      assert.equal(config.sealCheckMs, 30_000);
      assert.deepEqual(config.tiles.templates, DEFAULT_TILE_TEMPLATES);
    });

    it('DEMO=true implies 60 s epochs sealed 5 s after they end, in ./data-demo', () => {
      const config = loadConfig({ DEMO: 'true' });
      assert.equal(config.demo, true);
      assert.equal(config.epochMs, 60_000);
      assert.equal(config.dataDir, './data-demo');
      assert.equal(config.sealGraceMs, 5_000);
      assert.equal(config.sealCheckMs, 5_000);
    });

    it('keeps what is set explicitly: EPOCH_SECONDS, DATA_DIR, SEAL_GRACE_SECONDS, SEAL_CHECK_SECONDS', () => {
      const config = loadConfig({
        DEMO: 'true',
        EPOCH_SECONDS: '10',
        DATA_DIR: '/tmp/x',
        SEAL_GRACE_SECONDS: '40',
        SEAL_CHECK_SECONDS: '2',
      });
      assert.equal(config.epochMs, 10_000);
      assert.equal(config.dataDir, '/tmp/x');
      assert.equal(config.sealGraceMs, 40_000);
      assert.equal(config.sealCheckMs, 2_000);
      assert.equal(loadConfig({ EPOCH_SECONDS: '3600' }).epochMs, EPOCH_MS);
    });

    it('refuses an epoch length below 10 s or above the hour', () => {
      assert.throws(() => loadConfig({ EPOCH_SECONDS: '9' }), /EPOCH_SECONDS/);
      assert.throws(() => loadConfig({ EPOCH_SECONDS: '3601' }), /EPOCH_SECONDS/);
    });

    it('refuses DEMO and short epochs in production', () => {
      assert.throws(
        () => loadConfig({ DEMO: 'true', NODE_ENV: 'production' }),
        (e: Error) => {
          assert.ok(e instanceof ConfigError);
          assert.match(e.message, /DEMO: refused when NODE_ENV=production/);
          return true;
        },
      );
      assert.throws(() => loadConfig({ EPOCH_SECONDS: '60', NODE_ENV: 'production' }), /NODE_ENV=production/);
      assert.equal(loadConfig({ NODE_ENV: 'production' }).epochMs, EPOCH_MS);
    });

    for (const [name, env] of [
      ['MONGODB_URI', { MONGODB_URI: 'mongodb://127.0.0.1:1' }],
      ['CENTRAL_STORE_URL', { CENTRAL_STORE_URL: 'http://127.0.0.1:1' }],
      ['ORCHESTRATOR=temporal', { ORCHESTRATOR: 'temporal' }],
      ['LEDGER=stellar', { LEDGER: 'stellar' }],
      ['NODE_SECRET_KEY', { NODE_SECRET_KEY: 'ab'.repeat(32) }],
    ] as const) {
      it(`refuses short epochs with ${name}, where their numbers would leave this node`, () => {
        assert.throws(
          () => loadConfig({ EPOCH_SECONDS: '60', ...env }),
          (e: Error) => {
            assert.ok(e instanceof ConfigError);
            assert.match(e.message, new RegExp(`EPOCH_SECONDS: .*refused with ${name}`));
            return true;
          },
        );
        assert.throws(() => loadConfig({ DEMO: 'true', ...env }), /DEMO \(EPOCH_SECONDS=60\)/);
      });
    }
  });

  describe('epochs of another length', () => {
    it('numbers and windows epochs of the given length, and the sealer finds them due after the grace', () => {
      const genesis = Date.UTC(2026, 0, 1);
      assert.equal(epochAt(genesis + 125_000, genesis, 60_000), 2);
      assert.deepEqual(epochWindow(2, genesis, 60_000), { start: genesis + 120_000, end: genesis + 180_000 });
      // Epoch 2 ends at +180 s: due once the 5 s grace has passed, not before.
      assert.equal(lastDueEpoch(genesis + 184_999, genesis, 5_000, 60_000), 1);
      assert.equal(lastDueEpoch(genesis + 185_000, genesis, 5_000, 60_000), 2);
      assert.equal(lastDueEpoch(genesis + 185_000, genesis, 5_000), -1);
      assert.throws(() => epochAt(genesis, genesis, 5_000), RangeError);
      assert.throws(() => epochAt(genesis, genesis, EPOCH_MS + 1), RangeError);
    });
  });

  describe('one epoch length per store (DATA_DIR/epoch-length.json)', () => {
    let dir: string;
    beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gf-epoch-length-'))));
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('marks a new short-epoch store and refuses it to an hourly start, and the reverse', () => {
      checkStoreEpochLength(dir, 60_000);
      assert.deepEqual(JSON.parse(readFileSync(join(dir, 'epoch-length.json'), 'utf8')), { epoch_seconds: 60 });
      checkStoreEpochLength(dir, 60_000);
      assert.throws(() => checkStoreEpochLength(dir, EPOCH_MS), /has 60-second epochs, not 3600; use another DATA_DIR/);
      assert.throws(() => checkStoreEpochLength(dir, 10_000), /has 60-second epochs, not 10/);
    });

    it('store sync never pushes a short-epoch store to a central store', async () => {
      const central = ['--central', 'http://127.0.0.1:9'];
      await assert.rejects(
        storeSyncCommand(central, { env: { DEMO: 'true', DATA_DIR: dir }, out: () => undefined }),
        /`store sync` refuses them/,
      );
      checkStoreEpochLength(dir, 60_000);
      await assert.rejects(
        storeSyncCommand(central, { env: { DATA_DIR: dir }, out: () => undefined }),
        /has 60-second epochs, not 3600/,
      );
    });

    it('takes an existing store without a marker as hourly', () => {
      writeFileSync(join(dir, 'geofabric.db'), '');
      checkStoreEpochLength(dir, EPOCH_MS);
      assert.equal(existsSync(join(dir, 'epoch-length.json')), false);
      assert.throws(() => checkStoreEpochLength(dir, 60_000), /has 3600-second epochs, not 60/);
    });
  });

  describe('the demo tile upstream', () => {
    let demo: DemoUpstream;
    before(async () => (demo = await startDemoUpstream()));
    after(() => demo.close());

    it('serves a 256 px PNG per style and z/x/y, labelled, with an ETag that gives 304', async () => {
      const url = demo.templates.terrain.replace('{z}', '3').replace('{x}', '4').replace('{y}', '5');
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/demo\/terrain\/3\/4\/5\.png$/);
      const res = await fetch(url);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal(res.headers.get('x-geofabric-demo'), 'synthetic tile, not map data');
      const png = Buffer.from(await res.arrayBuffer());
      const meta = await sharp(png).metadata();
      assert.deepEqual([meta.format, meta.width, meta.height], ['png', 256, 256]);
      const again = await fetch(url, { headers: { 'if-none-match': res.headers.get('etag')! } });
      assert.equal(again.status, 304);
      const other = await fetch(url.replace('/terrain/', '/dark/'));
      assert.notDeepEqual(Buffer.from(await other.arrayBuffer()), png);
      assert.match(demo.name, /^demo-tiles@127\.0\.0\.1:\d+$/);
    });

    it('answers 404 to what is not a tile: unknown style, x or y outside the zoom, zoom above 20', async () => {
      for (const path of ['/demo/nope/1/0/0.png', '/demo/dark/1/2/0.png', '/demo/dark/21/0/0.png', '/']) {
        const res = await fetch(`${demo.url}${path}`);
        assert.equal(res.status, 404, path);
        await res.arrayBuffer();
      }
    });
  });
});
