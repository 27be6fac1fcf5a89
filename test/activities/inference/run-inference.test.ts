import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { createSwarm, type SwarmConfig } from '../../../activities/inference/index.js';
import { createRecordBatcher } from '../../../activities/proof/record-batcher.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../../core/epoch.js';
import { generateKeyPair } from '../../../core/identity.js';
import { openSqlite } from '../../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../../../store/sqlite/rate-limit-store.js';
import { createSqliteWorkerRegistry } from '../../../store/sqlite/worker-registry.js';
import { startFakeRuntime, type FakeReply, type FakeRuntime } from '../../helpers/fake-openai-runtime.js';

async function swarmWith(config: Partial<SwarmConfig>) {
  const db = openSqlite(':memory:');
  const proofs = createSqliteProofStore(db);
  const node = generateKeyPair();
  const writer = createRecordBatcher({
    store: proofs,
    signer: node,
    clock: Date.now,
    genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    flushMs: 5,
  });
  const workers = createSqliteWorkerRegistry(db);
  const swarm = createSwarm({
    rateLimits: createSqliteRateLimitStore(db),
    config: {
      workerRuntimeUrl: undefined,
      workerModels: [],
      prewarmModels: [],
      backboneUrl: undefined,
      backboneApiKey: undefined,
      timeoutMs: 2000,
      freeMessagesPerDay: 50,
      ...config,
    },
    workers,
    proofs: writer,
    clock: Date.now,
    nodePk: node.publicKey,
  });
  await swarm.start();
  return {
    swarm,
    proofs,
    workers,
    close: async () => {
      swarm.stop();
      await writer.close();
      db.close();
    },
  };
}

const step = {
  job_id: '7b0c1e52-1f0e-4a57-9a53-2c1d2e3f4a5b',
  step_id: 'ask',
  model: 'tinyllama',
  messages: [{ role: 'user' as const, content: 'three parks in Rome' }],
  want_locations: true,
};

async function failure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ApplicationFailure, String(error));
    return error;
  }
  assert.fail('expected a failure');
}

describe('runInference (the compound-job inference step)', () => {
  let runtime: FakeRuntime;
  let reply: FakeReply;
  before(async () => {
    runtime = await startFakeRuntime('worker', () => reply);
  });
  after(() => runtime.close());

  it('returns docs/protocol.md §2.3 output with the places the model named, recorded under job and step', async () => {
    const s = await swarmWith({ workerRuntimeUrl: runtime.url, workerModels: ['tinyllama'] });
    try {
      reply = {
        content:
          '{"text":"Villa Borghese and Villa Ada.","locations":[{"name":"Villa Borghese","address":"Rome"},{"name":"Villa Ada","address":"Rome"}]}',
        usage: { prompt_tokens: 40, completion_tokens: 12 },
      };
      const out = await s.swarm.runInference(step);
      assert.equal(out.text, 'Villa Borghese and Villa Ada.');
      assert.deepEqual(out.locations, [
        { name: 'Villa Borghese', address: 'Rome' },
        { name: 'Villa Ada', address: 'Rome' },
      ]);
      assert.equal(out.model, 'tinyllama');
      assert.equal(out.provider, 'worker');
      assert.equal(out.tokens_in, 40);
      assert.equal(out.tokens_out, 12);
      assert.equal(out.cost, 0.00052);
      assert.equal(out.proof_job_id, `inference:${step.job_id}:ask`);
      assert.ok(Number.isInteger(out.latency_ms));
      const record = await s.proofs.getRecord(out.proof_job_id); // awaited: durable before the step reports
      const payload = record?.payload as Record<string, unknown>;
      assert.equal(payload.step_id, 'ask');
      assert.deepEqual(payload.locations, out.locations);

      // A retry (the activity ran, then its report was lost) reports what was first accounted.
      reply = { content: '{"text":"Other.","locations":[]}', usage: { prompt_tokens: 40, completion_tokens: 99 } };
      const retry = await s.swarm.runInference(step);
      assert.equal(retry.tokens_out, 12);
      assert.equal(retry.cost, 0.00052);
      assert.deepEqual(retry.locations, out.locations);
    } finally {
      await s.close();
    }
  });

  it('fails without retry on bad input and retryably when nobody can answer', async () => {
    const s = await swarmWith({});
    try {
      const bad = await failure(s.swarm.runInference({ ...step, model: 'gpt-4' }));
      assert.equal(bad.type, 'invalid_model');
      assert.equal(bad.nonRetryable, true);
      const none = await failure(s.swarm.runInference(step));
      assert.equal(none.type, 'no_workers');
      assert.equal(none.nonRetryable, false);
    } finally {
      await s.close();
    }
  });

  it('answers on the backbone and says why when only remote workers are eligible', async () => {
    const s = await swarmWith({ backboneUrl: runtime.url });
    try {
      await s.workers.register(
        {
          pk: generateKeyPair().publicKey,
          h3_cell: '861e8050fffffff',
          models: ['tinyllama'],
          tools: [],
          hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 },
          hardware_tier: 1,
          relay: false,
          version: '0.1.0',
        },
        Date.now(),
      );
      reply = { content: 'from the backbone' };
      const out = await s.swarm.runInference({ ...step, want_locations: false });
      assert.equal(out.provider, 'backbone');
      assert.equal(out.worker_pk, 'backbone');
      assert.equal(out.model, 'llama-3.3-70b-versatile');
      assert.equal(out.cost, 0);
      assert.deepEqual(out.locations, []);
      const record = await s.proofs.getRecord(out.proof_job_id);
      assert.match(
        String((record?.payload as { fallback_reason: string }).fallback_reason),
        /1 eligible worker\(s\) are registered elsewhere/,
      );
    } finally {
      await s.close();
    }
  });
});
