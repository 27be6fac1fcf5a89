/**
 * openEO authentication on API keys (docs/protocol.md §16.2): HTTP Basic with the key as password gives the token
 * openEO clients send back as `Bearer basic//<token>`; `GET /me` describes the key; each refusal has openEO's code.
 */
import assert from 'node:assert/strict';
import { startGateway } from '../helpers/gateway.js';
import { TEST_NOW } from '../helpers/imagery-fixtures.js';
import { OPENEO_ERRORS, openEoErrorSchemaErrors, openEoSchemaErrors } from '../helpers/openeo-api.js';

const BASE = '/openeo/1.2';
const ENV_KEY = 'gf_env_openeo_key_0123456789';
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

describe('openEO authentication with API keys', function () {
  this.timeout(20_000);
  let gw: Awaited<ReturnType<typeof startGateway>>;

  before(async () => {
    gw = await startGateway({ clock: () => TEST_NOW, config: { apiKeys: [ENV_KEY] } });
  });
  after(() => gw?.close());

  async function refusal(headers: Record<string, string>, path = '/me') {
    const res = await gw.get(`${BASE}${path}`, headers);
    assert.deepEqual(openEoErrorSchemaErrors(res.body), []);
    const code = (res.body as { code: string }).code;
    assert.equal(res.status, OPENEO_ERRORS[code]?.http, `${code} has errors.json's status`);
    return code;
  }

  it('exchanges a configured key, as the Basic password, for the token openEO clients send back', async () => {
    const res = await gw.get(`${BASE}/credentials/basic`, basic('anyone', ENV_KEY));
    assert.equal(res.status, 200);
    assert.deepEqual(openEoSchemaErrors('/credentials/basic', 'get', 200, res.body), []);
    const token = (res.body as { access_token: string }).access_token;
    assert.equal(token, ENV_KEY);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const me = await gw.get(`${BASE}/me`, { authorization: `Bearer basic//${token}` });
    assert.equal(me.status, 200);
    assert.deepEqual(openEoSchemaErrors('/me', 'get', 200, me.body), []);
    assert.deepEqual(me.body, {
      user_id: 'env-0',
      name: 'API_KEYS[0]',
      default_plan: 'pay-as-you-go',
      budget: null,
      links: [],
    });
  });

  it('takes a key of the store (geofabric apikey create) whatever the user name, until it is revoked', async () => {
    const { key, record } = await gw.apiKeyStore.create('field team', 'free', TEST_NOW);
    const res = await gw.get(`${BASE}/credentials/basic`, basic('', key));
    assert.equal(res.status, 200);
    const token = (res.body as { access_token: string }).access_token;
    const me = await gw.get(`${BASE}/me`, { authorization: `Bearer basic//${token}` });
    assert.equal((me.body as { user_id: string }).user_id, record.id);
    assert.equal((me.body as { name: string }).name, 'field team');
    await gw.apiKeyStore.revoke(record.id, TEST_NOW);
    assert.equal(await refusal({ authorization: `Bearer basic//${token}` }), 'TokenInvalid');
    assert.equal(await refusal(basic('x', key), '/credentials/basic'), 'CredentialsInvalid');
  });

  it('refuses with openEO’s codes: no credentials, another scheme, a wrong password, a wrong token', async () => {
    assert.equal(await refusal({}), 'AuthenticationRequired');
    assert.equal(await refusal({}, '/credentials/basic'), 'AuthenticationRequired');
    assert.equal(await refusal({ authorization: 'Bearer oidc/egi/eyJhbGciOi' }), 'AuthenticationSchemeInvalid');
    assert.equal(await refusal({ authorization: `Bearer ${ENV_KEY}` }), 'AuthenticationSchemeInvalid');
    assert.equal(await refusal(basic('user', 'not-a-key'), '/credentials/basic'), 'CredentialsInvalid');
    assert.equal(await refusal(basic('user', ''), '/credentials/basic'), 'CredentialsInvalid');
    assert.equal(await refusal({ authorization: 'Bearer basic//not-a-key' }), 'TokenInvalid');
  });
});
