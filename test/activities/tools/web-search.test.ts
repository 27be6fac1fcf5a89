import assert from 'node:assert/strict';
import { createWebSearch, type WebSearchConfig } from '../../../activities/tools/web-search.js';
import { ServiceError } from '../../../core/errors.js';
import {
  startBraveServer,
  startDuckDuckGoServer,
  type BraveServer,
  type DuckDuckGoServer,
} from '../../helpers/search-servers.js';

const CLOSED_PORT = 'http://127.0.0.1:9';

const config = (overrides: Partial<WebSearchConfig>): WebSearchConfig => ({
  braveUrl: CLOSED_PORT,
  braveApiKey: undefined,
  duckDuckGoUrl: CLOSED_PORT,
  timeoutMs: 2000,
  userAgent: 'geofabric-test',
  ...overrides,
});

const failsWith = (code: string, detail?: RegExp) => (error: unknown) => {
  assert.ok(error instanceof ServiceError, String(error));
  assert.equal(error.code, code);
  if (detail) assert.match(error.detail ?? '', detail);
  return true;
};

describe('web search: Brave Search API (BRAVE_API_KEY set)', () => {
  let brave: BraveServer;
  beforeEach(async () => {
    brave = await startBraveServer('secret-token');
  });
  afterEach(() => brave.close());

  const search = (overrides: Partial<WebSearchConfig> = {}) =>
    createWebSearch(config({ braveUrl: brave.url, braveApiKey: 'secret-token', ...overrides }));

  it('asks Brave with the query, the count and the subscription token, and reads web.results', async () => {
    const found = await search().search('parks in Rome', 3);
    assert.equal(found.provider, 'brave');
    assert.deepEqual(brave.requests, [
      { q: 'parks in Rome', count: '3', token: 'secret-token', userAgent: 'geofabric-test' },
    ]);
    assert.deepEqual(found.results, [
      {
        title: 'Villa Borghese gardens - Wikipedia',
        url: 'https://en.wikipedia.org/wiki/Villa_Borghese_gardens',
        snippet: 'Villa Borghese is a landscape garden in Rome, the third largest public park in the city.',
      },
      {
        title: 'The parks & villas of Rome | Turismo Roma',
        url: 'https://www.turismoroma.it/en/page/parks-and-villas',
        snippet: "Rome's green heart: from the Pincio terrace to the Appian Way Regional Park.",
      },
      {
        title: 'Appia Antica Regional Park',
        url: 'https://www.parcoappiaantica.it/en/',
        snippet: 'Countryside, aqueducts and catacombs along the Via Appia.',
      },
    ]);
  });

  it('drops results that are not http(s) and never returns more than asked', async () => {
    const found = await search().search('parks', 10);
    assert.equal(found.results.length, 9); // 10 asked; the ftp:// one was among them
    assert.ok(found.results.every((r) => r.url.startsWith('https://')));
  });

  it('answers an empty list when Brave found nothing (no `web` section)', async () => {
    brave.results = [];
    assert.deepEqual(await search().search('zxqv nothing', 5), { provider: 'brave', results: [] });
  });

  it('reports a refused key as 502 upstream_unavailable naming BRAVE_API_KEY', async () => {
    await assert.rejects(
      search({ braveApiKey: 'wrong' }).search('q', 5),
      failsWith('upstream_unavailable', /BRAVE_API_KEY/),
    );
  });

  it('reports a rate limit and a malformed answer as 502 upstream_unavailable', async () => {
    brave.faults.status = 429;
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /rate limit/));
    brave.faults = { body: 'not json' };
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /not JSON/));
    brave.faults = { body: JSON.stringify({ web: { results: [{ title: 1 }] } }) };
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /web\.results\.0/));
  });

  it('reports a slow answer as 504 upstream_timeout', async () => {
    brave.faults.delayMs = 500;
    await assert.rejects(search({ timeoutMs: 100 }).search('q', 5), failsWith('upstream_timeout', /100 ms/));
  });

  it('reports an unreachable server as 502 upstream_unavailable', async () => {
    await assert.rejects(
      search({ braveUrl: CLOSED_PORT }).search('q', 5),
      failsWith('upstream_unavailable', /unreachable/),
    );
  });
});

describe('web search: DuckDuckGo HTML (no BRAVE_API_KEY)', () => {
  let ddg: DuckDuckGoServer;
  beforeEach(async () => {
    ddg = await startDuckDuckGoServer();
  });
  afterEach(() => ddg.close());

  const search = (overrides: Partial<WebSearchConfig> = {}) =>
    createWebSearch(config({ duckDuckGoUrl: ddg.url, ...overrides }));

  it('posts the query as DuckDuckGo’s form does and reads the result page', async () => {
    const found = await search().search('parks in Rome & more', 3);
    assert.equal(found.provider, 'duckduckgo');
    assert.deepEqual(ddg.requests, [{ method: 'POST', q: 'parks in Rome & more', userAgent: 'geofabric-test' }]);
    assert.deepEqual(
      found.results.map((r) => r.url),
      [
        'https://en.wikipedia.org/wiki/Villa_Borghese_gardens',
        'https://www.turismoroma.it/en/page/parks-and-villas?sort=name&lang=en',
        'https://www.parcoappiaantica.it/en/',
      ],
    );
    assert.equal(found.results[1]?.title, 'The parks & villas of Rome | Turismo Roma');
  });

  it('answers an empty list for DuckDuckGo’s "No results." page', async () => {
    ddg.page = 'no-results';
    assert.deepEqual(await search().search('zxqv nothing', 5), { provider: 'duckduckgo', results: [] });
  });

  it('reports the bot challenge (202, or 200 with the challenge page) as 502, suggesting BRAVE_API_KEY', async () => {
    ddg.page = 'challenge';
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /bot challenge.*BRAVE_API_KEY/));
    ddg.challengeStatus = 200;
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /bot challenge/));
  });

  it('refuses a page that has no result list instead of calling it "no results"', async () => {
    ddg.page = 'unrelated';
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /without a result list/));
  });

  it('reports HTTP errors, oversized pages and timeouts', async () => {
    ddg.faults.status = 503;
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /HTTP 503/));
    ddg.faults = { body: `<div class="results">${'x'.repeat(3 * 1024 * 1024)}</div>` };
    await assert.rejects(search().search('q', 5), failsWith('upstream_unavailable', /more than/));
    ddg.faults = { delayMs: 500 };
    await assert.rejects(search({ timeoutMs: 100 }).search('q', 5), failsWith('upstream_timeout'));
  });

  it('uses DuckDuckGo, not Brave, when no Brave key is configured', async () => {
    const brave = await startBraveServer();
    try {
      await search({ braveUrl: brave.url, braveApiKey: '' }).search('q', 5);
      assert.equal(brave.requests.length, 0);
      assert.equal(ddg.requests.length, 1);
    } finally {
      await brave.close();
    }
  });
});
