import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, WorkflowFailedError, type WorkflowExecutionInfo, type WorkflowHandle } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { ApplicationFailure, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { pino } from 'pino';
import { withHeartbeats } from '../../activities/compute/heartbeat.js';
import { workflowIdOf } from '../../api/temporal-job-runner.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ComputeResponse } from '../../core/job-record.js';
import { backboneQueue, gatewayQueue, jobQueue, stepQueue, type QueueNaming } from '../../core/task-queues.js';
import { EPOCH, H3_CELL, JOB_STATUS, REQUESTER, STEP_TYPES } from '../../workflows/search-attributes.js';
import { startTemporalWorkers, type TemporalWorkers } from '../../bin/temporal-workers.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import type { TileConfig } from '../../activities/tiles/index.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import { workerIdentity } from '../../core/worker-identity.js';
import type { startGateway } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { registration } from '../store/worker-registry.contract.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv, startTemporalGateway, untilPolling } from './live-env.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/compute-job-history.json', import.meta.url));
const HANGING_WORKER = fileURLToPath(new URL('./fixtures/hanging-worker.ts', import.meta.url));
const ROME = '861e8050fffffff';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

// Compound jobs on a real Temporal server: the gateway's JobRunner starts one computeJob workflow per job,
// the gateway's Temporal Workers serve the job, gateway and backbone queues, and swarm workers the cell's.
describe('Compound jobs on the Temporal dev server (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  // A prefix of our own: queues of other runs sharing the namespace never see these tasks.
  const naming: QueueNaming = { prefix: `gf-test-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  const alice = generateKeyPair();
  let backbone: FakeRuntime;
  let gw: Gateway;
  let client: Client;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    installTestRuntime();
    backbone = await startFakeRuntime('backbone');
    ({ gw, client, close } = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 60_000 },
      runner: { stepTimeouts: { heartbeatMs: 2_000, queueWaitMs: 20_000 } },
    }));
  });

  after(async () => {
    await close?.();
    await backbone?.close();
  });

  const submit = async (job: Record<string, unknown>) => {
    const { body, headers } = signJob(alice, job);
    return gw.post('/v1/compute', body, headers);
  };

  it('runs an inference-only job as one workflow, findable by its search attributes', async () => {
    const res = await submit(inferenceJob('three parks in Rome'));
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assert.equal(job.status, 'complete');
    assert.equal(job.worker_pk, 'backbone');
    assert.equal(job.steps[0]!.output.provider, 'backbone');
    assert.match(String(job.steps[0]!.output.fallback_reason), /no eligible worker is online/);
    assert.equal(backbone.chats().length, 1);

    const handle = client.workflow.getHandle(workflowIdOf(job.job_id));
    // The answer came in-process from finishJob (api/job-answers.ts); the run closes moments later.
    await handle.result();
    const described = await handle.describe();
    assert.equal(described.status.name, 'COMPLETED');
    assert.equal(described.taskQueue, jobQueue(naming));
    const attributes = described.typedSearchAttributes;
    assert.equal(attributes.get(H3_CELL), ROME);
    assert.equal(attributes.get(REQUESTER), alice.publicKey);
    assert.equal(attributes.get(EPOCH), job.epoch);
    assert.deepEqual(attributes.get(STEP_TYPES), ['inference']);
    assert.equal(attributes.get(JOB_STATUS), 'complete');
    // Routing, the backbone step and finishing ran in the gateway's workflow worker (local activities): no activity
    // task crossed a queue; the step's marker carries the summary the Web UI shows.
    const events = (await handle.fetchHistory()).events ?? [];
    // Started eagerly: the first workflow task came back with the start call to this gateway's Worker.
    assert.equal(events[0]?.workflowExecutionStartedEventAttributes?.eagerExecutionAccepted, true);
    assert.deepEqual(
      events.filter((e) => e.activityTaskScheduledEventAttributes),
      [],
      'no activity task: the gateway ran everything itself',
    );
    assert.equal(
      events.filter((e) => e.markerRecordedEventAttributes).length,
      5,
      'three patches (local gateway activities, critical path, local steps), the step, finishJob: the gateway routed it before the start',
    );
    assert.deepEqual(localStepSummaries(events), [`step ask: inference on the gateway (${backboneQueue(naming)})`]);
    const found = await pollList(
      client,
      `H3Cell = '${ROME}' AND JobStatus = 'complete' AND WorkflowId = '${handle.workflowId}'`,
    );
    assert.deepEqual(
      found.map((run) => run.workflowId),
      [handle.workflowId],
    );

    // The stored job and its proof record are the gateway's, as in embedded mode.
    assert.deepEqual((await gw.get(`/v1/compute/${job.job_id}`)).body, job);
    const proof = await gw.get(new URL(job.proof!.verify_url).pathname);
    assert.equal(proof.status, 200, proof.text);

    // A replayed request finds the finished job: no second run, no second workflow.
    const again = await submit(inferenceJob('three parks in Rome'));
    assert.deepEqual(again.body, job);
    assert.equal(backbone.chats().length, 1);

    if (process.env.RECORD_FIXTURES === '1') {
      writeFileSync(FIXTURE, `${JSON.stringify(JSON.parse(historyToJSON(await handle.fetchHistory())), null, 2)}\n`);
    }
  });

  it('finishes a job on another worker when the worker running its step is killed', async () => {
    // Two workers online in the job's cell, so routing sends the step to the cell's queue.
    const [a, b] = [generateKeyPair(), generateKeyPair()];
    for (const key of [a, b]) {
      await gw.workers.register(
        registration({ pk: key.publicKey, h3_cell: ROME, models: ['lfm2.5-1.2b-instruct'], tools: [] }),
        Date.now(),
      );
    }
    const queue = stepQueue(ROME, [], naming);
    const doomed = spawnHangingWorker(address, namespace, queue, workerIdentity(a.publicKey));
    let rescuer: TemporalWorkers | undefined;
    try {
      await waitForLine(doomed, 'ready');
      await untilPolling(client, namespace, queue, a.publicKey);
      const submitted = submit(inferenceJob('survive a crash', { nonce: randomUUID() }));
      await waitForLine(doomed, 'taken');
      doomed.kill('SIGKILL');
      await once(doomed, 'exit');
      // The second worker comes up after the first died: only a retry can reach it.
      rescuer = await startTemporalWorkers({
        address,
        namespace,
        logger: pino({ level: 'silent' }),
        gracefulShutdownMs: 1_000,
        queues: [
          {
            taskQueue: queue,
            activities: withHeartbeats(
              {
                inferenceStep: async () => ({
                  output: { text: 'rescued', provider: 'worker', model: 'lfm2.5-1.2b-instruct' },
                  cost: 0.0002,
                  worker_pk: b.publicKey,
                  record_id: null,
                  latency_ms: 1,
                }),
              },
              500,
            ),
          },
        ],
      });
      const res = await submitted;
      assert.equal(res.status, 200, res.text);
      const job = res.body as ComputeResponse;
      assert.equal(job.steps[0]!.output.text, 'rescued');
      assert.equal(job.worker_pk, b.publicKey);
      assert.equal(job.settlement.total_credits, 0.0003);

      const history = await closedHistory(client.connection, namespace, job.job_id);
      const attempts = (history.events ?? []).flatMap((e) =>
        e.activityTaskStartedEventAttributes ? [e.activityTaskStartedEventAttributes.attempt] : [],
      );
      assert.ok(attempts.includes(2), `the step ran again on retry (attempts ${attempts.join(', ')})`);
      assert.equal((await gw.workers.get(b.publicKey))?.jobs_completed, 1);
      assert.equal((await gw.workers.get(a.publicKey))?.jobs_completed, 0);

      // Never half-charged: the killed attempt posted nothing; the job has exactly one charge to the
      // requester, the worker that finished the step earns it, the platform the proof, and the entries sum to 0.
      const entries = await gw.ledger.jobEntries(job.job_id);
      assert.deepEqual(
        entries.map((e) => [e.kind, e.account_pk, e.amount_units]).sort(),
        [
          ['job_charge', alice.publicKey, -30_000],
          ['proof_fee', gw.node.publicKey, 10_000],
          ['step_earning', b.publicKey, 20_000],
        ].sort(),
      );
      assert.equal(entries.filter((e) => e.kind === 'job_charge').length, 1, 'exactly one charge to the requester');
      assert.equal(
        entries.reduce((sum, e) => sum + e.amount_units, 0),
        0,
        'the job entries sum to zero',
      );
      assert.equal(
        entries.some((e) => e.account_pk === a.publicKey),
        false,
        'the killed worker earned nothing',
      );
    } finally {
      if (doomed.exitCode === null) doomed.kill('SIGKILL');
      await rescuer?.shutdown();
    }
  });

  it('answers 503 no_workers through the workflow when a constrained step has no worker', async () => {
    const res = await submit(
      inferenceJob('web, please', {
        nonce: randomUUID(),
        steps: [
          { id: 'ask', type: 'inference', tools: ['browser-automation'], messages: [{ role: 'user', content: 'x' }] },
        ],
      }),
    );
    assert.equal(res.status, 503, res.text);
    assert.equal((res.body as { error: string }).error, 'no_workers');
    assert.equal((res.body as { step_id: string }).step_id, 'ask');
    const handle = client.workflow.getHandle(workflowIdOf((res.body as { job_id: string }).job_id));
    const failed = await handle.result().then(
      () => assert.fail('the workflow of a failed job completed'),
      (error: unknown) => error,
    );
    const described = await handle.describe();
    assert.equal(described.typedSearchAttributes.get(JOB_STATUS), 'failed');
    // An operator sees a failed job as a failed workflow, its failure naming the code, the step and the detail.
    assert.equal(described.status.name, 'FAILED');
    assert.ok(failed instanceof WorkflowFailedError, String(failed));
    const cause = failed.cause;
    assert.ok(cause instanceof ApplicationFailure, String(cause));
    assert.equal(cause.type, 'no_workers');
    assert.equal(cause.nonRetryable, true);
    assert.match(cause.message, /failed: step "ask"( in cell \w+)?: no eligible worker/);
    assert.equal((cause.details?.[0] as ComputeResponse).status, 'failed');
    const listed = await pollList(client, `WorkflowId = '${handle.workflowId}' AND ExecutionStatus = 'Failed'`);
    assert.deepEqual(
      listed.map((run) => run.status.name),
      ['FAILED'],
    );
    // The answer is the stored job's, as on the embedded runner.
    const stored = await gw.get(`/v1/compute/${(res.body as { job_id: string }).job_id}`);
    assert.equal((stored.body as ComputeResponse).status, 'failed');
  });
});

// docs/protocol.md §4.1 note 4's satellite → AI → map chain as one workflow: no swarm worker in the cell, so the gateway's
// own queues take every step (imagery and tiles on the gateway queue, inference on the backbone queue, where
// the gateway's dispatcher prefers its local runtime).
describe('The satellite → AI → map chain on the Temporal dev server (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const naming: QueueNaming = { prefix: `gf-chain-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  let catalog: ImageryCatalog;
  let xyz: XyzServer;
  let runtime: FakeRuntime;
  let gw: Gateway;
  let connection: NativeConnection;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    installTestRuntime();
    catalog = await startImageryCatalog();
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets())];
    xyz = await startXyzServer();
    runtime = await startFakeRuntime('lfm2.5-1.2b-instruct', () => ({
      content: JSON.stringify({
        text: 'Villa Borghese is greenest.',
        locations: [{ name: 'Villa Borghese', address: 'Roma' }],
      }),
      usage: { prompt_tokens: 200, completion_tokens: 40 },
    }));
    ({ gw, connection, close } = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: {
        clock: () => TEST_NOW,
        // A generous read timeout: on a loaded CI machine a COG range read past the helper's 2 s fell back to
        // the metadata estimate, which is not what this test is about.
        imagery: { stacUrl: catalog.stac.url, timeoutMs: 20_000 },
        tiles: {
          templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        },
        swarm: { workerRuntimeUrl: runtime.url, workerModels: ['lfm2.5-1.2b-instruct'] },
      },
    }));
  });

  after(async () => {
    await close?.();
    await runtime?.close();
    await catalog?.stac.close();
    await xyz?.close();
  });

  it('runs ndvi → inference → tile as activities of one workflow, each fed the one before', async () => {
    const { body, headers } = signJob(generateKeyPair(), {
      h3_cell: ROME,
      steps: [
        {
          id: 'ndvi',
          type: 'image_process',
          operation: 'ndvi',
          context: { h3_cell: ROME_CELL, date_from: '2026-02-01', date_to: '2026-02-28' },
        },
        { id: 'explain', type: 'inference', depends_on: 'ndvi', messages: [{ role: 'user', content: 'green?' }] },
        { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12 },
      ],
    });
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assert.deepEqual(
      job.steps.map((s) => [s.id, s.status, s.worker_pk]),
      [
        ['ndvi', 'complete', gw.node.publicKey],
        ['explain', 'complete', gw.node.publicKey],
        ['map', 'complete', gw.node.publicKey],
      ],
    );
    const [ndvi, explain, map] = job.steps;
    assert.equal((ndvi!.output.result as { method: string }).method, 'pixels');
    const prompt = JSON.stringify(runtime.chats()[0]!.body.messages);
    assert.ok(prompt.includes('meanNdvi'), 'the model saw the NDVI output');
    assert.equal(explain!.cost, 0.0024);
    assert.deepEqual(
      (map!.output.annotations as { name: string }[]).map((a) => a.name),
      ['Villa Borghese'],
    );
    assert.equal(
      job.settlement.total_credits,
      (Math.round(ndvi!.cost * 1e8) + Math.round(explain!.cost * 1e8) + Math.round(map!.cost * 1e8) + 10_000) / 1e8,
    );

    const history = await closedHistory(connection, namespace, job.job_id);
    const events = history.events ?? [];
    // Every step was routed to the gateway itself and ran as a local activity of its workflow worker.
    assert.deepEqual(
      events.filter((e) => e.activityTaskScheduledEventAttributes),
      [],
    );
    assert.deepEqual(localStepSummaries(events).sort(), [
      `step explain: inference on the gateway (${backboneQueue(naming)})`,
      `step map: tile_render on the gateway (${gatewayQueue(naming)})`,
      `step ndvi: image_process on the gateway (${gatewayQueue(naming)})`,
    ]);
  });
});

