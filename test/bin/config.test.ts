import assert from 'node:assert/strict';
import { ConfigError, DEFAULT_STAC_URL, DEFAULT_TILE_TEMPLATES, loadConfig } from '../../bin/config.js';

describe('configuration (bin/config.ts)', () => {
  it('runs with no environment at all: every setting has a default', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.deepEqual(config.tiles.templates, DEFAULT_TILE_TEMPLATES);
    assert.equal(config.tiles.cacheBytes, 256 * 1024 * 1024);
    assert.equal(config.imagery.stacUrl, DEFAULT_STAC_URL);
    assert.equal(config.imagery.collection, 'sentinel-2-l2a');
    assert.match(config.tiles.userAgent, /^geofabric\/\d+\.\d+\.\d+/);
  });

  it('bounds requests by default: per-IP and per-principal rates, receive timeouts, no trusted proxy', () => {
    assert.deepEqual(loadConfig({}).httpLimits, {
      ipPerMinute: 6000,
      principalPerMinute: 1200,
      burstSeconds: 10,
      trustProxy: false,
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 20_000,
    });
    const set = loadConfig({
      RATE_LIMIT_IP_PER_MINUTE: '0',
      RATE_LIMIT_PRINCIPAL_PER_MINUTE: '60',
      RATE_LIMIT_BURST_SECONDS: '2',
      TRUST_PROXY: 'true',
      REQUEST_TIMEOUT_SECONDS: '5',
      HEADERS_TIMEOUT_SECONDS: '9',
      STORE_MAX_MB: '64',
    });
    // The headers cannot take longer than the whole request.
    assert.deepEqual(set.httpLimits, {
      ipPerMinute: 0,
      principalPerMinute: 60,
      burstSeconds: 2,
      trustProxy: true,
      requestTimeoutMs: 5000,
      headersTimeoutMs: 5000,
    });
    assert.equal(set.storeMaxBytes, 64 * 1024 * 1024);
    assert.equal(loadConfig({}).storeMaxBytes, undefined);
    assert.throws(() => loadConfig({ RATE_LIMIT_IP_PER_MINUTE: '-1' }), /RATE_LIMIT_IP_PER_MINUTE/);
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_SECONDS: '0' }), /REQUEST_TIMEOUT_SECONDS/);
  });

  it('bounds proof store pushes by default and takes node keys only as Ed25519 public keys', () => {
    assert.deepEqual(loadConfig({}).proofSync, {
      nodeKeys: [],
      bounds: { itemsPerHour: 36_000, bytesPerHour: 64 * 1024 * 1024 },
      maxBackfillEpochs: 168,
    });
    const pk = 'ab'.repeat(32);
    const set = loadConfig({
      SYNC_NODE_KEYS: ` ${pk} , ${'cd'.repeat(32)}`,
      SYNC_MAX_RECORDS_PER_HOUR: '500',
      SYNC_MAX_MB_PER_HOUR: '2',
      SYNC_MAX_BACKFILL_HOURS: '24',
    }).proofSync;
    assert.deepEqual(set, {
      nodeKeys: [pk, 'cd'.repeat(32)],
      bounds: { itemsPerHour: 500, bytesPerHour: 2 * 1024 * 1024 },
      maxBackfillEpochs: 24,
    });
    assert.throws(() => loadConfig({ SYNC_NODE_KEYS: 'not-a-key' }), /SYNC_NODE_KEYS/);
    assert.throws(() => loadConfig({ SYNC_MAX_RECORDS_PER_HOUR: '0' }), /SYNC_MAX_RECORDS_PER_HOUR/);
  });

  it('the default satellite source orders its path z/y/x', () => {
    assert.match(DEFAULT_TILE_TEMPLATES.satellite, /\{z\}\/\{y\}\/\{x\}$/);
  });

  it('takes a tile upstream per style and a STAC root without its trailing slash', () => {
    const config = loadConfig({
      TILE_URL_DARK: 'http://tiles.internal:8081/dark/{z}/{x}/{y}.png',
      TILE_CACHE_MB: '64',
      STAC_URL: 'http://stac.internal/v1/',
    });
    assert.equal(config.tiles.templates.dark, 'http://tiles.internal:8081/dark/{z}/{x}/{y}.png');
    assert.equal(config.tiles.templates.terrain, DEFAULT_TILE_TEMPLATES.terrain);
    assert.equal(config.tiles.cacheBytes, 64 * 1024 * 1024);
    assert.equal(config.imagery.stacUrl, 'http://stac.internal/v1');
  });

  for (const [value, why] of [
    ['http://tiles.internal/{z}/{x}.png', 'no {y}'],
    ['ftp://tiles.internal/{z}/{x}/{y}.png', 'not http(s)'],
    ['tiles/{z}/{x}/{y}.png', 'not a URL'],
  ]) {
    it(`refuses a tile template with ${why}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ TILE_URL_SATELLITE: value }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          assert.match(error.message, /TILE_URL_SATELLITE/);
          return true;
        },
      );
    });
  }

  it('refuses a cache budget of zero and a STAC URL that is not a URL', () => {
    assert.throws(() => loadConfig({ TILE_CACHE_MB: '0' }), /TILE_CACHE_MB/);
    assert.throws(() => loadConfig({ STAC_URL: 'earth-search' }), /STAC_URL/);
  });
});
