import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { generateKeyPair } from '../../core/identity.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Counts = {
  requests: number;
  errors: number;
  tokens_in: number;
  cost: number;
  cold_starts: number;
  latency_ms: { p50: number; p99: number } | null;
  by_provider: Record<string, { requests: number }>;
  by_model: Record<string, { requests: number }>;
};

describe('/svc status, marketplace and inference audit', () => {
  let worker: FakeRuntime;
  let backbone: FakeRuntime;
  let gw: Gateway;
  let client: OpenAI;

  before(async () => {
    worker = await startFakeRuntime('worker');
    backbone = await startFakeRuntime('backbone');
    gw = await startGateway({
      config: { apiKeys: ['sk-ops'], operatorToken: 'op-token' },
      swarm: {
        workerRuntimeUrl: worker.url,
        workerModels: ['tinyllama', 'lfm2.5-1.2b-instruct'],
        prewarmModels: ['tinyllama'],
        backboneUrl: backbone.url,
        models: ['lfm2.5-1.2b-instruct', 'tinyllama', 'gemma-2-2b'],
      },
    });
    await gw.swarm.prewarmed();
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-ops', maxRetries: 0 });
    const ask = (model: string) =>
      client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }] });
    await ask('tinyllama');
    await ask('tinyllama');
    await ask('gemma-2-2b'); // no worker serves it: the backbone answers
    await gw
      .post(
        '/v1/chat/completions',
        { model: 'tinyllama', messages: [{ role: 'user', content: 'x' }] },
        {
          authorization: 'Bearer sk-ops',
          'x-svc-jurisdiction': 'US',
        },
      )
      .then((res) => assert.equal(res.status, 503));
  });
  after(async () => {
    await gw.close();
    await worker.close();
    await backbone.close();
  });

  it('GET /v1/models lists only the enabled models, plus the backbone model', async () => {
    const list = await client.models.list();
    assert.deepEqual(
      list.data.map((m) => m.id),
      ['lfm2.5-1.2b-instruct', 'tinyllama', 'gemma-2-2b', 'llama-3.3-70b-versatile'],
    );
    const res = await gw.post(
      '/v1/chat/completions',
      { model: 'phi-3-mini', messages: [{ role: 'user', content: 'x' }] },
      { authorization: 'Bearer sk-ops' },
    );
    assert.equal(res.status, 404);
    assert.equal((res.body as { error: { code: string } }).error.code, 'model_not_found');
  });

  it('GET /svc/status: workers by tier and cell, models, jobs in the last hour, backbone, epoch, version', async () => {
    const relay = generateKeyPair().publicKey;
    await gw.workers.register(
      {
        pk: relay,
        h3_cell: '871e80500ffffff',
        models: [],
        tools: [],
        hardware: { platform: 'android-arm64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 8 },
        hardware_tier: 1,
        relay: true,
        version: '0.1.0',
      },
      Date.now(),
    );
    const res = await gw.get('/svc/status');
    assert.equal(res.status, 200);
    const status = res.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    assert.equal(status.version, '0.1.0');
    assert.equal(typeof status.epoch, 'number');
    assert.equal(status.workers.online, 1);
    assert.equal(status.workers.relays_online, 1);
    assert.deepEqual(status.workers.by_hardware_tier, { '1': 1, '2': 0, '3': 0 });
    assert.deepEqual(status.workers.by_cell, { '861e8050fffffff': 1 });
    assert.equal(status.local_worker.pk, gw.node.publicKey);
    assert.deepEqual(status.local_worker.warm_models, ['tinyllama']);
    assert.equal(status.jobs_last_hour, 3);
    assert.equal(status.backbone.configured, true);
    assert.equal(status.backbone.reachable, true);
    assert.equal(status.default_model, 'lfm2.5-1.2b-instruct');
  });

  it('GET /svc/models: per model workers online, cells, warm or cold, price', async () => {
    const res = await gw.get('/svc/models');
    const models = (res.body as { models: Record<string, unknown>[] }).models;
    const byId = Object.fromEntries(models.map((m) => [m.id, m]));
    assert.equal(byId.tinyllama?.state, 'warm');
    assert.equal(byId.tinyllama?.workers_online, 1);
    assert.deepEqual(byId.tinyllama?.cells, ['861e8050fffffff']);
    assert.equal(byId['lfm2.5-1.2b-instruct']?.state, 'cold');
    assert.equal(byId['gemma-2-2b']?.state, 'backbone');
    assert.equal(byId['gemma-2-2b']?.workers_online, 0);
    assert.equal(byId['llama-3.3-70b-versatile']?.price_per_token, 0);
    assert.equal(byId.tinyllama?.price_per_token, 0.00001);
  });

  it('GET /svc/inference/recent: newest first, with provider, model, tokens, latency, epoch, job hash', async () => {
    const res = await gw.get('/svc/inference/recent?limit=2', { authorization: 'Bearer op-token' });
    const body = res.body as { view: string; count: number; entries: Record<string, unknown>[] };
    assert.equal(body.view, 'operator');
    assert.equal(body.count, 2);
    assert.equal(body.entries[0]?.provider, 'backbone');
    assert.equal(body.entries[0]?.worker_pk, 'backbone');
    assert.equal(body.entries[0]?.model, 'llama-3.3-70b-versatile');
    assert.equal(body.entries[1]?.provider, 'worker');
    for (const key of ['tokens_in', 'tokens_out', 'latency_ms', 'epoch', 'job_hash', 'record_id']) {
      assert.ok(key in body.entries[0]!, key);
    }
    assert.ok(!('api_key_id' in body.entries[0]!));
    // The public rows name no job (its id is a capability), step, job hash or record.
    const open = await gw.get('/svc/inference/recent?limit=2');
    const anonymous = open.body as { view: string; count: number; entries: Record<string, unknown>[] };
    assert.equal(anonymous.view, 'public');
    assert.equal(anonymous.count, 2);
    assert.equal(anonymous.entries[0]?.model, 'llama-3.3-70b-versatile');
    for (const key of ['job_id', 'step_id', 'job_hash', 'record_id']) assert.ok(!(key in anonymous.entries[0]!), key);
    for (const key of ['job_id', 'job_hash', 'record_id']) {
      assert.equal(open.text.includes(String(body.entries[0]![key])), false, key);
    }
    const wrong = await gw.get('/svc/inference/recent', { authorization: 'Bearer sk-ops' });
    assert.equal(wrong.status, 401);
    for (const bad of ['0', '101', 'ten', '']) {
      const refused = await gw.get(`/svc/inference/recent?limit=${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal((refused.body as { error: string }).error, 'invalid_limit');
    }
  });

  it('GET /svc/inference/stats: hourly counts, tokens, latency percentiles, by provider and model', async () => {
    const res = await gw.get('/svc/inference/stats?hours=3');
    const body = res.body as { hours: number; buckets: (Counts & { epoch: number })[]; totals: Counts };
    assert.equal(body.hours, 3);
    assert.equal(body.buckets.length, 3);
    const t = body.totals;
    assert.equal(t.requests, 3);
    assert.equal(t.errors, 1);
    assert.ok(t.tokens_in > 0 && t.cost > 0);
    assert.ok(t.latency_ms && t.latency_ms.p50 <= t.latency_ms.p99);
    assert.equal(t.by_provider.worker?.requests, 2);
    assert.equal(t.by_provider.backbone?.requests, 1);
    assert.equal(t.by_model.tinyllama?.requests, 2);
    assert.equal(t.by_model['llama-3.3-70b-versatile']?.requests, 1);
    assert.equal((await gw.get('/svc/inference/stats?hours=169')).status, 400);
  });
});