/** A 3 MB inference answer: over Temporal's 2 MB payload limit unless it is kept out of the workflow. */
const HUGE = `BEGIN ${'geo'.repeat(1024 * 1024)}`;

// docs/protocol.md §2.2 rule 1 on Temporal: a → b beside c → d, a and d taking 2 s each on the gateway's runtime.
// Level by level the job takes 4 s (a and c, then b and d); on its critical path 2 s.
describe('Critical-path scheduling and fan-in on the Temporal dev server (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const naming: QueueNaming = { prefix: `gf-path-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  let runtime: FakeRuntime;
  let gw: Gateway;
  let connection: NativeConnection;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    installTestRuntime();
    runtime = await startFakeRuntime('lfm2.5-1.2b-instruct', (request) => {
      const messages = request.body.messages as { role: string; content: string }[];
      const step = messages.at(-1)!.content.slice('step '.length);
      if (step === 'huge') return { content: HUGE, usage: { prompt_tokens: 10, completion_tokens: 10 } };
      return { content: `answer of ${step}`, delayMs: step === 'a' || step === 'd' ? 2000 : 0 };
    });
    ({ gw, connection, close } = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: { swarm: { workerRuntimeUrl: runtime.url, workerModels: ['lfm2.5-1.2b-instruct'] } },
    }));
  });

  after(async () => {
    await close?.();
    await runtime?.close();
  });

  const ask = (id: string, extra: Record<string, unknown> = {}) => ({
    id,
    type: 'inference',
    messages: [{ role: 'user', content: `step ${id}` }],
    ...extra,
  });

  it('finishes a → b beside c → d (a and d 2 s each) in under 3 s', async () => {
    const { body, headers } = signJob(generateKeyPair(), {
      h3_cell: ROME,
      steps: [ask('a'), ask('b', { depends_on: 'a' }), ask('c'), ask('d', { depends_on: 'c' })],
    });
    // Warm the workflow worker and the queues first: the bound is about scheduling, not first-task latency.
    const warm = signJob(generateKeyPair(), inferenceJob('warm up'));
    assert.equal((await gw.post('/v1/compute', warm.body, warm.headers)).status, 200);

    const started = Date.now();
    const res = await gw.post('/v1/compute', body, headers);
    const elapsed = Date.now() - started;
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assert.deepEqual(
      job.steps.map((s) => [s.id, s.status]),
      [
        ['a', 'complete'],
        ['b', 'complete'],
        ['c', 'complete'],
        ['d', 'complete'],
      ],
    );
    assert.ok(elapsed >= 2000 && elapsed < 3000, `the job took ${elapsed} ms`);
    console.log(`      critical-path job: ${elapsed} ms`);

    // New runs record the patch that switched them from the level schedule (workflows/compute-job.ts).
    const history = await closedHistory(connection, namespace, job.job_id);
    const patches = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
    // Three patches: the gateway's local activities, the critical-path schedule and the gateway's local steps.
    assert.equal(patches.length, 3, 'the run records the critical-path patch marker');
  });

  it('keeps a 3 MB inference output out of the workflow: the job answers it whole, every payload small', async () => {
    const { body, headers } = signJob(generateKeyPair(), {
      h3_cell: ROME,
      steps: [ask('huge'), ask('next', { depends_on: 'huge' })],
    });
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text.slice(0, 500));
    const job = res.body as ComputeResponse;
    assert.equal(job.steps[0]!.output.text, HUGE);
    assert.equal((await gw.get(`/v1/compute/${job.job_id}`)).text.length > HUGE.length, true);
    const history = await closedHistory(connection, namespace, job.job_id);
    const largest = Math.max(...(history.events ?? []).map((e) => JSON.stringify(e).length));
    console.log(`      largest history event of the 3 MB job: ${largest} bytes`);
    assert.ok(largest < 64 * 1024, `largest history event ${largest} bytes`);
  });

  it('feeds a step that lists several dependencies their outputs in the listed order', async () => {
    const { body, headers } = signJob(generateKeyPair(), {
      h3_cell: ROME,
      steps: [ask('x'), ask('y'), ask('merge', { depends_on: ['y', 'x'] })],
    });
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text);
    const merge = runtime.chats().find((c) => JSON.stringify(c.body.messages).includes('step merge'))!;
    const contexts = (merge.body.messages as { role: string; content: string }[])
      .filter((m) => m.role === 'system' && m.content.startsWith(`Output of the job's step`))
      .map((m) => m.content.split('\n')[0]);
    assert.deepEqual(contexts, [
      `Output of the job's step "y" (JSON), for use in your answer:`,
      `Output of the job's step "x" (JSON), for use in your answer:`,
    ]);
  });
});

