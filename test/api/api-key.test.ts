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
    assert.equal((res.body as { error: { code: string } }).error.code, 'invalid_api_key');
  });

  it('refuses an unknown key and a key sent without the Bearer scheme', async () => {
    for (const authorization of ['Bearer sk-test-three', 'sk-test-one', 'Basic sk-test-one', 'Bearer sk-test-on']) {
      const res = await gw.get('/v1/models', { authorization });
      assert.equal(res.status, 401, authorization);
    }
  });

  it('lists in the OpenAI list format only models that can answer: none without a runtime or a backbone', async () => {
    const res = await gw.get('/v1/models', { authorization: 'Bearer sk-test-two' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { object: 'list', data: [] });
    const one = await gw.get('/v1/models/llama-3.3-70b-versatile', { authorization: 'Bearer sk-test-two' });
    assert.equal(one.status, 404);
    assert.equal((one.body as { error: { code: string } }).error.code, 'model_not_found');
  });

  it('still runs gate 2 on api_key routes: a bad x-svc-h3-cell is invalid_cell', async () => {
    const res = await gw.get('/v1/models', { authorization: 'Bearer sk-test-one', 'x-svc-h3-cell': 'nowhere' });
    assert.equal(res.status, 400);
    assert.equal((res.body as { error: { code: string } }).error.code, 'invalid_cell');
  });
});
