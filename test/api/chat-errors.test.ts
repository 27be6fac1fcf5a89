import assert from 'node:assert/strict';
import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError, RateLimitError } from 'openai';
import { startFakeRuntime, type FakeReply, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
const hi = [{ role: 'user' as const, content: 'hi' }];
const errorOf = (res: { body: unknown }) =>
  (res.body as { error: { message: string; type: string; param: string | null; code: string } }).error;

/** The APIError the openai client throws for `promise`. */
async function apiError(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof APIError, String(error));
    return error;
  }
  assert.fail('expected the request to fail');
}

describe('POST /v1/chat/completions errors', () => {
  let worker: FakeRuntime;
  let backbone: FakeRuntime;
  let gw: Gateway;
  let client: OpenAI;
  let workerReply: FakeReply | undefined;
  let backboneReply: FakeReply | undefined;

  before(async () => {
    worker = await startFakeRuntime('worker', () => workerReply ?? { content: 'ok' });
    backbone = await startFakeRuntime('backbone', () => backboneReply ?? { content: 'ok' });
    gw = await startGateway({
      config: { apiKeys: ['sk-ops'] },
      swarm: {
        workerRuntimeUrl: worker.url,
        workerModels: ['tinyllama'],
        backboneUrl: backbone.url,
        backboneApiKey: 'sk-backbone',
        timeoutMs: 300,
        freeMessagesPerDay: 2,
      },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-ops', maxRetries: 0 });
  });
  afterEach(() => {
    workerReply = undefined;
    backboneReply = undefined;
  });
  after(async () => {
    await gw.close();
    await worker.close();
    await backbone.close();
  });

  it('401 invalid_api_key (OpenAI shape) without a key or with an unknown one: the SDK raises AuthenticationError', async () => {
    const keyless = await gw.post('/v1/chat/completions', { model: 'tinyllama', messages: hi });
    assert.equal(keyless.status, 401);
    assert.deepEqual(keyless.body, {
      error: {
        message: 'a valid API key is required: Authorization: Bearer <key>',
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_api_key',
      },
    });
    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-nobody', maxRetries: 0 });
    const error = await apiError(stranger.chat.completions.create({ model: 'tinyllama', messages: hi }));
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.status, 401);
    assert.equal(error.code, 'invalid_api_key');
    assert.equal(error.type, 'invalid_request_error');
    assert.match(error.message, /valid API key is required/);
  });

  it('404 model_not_found for a model that is not in the registry: the SDK raises NotFoundError', async () => {
    const error = await apiError(client.chat.completions.create({ model: 'gpt-4o', messages: hi }));
    assert.ok(error instanceof NotFoundError);
    assert.equal(error.status, 404);
    assert.equal(error.code, 'model_not_found');
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.param, 'model');
    assert.match(error.message, /model "gpt-4o" is not available/);
  });

  it('400 names the field at fault as param, and bad JSON is an OpenAI-shaped 400 too', async () => {
    const error = await apiError(client.chat.completions.create({ model: 'tinyllama', messages: hi, n: 2 }));
    assert.ok(error instanceof BadRequestError);
    assert.equal(error.param, 'n');
    assert.equal(error.code, 'invalid_request');
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-ops', 'content-type': 'application/json' },
      body: '{"model":',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { error: { code: string; type: string } };
    assert.equal(body.error.code, 'invalid_json');
    assert.equal(body.error.type, 'invalid_request_error');
  });

  it('answers the rest of the API in its own shape', async () => {
    const res = await gw.get('/v1/compute/nothing-here');
    assert.equal(res.status, 404);
    assert.equal((res.body as { error: string }).error, 'job_not_found');
  });

  it('400 invalid_request for what the API does not support (n > 1, images, unknown svc tools)', async () => {
    const headers = { authorization: 'Bearer sk-ops' };
    const bodies = [
      { model: 'tinyllama', messages: hi, n: 2 },
      { model: 'tinyllama', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] },
      { model: 'tinyllama', messages: hi, svc: { tools: ['teleport'] } },
      { model: 'tinyllama', messages: [] },
    ];
    for (const body of bodies) {
      const res = await gw.post('/v1/chat/completions', body, headers);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(errorOf(res).code, 'invalid_request');
    }
  });

  it('429 quota_exceeded with retry-after once a free key used its daily messages', async () => {
    const { key } = await gw.apiKeyStore.create('free user', 'free', Date.now());
    const free = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    await free.chat.completions.create({ model: 'tinyllama', messages: hi });
    await free.chat.completions.create({ model: 'tinyllama', messages: hi });
    const error = await apiError(free.chat.completions.create({ model: 'tinyllama', messages: hi }));
    assert.ok(error instanceof RateLimitError);
    assert.equal(error.status, 429);
    assert.equal(error.code, 'insufficient_quota');
    assert.equal(error.type, 'insufficient_quota');
    assert.ok(Number(error.headers?.get('retry-after')) >= 1);
    // The operator's configured key is not a free-tier key.
    for (let i = 0; i < 3; i++) await client.chat.completions.create({ model: 'tinyllama', messages: hi });
  });

  it('charges a free key only for answered requests: 503 no_workers and upstream failures cost nothing', async () => {
    const { key } = await gw.apiKeyStore.create('free user 2', 'free', Date.now());
    const free = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: key, maxRetries: 0 });
    for (let i = 0; i < 3; i++) {
      const unanswered = await apiError(
        free.chat.completions.create({ model: 'tinyllama', messages: hi }, { headers: { 'x-svc-jurisdiction': 'US' } }),
      );
      assert.equal(unanswered.status, 503);
    }
    workerReply = { status: 500 };
    backboneReply = { status: 500 };
    for (const stream of [false, true]) {
      const failed = await apiError(free.chat.completions.create({ model: 'tinyllama', messages: hi, stream }));
      assert.equal(failed.status, 502);
    }
    workerReply = undefined;
    backboneReply = undefined;
    // The allowance (2) is intact: two answers, then the refusal.
    await free.chat.completions.create({ model: 'tinyllama', messages: hi });
    await free.chat.completions.create({ model: 'tinyllama', messages: hi });
    assert.equal((await apiError(free.chat.completions.create({ model: 'tinyllama', messages: hi }))).status, 429);
  });

  it('503 no_workers when x-svc-jurisdiction excludes every worker; the detail says retry or drop it', async () => {
    const res = await gw.post(
      '/v1/chat/completions',
      { model: 'tinyllama', messages: hi },
      { authorization: 'Bearer sk-ops', 'x-svc-jurisdiction': 'US' },
    );
    assert.equal(res.status, 503);
    assert.equal(errorOf(res).code, 'no_workers');
    assert.match(errorOf(res).message, /retry later or remove the jurisdiction constraint/);
    assert.match(errorOf(res).message, /backbone cannot serve this request/);
    const inItaly = await client.chat.completions.create(
      { model: 'tinyllama', messages: hi },
      { headers: { 'x-svc-jurisdiction': 'IT' } },
    );
    assert.equal((inItaly as unknown as { svc: { provider: string } }).svc.provider, 'worker');
  });

  it('503 no_workers when x-svc-min-tier is above every worker (a new worker is a seedling)', async () => {
    const error = await apiError(
      client.chat.completions.create(
        { model: 'tinyllama', messages: hi },
        { headers: { 'x-svc-min-tier': 'navigator' } },
      ),
    );
    assert.equal(error.status, 503);
    assert.equal(error.code, 'no_workers');
  });

  it('502 runtime_unavailable when the worker runtime fails, 504 upstream_timeout when it hangs', async () => {
    workerReply = { status: 500 };
    const failed = await apiError(client.chat.completions.create({ model: 'tinyllama', messages: hi }));
    assert.equal(failed.status, 502);
    assert.equal(failed.code, 'runtime_unavailable');
    workerReply = { hang: true };
    const slow = await apiError(client.chat.completions.create({ model: 'tinyllama', messages: hi }));
    assert.equal(slow.status, 504);
    assert.equal(slow.code, 'upstream_timeout');
  });

  it('ends a stream that breaks with an OpenAI-shaped error event (no [DONE])', async () => {
    workerReply = { content: 'half a sentence', failMidStream: true };
    const stream = await client.chat.completions.create({ model: 'tinyllama', messages: hi, stream: true });
    let text = '';
    const error = await apiError(
      (async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      })(),
    );
    assert.equal(text, 'half ');
    assert.equal((error.error as { code: string }).code, 'runtime_unavailable');

    workerReply = { content: 'slow words here', chunkDelayMs: 600 };
    const stalled = await client.chat.completions.create({ model: 'tinyllama', messages: hi, stream: true });
    const idle = await apiError(
      (async () => {
        for await (const _ of stalled);
      })(),
    );
    assert.equal((idle.error as { code: string }).code, 'upstream_timeout');
  });

  it('a stream that cannot start is an ordinary HTTP error', async () => {
    workerReply = { status: 503 };
    const error = await apiError(client.chat.completions.create({ model: 'tinyllama', messages: hi, stream: true }));
    assert.equal(error.status, 502);
    assert.equal(error.code, 'runtime_unavailable');
  });

  it('502 backbone_unavailable when the backbone fails and no worker serves the model', async () => {
    backboneReply = { status: 500 };
    const error = await apiError(client.chat.completions.create({ model: 'gemma-2-2b', messages: hi }));
    assert.equal(error.status, 502);
    assert.equal(error.code, 'backbone_unavailable');
  });

  it('503 no_workers when a tool is required and no worker advertises it (the backbone runs no tools)', async () => {
    const res = await gw.post(
      '/v1/chat/completions',
      { model: 'tinyllama', messages: hi, svc: { tools: ['web-search'] } },
      { authorization: 'Bearer sk-ops' },
    );
    assert.equal(res.status, 503);
    assert.equal(errorOf(res).code, 'no_workers');
    assert.match(errorOf(res).message, /tools web-search run only on swarm workers/);
  });
});

