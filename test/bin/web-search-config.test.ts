import assert from 'node:assert/strict';
import { DEFAULT_BRAVE_URL, DEFAULT_DUCKDUCKGO_URL, loadConfig } from '../../bin/config.js';

describe('configuration of the web-search tool (bin/config.ts)', () => {
  it('defaults to DuckDuckGo (no Brave key) at the public endpoints, 10 s per search', () => {
    const { webSearch } = loadConfig({});
    assert.deepEqual(
      { ...webSearch, userAgent: undefined },
      {
        braveUrl: DEFAULT_BRAVE_URL,
        braveApiKey: undefined,
        duckDuckGoUrl: DEFAULT_DUCKDUCKGO_URL,
        timeoutMs: 10_000,
        userAgent: undefined,
      },
    );
    assert.match(webSearch.userAgent, /^geofabric\//);
  });

  it('takes a Brave key, both base URLs without their trailing slash and a timeout', () => {
    const { webSearch } = loadConfig({
      BRAVE_API_KEY: 'BSA-key',
      BRAVE_URL: 'http://brave.internal:9000/',
      DUCKDUCKGO_URL: 'http://ddg.internal//',
      WEB_SEARCH_TIMEOUT_MS: '2500',
    });
    assert.equal(webSearch.braveApiKey, 'BSA-key');
    assert.equal(webSearch.braveUrl, 'http://brave.internal:9000');
    assert.equal(webSearch.duckDuckGoUrl, 'http://ddg.internal');
    assert.equal(webSearch.timeoutMs, 2500);
  });

  it('treats an empty BRAVE_API_KEY as unset', () => {
    assert.equal(loadConfig({ BRAVE_API_KEY: '' }).webSearch.braveApiKey, undefined);
  });

  it('refuses a base URL that is not a URL and a timeout out of range, naming the variable', () => {
    assert.throws(() => loadConfig({ BRAVE_URL: 'brave' }), /BRAVE_URL/);
    assert.throws(() => loadConfig({ DUCKDUCKGO_URL: 'html.duckduckgo.com' }), /DUCKDUCKGO_URL/);
    assert.throws(() => loadConfig({ WEB_SEARCH_TIMEOUT_MS: '10' }), /WEB_SEARCH_TIMEOUT_MS/);
  });
});
