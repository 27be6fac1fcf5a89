/**
 * The OpenAI-compatible routes as the official `openai` npm client sees them, against a running gateway and a
 * local fake model runtime (no backbone): error classes and fields, the plain streaming loop, models.
 */
import assert from 'node:assert/strict';
import OpenAI, { APIError, AuthenticationError, NotFoundError, RateLimitError } from 'openai';
import { startFakeRuntime, type FakeReply, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
const hi = [{ role: 'user' as const, content: 'hi' }];

async function thrown(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail('expected the call to fail');
}

describe('openai npm client against the gateway', () => {
  let worker: FakeRuntime;
  let gw: Gateway;
  let client: OpenAI;
  let reply: FakeReply | undefined;

  before(async () => {
    worker = await startFakeRuntime('worker', () => reply ?? { content: 'one two three' });
    gw = await startGateway({
      config: { apiKeys: ['sk-sdk'] },
      swarm: { workerRuntimeUrl: worker.url, workerModels: ['tinyllama'], timeoutMs: 2000, freeMessagesPerDay: 5 },
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-sdk', maxRetries: 0 });
  });
  afterEach(() => {
    reply = undefined;
  });
  after(async () => {
    await gw.close();
    await worker.close();
  });

  it('an unknown model raises NotFoundError with code model_not_found and a message', async () => {
    const error = await thrown(client.chat.completions.create({ model: 'gpt-4o', messages: hi }));
    assert.ok(error instanceof NotFoundError, String(error));
    assert.equal(error.code, 'model_not_found');
    assert.equal(error.type, 'invalid_request_error');
    assert.equal(error.param, 'model');
    assert.match(error.message, /^404 model "gpt-4o" is not available/);
  });

  it('a bad key raises AuthenticationError (invalid_api_key)', async () => {
    const stranger = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    for (const call of [
      () => stranger.chat.completions.create({ model: 'tinyllama', messages: hi }),
      () => stranger.models.list(),
    ]) {
      const error = await thrown(call());
      assert.ok(error instanceof AuthenticationError, String(error));
      assert.equal(error.code, 'invalid_api_key');
    }
  });

  it('the plain `for await (const c of stream) c.choices[0].delta` loop completes', async () => {
    const stream = await client.chat.completions.create({ model: 'tinyllama', messages: hi, stream: true });
    let text = '';
    for await (const c of stream) text += c.choices[0]!.delta.content ?? '';
    assert.equal(text, 'one two three');
  });

  it('an error after the stream started arrives as an OpenAI error the client raises', async () => {
    reply = { content: 'one two three', failMidStream: true };
    const stream = await client.chat.completions.create({ model: 'tinyllama', messages: hi, stream: true });
    const error = await thrown(
      (async () => {
        for await (const c of stream) void c.choices[0]!.delta;
      })(),
    );
    assert.ok(error instanceof APIError, String(error));
    assert.equal((error.error as { type: string }).type, 'server_error');
    assert.equal((error.error as { code: string }).code, 'runtime_unavailable');
  });

  it('models.list lists what can answer now, and models.retrieve returns an OpenAI model object', async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    assert.deepEqual(ids, ['tinyllama']); // no backbone here: neither its model nor worker models it would serve
    const model = await client.models.retrieve('tinyllama');
    assert.equal(model.id, 'tinyllama');
    assert.equal(model.object, 'model');
    assert.equal(typeof model.created, 'number');
    assert.equal(model.owned_by, 'geofabric-swarm');
    const missing = await thrown(client.models.retrieve('llama-3.3-70b-versatile'));
    assert.ok(missing instanceof NotFoundError, String(missing));
    assert.equal(missing.code, 'model_not_found');
  });

  it('the per-key rate limit (a gate) raises RateLimitError with code rate_limit_exceeded', async () => {
    let now = Date.UTC(2026, 10, 23, 12);
    const strict = await startGateway({
      clock: () => now,
      config: {
        apiKeys: ['sk-limited'],
        httpLimits: {
          ipPerMinute: 0,
          principalPerMinute: 12,
          burstSeconds: 5, // a bucket of 1
          trustProxy: false,
          requestTimeoutMs: 30_000,
          headersTimeoutMs: 10_000,
        },
      },
    });
    try {
      const limited = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'sk-limited', maxRetries: 0 });
      await limited.models.list();
      const error = await thrown(limited.models.list());
      assert.ok(error instanceof RateLimitError, String(error));
      assert.equal(error.code, 'rate_limit_exceeded');
      assert.equal(error.type, 'requests');
      assert.ok(Number(error.headers?.get('retry-after')) >= 1);
      now += 60_000;
      await limited.models.list();
    } finally {
      await strict.close();
    }
  });
});