describe('POST /v1/chat/completions with neither a worker runtime nor a backbone', () => {
  let gw: Gateway;
  before(async () => {
    gw = await startGateway({ config: { apiKeys: ['sk-ops'] } });
  });
  after(() => gw.close());

  it('503 no_workers with retry-after', async () => {
    const res = await gw.post(
      '/v1/chat/completions',
      { model: 'lfm2.5-1.2b-instruct', messages: hi },
      { authorization: 'Bearer sk-ops' },
    );
    assert.equal(res.status, 503);
    assert.equal(errorOf(res).code, 'no_workers');
    assert.match(errorOf(res).message, /no backbone is configured/);
    assert.ok(res.headers.get('retry-after'));
  });

  it('502 runtime_unavailable when the configured runtime does not listen', async () => {
    const down = await startGateway({
      config: { apiKeys: ['sk-ops'] },
      swarm: { workerRuntimeUrl: 'http://127.0.0.1:9/v1', workerModels: ['tinyllama'] },
    });
    try {
      const res = await down.post(
        '/v1/chat/completions',
        { model: 'tinyllama', messages: hi },
        { authorization: 'Bearer sk-ops' },
      );
      assert.equal(res.status, 502);
      assert.equal(errorOf(res).code, 'runtime_unavailable');
    } finally {
      await down.close();
    }
  });
});
