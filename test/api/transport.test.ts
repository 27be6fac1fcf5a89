import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import type { RateLimitStore } from '../../store/types.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { certFor, certHeader, inferenceJob, signJob } from '../helpers/jobs.js';

describe('gateway transport errors', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway();
  });
  after(() => gw.close());

  it('answers malformed JSON with 400 invalid_json', async () => {
    const res = await gw.request('POST', '/v1/compute', {
      raw: '{"steps": [',
      headers: { 'content-type': 'application/json', 'x-idn-signature': 'ab'.repeat(64) },
    });
    assert.equal(res.status, 400);
    assert.equal((res.body as { error: string }).error, 'invalid_json');
  });

  it('answers a body over 1 MiB with 413 payload_too_large', async () => {
    const res = await gw.request('POST', '/v1/compute', {
      raw: JSON.stringify({ pad: 'x'.repeat(1024 * 1024 + 1) }),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 413);
    assert.equal((res.body as { error: string }).error, 'payload_too_large');
  });

  it('answers a non-JSON content type with 415', async () => {
    const res = await gw.request('POST', '/v1/compute', { raw: 'a=b', headers: { 'content-type': 'text/plain' } });
    assert.equal(res.status, 415);
  });

  it('answers headers over the size limit with 431 and a JSON body', async () => {
    const res = await gw.get('/health', { 'x-padding': 'a'.repeat(20_000) });
    assert.equal(res.status, 431);
    assert.equal((res.body as { error: string }).error, 'headers_too_large');
  });

  it('answers unknown routes with 404 not_found and wrong methods with 405', async () => {
    const missing = await gw.get('/v1/nothing-here');
    assert.equal(missing.status, 404);
    assert.equal((missing.body as { error: string }).error, 'not_found');
    const wrongMethod = await gw.get('/v1/compute');
    assert.equal(wrongMethod.status, 405);
    assert.equal((wrongMethod.body as { error: string }).error, 'method_not_allowed');
  });

  it('serves /health and echoes a request id', async () => {
    const res = await gw.get('/health', { 'x-request-id': 'trace-123' });
    assert.equal(res.status, 200);
    assert.equal((res.body as { status: string }).status, 'ok');
    assert.equal(res.headers.get('x-request-id'), 'trace-123');
  });

  it('GET / sends a browser to the dashboard and tells a JSON client where things are', async () => {
    const browser = await fetch(new URL('/', gw.url), {
      headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' },
      redirect: 'manual',
    });
    assert.equal(browser.status, 302);
    assert.equal(browser.headers.get('location'), '/dashboard');
    const client = await gw.get('/', { accept: 'application/json' });
    assert.equal(client.status, 200);
    const links = (client.body as { links: { rel: string; href: string }[] }).links;
    assert.deepEqual(links.map((l) => [l.rel, l.href]).slice(0, 2), [
      ['dashboard', '/dashboard'],
      ['service-desc', '/openapi.json'],
    ]);
    const curl = await gw.get('/', { accept: '*/*' });
    assert.equal(curl.status, 200, 'a client that takes anything gets the JSON index, not a redirect');
  });

  it('turns an internal failure into 500 internal_error without leaking the stack', async () => {
    const broken: RateLimitStore = {
      increment: () => Promise.reject(new Error('disk on fire at /secret/path')),
      peek: () => Promise.reject(new Error('disk on fire at /secret/path')),
      close: () => Promise.resolve(),
    };
    const failing = await startGateway({ rateLimits: broken });
    try {
      const alice = generateKeyPair();
      const cert = certHeader(certFor(generateKeyPair(), alice.publicKey, { constraints: { max_ops_per_hour: 5 } }));
      const { body, headers } = signJob(alice, inferenceJob('hi'));
      const res = await failing.post('/v1/compute', body, { ...headers, 'x-svc-delegation-cert': cert });
      assert.equal(res.status, 500);
      assert.deepEqual(res.body, { error: 'internal_error', detail: 'an internal error occurred' });
      assert.doesNotMatch(res.text, /secret|disk|at /);
    } finally {
      await failing.close();
    }
  });
});
