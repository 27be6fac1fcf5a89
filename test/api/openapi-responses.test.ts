import assert from 'node:assert/strict';
import type { z } from 'zod';
import { jobLookupSchema, computeResponseSchema, recentJobsSchema } from '../../api/schemas/compute-response.js';
import { tileGridSchema, tileStatsSchema } from '../../api/schemas/geo-responses.js';
import { healthResponseSchema, toolListSchema, toolSchema } from '../../api/schemas/service-responses.js';
import {
  batchRejectionSchema,
  batchVerdictSchema,
  proofBundleSchema,
  proofPurchaseResponseSchema,
  recordPageSchema,
} from '../../api/schemas/store-responses.js';
import {
  chatCompletionSchema,
  earningsSchema,
  heartbeatResponseSchema,
  leaveResponseSchema,
  inferenceStatsSchema,
  marketplaceSchema,
  modelListSchema,
  recentInferencesSchema,
  registeredWorkerSchema,
  swarmStatusSchema,
  workerListSchema,
} from '../../api/schemas/swarm-responses.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import type { Seal } from '../../core/proof-types.js';
import { epochAt } from '../../core/epoch.js';
import { inferenceEntry, push, registerWorker, sealThrough } from '../helpers/proofs.js';

const API_KEY = 'gf_test_reference_key';
// Three epochs before now: its records are past the sync window and go with their seals; EPOCH + 3 is open.
const EPOCH = epochAt(Date.now()) - 3;

/**
 * The reference is only as good as its schemas: real answers must parse with the documented response schema
 * and lose nothing doing so (a field the schema does not name would be stripped, and then differ).
 */
function conforms(schema: z.ZodType, res: { status: number; body: unknown }, status = 200): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const parsed = schema.safeParse(res.body);
  assert.ok(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues.slice(0, 3)));
  assert.deepEqual(parsed.data, res.body, 'the answer has fields the documented schema does not name');
}

describe('documented answer schemas match real answers', function () {
  this.timeout(30_000);
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let backbone: FakeRuntime;
  const worker = generateKeyPair();
  const client = generateKeyPair();
  const bearer = { authorization: `Bearer ${API_KEY}` };
  let seals: Seal[];

  before(async () => {
    backbone = await startFakeRuntime('backbone');
    gw = await startGateway({ config: { apiKeys: [API_KEY] }, swarm: { backboneUrl: backbone.url } });
    await registerWorker(gw.workers, worker);
    const local = createSqliteProofStore(openSqlite(':memory:'));
    const records = await local.appendRecords(worker, [
      ...['a', 'b'].map((id) => inferenceEntry(id, EPOCH)),
      inferenceEntry('open', EPOCH + 3),
    ]);
    seals = await sealThrough(local, worker, EPOCH + 1);
    conforms(batchVerdictSchema, await push(gw, worker, '/store/sync', records, seals));
    conforms(batchVerdictSchema, await push(gw, worker, '/store/epochs', seals));
  });
  after(async () => {
    await gw.close();
    await backbone.close();
  });

  it('service and tools', async () => {
    conforms(healthResponseSchema, await gw.get('/health'));
    conforms(toolListSchema, await gw.get('/v1/tools'));
    conforms(toolSchema, await gw.get('/v1/tools/web-search'));
  });

  it('compute, chat and the swarm views', async () => {
    const signed = signJob(client, inferenceJob('three parks'));
    const job = await gw.post('/v1/compute', signed.body, signed.headers);
    conforms(computeResponseSchema, job);
    conforms(jobLookupSchema, await gw.get(`/v1/compute/${(job.body as { job_id: string }).job_id}`));
    conforms(recentJobsSchema, await gw.get('/v1/compute/recent'));
    conforms(
      chatCompletionSchema,
      await gw.post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }, bearer),
    );
    conforms(modelListSchema, await gw.get('/v1/models', bearer));
    conforms(swarmStatusSchema, await gw.get('/svc/status'));
    conforms(marketplaceSchema, await gw.get('/svc/models'));
    conforms(recentInferencesSchema, await gw.get('/svc/inference/recent'));
    conforms(inferenceStatsSchema, await gw.get('/svc/inference/stats'));
  });

  it('workers and earnings', async () => {
    const node = generateKeyPair();
    const registration = signJob(node, {
      h3_cell: '861e8050fffffff',
      models: ['lfm2.5-1.2b-instruct'],
      tools: ['web-search'],
      hardware: { platform: 'linux-x64', gpu: 'NVIDIA GeForce RTX 3060', vram_gb: 12, ram_gb: 32, cores: 12 },
      hardware_tier: 2,
      relay: false,
      version: '0.1.0',
      created_at: new Date().toISOString(),
    });
    conforms(
      registeredWorkerSchema,
      await gw.post('/svc/workers/register', registration.body, registration.headers),
      201,
    );
    const beat = signJob(node, { seq: Date.now() });
    conforms(heartbeatResponseSchema, await gw.post('/svc/workers/heartbeat', beat.body, beat.headers));
    const leave = signJob(node, { seq: Date.now() + 1, created_at: new Date().toISOString() });
    conforms(leaveResponseSchema, await gw.post('/svc/workers/leave', leave.body, leave.headers));
    conforms(workerListSchema, await gw.get('/svc/workers'));
    conforms(earningsSchema, await gw.get(`/svc/workers/${node.publicKey}/earnings`));
  });

  it('tiles', async () => {
    conforms(tileStatsSchema, await gw.get('/v1/tiles/stats?hours=2'));
    conforms(tileGridSchema, await gw.get('/v1/tiles/grid/861e8050fffffff/10/osm-bright?rings=1'));
  });

  it('the proof store', async () => {
    conforms(recordPageSchema, await gw.get('/store/query?limit=2'));
    conforms(proofBundleSchema, await gw.get('/store/proof/a'));
    conforms(proofBundleSchema, await gw.get('/store/proof/open'));
    const purchase = signJob(client, { record_id: 'a', created_at: new Date().toISOString() });
    conforms(proofPurchaseResponseSchema, await gw.post('/store/proof/a', purchase.body, purchase.headers));
    // A record re-sent with other content is a conflict: the lists come with the error.
    const local = createSqliteProofStore(openSqlite(':memory:'));
    const [changed] = await local.appendRecords(worker, [{ ...inferenceEntry('a', EPOCH), payload: { other: 1 } }]);
    conforms(batchRejectionSchema, await push(gw, worker, '/store/sync', [changed], seals), 409);
  });
});
