import assert from 'node:assert/strict';
import { startFakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Runtime = Awaited<ReturnType<typeof startFakeRuntime>>;

const CHAT = '/v1/chat/completions';
const ask = (extra: Record<string, unknown> = {}) => ({
  model: 'tinyllama',
  messages: [{ role: 'user', content: 'one park in Rome' }],
  ...extra,
});

/**
 * Whole chat completions answered before Koa (api/chat-lane.ts), and everything else handed to Koa with the body
 * the lane read and the takes it made: the same answers, each request counted once against every limit.
 */
describe('chat completions: the lane before Koa', () => {
  let runtime: Runtime;
  let gw: Gateway;
  let freeKey: string;

  before(async () => {
    runtime = await startFakeRuntime('lane', () => ({
      content: 'A park.',
      usage: { prompt_tokens: 3, completion_tokens: 2 },
    }));
    gw = await startGateway({
      config: {
        apiKeys: ['sk-lane'],
        httpLimits: {
          // Buckets of 100 that refill one a minute: the counts below do not move while the test runs.
          ipPerMinute: 1,
          principalPerMinute: 1,
          ipBodyBytesPerMinute: 1024 * 1024,
          burstSeconds: 6000,
          trustProxy: false,
          requestTimeoutMs: 30_000,
          headersTimeoutMs: 20_000,
        },
      },
      swarm: { workerRuntimeUrl: runtime.url, workerModels: ['tinyllama'], freeMessagesPerDay: 1 },
    });
    freeKey = (await gw.apiKeyStore.create('free', 'free', Date.now())).key;
  });
  after(async () => {
    await gw.close();
    await runtime.close();
  });

  const post = (body: unknown, headers: Record<string, string> = { authorization: 'Bearer sk-lane' }) =>
    gw.post(CHAT, body, headers);
  const remaining = (res: { headers: Headers }) => Number(res.headers.get('ratelimit-remaining'));

  it('answers a whole completion without Koa, with the request id, rate headers and JSON as Koa wrote them', async () => {
    const before = gw.koaRequests.length;
    const res = await post(ask(), { authorization: 'Bearer sk-lane', 'x-request-id': 'lane-1' });
    assert.equal(res.status, 200, res.text);
    assert.equal(gw.koaRequests.length, before, 'not through Koa');
    assert.equal(res.headers.get('x-request-id'), 'lane-1');
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(res.text)));
    assert.ok(res.headers.get('ratelimit-limit'));
    assert.equal((res.body as { choices: { message: { content: string } }[] }).choices[0]?.message.content, 'A park.');
  });

  it('answers a key from the API key store in the lane too', async () => {
    const { key } = await gw.apiKeyStore.create('pro', 'pro', Date.now());
    const before = gw.koaRequests.length;
    const res = await post(ask(), { authorization: `Bearer ${key}` });
    assert.equal(res.status, 200, res.text);
    assert.equal(gw.koaRequests.length, before);
  });

  it('hands what it does not answer to Koa, which answers it as before', async () => {
    const cases: [unknown, Record<string, string>, number, string][] = [
      [ask(), { authorization: 'Bearer nope' }, 401, 'invalid_api_key'],
      [ask({ model: 'no-such-model' }), { authorization: 'Bearer sk-lane' }, 404, 'model_not_found'],
      [{ messages: 'x' }, { authorization: 'Bearer sk-lane' }, 400, 'invalid_request'],
    ];
    for (const [body, headers, status, code] of cases) {
      const before = gw.koaRequests.length;
      const res = await post(body, headers);
      assert.equal(res.status, status, res.text);
      assert.equal((res.body as { error: { code: string } }).error.code, code);
      assert.equal(gw.koaRequests.length, before + 1, `${code} through Koa`);
    }
    const raw = await gw.request('POST', CHAT, {
      raw: '{"model": "tinyllama",',
      headers: { authorization: 'Bearer sk-lane', 'content-type': 'application/json' },
    });
    assert.equal(raw.status, 400);
    assert.equal((raw.body as { error: { code: string } }).error.code, 'invalid_json');
    const streamed = await post(ask({ stream: true }));
    assert.equal(streamed.status, 200);
    assert.match(streamed.text, /data: \[DONE\]/);
  });

  it('counts every request once against its address and its key, answered in the lane or handed to Koa', async () => {
    const first = await post(ask());
    let left = remaining(first);
    for (const body of [ask(), ask({ model: 'no-such-model' }), ask({ stream: true }), ask()]) {
      const res = await post(body);
      assert.equal(remaining(res), left - 1, `one take for ${JSON.stringify(body).slice(0, 60)}`);
      left = remaining(res);
    }
  });

  it("refuses a free key past its quota in the lane, in OpenAI's shape with retry-after", async () => {
    const ok = await post(ask(), { authorization: `Bearer ${freeKey}` });
    assert.equal(ok.status, 200, ok.text);
    const before = gw.koaRequests.length;
    const refused = await post(ask(), { authorization: `Bearer ${freeKey}` });
    assert.equal(refused.status, 429);
    assert.equal(gw.koaRequests.length, before);
    assert.equal((refused.body as { error: { code: string } }).error.code, 'insufficient_quota');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.headers.get('content-type'), 'application/json; charset=utf-8');
  });
});
