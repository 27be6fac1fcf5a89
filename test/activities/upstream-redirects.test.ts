import assert from 'node:assert/strict';
import { createRuntimeClient } from '../../activities/inference/runtime-client.js';
import { fetchUpstreamTile } from '../../activities/tiles/tile-upstream.js';
import { createWebSearch } from '../../activities/tools/web-search.js';
import { ServiceError } from '../../core/errors.js';
import { redirect, startOrigin, type LocalOrigin } from '../helpers/redirect-servers.js';

const failsWith = (code: string, detail?: RegExp) => (error: unknown) => {
  assert.ok(error instanceof ServiceError, String(error));
  assert.equal(error.code, code);
  if (detail) assert.match(error.detail ?? '', detail);
  return true;
};

const BRAVE_JSON = JSON.stringify({
  web: { results: [{ title: 'A park', url: 'https://park.example/', description: 'x' }] },
});

describe('upstream redirects (activities/safe-fetch.ts)', () => {
  let other: LocalOrigin;
  let upstream: LocalOrigin | undefined;
  beforeEach(async () => {
    other = await startOrigin();
  });
  afterEach(async () => {
    await other.close();
    await upstream?.close();
    upstream = undefined;
  });

  const search = (braveUrl: string) =>
    createWebSearch({
      braveUrl,
      braveApiKey: 'secret-token',
      duckDuckGoUrl: 'http://127.0.0.1:9',
      timeoutMs: 2000,
      userAgent: 'geofabric-test',
    });

  it('the search key never follows a redirect to another origin; same-origin redirects still work', async () => {
    upstream = await startOrigin((path, _req, res) => {
      if (path.startsWith('/res/v1/web/search')) return redirect(res, 302, `${other.url}/steal${path}`);
      res.end(BRAVE_JSON);
    });
    await assert.rejects(search(upstream.url).search('parks', 3), failsWith('upstream_unavailable', /another origin/));
    assert.deepEqual(other.seen, []);

    const moved = await startOrigin((path, _req, res) =>
      path.startsWith('/res/') ? redirect(res, 301, '/v2/search') : res.end(BRAVE_JSON),
    );
    try {
      const found = await search(moved.url).search('parks', 3);
      assert.equal(found.results.length, 1);
      assert.equal(moved.seen[1]?.headers['x-subscription-token'], 'secret-token');
    } finally {
      await moved.close();
    }
  });

  it('a tile upstream redirects only within its own origin', async () => {
    upstream = await startOrigin((path, _req, res) => {
      if (path.startsWith('/away/')) return redirect(res, 302, `${other.url}/1/0/0.png?api_key=from-template`);
      if (path === '/moved/1/0/0.png') return redirect(res, 307, '/tiles/1/0/0.png');
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(Buffer.from('89504e47', 'hex'));
    });
    const options = { userAgent: 'geofabric-test/1', timeoutMs: 2000 };
    await assert.rejects(
      fetchUpstreamTile(`${upstream.url}/away/1/0/0.png?api_key=k`, options),
      failsWith('upstream_unavailable', /redirected off its origin/),
    );
    assert.deepEqual(other.seen, []);
    const ok = await fetchUpstreamTile(`${upstream.url}/moved/1/0/0.png`, options);
    assert.equal(ok.status, 'ok');
  });

  it('the backbone key never follows a redirect to another origin', async () => {
    upstream = await startOrigin((_path, _req, res) => redirect(res, 307, `${other.url}/v1/chat/completions`));
    const client = createRuntimeClient({
      provider: 'backbone',
      baseURL: `${upstream.url}/v1`,
      apiKey: 'backbone-key',
      timeoutMs: 2000,
    });
    await assert.rejects(
      client.complete({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      failsWith('backbone_unavailable'),
    );
    assert.equal(upstream.seen.length, 1);
    assert.equal(upstream.seen[0]?.headers.authorization, 'Bearer backbone-key');
    assert.deepEqual(other.seen, []);
  });

  it('gives up after three redirects', async () => {
    let n = 0;
    upstream = await startOrigin((_path, _req, res) => redirect(res, 302, `/hop/${++n}`));
    await assert.rejects(search(upstream.url).search('parks', 3), failsWith('upstream_unavailable', /too many/));
    assert.equal(upstream.seen.length, 4);
  });
});
