import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { workflowIdOf } from '../../api/temporal-job-runner.js';
import { loadConfig } from '../../bin/config.js';
import { startWorker, type RunningWorker } from '../../bin/worker.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { QueueNaming } from '../../core/task-queues.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv, startTemporalGateway } from './live-env.js';

const ROME = '861e8050fffffff';
const LAPTOP = { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 4 };
const MB3 = 3 * 1024 * 1024;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Every payload's byte length in a workflow history (activity inputs and results, the workflow's own). */
function payloadSizes(value: unknown, found: number[] = []): number[] {
  if (value instanceof Uint8Array) return found;
  if (Array.isArray(value)) value.forEach((v) => payloadSizes(v, found));
  else if (typeof value === 'object' && value !== null) {
    const data = (value as { data?: unknown }).data;
    if (data instanceof Uint8Array && 'metadata' in value) found.push(data.length);
    for (const inner of Object.values(value)) payloadSizes(inner, found);
  }
  return found;
}

// Against a real Temporal server (TEMPORAL_ADDRESS): a `geofabric worker` whose step returns 3 MB uploads the
// large field to its gateway (PUT /store/blobs/{sha256}) and completes its activity with a reference, so no
// payload of the run comes near Temporal's 2 MB limit, and the job still answers the whole output.
describe('geofabric worker on Temporal: large step outputs as blobs (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const naming: QueueNaming = { prefix: `blobs-test-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  const big = `BEGIN ${'geo'.repeat(MB3 / 3)}`;
  let runtime: FakeRuntime;
  let backbone: FakeRuntime;
  let dataDir: string;
  let worker: RunningWorker | undefined;
  let live: Awaited<ReturnType<typeof startTemporalGateway>>;

  before(async () => {
    installTestRuntime();
    runtime = await startFakeRuntime('cell worker', () => ({
      content: big,
      usage: { prompt_tokens: 10, completion_tokens: 10 },
    }));
    backbone = await startFakeRuntime('backbone');
    live = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 60_000 },
    });
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-live-blobs-'));
  });
  after(async () => {
    await worker?.stop();
    await live?.close();
    await runtime?.close();
    await backbone?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("completes the worker's activity with a reference and answers the whole 3 MB output", async () => {
    const { gw, client } = live;
    const config = loadConfig({
      DATA_DIR: dataDir,
      GATEWAY_URL: gw.url,
      LOG_LEVEL: 'silent',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TASK_QUEUE_PREFIX: naming.prefix,
      WORKER_CELL: ROME,
      WORKER_RUNTIME_URL: runtime.url,
      WORKER_MODELS: 'lfm2.5-1.2b-instruct',
      PREWARM_MODELS: '',
      WORKER_TOOLS: 'web-search',
    });
    worker = await startWorker(config, { logger: pino({ level: 'silent' }), hardware: LAPTOP });

    // The worker serves its cell once Temporal sees it polling; until then the backbone may answer.
    let job: ComputeResponse | undefined;
    for (let i = 0; i < 20 && job?.worker_pk !== worker.pk; i++) {
      const signed = signJob(generateKeyPair(), inferenceJob('big', { nonce: randomUUID() }));
      const res = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(res.status, 200, res.text.slice(0, 500));
      job = res.body as ComputeResponse;
      if (job.worker_pk !== worker.pk) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.equal(job?.worker_pk, worker.pk, 'the cell worker served the step');
    assert.equal(job.steps[0]!.output.text, big, 'answered whole');
    assert.equal((await gw.blobs.get([sha256(JSON.stringify(big))])).size, 1, 'the gateway holds the blob');

    const handle = client.workflow.getHandle(workflowIdOf(job.job_id));
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    assert.ok(
      events.some((e) => e.activityTaskCompletedEventAttributes),
      'the step ran as an activity task on the worker',
    );
    const sizes = payloadSizes(events);
    assert.ok(sizes.length > 0);
    assert.ok(Math.max(...sizes) < 64 * 1024, `largest payload of the run: ${Math.max(...sizes)} bytes`);
  });
});
