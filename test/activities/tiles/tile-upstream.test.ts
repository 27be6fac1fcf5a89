import assert from 'node:assert/strict';
import { fetchUpstreamTile, tileUrl, upstreamHost } from '../../../activities/tiles/tile-upstream.js';
import { ServiceError } from '../../../core/errors.js';
import { startXyzServer, type XyzServer } from '../../helpers/xyz-server.js';

const options = { userAgent: 'geofabric-test/1', timeoutMs: 500 };
const rejectsWith = (code: string) => (e: unknown) => e instanceof ServiceError && e.code === code;

describe('tile upstream client', () => {
  let xyz: XyzServer;
  beforeEach(async () => {
    xyz = await startXyzServer();
  });
  afterEach(() => xyz.close());

  it('substitutes placeholders wherever the template puts them', () => {
    assert.equal(tileUrl('https://a/{z}/{x}/{y}.png', 3, 4, 5), 'https://a/3/4/5.png');
    assert.equal(tileUrl('https://a/tile/{z}/{y}/{x}', 3, 4, 5), 'https://a/tile/3/5/4');
  });

  it('names the host only, never path or query', () => {
    assert.equal(
      upstreamHost('https://tiles.example.com:8443/{z}/{x}/{y}.png?api_key=secret'),
      'tiles.example.com:8443',
    );
    assert.equal(upstreamHost('not a url {z}{x}{y}'), 'invalid-template');
  });

  it('fetches the bytes with our User-Agent and keeps the validators', async () => {
    const result = await fetchUpstreamTile(`${xyz.url}/png/1/0/0`, options);
    assert.equal(result.status, 'ok');
    assert.deepEqual(result.status === 'ok' && result.bytes, await xyz.bytesAt('/png/1/0/0'));
    assert.match(result.validators.etag ?? '', /^"[0-9a-f]+"$/);
    assert.equal(xyz.requests[0]?.userAgent, 'geofabric-test/1');
  });

  it('asks conditionally and accepts 304 only then', async () => {
    const first = await fetchUpstreamTile(`${xyz.url}/png/1/0/0`, options);
    const again = await fetchUpstreamTile(`${xyz.url}/png/1/0/0`, { ...options, validators: first.validators });
    assert.equal(again.status, 'not_modified');
    assert.equal(xyz.requests[1]?.ifNoneMatch, first.validators.etag);
    assert.equal(xyz.requests[1]?.ifModifiedSince, first.validators.lastModified);
  });

  it('maps 404 to tile_not_found, and 5xx and refused connections to upstream_unavailable', async () => {
    await assert.rejects(fetchUpstreamTile(`${xyz.url}/nothing`, options), (e) => {
      return rejectsWith('tile_not_found')(e) && (e as ServiceError).status === 404;
    });
    xyz.failWith = 503;
    await assert.rejects(fetchUpstreamTile(`${xyz.url}/png/1/0/0`, options), rejectsWith('upstream_unavailable'));
    await assert.rejects(
      fetchUpstreamTile('http://127.0.0.1:9/png/1/0/0', options),
      rejectsWith('upstream_unavailable'),
    );
  });

  it('maps a slow answer to upstream_timeout', async () => {
    xyz.delayMs = 1000;
    const started = Date.now();
    await assert.rejects(
      fetchUpstreamTile(`${xyz.url}/png/1/0/0`, { ...options, timeoutMs: 100 }),
      rejectsWith('upstream_timeout'),
    );
    assert.ok(Date.now() - started < 900);
  });
});