function spawnHangingWorker(address: string, namespace: string, queue: string, identity: string): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', HANGING_WORKER, address, namespace, queue, identity], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
}

async function waitForLine(child: ChildProcess, line: string, timeoutMs = 30_000): Promise<void> {
  let seen = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "${line}" from the worker process`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.split('\n').includes(line)) {
        clearTimeout(timer);
        child.stdout!.off('data', onData);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker process exited (${code}) before "${line}"`)));
  });
}

/**
 * A job's run history once the run has closed: the gateway answers from finishJob in-process (api/job-answers.ts),
 * moments before Temporal records the workflow task that ran it.
 */
async function closedHistory(
  connection: Client['connection'] | NativeConnection,
  namespace: string,
  jobId: string,
): ReturnType<WorkflowHandle['fetchHistory']> {
  const handle = new Client({ connection, namespace }).workflow.getHandle(workflowIdOf(jobId));
  await handle.result().catch(() => undefined); // a failed job fails its run
  return handle.fetchHistory();
}

async function pollList(client: Client, query: string, timeoutMs = 15_000): Promise<WorkflowExecutionInfo[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs: WorkflowExecutionInfo[] = [];
    for await (const run of client.workflow.list({ query })) runs.push(run);
    if (runs.length > 0 || Date.now() > deadline) return runs;
    await sleep(200);
  }
}

/** The summaries of the local-activity markers that ran steps (workflows/compute-job.ts localStepProxy). */
function localStepSummaries(
  events: { markerRecordedEventAttributes?: unknown; userMetadata?: { summary?: Payload | null } | null }[],
): string[] {
  return events.flatMap((e) => {
    const summary = e.markerRecordedEventAttributes && e.userMetadata?.summary;
    const text = summary ? (defaultPayloadConverter.fromPayload(summary) as string) : '';
    return text.startsWith('step ') ? [text] : [];
  });
}
