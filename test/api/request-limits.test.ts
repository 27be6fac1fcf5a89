import assert from 'node:assert/strict';
import type { HttpLimits } from '../../api/http-limits.js';
import { generateKeyPair } from '../../core/identity.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { assertSlowClientCut } from '../helpers/raw-http.js';

const LIMITS: HttpLimits = {
  ipPerMinute: 0,
  principalPerMinute: 0,
  burstSeconds: 5,
  trustProxy: false,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 20_000,
};

/** A gateway with these limits and a clock the test moves. */
async function gatewayWith(limits: Partial<HttpLimits>, apiKeys: string[] = []) {
  let now = Date.UTC(2026, 10, 23, 12);
  const gw = await startGateway({ config: { httpLimits: { ...LIMITS, ...limits }, apiKeys }, clock: () => now });
  return Object.assign(gw, { advance: (ms: number) => (now += ms) });
}

type ErrorBody = { error: string; detail?: string };

describe('request limits (abuse)', () => {
  describe('per client address, on every route', () => {
    it('lets a burst through, then answers 429 rate_limit with retry-after, and refills at the rate', async () => {
      const gw = await gatewayWith({ ipPerMinute: 60 }); // 1/s, a bucket of 5
      try {
        for (let i = 0; i < 5; i++) {
          const res = await gw.get('/health');
          assert.equal(res.status, 200);
          assert.equal(res.headers.get('ratelimit-limit'), '5');
          assert.equal(res.headers.get('ratelimit-remaining'), String(4 - i));
        }
        // Every route counts: unknown paths and other routes spend the same bucket.
        const refused = await gw.get('/no/such/route');
        assert.equal(refused.status, 429);
        assert.equal((refused.body as ErrorBody).error, 'rate_limit');
        assert.match((refused.body as ErrorBody).detail ?? '', /this address: at most 60 per minute/);
        assert.equal(refused.headers.get('retry-after'), '1');
        assert.equal((await gw.get('/v1/tiles/grid?cell=x')).status, 429);
        gw.advance(1000);
        assert.equal((await gw.get('/health')).status, 200);
        assert.equal((await gw.get('/health')).status, 429);
      } finally {
        await gw.close();
      }
    });

    it('ignores X-Forwarded-For unless told it runs behind a proxy, then limits each forwarded client', async () => {
      const direct = await gatewayWith({ ipPerMinute: 12, burstSeconds: 5 }); // bucket of 1
      try {
        assert.equal((await direct.get('/health', { 'x-forwarded-for': '198.51.100.1' })).status, 200);
        // A client cannot pose as somebody else to get a fresh bucket.
        assert.equal((await direct.get('/health', { 'x-forwarded-for': '198.51.100.2' })).status, 429);
      } finally {
        await direct.close();
      }
      const proxied = await gatewayWith({ ipPerMinute: 12, burstSeconds: 5, trustProxy: true });
      try {
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '198.51.100.1' })).status, 200);
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '198.51.100.1' })).status, 429);
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '198.51.100.2' })).status, 200);
        // One IPv6 host holds a /64: rotating inside it does not help.
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '2001:db8:1:2::a' })).status, 200);
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '2001:db8:1:2::b' })).status, 429);
        assert.equal((await proxied.get('/health', { 'x-forwarded-for': '2001:db8:1:3::a' })).status, 200);
      } finally {
        await proxied.close();
      }
    });
  });

  describe('body bytes per client address (RATE_LIMIT_IP_BODY_BYTES_PER_MINUTE)', () => {
    it('lets 2 s of the byte rate through, then answers 429 rate_limit before reading the body; /health still answers', async () => {
      // 6 MiB per minute: 100 KiB/s, a bucket of 200 KiB. Each body is ~90 KiB of valid JSON.
      const gw = await gatewayWith({ ipBodyBytesPerMinute: 6 * 1024 * 1024 });
      try {
        const body = JSON.stringify({ padding: 'x'.repeat(90 * 1024) });
        const send = () =>
          gw.request('POST', '/v1/compute', { raw: body, headers: { 'content-type': 'application/json' } });
        assert.equal((await send()).status, 401); // read, parsed, refused by gate 1 (unsigned)
        assert.equal((await send()).status, 401);
        const refused = await send();
        assert.equal(refused.status, 429);
        assert.equal((refused.body as ErrorBody).error, 'rate_limit');
        assert.match(
          (refused.body as ErrorBody).detail ?? '',
          /request body bytes from this address: at most 6144 KiB per minute/,
        );
        assert.equal(refused.headers.get('retry-after'), '1');
        assert.equal((await gw.get('/health')).status, 200, 'a request without a body spends no bytes');
        gw.advance(1000);
        assert.equal((await send()).status, 401);
      } finally {
        await gw.close();
      }
    });

    it('admits one body larger than the whole bucket once the bucket is full', async () => {
      const gw = await gatewayWith({ ipBodyBytesPerMinute: 60 * 1024 }); // a bucket of 2 KiB
      try {
        const body = JSON.stringify({ padding: 'x'.repeat(50 * 1024) });
        const send = () =>
          gw.request('POST', '/v1/compute', { raw: body, headers: { 'content-type': 'application/json' } });
        assert.equal((await send()).status, 401);
        assert.equal((await send()).status, 429);
      } finally {
        await gw.close();
      }
    });
  });

  describe('behind trusted proxies (TRUST_PROXY)', () => {
    const statuses = async (
      gw: { get: (p: string, h: Record<string, string>) => Promise<{ status: number }> },
      headers: (i: number) => Record<string, string>,
    ) => {
      const seen: number[] = [];
      for (let i = 0; i < 25; i++) seen.push((await gw.get('/health', headers(i))).status);
      return seen;
    };

    it('limits a client by the address the proxy saw, whatever it writes to the left of it', async () => {
      const gw = await gatewayWith({ ipPerMinute: 60, trustProxy: true }); // bucket of 5
      try {
        // What nginx's $proxy_add_x_forwarded_for makes of a client that sends its own X-Forwarded-For.
        const seen = await statuses(gw, (i) => ({ 'x-forwarded-for': `10.0.1.${i}, 203.0.113.7` }));
        assert.deepEqual(seen.slice(0, 5), [200, 200, 200, 200, 200]);
        assert.ok(
          seen.slice(5).every((s) => s === 429),
          String(seen),
        );
        // A Forwarded header the proxy passed along is not read unless TRUST_PROXY_HEADER=forwarded.
        assert.equal(
          (await gw.get('/health', { forwarded: 'for=198.51.100.9', 'x-forwarded-for': '203.0.113.7' })).status,
          429,
        );
        assert.equal((await gw.get('/health', { 'x-forwarded-for': '10.0.1.1, 203.0.113.8' })).status, 200);
      } finally {
        await gw.close();
      }
    });

    it('counts hops from the right: with two proxies the client is the entry the outer one wrote', async () => {
      const gw = await gatewayWith({ ipPerMinute: 60, trustProxy: true, trustProxyHops: 2 });
      try {
        const seen = await statuses(gw, (i) => ({ 'x-forwarded-for': `10.0.1.${i}, 203.0.113.7, 10.0.0.2` }));
        assert.equal(seen.filter((s) => s === 200).length, 5, String(seen));
        assert.equal((await gw.get('/health', { 'x-forwarded-for': '203.0.113.9, 10.0.0.2' })).status, 200);
      } finally {
        await gw.close();
      }
    });

    it('reads RFC 7239 Forwarded the same way when told to (quoted, bracketed IPv6, ports, obfuscated)', async () => {
      const gw = await gatewayWith({ ipPerMinute: 60, trustProxy: true, trustProxyHeader: 'forwarded' });
      try {
        const seen = await statuses(gw, (i) => ({
          forwarded: `for=10.0.1.${i};proto=https, for="[2001:db8:cafe::${i}]:4711";host=api.example.org`,
        }));
        assert.equal(seen.filter((s) => s === 200).length, 5, String(seen));
        // The other /64 is another client; X-Forwarded-For is ignored in this mode.
        const other = { forwarded: 'for="[2001:db8:beef::1]:4711"', 'x-forwarded-for': '2001:db8:cafe::1' };
        assert.equal((await gw.get('/health', other)).status, 200);
        assert.equal((await gw.get('/health', { forwarded: 'For="_hidden-client"' })).status, 200);
      } finally {
        await gw.close();
      }
    });

    it('builds absolute URLs from the host and scheme the trusted proxy forwarded, or from PUBLIC_URL', async () => {
      const grid = '/v1/tiles/grid/8928308280fffff/10/osm-bright';
      const first = (body: unknown) => (body as string[])[0] ?? '';
      const gw = await gatewayWith({ trustProxy: true });
      try {
        const spoofed = await gw.get(grid, {
          'x-forwarded-host': 'evil.example, api.example.org',
          'x-forwarded-proto': 'http, https',
        });
        assert.equal(spoofed.status, 200);
        assert.match(first(spoofed.body), /^https:\/\/api\.example\.org\/v1\/tiles\//);
        // Nothing usable from the proxy: the Host header and the socket's scheme.
        const plain = await gw.get(grid, { 'x-forwarded-host': 'bad host/x', 'x-forwarded-proto': 'gopher' });
        assert.match(first(plain.body), /^http:\/\/127\.0\.0\.1:\d+\/v1\/tiles\//);
      } finally {
        await gw.close();
      }
      const direct = await gatewayWith({});
      try {
        const res = await direct.get(grid, { 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' });
        assert.match(first(res.body), /^http:\/\/127\.0\.0\.1:\d+\//);
      } finally {
        await direct.close();
      }
      let now = Date.UTC(2026, 10, 23, 12);
      const pinned = await startGateway({
        config: { httpLimits: { ...LIMITS, trustProxy: true }, publicUrl: 'https://geofabric.example.org' },
        clock: () => (now += 1),
      });
      try {
        const res = await pinned.get(grid, { 'x-forwarded-host': 'api.example.org' });
        assert.match(first(res.body), /^https:\/\/geofabric\.example\.org\/v1\/tiles\//);
      } finally {
        await pinned.close();
      }
    });
  });

  describe('per principal, once authenticated', () => {
    it('limits each signing key on its own, and forged requests spend nobody else', async () => {
      const gw = await gatewayWith({ principalPerMinute: 36, burstSeconds: 5 }); // bucket of 3
      const [alice, bob, carol] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
      const submit = (key = alice, prompt = 'x') => {
        const { body, headers } = signJob(key, inferenceJob(prompt));
        return gw.post('/v1/compute', body, headers);
      };
      try {
        // Past all four gates, no worker: 503 no_workers, which is no rate refusal.
        for (let i = 0; i < 3; i++) {
          const res = await submit(alice, `a${i}`);
          assert.equal(res.status, 503, `${i}: ${res.text}`);
        }
        const refused = await submit(alice, 'a3');
        assert.equal(refused.status, 429);
        assert.match((refused.body as ErrorBody).detail ?? '', /this principal/);
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
        assert.equal((await submit(bob, 'b0')).status, 503);
        // Ten requests claiming carol's key with a wrong signature: refused at gate 1, counted for nobody.
        for (let i = 0; i < 10; i++) {
          const { body } = signJob(carol, inferenceJob(`forged ${i}`));
          const bobs = signJob(bob, inferenceJob(`forged ${i}`)).headers['x-idn-signature'];
          const forged = await gw.post('/v1/compute', body, { 'x-idn-signature': bobs });
          assert.equal(forged.status, 401);
        }
        for (let i = 0; i < 3; i++) assert.equal((await submit(carol, `c${i}`)).status, 503);
      } finally {
        await gw.close();
      }
    });

    it('limits each API key on its own', async () => {
      const gw = await gatewayWith({ principalPerMinute: 24, burstSeconds: 5 }, ['key-one', 'key-two']); // bucket of 2
      const models = (key: string) => gw.get('/v1/models', { authorization: `Bearer ${key}` });
      try {
        assert.equal((await models('key-one')).status, 200);
        assert.equal((await models('key-one')).status, 200);
        assert.equal((await models('key-one')).status, 429);
        assert.equal((await models('key-two')).status, 200);
        // A wrong key is 401, not a rate refusal.
        assert.equal((await models('key-three')).status, 401);
      } finally {
        await gw.close();
      }
    });
  });

  describe('sizes and slow clients', () => {
    it('answers a query string over 4 KiB with 414 query_too_large', async () => {
      const gw = await gatewayWith({});
      try {
        const res = await gw.get(`/v1/compute/recent?limit=5&pad=${'a'.repeat(4100)}`);
        assert.equal(res.status, 414);
        assert.equal((res.body as ErrorBody).error, 'query_too_large');
        assert.equal((await gw.get(`/health?pad=${'a'.repeat(4000)}`)).status, 200);
      } finally {
        await gw.close();
      }
    });

    it('answers a body trickling in slower than the request timeout with 408 and closes the connection', async () => {
      const gw = await gatewayWith({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
      try {
        await assertSlowClientCut(
          gw.url,
          'POST /v1/compute HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{',
          ' ',
        );
        // The server is fine for everybody else.
        assert.equal((await gw.get('/health')).status, 200);
      } finally {
        await gw.close();
      }
    });

    it('answers headers trickling in slower than the headers timeout with 408 JSON and closes the connection', async () => {
      const gw = await gatewayWith({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
      try {
        await assertSlowClientCut(gw.url, 'GET /health HTTP/1.1\r\nhost: x\r\n', 'x-slow: 1\r\n');
      } finally {
        await gw.close();
      }
    });
  });
});
