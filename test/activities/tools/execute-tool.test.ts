import assert from 'node:assert/strict';
import { createToolExecutor } from '../../../activities/tools/execute-tool.js';
import { createWebSearch, type WebSearch } from '../../../activities/tools/web-search.js';
import { ServiceError } from '../../../core/errors.js';
import { startDuckDuckGoServer, type DuckDuckGoServer } from '../../helpers/search-servers.js';

describe('tool executor', () => {
  let ddg: DuckDuckGoServer;
  let executor: ReturnType<typeof createToolExecutor>;
  before(async () => {
    ddg = await startDuckDuckGoServer();
    const webSearch = createWebSearch({
      braveUrl: 'http://127.0.0.1:9',
      braveApiKey: undefined,
      duckDuckGoUrl: ddg.url,
      timeoutMs: 2000,
      userAgent: 'geofabric-test',
    });
    executor = createToolExecutor({ webSearch });
  });
  after(() => ddg.close());
  beforeEach(() => {
    ddg.requests.length = 0;
    ddg.page = 'results';
  });

  it('runs web-search: provider, query and results, 5 by default', async () => {
    const result = await executor.execute('web-search', { query: ' parks in Rome ' });
    assert.equal(result.ok, true);
    const output = (result as { output: { provider: string; query: string; results: unknown[] } }).output;
    assert.equal(output.provider, 'duckduckgo');
    assert.equal(output.query, 'parks in Rome');
    assert.equal(output.results.length, 5);
    assert.equal(ddg.requests[0]?.q, 'parks in Rome');
  });

  it('honours count', async () => {
    const result = await executor.execute('web-search', { query: 'parks', count: 2 });
    assert.equal((result as { output: { results: unknown[] } }).output.results.length, 2);
  });

  it('refuses arguments that do not match the input schema, without searching', async () => {
    for (const [args, detail] of [
      [{}, /query/],
      [{ query: '' }, /query/],
      [{ query: 'x', count: 11 }, /count/],
      [{ query: 'x', count: 2.5 }, /count/],
      [{ query: 'x', site: 'example.com' }, /site/],
      ['parks', /arguments/],
      [null, /arguments/],
    ] as const) {
      const result = await executor.execute('web-search', args);
      assert.equal(result.ok, false, JSON.stringify(args));
      assert.match((result as { error: string }).error, /^invalid arguments for web-search: /);
      assert.match((result as { error: string }).error, detail);
    }
    assert.equal(ddg.requests.length, 0);
  });

  it('answers registered-only tools with an error the model can read', async () => {
    for (const id of ['file-ops', 'python-repl', 'browser-automation', 'code-execution']) {
      assert.deepEqual(await executor.execute(id, { code: 'print(1)' }), {
        ok: false,
        error: `tool ${id} has no executor (registered only, docs/protocol.md §2.7)`,
      });
    }
  });

  it('answers an unknown tool with an error', async () => {
    assert.deepEqual(await executor.execute('rm-rf', {}), { ok: false, error: 'unknown tool "rm-rf"' });
  });

  it('turns an upstream failure into an error result, not an exception', async () => {
    ddg.page = 'challenge';
    const result = await executor.execute('web-search', { query: 'q' });
    assert.equal(result.ok, false);
    assert.match((result as { error: string }).error, /^web search failed: DuckDuckGo answered with its bot challenge/);
  });

  it('lets a programming error in the search client surface as an exception', async () => {
    const broken: WebSearch = {
      provider: 'brave',
      search: () => Promise.reject(new TypeError('bug')),
    };
    await assert.rejects(createToolExecutor({ webSearch: broken }).execute('web-search', { query: 'q' }), TypeError);
    const refused: WebSearch = {
      provider: 'brave',
      search: () => Promise.reject(new ServiceError('upstream_timeout', 'Brave Search did not answer within 10 ms')),
    };
    assert.deepEqual(await createToolExecutor({ webSearch: refused }).execute('web-search', { query: 'q' }), {
      ok: false,
      error: 'web search failed: Brave Search did not answer within 10 ms',
    });
  });
});
