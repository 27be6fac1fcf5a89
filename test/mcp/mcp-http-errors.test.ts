import assert from 'node:assert/strict';
import Router from '@koa/router';
import { MongoServerSelectionError } from 'mongodb';
import { createMcpHttpApp, silentLogger } from '../../mcp/shared/mcp-http-app.js';

/** The MCP servers' shared HTTP shell maps store failures as the gateway does (api/http-errors.ts). */
describe('MCP HTTP shell: store failures', () => {
  it('answers a full store 507 storage_full, an unreachable one 503 store_unavailable, anything else 500', async () => {
    const router = new Router();
    router.get('/full', () => {
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    });
    router.get('/down', () => {
      throw new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:27017', {} as never);
    });
    router.get('/bug', () => {
      throw new TypeError('x is undefined');
    });
    const http = createMcpHttpApp({
      router,
      logger: silentLogger,
      allowedOrigins: [],
      allowedHosts: [],
      beforeClose: async () => undefined,
    });
    const { url } = await http.listen(0, '127.0.0.1');
    try {
      const answers = await Promise.all(
        ['/full', '/down', '/bug'].map(async (path) => {
          const res = await fetch(url + path);
          return [res.status, ((await res.json()) as { error: string }).error, res.headers.get('retry-after')];
        }),
      );
      assert.deepEqual(answers, [
        [507, 'storage_full', null],
        [503, 'store_unavailable', '5'],
        [500, 'internal_error', null],
      ]);
    } finally {
      await http.close();
    }
  });
});
