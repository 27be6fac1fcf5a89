import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { withHeartbeats } from '../../activities/compute/heartbeat.js';
import { createJobActivities } from '../../activities/compute/job-activities.js';
import { createStepActivities } from '../../activities/compute/step-activities.js';
import { createRecordBatcher } from '../../activities/proof/record-batcher.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput, InferenceStepInput } from '../../core/job-steps.js';
import { createModelRegistry } from '../../core/model-registry.js';
import { DEFAULT_QUEUE_NAMING } from '../../core/task-queues.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { jobRecordOf } from '../../activities/compute/job-activities.js';
import { registration } from '../store/worker-registry.contract.js';
import { installTestRuntime } from './temporal-runtime.js';
import { bundleWorkflows, sharedWorkflowBundle } from './workflow-bundle.js';

// Recorded against the dev server by `RECORD_FIXTURES=1 npm run test:live` (test/live/temporal-compute.test.ts);
// re-record only when computeJob changes on purpose (and version the change, as running workflows would need).
const FIXTURE = fileURLToPath(new URL('../fixtures/compute-job-history.json', import.meta.url));
// A run started before LOCAL_GATEWAY_PATCH (routeJob and finishJob on the gateway queue): still open at a
// deploy, it must replay on the current code.
const FIXTURE_V1 = fileURLToPath(new URL('../fixtures/compute-job-history-v1.json', import.meta.url));
// A run started before LOCAL_STEPS_PATCH (the backbone step as an activity task on the backbone queue).
const FIXTURE_V2 = fileURLToPath(new URL('../fixtures/compute-job-history-v2.json', import.meta.url));
// A run the workflow routed itself (routeJob as a local activity), as runs started without routes in their input.
const FIXTURE_V3 = fileURLToPath(new URL('../fixtures/compute-job-history-v3.json', import.meta.url));
const DRIFTED = fileURLToPath(new URL('./fixtures/compute-job-drifted.ts', import.meta.url));

describe('computeJob workflow without a server', function () {
  this.timeout(60_000); // webpack bundles
  let bundle: WorkflowBundleWithSourceMap;

  before(async () => {
    installTestRuntime();
    bundle = await sharedWorkflowBundle();
  });

  it('bundles with no Node built-in inside (the bundler refuses them; the code names none)', () => {
    assert.ok(bundle.code.includes('computeJob'));
    assert.doesNotMatch(bundle.code, /require\(["'](node:)?(fs|crypto|net|http|child_process)["']\)/);
  });

  it('replays the recorded history of a job against the current workflow code', async () => {
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE, 'utf8')));
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });

  it('replays a history recorded before the gateway activities became local (patched)', async () => {
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE_V1, 'utf8')));
    const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
    assert.equal(markers.length, 0, 'the old history has no patch marker');
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });

  it('replays a history recorded before the gateway’s own steps became local activities (patched)', async () => {
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE_V2, 'utf8')));
    const scheduled = (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes);
    assert.equal(scheduled.length, 1, 'the old history ran its step as an activity task');
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });

  it('replays a history whose run routed its steps itself (no routes in its input)', async () => {
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE_V3, 'utf8')));
    const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
    assert.equal(markers.length, 6, 'three patches, routeJob, the step, finishJob');
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });

  it('fails replay when the workflow drifts from the recorded history', async () => {
    const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE, 'utf8')));
    const drifted = await bundleWorkflows(DRIFTED);
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: drifted }, history), DeterminismViolationError);
  });
});

/** MockActivityEnvironment.run, typed by the activity it runs. */
const inActivity = <P extends unknown[], R>(env: MockActivityEnvironment, fn: (...args: P) => Promise<R>, ...args: P) =>
  env.run(fn, ...args) as Promise<R>;

