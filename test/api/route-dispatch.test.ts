import assert from 'node:assert/strict';
import type Router from '@koa/router';
import { routeDispatch } from '../../api/route-dispatch.js';
import { startGateway } from '../helpers/gateway.js';

const routerOf = (app: { middleware: unknown[] }): Router =>
  (app.middleware.find((m) => (m as { router?: Router }).router !== undefined) as { router: Router }).router;

const summary = (m: { path: { path: unknown }[]; pathAndMethod: { path: unknown }[]; route: boolean }) => ({
  path: m.path.map((l) => String(l.path)),
  pathAndMethod: m.pathAndMethod.map((l) => String(l.path)),
  route: m.route,
});

describe('gateway route dispatch (api/route-dispatch.ts)', () => {
  it("matches exactly as @koa/router's own match, whatever the case, slashes, encoding or method", async () => {
    const gateway = await startGateway();
    try {
      const router = routerOf(gateway.app);
      const { match } = routeDispatch(router);
      const paths = [
        '/',
        '',
        '*',
        '//',
        '/health',
        '/health/',
        '/HEALTH',
        '/health//',
        '/healthz',
        '/metrics',
        '/openapi.json',
        '/openapi.JSON',
        '/openapiXjson',
        '/v1',
        '/v1/',
        '/v1/tiles',
        '/v1/tiles/',
        '/v1/tiles/stats',
        '/V1/Tiles/Stats/',
        '/v1/tiles/861e8050fffffff/14/osm-standard.png',
        '/v1/TILES/861e8050fffffff/14/osm-standard.png/',
        '/v1/tiles/grid/861e8050fffffff/14/osm-standard',
        '/v1/tiles/grid/a/b',
        '/v1/tiles/a/b',
        '/v1/tiles/a/b/c/d',
        '/v1/tiles/%2F/14/x.png',
        '/v1/tiles//14/x.png',
        '/v1/compute',
        '/v1/compute/abc',
        '/v1/compute/recent',
        '/v1/compute/abc/receipt',
        '/v1/chat/completions',
        '/svc/workers',
        '/svc/workers/pk/earnings',
        '/store/proof/tile:1',
        '/dashboard',
        '/dashboard/',
        '/dashboard/assets/a/b/c.js',
        '/dashboard/config.json',
        '/dashboard/api/compliance/abc',
        '/v1/\u212Aey',
        '/v1/t\u0130les/x',
        '/nope/nope',
      ];
      for (const path of paths) {
        for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'get']) {
          assert.deepEqual(summary(match(path, method)), summary(router.match(path, method)), `${method} ${path}`);
        }
      }
    } finally {
      await gateway.close();
    }
  });

  it('routes, parameters, 404 and 405 answer as before through the gateway', async () => {
    const gateway = await startGateway();
    try {
      const grid = await gateway.get('/v1/tiles/grid/861e8050fffffff/14/osm-standard');
      assert.equal(grid.status, 200);
      const upper = await gateway.get('/V1/TILES/STATS/');
      assert.equal(upper.status, 200);
      const missing = await gateway.get('/v1/nowhere');
      assert.equal(missing.status, 404);
      assert.deepEqual((missing.body as { error: string }).error, 'not_found');
      const wrongMethod = await gateway.request('DELETE', '/v1/tiles/stats');
      assert.equal(wrongMethod.status, 405);
      assert.equal((wrongMethod.body as { error: string }).error, 'method_not_allowed');
      const badCell = await gateway.get('/v1/tiles/not%20a%20cell/14/osm-standard.png');
      assert.equal(badCell.status, 400);
      assert.match((badCell.body as { detail: string }).detail, /not a valid H3 cell: "not a cell"/);
    } finally {
      await gateway.close();
    }
  });
});
