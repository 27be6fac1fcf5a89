import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { pino } from 'pino';
import type { AppDeps } from '../../api/app-deps.js';
import { gateChain } from '../../api/gates.js';
import { errorMiddleware } from '../../api/http-errors.js';
import { route, type GateState } from '../../api/route-spec.js';
import { pass } from '../../core/check.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { createSqliteApiKeyStore } from '../../store/sqlite/api-key-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('api_key routes with keys from the API key store', () => {
  let gw: TestGateway & Awaited<ReturnType<typeof startGateway>>;
  before(async () => {
    gw = await startGateway({ config: { apiKeys: ['sk-env-key'] } });
  });
  after(() => gw.close());

  it('accepts a live stored key of every tier, and still the configured env key', async () => {
    for (const tier of ['free', 'pro', 'enterprise'] as const) {
      const { key } = await gw.apiKeyStore.create(`${tier} client`, tier, Date.now());
      assert.equal((await gw.get('/v1/models', bearer(key))).status, 200, tier);
    }
    assert.equal((await gw.get('/v1/models', bearer('sk-env-key'))).status, 200);
  });

  it('refuses a revoked key with 401 unauthorized, the same answer as an unknown key', async () => {
    const { key, record } = await gw.apiKeyStore.create('leaked', 'free', Date.now());
    assert.equal((await gw.get('/v1/models', bearer(key))).status, 200);
    await gw.apiKeyStore.revoke(record.id, Date.now());
    const revoked = await gw.get('/v1/models', bearer(key));
    const unknown = await gw.get('/v1/models', bearer(`gf_${'A'.repeat(43)}`));
    assert.equal(revoked.status, 401);
    assert.deepEqual(revoked.body, unknown.body);
    assert.equal((revoked.body as { error: { code: string } }).error.code, 'invalid_api_key');
  });

  it('refuses a stored key sent without the Bearer scheme or altered', async () => {
    const { key } = await gw.apiKeyStore.create('careless', 'pro', Date.now());
    for (const authorization of [key, `Basic ${key}`, `Bearer ${key.slice(0, -1)}`, `Bearer ${key}x`]) {
      assert.equal((await gw.get('/v1/models', { authorization })).status, 401, authorization);
    }
  });
});

describe('api_key gate state', () => {
  let db: ReturnType<typeof openSqlite>;
  let apiKeyStore: ReturnType<typeof createSqliteApiKeyStore>;
  let url: string;
  let close: () => Promise<void>;

  before(async () => {
    db = openSqlite(':memory:');
    apiKeyStore = createSqliteApiKeyStore(db);
    const deps = {
      config: {
        requireDelegation: false,
        bodyLimitBytes: 1 << 20,
        epochGenesisMs: DEFAULT_EPOCH_GENESIS_MS,
        apiKeys: ['sk-a', 'sk-b'],
      },
      clock: Date.now,
      logger: pino({ level: 'silent' }),
      rateLimits: createSqliteRateLimitStore(db),
      apiKeyStore,
    } as unknown as AppDeps;
    const spec = route({
      method: 'GET',
      path: '/whoami',
      auth: 'api_key',
      preflight: () => pass(undefined),
      handler: async (ctx, _input, gates: GateState) => {
        ctx.body = { apiKey: gates.apiKey ?? null };
      },
    });
    const router = new Router();
    router.get('/whoami', ...gateChain(deps, spec), async (ctx) => spec.handler(ctx, ctx.state.input, ctx.state.gates));
    const app = new Koa();
    app.use(errorMiddleware(deps.logger));
    app.use(router.routes());
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    };
  });
  after(async () => {
    await close();
    db.close();
  });

  const whoami = async (authorization: string) => {
    const res = await fetch(`${url}/whoami`, { headers: { authorization } });
    return { status: res.status, body: (await res.json()) as { apiKey?: unknown; error?: string } };
  };

  it('puts a stored key’s record on the gate state, for the chat quota', async () => {
    const { key, record } = await apiKeyStore.create('free client', 'free', Date.UTC(2026, 0, 2));
    assert.deepEqual(await whoami(`Bearer ${key}`), { status: 200, body: { apiKey: record } });
  });

  it('presents a configured env key as an unlimited pro key named by its position', async () => {
    assert.deepEqual((await whoami('bearer sk-b')).body.apiKey, {
      id: 'env:1',
      name: 'API_KEYS[1]',
      tier: 'pro',
      created_at: '1970-01-01T00:00:00.000Z',
      revoked_at: null,
    });
  });

  it('refuses a missing header before the handler runs', async () => {
    assert.deepEqual(await whoami(''), {
      status: 401,
      body: { error: 'unauthorized', detail: 'a valid API key is required: Authorization: Bearer <key>' },
    });
  });
});
