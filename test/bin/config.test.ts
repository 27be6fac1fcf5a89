import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, DEFAULT_STAC_URL, DEFAULT_TILE_TEMPLATES, loadConfig } from '../../bin/config.js';
import { generateKeyPair } from '../../core/identity.js';

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
      ipBodyBytesPerMinute: 32 * 1024 * 1024,
      trustProxy: false,
      trustProxyHops: 1,
      trustProxyHeader: 'x-forwarded-for',
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 20_000,
    });
    const set = loadConfig({
      RATE_LIMIT_IP_PER_MINUTE: '0',
      RATE_LIMIT_PRINCIPAL_PER_MINUTE: '60',
      RATE_LIMIT_BURST_SECONDS: '2',
      RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE: '0',
      TRUST_PROXY: 'true',
      TRUST_PROXY_HOPS: '2',
      TRUST_PROXY_HEADER: 'forwarded',
      REQUEST_TIMEOUT_SECONDS: '5',
      HEADERS_TIMEOUT_SECONDS: '9',
      STORE_MAX_MB: '64',
    });
    // The headers cannot take longer than the whole request.
    assert.deepEqual(set.httpLimits, {
      ipPerMinute: 0,
      principalPerMinute: 60,
      burstSeconds: 2,
      ipBodyBytesPerMinute: 0,
      trustProxy: true,
      trustProxyHops: 2,
      trustProxyHeader: 'forwarded',
      requestTimeoutMs: 5000,
      headersTimeoutMs: 5000,
    });
    assert.equal(set.storeMaxBytes, 64 * 1024 * 1024);
    assert.equal(loadConfig({}).storeMaxBytes, undefined);
    assert.throws(() => loadConfig({ RATE_LIMIT_IP_PER_MINUTE: '-1' }), /RATE_LIMIT_IP_PER_MINUTE/);
    assert.throws(() => loadConfig({ REQUEST_TIMEOUT_SECONDS: '0' }), /REQUEST_TIMEOUT_SECONDS/);
    assert.throws(() => loadConfig({ TRUST_PROXY_HOPS: '0' }), /TRUST_PROXY_HOPS/);
    assert.throws(() => loadConfig({ TRUST_PROXY_HEADER: 'x-real-ip' }), /TRUST_PROXY_HEADER/);
  });

  it("gives gate 1 the process's share of the cores less its event loop's, at least one thread, unless VERIFY_THREADS says", () => {
    const cores = availableParallelism();
    assert.equal(loadConfig({}).verifyThreads, Math.max(1, cores - 1));
    assert.equal(loadConfig({ WEB_CONCURRENCY: '64' }).verifyThreads, 1);
    assert.equal(loadConfig({ WEB_CONCURRENCY: '2' }).verifyThreads, Math.max(1, Math.floor(cores / 2) - 1));
    assert.equal(loadConfig({ VERIFY_THREADS: '3', WEB_CONCURRENCY: '64' }).verifyThreads, 3);
    assert.throws(() => loadConfig({ VERIFY_THREADS: '-1' }), ConfigError);
  });

  it('reads TOOL_POLICY_FILE (default: no rules) and stops on a missing or malformed policy', () => {
    assert.deepEqual(loadConfig({}).toolPolicy, { version: 1, rules: [] });
    const example = loadConfig({ TOOL_POLICY_FILE: 'docs/examples/tool-policy.json' }).toolPolicy;
    assert.ok(example.rules.some((r) => r.id === 'eu-code-execution-trusted'));
    assert.throws(() => loadConfig({ TOOL_POLICY_FILE: 'no/such/policy.json' }), /TOOL_POLICY_FILE: no\/such/);
    const dir = mkdtempSync(join(tmpdir(), 'policy-'));
    const bad = join(dir, 'policy.json');
    writeFileSync(
      bad,
      JSON.stringify({ version: 1, rules: [{ id: 'r', tools: ['web-search'], jurisdictions: ['XX'] }] }),
    );
    assert.throws(
      () => loadConfig({ TOOL_POLICY_FILE: bad }),
      /TOOL_POLICY_FILE: .*rules\.0\.jurisdictions: unknown jurisdiction code/,
    );
    writeFileSync(bad, JSON.stringify({ version: 1, rules: [{ id: 'r', tools: ['web-search'] }] }));
    assert.throws(() => loadConfig({ TOOL_POLICY_FILE: bad }), /at least one jurisdiction or framework/);
    rmSync(dir, { recursive: true });
  });

  it('reads TRUSTED_PRINCIPALS as a set of usable keys and stops on a bad one', () => {
    assert.equal(loadConfig({}).trustedPrincipals.size, 0);
    const a = generateKeyPair().publicKey;
    const b = generateKeyPair().publicKey;
    assert.deepEqual([...loadConfig({ TRUSTED_PRINCIPALS: ` ${a.toUpperCase()} ,${b},` }).trustedPrincipals], [a, b]);
    assert.throws(() => loadConfig({ TRUSTED_PRINCIPALS: `${a},abc` }), /TRUSTED_PRINCIPALS: "abc"/);
    assert.throws(() => loadConfig({ TRUSTED_PRINCIPALS: '00'.repeat(32) }), /TRUSTED_PRINCIPALS/);
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

  it("takes GATEWAY_NODE_PK as a comma-separated list of the gateways' node keys (docs/protocol.md §2.10)", () => {
    assert.equal(loadConfig({}).gatewayNodePks, undefined);
    const [a, b] = ['ab'.repeat(32), 'cd'.repeat(32)];
    assert.deepEqual(loadConfig({ GATEWAY_NODE_PK: a }).gatewayNodePks, [a]);
    assert.deepEqual(loadConfig({ GATEWAY_NODE_PK: ` ${a} , ${b}` }).gatewayNodePks, [a, b]);
    assert.throws(() => loadConfig({ GATEWAY_NODE_PK: `${a},not-a-key` }), /GATEWAY_NODE_PK/);
    assert.throws(() => loadConfig({ GATEWAY_NODE_PK: ' , ' }), /GATEWAY_NODE_PK/);
  });

  it('keeps worker outcomes 8 days by default and refuses a window shorter than the longest job run', () => {
    assert.equal(loadConfig({}).workerOutcomeRetentionMs, 192 * 3_600_000);
    assert.equal(loadConfig({ WORKER_OUTCOME_RETENTION_HOURS: '2' }).workerOutcomeRetentionMs, 2 * 3_600_000);
    assert.throws(
      () => loadConfig({ WORKER_OUTCOME_RETENTION_HOURS: '1' }),
      (error: unknown) => error instanceof ConfigError && /WORKER_OUTCOME_RETENTION_HOURS/.test(error.message),
    );
    assert.throws(
      () => loadConfig({ WORKER_OUTCOME_RETENTION_HOURS: '24', JOB_RUN_TIMEOUT_SECONDS: String(2 * 86_400) }),
      ConfigError,
    );
  });

  it("keeps a worker's pruned epochs 8 days by default and refuses a window shorter than the longest job run a gateway allows", () => {
    assert.equal(loadConfig({}).workerStoreRetentionMs, 192 * 3_600_000);
    assert.equal(loadConfig({ WORKER_STORE_RETENTION_HOURS: '169' }).workerStoreRetentionMs, 169 * 3_600_000);
    // Whatever this process's own JOB_RUN_TIMEOUT_SECONDS: the gateway's, up to 7 days, is what counts.
    assert.throws(
      () => loadConfig({ WORKER_STORE_RETENTION_HOURS: '168', JOB_RUN_TIMEOUT_SECONDS: '60' }),
      (error: unknown) => error instanceof ConfigError && /WORKER_STORE_RETENTION_HOURS: 168 h/.test(error.message),
    );
  });

  it('keeps jobs 120 days (a billing dispute window) and blobs the longest run plus a day by default, and refuses a job window shorter than a run', () => {
    assert.equal(loadConfig({}).jobRetentionMs, 120 * 86_400_000);
    assert.equal(loadConfig({ JOB_RETENTION_DAYS: '1' }).jobRetentionMs, 86_400_000);
    assert.equal(loadConfig({}).blobRetentionMs, 3600 * 1000 + 86_400_000);
    assert.equal(
      loadConfig({ JOB_RUN_TIMEOUT_SECONDS: String(7 * 86_400) }).blobRetentionMs,
      7 * 86_400_000 + 86_400_000,
    );
    assert.throws(
      () => loadConfig({ JOB_RETENTION_DAYS: '7', JOB_RUN_TIMEOUT_SECONDS: String(7 * 86_400) }),
      (error: unknown) => error instanceof ConfigError && /JOB_RETENTION_DAYS/.test(error.message),
    );
    assert.throws(() => loadConfig({ JOB_RETENTION_DAYS: '0' }), /JOB_RETENTION_DAYS/);
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
    // Another catalog: its own origin only (the activities add it), plus what the operator lists.
    assert.deepEqual(config.imagery.assetOrigins, []);
  });

  it("reads band assets from the default catalog's asset host and IMAGERY_ASSET_ORIGINS only", () => {
    assert.deepEqual(loadConfig({}).imagery.assetOrigins, ['https://sentinel-cogs.s3.us-west-2.amazonaws.com']);
    const set = loadConfig({
      STAC_URL: 'https://stac.example/v1',
      IMAGERY_ASSET_ORIGINS: 'https://COGS.example, http://mirror.internal:8080/',
    });
    assert.deepEqual(set.imagery.assetOrigins, ['https://cogs.example', 'http://mirror.internal:8080']);
    assert.throws(() => loadConfig({ IMAGERY_ASSET_ORIGINS: 'https://cogs.example/path' }), /IMAGERY_ASSET_ORIGINS/);
    assert.throws(() => loadConfig({ IMAGERY_ASSET_ORIGINS: 'file:///etc' }), /IMAGERY_ASSET_ORIGINS/);
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
