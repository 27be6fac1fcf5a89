import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import OpenAI from 'openai';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { startFakeRuntime, type FakeRequest, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Svc = {
  job_id: string;
  worker_pk: string;
  provider: string;
  model: string;
  h3_cell: string;
  proof_record_id: string;
  epoch: number;
  cost: number;
  cold_start: boolean;
  fallback_reason: string | null;
};
const svcOf = (value: unknown) => (value as { svc: Svc }).svc;
const tick = () => new Promise((resolve) => setTimeout(resolve, 20));
const echo = (r: FakeRequest) => ({
  content: `worker says: ${(r.body.messages as { content: string }[]).at(-1)?.content}`,
});

describe('POST /v1/chat/completions (openai client, fake worker runtime and backbone)', () => {
  let worker: FakeRuntime;
  let backbone: FakeRuntime;
  let gw: Gateway;
  let client: OpenAI;
  let now = Date.now();

  before(async () => {
    worker = await startFakeRuntime('worker');
    backbone = await startFakeRuntime('backbone');
    gw = await startGateway({
      clock: () => now,
      config: { apiKeys: ['sk-chat'] },
      swarm: {
        workerRuntimeUrl: worker.url,
        workerModels: ['tinyllama', 'lfm2.5-1.2b-instruct'],
        prewarmModels: ['tinyllama'],
        backboneUrl: backbone.url,
        backboneApiKey: 'sk-backbone',
      },
    });
    await gw.swarm.prewarmed();
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-chat', maxRetries: 0 });
  });
  after(async () => {
    await gw.close();
    await worker.close();
    await backbone.close();
  });

  it('pre-warms tinyllama at start with a one-token completion', () => {
    const warmup = worker.chats()[0]!;
    assert.equal(warmup.body.model, 'tinyllama');
    assert.equal(warmup.body.max_tokens, 1);
  });

  it('answers on the local worker when it is online, with usage, cost and the svc object', async () => {
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'three parks in Rome' }],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.model, 'tinyllama');
    assert.equal(completion.choices[0]?.message.content, 'worker says: three parks in Rome');
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    const usage = completion.usage!;
    assert.ok(usage.prompt_tokens > 0 && usage.completion_tokens === 6);
    assert.equal(usage.total_tokens, usage.prompt_tokens + usage.completion_tokens);
    const svc = svcOf(completion);
    assert.equal(svc.provider, 'worker');
    assert.equal(svc.worker_pk, gw.node.publicKey);
    assert.equal(svc.h3_cell, '861e8050fffffff');
    assert.equal(svc.cold_start, false);
    assert.equal(svc.fallback_reason, null);
    assert.equal(svc.cost, Number((usage.total_tokens * 0.00001).toFixed(8)));
    assert.equal(svc.proof_record_id, `inference:${svc.job_id}`);
    assert.equal(completion.id, `chatcmpl-${svc.job_id}`);
    assert.equal(worker.chats().at(-1)?.body.model, 'tinyllama');
  });

  it('writes a hive/inference record with hashes of prompt and answer', async () => {
    const messages = [{ role: 'user' as const, content: 'where is the Colosseum?' }];
    const completion = await client.chat.completions.create({ model: 'tinyllama', messages });
    const svc = svcOf(completion);
    await gw.writer.flush();
    const record = await gw.proofs.getRecord(svc.proof_record_id);
    assert.ok(record);
    assert.equal(record.collection_type, 'inference');
    assert.equal(record.payload_type, 'hive/inference');
    assert.equal(record.address.h3_cell, '861e8050fffffff');
    assert.equal(record.address.epoch, svc.epoch);
    const payload = record.payload as Record<string, unknown>;
    assert.equal(payload.provider, 'worker');
    assert.equal(payload.model, 'tinyllama');
    assert.equal(payload.worker_pk, gw.node.publicKey);
    assert.equal(payload.tokens_in, completion.usage?.prompt_tokens);
    assert.equal(payload.tokens_out, completion.usage?.completion_tokens);
    assert.equal(payload.prompt_sha256, sha256Hex(canonicalJson(messages)));
    assert.equal(payload.answer_sha256, sha256Hex(completion.choices[0]!.message.content!));
    assert.match(payload.job_hash as string, /^[0-9a-f]{64}$/);
    assert.equal(payload.api_key_id, 'env:0'); // the first configured key
  });

  it('reports the first request to a model that is not warm as a cold start, once', async () => {
    const ask = () =>
      client.chat.completions.create({ model: 'lfm2.5-1.2b-instruct', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(svcOf(await ask()).cold_start, true);
    assert.equal(svcOf(await ask()).cold_start, false);
  });

  it('streams SSE chunks, the last with finish_reason and svc, then [DONE]; no usage chunk unless asked', async () => {
    const stream = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'stream me a reply' }],
      stream: true,
    });
    let text = '';
    let last: unknown;
    // The plain loop of OpenAI's examples: every chunk has a choices[0].
    for await (const chunk of stream) {
      text += chunk.choices[0]!.delta.content ?? '';
      last = chunk;
    }
    assert.equal(text, 'worker says: stream me a reply');
    const final = last as { choices: { finish_reason: string }[]; usage?: unknown; svc: Svc };
    assert.equal(final.choices[0]!.finish_reason, 'stop');
    assert.equal(final.usage, undefined);
    assert.equal(final.svc.provider, 'worker');

    const withUsage = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'count me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of withUsage) chunks.push(chunk);
    const usageChunk = chunks.at(-1) as unknown as { choices: unknown[]; usage: { total_tokens: number }; svc: Svc };
    assert.deepEqual(usageChunk.choices, []);
    assert.ok(usageChunk.usage.total_tokens > 0);
    assert.equal(usageChunk.svc.provider, 'worker');
    assert.equal(chunks.filter((c) => c.choices.length === 0).length, 1);
    assert.equal(final.svc.worker_pk, gw.node.publicKey);
    await gw.writer.flush();
    assert.ok(await gw.proofs.getRecord(final.svc.proof_record_id));

    const raw = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk-chat', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tinyllama', messages: [{ role: 'user', content: 'x' }], stream: true }),
    });
    assert.match(raw.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.ok((await raw.text()).endsWith('data: [DONE]\n\n'));
  });

  it('falls back to the backbone when the worker missed its heartbeats (90 s), and says so', async () => {
    now += 91_000;
    try {
      const completion = await client.chat.completions.create({
        model: 'tinyllama',
        messages: [{ role: 'user', content: 'anyone there?' }],
      });
      assert.equal(completion.model, 'llama-3.3-70b-versatile');
      assert.equal(completion.choices[0]?.message.content, 'backbone says: anyone there?');
      const svc = svcOf(completion);
      assert.equal(svc.provider, 'backbone');
      assert.equal(svc.worker_pk, 'backbone');
      assert.equal(svc.model, 'llama-3.3-70b-versatile');
      assert.equal(svc.cost, 0);
      assert.match(svc.fallback_reason ?? '', /no eligible worker is online \(model tinyllama/);
      const sent = backbone.chats().at(-1)!;
      assert.equal(sent.body.model, 'llama-3.3-70b-versatile');
      assert.equal(sent.headers.authorization, 'Bearer sk-backbone');
      await gw.writer.flush();
      const payload = (await gw.proofs.getRecord(svc.proof_record_id))?.payload as Record<string, unknown>;
      assert.equal(payload.provider, 'backbone');
      assert.equal(payload.worker_pk, 'backbone');
      assert.equal(payload.requested_model, 'tinyllama');
      assert.equal(payload.cost, 0);
    } finally {
      await gw.swarm.heartbeat(); // back online at the new time
    }
    const again = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'x' }],
    });
    assert.equal(svcOf(again).provider, 'worker');
  });

  it('serves the backbone model on the backbone without a fallback reason', async () => {
    const completion = await client.chat.completions.create({
      model: 'llama-3.3-70b-versatile',
      messages: [{ role: 'user', content: 'big question' }],
    });
    assert.equal(svcOf(completion).provider, 'backbone');
    assert.equal(svcOf(completion).fallback_reason, null);
  });

  it('aborts the upstream request when a client waiting for a whole answer disconnects', async () => {
    const before = worker.aborted;
    const errorsBefore = gw.swarm.stats(1).totals.errors;
    const sent = worker.chats().length;
    worker.reply = () => ({ hang: true });
    try {
      const abort = new AbortController();
      const pending = client.chat.completions
        .create({ model: 'tinyllama', messages: [{ role: 'user', content: 'slow' }] }, { signal: abort.signal })
        .catch((error: unknown) => error);
      for (let i = 0; i < 50 && worker.chats().length === sent; i++) await tick(); // the gateway is waiting upstream
      abort.abort();
      await pending;
      for (let i = 0; i < 50 && worker.aborted === before; i++) await tick();
      assert.equal(worker.aborted, before + 1);
      assert.equal(gw.swarm.stats(1).totals.errors, errorsBefore); // a client leaving is not a failure
    } finally {
      worker.reply = echo;
    }
  });

  it('on one kept-alive connection, stops only the completion in flight when its client leaves', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<unknown>();
    const post = (content: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${gw.url}/v1/chat/completions`,
          {
            method: 'POST',
            agent,
            headers: { authorization: 'Bearer sk-chat', 'content-type': 'application/json' },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('socket', (socket) => sockets.add(socket));
        req.on('error', reject);
        req.end(JSON.stringify({ model: 'tinyllama', messages: [{ role: 'user', content }] }));
      });
    const before = worker.aborted;
    try {
      for (let i = 0; i < 3; i++) assert.equal(await post(`question ${i}`), 200);
      assert.equal(sockets.size, 1, 'the three completions shared one connection');
      assert.equal(worker.aborted, before, 'answered completions are not aborted');
      const sent = worker.chats().length;
      worker.reply = () => ({ hang: true });
      const hanging = post('slow').catch(() => 'gone');
      for (let i = 0; i < 50 && worker.chats().length === sent; i++) await tick();
      agent.destroy(); // the client leaves: its one connection closes
      assert.equal(await hanging, 'gone');
      for (let i = 0; i < 50 && worker.aborted === before; i++) await tick();
      assert.equal(worker.aborted, before + 1);
    } finally {
      worker.reply = echo;
      agent.destroy();
    }
    const next = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(next.choices[0]?.finish_reason, 'stop');
  });

  it('aborts the upstream stream when the client disconnects', async () => {
    const before = worker.aborted;
    worker.reply = () => ({ content: 'one two three four five six seven eight', chunkDelayMs: 100 });
    try {
      const abort = new AbortController();
      const stream = await client.chat.completions.create(
        { model: 'tinyllama', messages: [{ role: 'user', content: 'long' }], stream: true },
        { signal: abort.signal },
      );
      for await (const chunk of stream) {
        if (chunk.choices[0]?.delta.content) break; // leaving the loop aborts the request
      }
      for (let i = 0; i < 50 && worker.aborted === before; i++) await tick();
      assert.equal(worker.aborted, before + 1);
    } finally {
      worker.reply = echo;
    }
  });
});
