import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Deadline } from '../../activities/deadline.js';
import { AssetClient } from '../../activities/imagery/asset-client.js';
import { classifyFloodByModel } from '../../activities/imagery/flood-model.js';
import { createStacClient } from '../../activities/imagery/stac-client.js';
import { fetchUpstreamTile } from '../../activities/tiles/tile-upstream.js';
import { createWebSearch } from '../../activities/tools/web-search.js';
import { createComplianceClient } from '../../mcp/governance/compliance-client.js';
import { fetchUpstreamJson } from '../../mcp/perception/tools/upstream-fetch.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * Every door that gives an upstream call a deadline beside its caller's signal (activities/deadline.ts) keeps it
 * when the process collects garbage while the upstream stalls: with `AbortSignal.any([AbortSignal.timeout(ms),
 * …])` the timeout signal could be collected first and the call never ended (Node 20 to 24).
 */
describe('upstream deadlines that garbage collection cannot lose (activities/deadline.ts)', () => {
  let server: Server;
  let url: string;
  /** Collects garbage every 5 ms while `run` is pending, and gives up on it after `withinMs`. */
  async function underGc<T>(run: () => Promise<T>, withinMs = 3_000): Promise<T> {
    const collecting = setInterval(gc, 5);
    let giveUp: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        run(),
        new Promise<never>((_, reject) => {
          giveUp = setTimeout(
            () => reject(new Error(`still waiting after ${withinMs} ms: the deadline was lost`)),
            withinMs,
          );
        }),
      ]);
    } finally {
      clearInterval(collecting);
      clearTimeout(giveUp);
    }
  }

  before(async () => {
    // Headers and a first byte, then nothing: the answer stalls mid-body.
    server = createServer((req, res) => {
      res.writeHead(req.headers.range ? 206 : 200, { 'content-type': 'application/json' });
      res.write('{');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });

  it('aborts at the deadline with a TimeoutError though nothing but the pending call holds its signal', async () => {
    const error = await underGc(() =>
      fetch(`${url}/`, { signal: new Deadline(100, new AbortController().signal).signal }).then((res) => res.text()),
    ).catch((e: unknown) => e);
    assert.equal((error as Error).name, 'TimeoutError');
  });

  it("ends on the caller's cancellation with its reason, and clear() stops the deadline", async () => {
    const caller = new AbortController();
    const deadline = new Deadline(60_000, caller.signal);
    caller.abort(new Error('the client went away'));
    assert.equal((deadline.signal.reason as Error).message, 'the client went away');
    assert.equal(deadline.expired, false);
    const cleared = new Deadline(20);
    cleared.clear();
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(cleared.signal.aborted, false);
    assert.equal(cleared.expired, false);
  });

  it('a band asset that stalls mid-body (the NDVI read) is cut off at its deadline', async () => {
    const client = new AssetClient(`${url}/red.tif`, { timeoutMs: 150, userAgent: 'test', origins: new Set([url]) });
    const caller = new AbortController();
    const res = await client.request({ headers: { range: 'bytes=0-99' }, signal: caller.signal });
    await assert.rejects(
      underGc(() => res.getData()),
      { name: 'TimeoutError' },
    );
  });

  it('a STAC catalog whose search answer stalls mid-body is upstream_timeout', async () => {
    const stac = createStacClient({ stacUrl: url, collection: 'sentinel-2-l2a', timeoutMs: 150, userAgent: 'test' });
    const search = stac.search({
      cell: '861e8050fffffff',
      window: { fromMs: Date.UTC(2026, 1, 1), toMs: Date.UTC(2026, 1, 28) },
      limit: 1,
      order: 'newest',
    });
    await assert.rejects(
      underGc(() => search),
      { code: 'upstream_timeout' },
    );
  });

  it('a classify endpoint whose answer stalls mid-body (flood_classify by a model) is upstream_timeout', async () => {
    const classify = classifyFloodByModel(
      { url, timeoutMs: 150, userAgent: 'test' },
      '861e8050fffffff',
      'flood-v1',
      Date.now,
    );
    await assert.rejects(
      underGc(() => classify),
      { code: 'upstream_timeout' },
    );
  });

  it('a tile upstream whose tile stalls mid-body is upstream_timeout', async () => {
    const tile = fetchUpstreamTile(`${url}/1/0/0.png`, { userAgent: 'test', timeoutMs: 150 });
    await assert.rejects(
      underGc(() => tile),
      { code: 'upstream_timeout' },
    );
  });

  it('a web search provider whose page stalls mid-body is upstream_timeout', async () => {
    const web = createWebSearch({
      braveUrl: url,
      braveApiKey: 'key',
      duckDuckGoUrl: url,
      timeoutMs: 150,
      userAgent: 'test',
    });
    await assert.rejects(
      underGc(() => web.search('parks in Rome', 3)),
      { code: 'upstream_timeout' },
    );
  });

  it('a perception tool upstream that stalls mid-body is upstream_timeout', async () => {
    const caller = new AbortController();
    const call = fetchUpstreamJson({ name: 'the weather API', url: `${url}/w`, timeoutMs: 150, signal: caller.signal });
    await assert.rejects(
      underGc(() => call),
      { code: 'upstream_timeout' },
    );
  });

  it('the compliance service stalling mid-body is reported as no answer in time', async () => {
    const client = createComplianceClient({ baseUrl: url, timeoutMs: 150 });
    const answer = await underGc(() =>
      client.report('a'.repeat(64), { from: '2026-01-01', to: '2026-01-02' }, new AbortController().signal),
    );
    assert.deepEqual(answer, { ok: false, error: 'the compliance service did not answer within 150 ms' });
  });
});