describe('compound-job activities under MockActivityEnvironment', () => {
  const T0 = Date.UTC(2026, 10, 22, 9, 30);
  const job: ComputeJobInput = {
    job_id: '1b4e28ba-2fa1-81d2-883f-0016d3cca427',
    requester_pk: generateKeyPair().publicKey,
    h3_cell: '861e8050fffffff',
    epoch: 7809,
    budget_credits: 0.1,
    proof_credits: 0.0001,
    steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }], estimate: 0.006 }],
    plan: { order: ['ask'], levels: [['ask']] },
    jurisdiction: null,
    min_tier: null,
    request_hash: 'ab'.repeat(32),
    created_at: new Date(T0).toISOString(),
  };

  function setup() {
    const db = openSqlite(':memory:');
    const proofs = createSqliteProofStore(db);
    const node = generateKeyPair();
    const writer = createRecordBatcher({
      store: proofs,
      signer: node,
      clock: () => T0,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    });
    const jobs = createSqliteJobStore(db);
    const workers = createSqliteWorkerRegistry(db);
    /** The worker keys Temporal would report polling each queue (DescribeTaskQueue). */
    const polling = new Map<string, Set<string>>();
    const activities = createJobActivities({
      jobs,
      pollers: async (queue) => polling.get(queue) ?? new Set(),
      proofs: writer,
      workers,
      models: createModelRegistry(),
      naming: DEFAULT_QUEUE_NAMING,
      backbone: true,
      nodePk: node.publicKey,
      clock: () => T0,
    });
    const poll = (queue: string, pk: string) => polling.set(queue, new Set([...(polling.get(queue) ?? []), pk]));
    return { db, proofs, writer, jobs, workers, activities, node, poll };
  }

  it('heartbeats while a step runs, so a dead worker is noticed before the step timeout', async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (detail: unknown) => beats.push(detail));
    const steps = createStepActivities({
      swarm: {
        runInference: async () => {
          await new Promise((resolve) => setTimeout(resolve, 60));
          return {
            text: 'ok',
            locations: [],
            model: 'tinyllama',
            provider: 'worker' as const,
            tokens_in: 1,
            tokens_out: 1,
            latency_ms: 1,
            proof_job_id: 'inference:x:ask',
            worker_pk: 'aa'.repeat(32),
            cost: 0.00002,
            epoch: 1,
          };
        },
      },
      tiles: { renderTile: async () => assert.fail('not a tile step') },
      imagery: { processImage: async () => assert.fail('not an image step') },
      nodePk: 'bb'.repeat(32),
    });
    const input: InferenceStepInput = {
      job_id: 'x',
      step_id: 'ask',
      messages: [{ role: 'user', content: 'hi' }],
      want_locations: false,
      h3_cell: '861e8050fffffff',
      jurisdiction: null,
      min_tier: null,
    };
    const run = await inActivity(env, withHeartbeats(steps, 10).inferenceStep, input);
    assert.equal(run.worker_pk, 'aa'.repeat(32));
    assert.equal(run.record_id, 'inference:x:ask');
    assert.equal(run.output.text, 'ok');
    assert.ok(beats.length >= 3, `heartbeats while running: ${beats.length}`);
  });

  it('finishJob writes one compute/job record and counts the worker once, however often it is retried', async () => {
    const { db, proofs, writer, jobs, workers, activities } = setup();
    try {
      const worker = registration({ pk: generateKeyPair().publicKey });
      await workers.register(worker, T0);
      await jobs.claim(jobRecordOf(job, 'running', null, T0));
      const result: ScheduleResult = {
        status: 'complete',
        charged: 0.00002,
        error: null,
        steps: [
          {
            id: 'ask',
            type: 'inference',
            status: 'complete',
            output: { text: 'ok' },
            latency_ms: 5,
            worker_pk: worker.pk,
            cost: 0.00002,
            record_id: 'inference:x:ask',
          },
        ],
      };
      const env = new MockActivityEnvironment();
      const first = await inActivity(env, activities.finishJob, job, result);
      const retried = await inActivity(env, activities.finishJob, job, result);
      assert.deepEqual(retried, first);
      assert.equal(first.status, 'complete');
      assert.equal(first.settlement.total_credits, 0.00012);
      assert.equal(first.proof?.record_id, `compute:${job.job_id}`);
      const record = await proofs.getRecord(`compute:${job.job_id}`);
      assert.equal(record?.payload_type, 'compute/job');
      assert.equal((record?.payload as { job_hash: string }).job_hash, first.proof?.job_hash);
      assert.equal((await jobs.get(job.job_id))?.status, 'complete');
      assert.equal((await workers.get(worker.pk))?.jobs_completed, 1);
    } finally {
      await writer.close();
      db.close();
    }
  });

  it("routeJob sends inference to the gateway's own eligible worker, and refuses it with no worker and no backbone", async () => {
    const { db, writer, workers, node } = setup();
    try {
      const env = new MockActivityEnvironment();
      const noBackbone = createJobActivities({
        jobs: createSqliteJobStore(db),
        pollers: async () => new Set(),
        proofs: writer,
        workers,
        models: createModelRegistry(),
        naming: DEFAULT_QUEUE_NAMING,
        backbone: false,
        nodePk: node.publicKey,
        clock: () => T0,
      });
      await assert.rejects(inActivity(env, noBackbone.routeJob, job), (error: unknown) => {
        const failure = error as { type?: string; details?: unknown[] };
        return failure.type === 'no_workers' && failure.details?.[0] === 'ask';
      });
      await workers.register(registration({ pk: node.publicKey, models: ['lfm2.5-1.2b-instruct'] }), T0);
      const routed = await inActivity(env, noBackbone.routeJob, job);
      assert.deepEqual(routed.ask, { queue: 'geofabric/backbone', fallback_reason: null });
    } finally {
      await writer.close();
      db.close();
    }
  });

  it('routeJob names the online relay of the cell on swarm steps, and finishJob pays it 20 % of them', async () => {
    const { db, writer, jobs, workers, activities, poll } = setup();
    try {
      const env = new MockActivityEnvironment();
      const relay = registration({ h3_cell: '861e8050fffffff', relay: true });
      const worker = registration({ h3_cell: '861e8050fffffff', models: ['lfm2.5-1.2b-instruct'], tools: [] });
      await workers.register(relay, T0);
      assert.equal((await inActivity(env, activities.routeJob, job)).ask?.relay_pk, undefined, 'no worker: backbone');
      await workers.register(worker, T0);
      poll('geofabric/851e8053fffffff', worker.pk);
      const routed = await inActivity(env, activities.routeJob, job);
      const { unclaimed: _takeover, ...onCell } = routed.ask!;
      assert.deepEqual(onCell, { queue: 'geofabric/851e8053fffffff', fallback_reason: null, relay_pk: relay.pk });

      await jobs.claim(jobRecordOf(job, 'running', null, T0));
      const done: ScheduleResult = {
        status: 'complete',
        charged: 0.0015,
        error: null,
        steps: [
          {
            id: 'ask',
            type: 'inference',
            status: 'complete',
            output: { text: 'ok' },
            latency_ms: 5,
            worker_pk: worker.pk,
            cost: 0.0015,
            record_id: null,
            relay_pk: relay.pk,
          },
        ],
      };
      const response = await inActivity(env, activities.finishJob, job, done);
      assert.deepEqual(response.settlement.relay_fees, { [relay.pk]: 0.0003 });
      assert.equal(response.settlement.total_credits, 0.0016, 'the fee is a share of the step, not a surcharge');
    } finally {
      await writer.close();
      db.close();
    }
  });

  it('routeJob sends a step to the one queue of an eligible polling worker: its whole tool set', async () => {
    const { db, writer, workers, activities, poll } = setup();
    try {
      const env = new MockActivityEnvironment();
      const plain = registration({ h3_cell: '861e8050fffffff', models: ['lfm2.5-1.2b-instruct'], tools: [] });
      const tooled = registration({
        h3_cell: '861e8050fffffff',
        models: ['lfm2.5-1.2b-instruct'],
        tools: ['web-search', 'python-repl'],
      });
      for (const w of [plain, tooled]) await workers.register(w, T0);
      poll('geofabric/851e8053fffffff', plain.pk);
      poll('geofabric/851e8053fffffff/python-repl+web-search', tooled.pk);
      const search = { ...job.steps[0]!, id: 'search', tools: ['web-search'] };
      const routed = await inActivity(env, activities.routeJob, { ...job, steps: [job.steps[0]!, search] });
      assert.equal(
        routed.ask?.queue,
        'geofabric/851e8053fffffff',
        'no tools: the tool-less worker, fewest tools first',
      );
      assert.equal(routed.search?.queue, 'geofabric/851e8053fffffff/python-repl+web-search');
      // Nobody polls a queue per tool subset any more: the step's own tool set names no queue of its own.
      assert.notEqual(routed.search?.queue, 'geofabric/851e8053fffffff/web-search');
    } finally {
      await writer.close();
      db.close();
    }
  });

  it('routeJob sends inference to the cell queue only while an eligible worker polls it, else to the backbone', async () => {
    const { db, writer, workers, activities, poll } = setup();
    try {
      const env = new MockActivityEnvironment();
      const alone = await inActivity(env, activities.routeJob, job);
      assert.deepEqual(alone.ask, {
        queue: 'geofabric/backbone',
        fallback_reason: 'no eligible worker is online (model lfm2.5-1.2b-instruct)',
      });
      const worker = registration({ h3_cell: '861e8050fffffff', models: ['lfm2.5-1.2b-instruct'], tools: [] });
      await workers.register(worker, T0);
      // Registered and heartbeating, but polling nothing: no step waits on its queue.
      assert.deepEqual((await inActivity(env, activities.routeJob, job)).ask, alone.ask);
      // Another worker polling the queue does not make this one count.
      poll('geofabric/851e8053fffffff', generateKeyPair().publicKey);
      assert.deepEqual((await inActivity(env, activities.routeJob, job)).ask, alone.ask);
      poll('geofabric/851e8053fffffff', worker.pk);
      const routed = await inActivity(env, activities.routeJob, job);
      // Should the worker die before taking it, the step goes to the backbone after the claim window.
      assert.deepEqual(routed.ask, {
        queue: 'geofabric/851e8053fffffff',
        fallback_reason: null,
        unclaimed: {
          queue: 'geofabric/backbone',
          fallback_reason: "no worker took the step from its cell's queue in time (model lfm2.5-1.2b-instruct)",
        },
      });
      // A constrained step may not go to the backbone: it is refused naming the cell and the constraint.
      const constrained = await inActivity(env, activities.routeJob, { ...job, min_tier: 'seedling' });
      assert.deepEqual(constrained.ask?.unclaimed, {
        no_workers:
          'step "ask" in cell 851e8053fffffff: no worker took the step from its cell\'s queue in time ' +
          '(model lfm2.5-1.2b-instruct, ' +
          'trust tier seedling or above); the backbone cannot serve a step with required tools, x-svc-jurisdiction ' +
          'or x-svc-min-tier; retry later',
      });
    } finally {
      await writer.close();
      db.close();
    }
  });
});
