import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { withHeartbeats } from '../../activities/compute/heartbeat.js';
import { createTemporalJobRunner } from '../../api/temporal-job-runner.js';
import { loadConfig } from '../../bin/config.js';
import { gatewayQueueSpecs, startTemporalWorkers, type TemporalWorkers } from '../../bin/temporal-workers.js';
import { startWorker, type RunningWorker } from '../../bin/worker.js';
import { epochAt } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import { jobIdFromSignature } from '../../core/job-hash.js';
import { stepRecordId } from '../../core/proof-record.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { QueueNaming } from '../../core/task-queues.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { temporalQueuePollers } from '../../api/temporal-queue-pollers.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { bundleWorkflows } from '../workflows/workflow-bundle.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv } from './live-env.js';

const ROME = '861e8050fffffff';
const ROOT_CLI = fileURLToPath(new URL('../../bin/geofabric.ts', import.meta.url));
const LAPTOP = { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 4 };
const silent = pino({ level: 'silent' });
// temporal.api.enums.v1 values (the proto package is not a direct dependency).
const TASK_QUEUE_KIND_NORMAL = 1;
const TASK_QUEUE_TYPE_ACTIVITY = 2;

// Against a real Temporal server (TEMPORAL_ADDRESS): `startWorker` registers with a test gateway and its
// Temporal Workers poll exactly the queues of its cell and tools (seen through DescribeTaskQueue's pollers),
// under a queue prefix of this run so nothing else on the server answers.
describe('geofabric worker on Temporal (live)', function () {
  this.timeout(60_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const prefix = `worker-test-${randomUUID().slice(0, 8)}`;
  const naming: QueueNaming = { prefix, routingResolution: 5 };
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let connection: Connection;
  let client: Client;
  let gatewayWorkers: TemporalWorkers | undefined;
  let runtime: FakeRuntime;
  let backbone: FakeRuntime;
  let dataDir: string;
  let worker: RunningWorker | undefined;

  before(async () => {
    installTestRuntime();
    connection = await Connection.connect({ address });
    client = new Client({ connection, namespace });
    runtime = await startFakeRuntime('cell worker');
    backbone = await startFakeRuntime('backbone');
  });
  after(async () => {
    await runtime?.close();
    await backbone?.close();
    await connection?.close();
  });
  beforeEach(async () => {
    gw = await startGateway({
      swarm: { backboneUrl: backbone.url },
      naming,
      // As bin/start.ts wires it: a registered worker counts for routing only while it polls its queue.
      pollers: temporalQueuePollers(client, namespace, Date.now),
      jobWaitMs: 60_000,
      jobRunner: () =>
        createTemporalJobRunner({
          client,
          naming,
          waitMs: 60_000,
          runTimeoutMs: 120_000,
          stepTimeouts: { heartbeatMs: 5_000, queueWaitMs: 20_000 },
        }),
    });
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-live-worker-'));
  });
  afterEach(async () => {
    await worker?.stop();
    worker = undefined;
    await gatewayWorkers?.shutdown();
    gatewayWorkers = undefined;
    await gw.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const workerConfig = (extra: Record<string, string> = {}) =>
    loadConfig({
      DATA_DIR: dataDir,
      GATEWAY_URL: gw.url,
      LOG_LEVEL: 'silent',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TASK_QUEUE_PREFIX: prefix,
      WORKER_CELL: ROME,
      WORKER_RUNTIME_URL: runtime.url,
      WORKER_MODELS: 'lfm2.5-1.2b-instruct',
      PREWARM_MODELS: '',
      WORKER_TOOLS: 'web-search',
      ...extra,
    });

  /** The gateway's Temporal Workers, as bin/start.ts runs them: the job, gateway and backbone queues. */
  async function serveGatewayQueues(): Promise<void> {
    gatewayWorkers = await startTemporalWorkers({
      address,
      namespace,
      logger: silent,
      workflowBundle: await bundleWorkflows(),
      gracefulShutdownMs: 1_000,
      queues: gatewayQueueSpecs(naming, { jobs: gw.compute.jobs, steps: withHeartbeats(gw.compute.steps, 1_000) }),
    });
  }

  /** `geofabric worker` as its own process (the CLI under tsx), started and registered. */
  async function spawnCliWorker() {
    const env = {
      ...process.env,
      DATA_DIR: dataDir,
      GATEWAY_URL: gw.url,
      LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: address,
      TEMPORAL_NAMESPACE: namespace,
      TASK_QUEUE_PREFIX: prefix,
      WORKER_CELL: ROME,
      WORKER_RUNTIME_URL: runtime.url,
      WORKER_MODELS: 'lfm2.5-1.2b-instruct',
      PREWARM_MODELS: '',
      WORKER_TOOLS: '',
    };
    const child = spawn(process.execPath, ['--import', 'tsx', ROOT_CLI, 'worker'], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = { log: '' };
    child.stdout.on('data', (chunk: Buffer) => (out.log += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (out.log += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
    for (let i = 0; i < 200 && !out.log.includes('worker: started'); i++) await sleep(100);
    assert.match(out.log, /worker: started/);
    return { child, out, exited };
  }

  const submit = (prompt: string, headers: Record<string, string> = {}) => {
    const signed = signJob(generateKeyPair(), inferenceJob(prompt, { nonce: randomUUID() }));
    return gw.post('/v1/compute', signed.body, { ...signed.headers, ...headers });
  };
  const onlineWorkers = async () =>
    ((await gw.get('/svc/status')).body as { workers: { online: number } }).workers.online;

  /** Identities polling `queue` for activity tasks. */
  async function activityPollers(queue: string): Promise<string[]> {
    const answer = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue, kind: TASK_QUEUE_KIND_NORMAL },
      taskQueueType: TASK_QUEUE_TYPE_ACTIVITY,
    });
    return (answer.pollers ?? []).map((p) => p.identity ?? '');
  }

  it('registers, then polls the one activity queue of its cell and whole tool set', async () => {
    worker = await startWorker(workerConfig(), { logger: silent, hardware: LAPTOP });
    assert.deepEqual(worker.plan.queues, [`${prefix}/851e8053fffffff/web-search`]);
    assert.equal((await gw.workers.get(worker.pk))?.relay, false);

    for (const queue of worker.plan.queues) {
      let pollers: string[] = [];
      for (let i = 0; i < 50 && pollers.length === 0; i++) {
        pollers = await activityPollers(queue);
        if (pollers.length === 0) await sleep(200);
      }
      assert.ok(pollers.length > 0, `someone polls ${queue}`);
    }
    assert.deepEqual(await activityPollers(`${prefix}/851e8053fffffff/python-repl`), [], 'no queue beyond its tools');
    assert.deepEqual(await activityPollers(`${prefix}/851e8053fffffff`), [], 'nor one per subset of them');

    const stopped = Date.now();
    await worker.stop();
    assert.ok(Date.now() - stopped < 15_000, 'an idle worker drains at once');
    worker = undefined;
  });

  it('runs a job step routed to its cell on its own runtime, and syncs the record when it drains', async () => {
    worker = await startWorker(workerConfig(), { logger: silent, hardware: LAPTOP });
    await serveGatewayQueues();
    const chatsBefore = runtime.chats().length;
    const { body, headers } = signJob(generateKeyPair(), inferenceJob('three parks in Rome', { nonce: randomUUID() }));
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assert.equal(job.status, 'complete');
    assert.equal(job.worker_pk, worker.pk, 'the cell worker served the step');
    assert.equal(job.steps[0]!.output.provider, 'worker');
    assert.equal(job.steps[0]!.output.text, 'cell worker says: three parks in Rome');
    assert.equal(job.steps[0]!.output.fallback_reason, undefined);
    assert.equal(runtime.chats().length, chatsBefore + 1);

    // The step's proof record was written by the worker to its own store; draining pushes it to the central one.
    const jobRecord = await gw.proofs.getRecord(job.proof!.record_id);
    const stepRecordId = (jobRecord!.payload as { steps: { record_id: string }[] }).steps[0]!.record_id;
    await worker.stop();
    const synced = await gw.proofs.getRecord(stepRecordId);
    assert.equal(synced?.address.pk, worker.pk);
    worker = undefined;
  });

  it("syncs its step record although another writer holds the step's derived record id (a step run twice)", async () => {
    // A step that failed on one worker after writing its record runs again elsewhere, and both writers derive
    // the same step record id (core/proof-record.ts stepRecordId). Here the gateway holds that id first.
    worker = await startWorker(workerConfig(), { logger: silent, hardware: LAPTOP });
    await serveGatewayQueues();
    const { body, headers } = signJob(generateKeyPair(), inferenceJob('run twice', { nonce: randomUUID() }));
    const jobId = jobIdFromSignature(headers['x-idn-signature']);
    const [other] = await gw.proofs.appendRecords(gw.node, [
      {
        id: stepRecordId('inference', jobId, 'ask'),
        h3_cell: ROME,
        epoch: epochAt(Date.now()),
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { note: 'the earlier run of this step, elsewhere' },
        written_at: new Date().toISOString(),
      },
    ]);
    assert.equal(other!.address.pk, gw.node.publicKey);
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assert.equal(job.worker_pk, worker.pk, 'the cell worker ran the step');
    const stepRecord = job.steps[0]!.record_id!;
    await worker.stop(); // drains and pushes its records
    worker = undefined;
    const synced = await gw.proofs.getRecord(stepRecord);
    assert.equal(synced?.address.pk, job.worker_pk, "the worker's own record is in the central store");
  });

  it('on SIGTERM finishes the step it is running, syncs its record and exits 0 (the CLI process)', async () => {
    const { child, out, exited } = await spawnCliWorker();
    const reply = runtime.reply;
    try {
      const [registered] = await gw.workers.list();
      await serveGatewayQueues();
      runtime.reply = () => ({ content: 'slow but sure', delayMs: 3_000 });
      const chatsBefore = runtime.chats().length;
      const { body, headers } = signJob(generateKeyPair(), inferenceJob('take your time', { nonce: randomUUID() }));
      const submitted = gw.post('/v1/compute', body, headers);
      for (let i = 0; i < 200 && runtime.chats().length === chatsBefore; i++) await sleep(50);
      assert.equal(runtime.chats().length, chatsBefore + 1, 'the step is running on the worker');
      child.kill('SIGTERM');

      const res = await submitted;
      assert.equal(res.status, 200, res.text);
      const job = res.body as ComputeResponse;
      assert.equal(job.status, 'complete');
      assert.equal(job.worker_pk, registered!.pk);
      assert.equal(job.steps[0]!.output.text, 'slow but sure');
      assert.equal(runtime.chats().length, chatsBefore + 1, 'finished by the draining worker, not retried');
      const [code] = await exited;
      assert.equal(code, 0, out.log);
      assert.match(out.log, /worker: draining/);
      const jobRecord = await gw.proofs.getRecord(job.proof!.record_id);
      const stepRecordId = (jobRecord!.payload as { steps: { record_id: string }[] }).steps[0]!.record_id;
      assert.equal((await gw.proofs.getRecord(stepRecordId))?.address.pk, registered!.pk, 'synced before exit');
    } finally {
      runtime.reply = reply;
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  /** Starts the CLI worker and the gateway's queues, and waits until a job is routed to the worker and served by it. */
  async function workerServing() {
    const started = await spawnCliWorker();
    await serveGatewayQueues();
    const [registered] = await gw.workers.list();
    let servedBy: string | null = null;
    for (let i = 0; i < 20 && servedBy !== registered!.pk; i++) {
      const res = await submit('are you there?');
      assert.equal(res.status, 200, res.text);
      servedBy = (res.body as ComputeResponse).worker_pk;
      if (servedBy !== registered!.pk) await sleep(500);
    }
    assert.equal(servedBy, registered!.pk, 'the cell worker serves jobs before it stops');
    return { ...started, pk: registered!.pk };
  }

  /** The next jobs for the stopped worker's cell: unconstrained to the backbone, constrained refused, each in < 10 s. */
  async function nobodyWaitsForTheDead(): Promise<void> {
    const chatsBefore = backbone.chats().length;
    let began = Date.now();
    const served = await submit('who answers now?');
    assert.ok(Date.now() - began < 10_000, `answered in ${Date.now() - began} ms`);
    assert.equal(served.status, 200, served.text);
    const job = served.body as ComputeResponse;
    assert.equal(job.worker_pk, 'backbone');
    assert.equal(job.steps[0]!.output.provider, 'backbone');
    assert.equal(backbone.chats().length, chatsBefore + 1);

    began = Date.now();
    // A new worker is a seedling: the constraint kept it eligible, and the backbone may not serve it.
    const refused = await submit('only a worker may answer', { 'x-svc-min-tier': 'seedling' });
    assert.ok(Date.now() - began < 10_000, `refused in ${Date.now() - began} ms`);
    assert.equal(refused.status, 503, refused.text);
    assert.equal((refused.body as { error: string }).error, 'no_workers', refused.text);
    assert.match(refused.text, /in cell 851e8053fffffff/);
    assert.match(refused.text, /trust tier seedling/);
  }

  it('after SIGTERM the worker is offline at once, and its cell is served by the backbone or refused in < 10 s', async function () {
    this.timeout(90_000);
    const { child, out, exited } = await workerServing();
    try {
      assert.equal(await onlineWorkers(), 1);
      child.kill('SIGTERM');
      let online = 1;
      for (let i = 0; i < 20 && online > 0; i++) {
        online = await onlineWorkers();
        if (online > 0) await sleep(100);
      }
      assert.equal(online, 0, 'offline within 2 s of SIGTERM (it tells the gateway it leaves)');
      await nobodyWaitsForTheDead();
      const [code] = await exited;
      assert.equal(code, 0, out.log);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('after kill -9 its cell is served by the backbone or refused in < 10 s, and it is offline within 30 s', async function () {
    this.timeout(120_000);
    const { child, exited } = await workerServing();
    try {
      child.kill('SIGKILL');
      const killed = Date.now();
      await exited;
      // Routing still counts the worker (its last beat and poll are fresh): the claim window re-routes the step.
      assert.equal(await onlineWorkers(), 1, 'not yet noticed');
      await nobodyWaitsForTheDead();
      let online = 1;
      while (online > 0 && Date.now() - killed < 40_000) {
        online = await onlineWorkers();
        if (online > 0) await sleep(1_000);
      }
      assert.equal(online, 0, 'offline within the 30 s liveness window (plus 10 s of margin)');
      await nobodyWaitsForTheDead();
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
