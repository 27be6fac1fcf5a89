import assert from 'node:assert/strict';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

describe('api_key routes (GET /v1/models)', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway({ config: { apiKeys: ['sk-test-one', 'sk-test-two'] } });
  });
  after(() => gw.close());

  it('refuses a missing key with 401 unauthorized', async () => {
    const res = await gw.get('/v1/models');
    assert.equal(res.status, 401);
    assert.equal((res.body as { error: string }).error, 'unauthorized');
  });

  it('refuses an unknown key and a key sent without the Bearer scheme', async () => {
    for (const authorization of ['Bearer sk-test-three', 'sk-test-one', 'Basic sk-test-one', 'Bearer sk-test-on']) {
      const res = await gw.get('/v1/models', { authorization });
      assert.equal(res.status, 401, authorization);
    }
  });

  it('lists the registry models in the OpenAI list format for a valid key', async () => {
    const res = await gw.get('/v1/models', { authorization: 'Bearer sk-test-two' });
    assert.equal(res.status, 200);
    const body = res.body as { object: string; data: Array<{ id: string; object: string }> };
    assert.equal(body.object, 'list');
    const ids = body.data.map((m) => m.id);
    assert.ok(ids.includes('lfm2.5-1.2b-instruct'));
    assert.ok(ids.includes('llama-3.3-70b-versatile'));
    assert.ok(body.data.every((m) => m.object === 'model'));
  });

  it('still runs gate 2 on api_key routes: a bad x-svc-h3-cell is invalid_cell', async () => {
    const res = await gw.get('/v1/models', { authorization: 'Bearer sk-test-one', 'x-svc-h3-cell': 'nowhere' });
    assert.equal(res.status, 400);
    assert.equal((res.body as { error: string }).error, 'invalid_cell');
  });
});
