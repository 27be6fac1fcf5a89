import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createComputeActivities } from '../../activities/compute/index.js';
import { createJobActivities, jobRecordOf, type JobActivityDeps } from '../../activities/compute/job-activities.js';
import { createRecordBatcher } from '../../activities/proof/record-batcher.js';
import { DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import type { LedgerEntry } from '../../core/ledger-types.js';
import { createModelRegistry } from '../../core/model-registry.js';
import { DEFAULT_QUEUE_NAMING } from '../../core/task-queues.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import { registration } from '../store/worker-registry.contract.js';

/** MockActivityEnvironment.run, typed by the activity it runs. */
const inActivity = <P extends unknown[], R>(env: MockActivityEnvironment, fn: (...args: P) => Promise<R>, ...args: P) =>
  env.run(fn, ...args) as Promise<R>;

const sum = (entries: readonly LedgerEntry[]) => entries.reduce((total, e) => total + e.amount_units, 0);

// finishJob posts each finished job's ledger entries: once, from the stored job, failing the activity
// when the post fails so that Temporal retries it.
describe('finishJob posting the ledger', () => {
  const T0 = Date.UTC(2026, 10, 22, 9, 30);
  const requester = generateKeyPair().publicKey;
  const job: ComputeJobInput = {
    job_id: '1b4e28ba-2fa1-81d2-883f-0016d3cca427',
    requester_pk: requester,
    h3_cell: '861e8050fffffff',
    epoch: 7809,
    budget_credits: 0.1,
    proof_credits: 0.0001,
    steps: [
      { id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }], estimate: 0.006 },
      { id: 'map', type: 'tile_render', center_cell: '861e8050fffffff', zoom: 12, estimate: 0.0001 },
    ],
    plan: { order: ['ask', 'map'], levels: [['ask', 'map']] },
    jurisdiction: null,
    min_tier: null,
    request_hash: 'ab'.repeat(32),
    created_at: new Date(T0).toISOString(),
  };
  const worker = registration({ h3_cell: '861e8050fffffff', hardware_tier: 2 });
  const relay = registration({
    h3_cell: '861e8050fffffff',
    relay: true,
    hardware: { platform: 'android-arm64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 8 },
    hardware_tier: 1,
  });

  /** The worker ran `ask` through the relay; the gateway rendered `map` itself. */
  const result = (nodePk: string): ScheduleResult => ({
    status: 'complete',
    charged: 0.0016,
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
        record_id: `inference:${job.job_id}:ask`,
        relay_pk: relay.pk,
      },
      {
        id: 'map',
        type: 'tile_render',
        status: 'complete',
        output: { tile_url: '/v1/tiles/12/2179/1523.png' },
        latency_ms: 3,
        worker_pk: nodePk,
        cost: 0.0001,
        record_id: `tile:${job.job_id}:map`,
      },
    ],
  });

  async function setup(overrides: Partial<JobActivityDeps> = {}) {
    const db = openSqlite(':memory:');
    const node = generateKeyPair();
    let now = T0 + 5000;
    const writer = createRecordBatcher({
      store: createSqliteProofStore(db),
      signer: node,
      clock: () => now,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
    });
    const jobs = createSqliteJobStore(db);
    const workers = createSqliteWorkerRegistry(db);
    const ledger = createSqliteLedgerStore(db);
    await workers.register(worker, T0);
    await workers.register(relay, T0);
    await jobs.claim(jobRecordOf(job, 'running', null, T0));
    const posted: string[] = [];
    const deps: JobActivityDeps = {
      jobs,
      pollers: async () => new Set(),
      proofs: writer,
      workers,
      models: createModelRegistry(),
      naming: DEFAULT_QUEUE_NAMING,
      backbone: true,
      nodePk: node.publicKey,
      clock: () => now,
      ledger,
      onJobPosted: (jobId) => posted.push(jobId),
      ...overrides,
    };
    return {
      db,
      writer,
      jobs,
      ledger,
      node,
      posted,
      deps,
      activities: createJobActivities(deps),
      later: (ms: number) => void (now += ms),
      close: async () => {
        await writer.close();
        db.close();
      },
    };
  }

  it('posts the balanced entries once, however often finishJob runs, and balances follow from them', async () => {
    const { ledger, node, posted, activities, later, close } = await setup();
    try {
      const env = new MockActivityEnvironment();
      const first = await inActivity(env, activities.finishJob, job, result(node.publicKey));
      later(60_000); // a retry runs later: its entries still carry the stored finish time
      const retried = await inActivity(env, activities.finishJob, job, result(node.publicKey));
      assert.deepEqual(retried, first);

      const entries = await ledger.jobEntries(job.job_id);
      assert.equal(sum(entries), 0);
      assert.deepEqual(
        entries.map((e) => [e.id, e.amount_units, e.hardware_tier]),
        [
          [`job:${job.job_id}:charge`, -170_000, null],
          [`job:${job.job_id}:earning:${worker.pk}`, 120_000, 2],
          [`job:${job.job_id}:earning:${node.publicKey}`, 10_000, null],
          [`job:${job.job_id}:relay:${relay.pk}`, 30_000, 1],
          [`job:${job.job_id}:proof`, 10_000, null],
        ],
      );
      assert.ok(entries.every((e) => e.record_id === first.proof?.record_id));
      assert.ok(entries.every((e) => e.created_at === new Date(T0 + 5000).toISOString()));
      assert.equal(-(await ledger.balance(requester)), 170_000);
      assert.equal(await ledger.balance(worker.pk), 120_000);
      assert.equal(await ledger.balance(relay.pk), 30_000);
      assert.equal(await ledger.balance(node.publicKey), 20_000, 'the map it served and the proof');
      assert.equal((await ledger.balance(requester)) / 1e8, -first.settlement.total_credits);
      assert.deepEqual(posted, [job.job_id, job.job_id], 'the hook runs after each successful post');
    } finally {
      await close();
    }
  });

  it('fails the activity when the post fails, and the retry posts the job once', async () => {
    let broken = true;
    const { ledger, node, posted, deps, close } = await setup();
    const flaky: LedgerStore = {
      ...ledger,
      post: async (entries) => {
        if (broken) throw new Error('ledger unavailable');
        return ledger.post(entries);
      },
    };
    const withFlaky = createJobActivities({ ...deps, ledger: flaky });
    try {
      // Quiet: the SDK logs the failure this test provokes on purpose.
      const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });
      await assert.rejects(inActivity(env, withFlaky.finishJob, job, result(node.publicKey)), /ledger unavailable/);
      assert.deepEqual(await ledger.jobEntries(job.job_id), []);
      assert.deepEqual(posted, [], 'no hook without a post');
      broken = false;
      await inActivity(env, withFlaky.finishJob, job, result(node.publicKey));
      assert.equal((await ledger.jobEntries(job.job_id)).length, 5);
      assert.deepEqual(posted, [job.job_id]);
    } finally {
      await close();
    }
  });

  it('ignores a throwing hook: the job is finished and posted', async () => {
    const { ledger, node, activities, close } = await setup({
      onJobPosted: () => {
        throw new Error('settlement queue full');
      },
    });
    try {
      const response = await inActivity(
        new MockActivityEnvironment(),
        activities.finishJob,
        job,
        result(node.publicKey),
      );
      assert.equal(response.status, 'complete');
      assert.equal((await ledger.jobEntries(job.job_id)).length, 5);
    } finally {
      await close();
    }
  });

  it('settles relays at the configured share, threaded through createComputeActivities', async () => {
    const { db, writer, jobs, ledger, node, close } = await setup();
    try {
      const posted: string[] = [];
      const compute = createComputeActivities({
        jobs,
        pollers: async () => new Set(),
        proofs: writer,
        workers: createSqliteWorkerRegistry(db),
        swarm: { models: createModelRegistry() } as never,
        tiles: {} as never,
        imagery: {} as never,
        nodePk: node.publicKey,
        naming: DEFAULT_QUEUE_NAMING,
        backbone: true,
        clock: () => T0 + 5000,
        relayFeeShare: 0.1,
        ledger,
        onJobPosted: (jobId) => posted.push(jobId),
      });
      const response = await inActivity(
        new MockActivityEnvironment(),
        compute.jobs.finishJob,
        job,
        result(node.publicKey),
      );
      assert.deepEqual(response.settlement.relay_fees, { [relay.pk]: 0.00015 });
      const entries = await ledger.jobEntries(job.job_id);
      assert.equal(sum(entries), 0);
      assert.equal(await ledger.balance(relay.pk), 15_000);
      assert.equal(await ledger.balance(worker.pk), 135_000);
      assert.deepEqual(posted, [job.job_id]);
    } finally {
      await close();
    }
  });

  it('posts only the difference when a job that failed for a transient reason runs again', async () => {
    const { jobs, ledger, node, activities, later, close } = await setup();
    try {
      const env = new MockActivityEnvironment();
      const full = result(node.publicKey);
      const failedRun: ScheduleResult = {
        status: 'failed',
        charged: 0.0015,
        error: { step_id: 'map', code: 'upstream_unavailable', detail: 'tile server down' },
        steps: [
          full.steps[0]!,
          { ...full.steps[1]!, status: 'failed', output: {}, cost: 0, record_id: null, worker_pk: null },
        ],
      };
      const failed = await inActivity(env, activities.finishJob, job, failedRun);
      assert.equal(failed.status, 'failed');
      assert.equal(await ledger.balance(requester), -160_000, 'what ran, and the proof');

      later(60_000);
      const rerun: ComputeJobInput = { ...job, run: 2 };
      await jobs.retry(jobRecordOf(rerun, 'running', null, T0 + 65_000));
      const done = await inActivity(env, activities.finishJob, rerun, full);
      await inActivity(env, activities.finishJob, rerun, full); // a retried finish posts nothing more
      assert.equal(done.proof?.record_id, `compute:${job.job_id}:run-2`);
      const entries = await ledger.jobEntries(job.job_id);
      assert.equal(sum(entries), 0);
      assert.deepEqual(
        entries.filter((e) => e.record_id === done.proof?.record_id).map((e) => [e.id, e.amount_units]),
        [
          [`job:${job.job_id}:run-2:charge`, -10_000],
          [`job:${job.job_id}:run-2:earning:${node.publicKey}`, 10_000],
        ],
      );
      // The job nets to its one settlement, the latest run's.
      assert.equal(await ledger.balance(requester), -170_000);
      assert.equal((await ledger.balance(requester)) / 1e8, -done.settlement.total_credits);
      assert.equal(await ledger.balance(worker.pk), 120_000);
      assert.equal(await ledger.balance(node.publicKey), 20_000);
    } finally {
      await close();
    }
  });

  it('posts nothing, and calls no hook, without a ledger', async () => {
    const { db, node, posted, deps, close } = await setup();
    try {
      const { ledger: _ledger, ...withoutLedger } = deps;
      const activities = createJobActivities(withoutLedger);
      const response = await inActivity(
        new MockActivityEnvironment(),
        activities.finishJob,
        job,
        result(node.publicKey),
      );
      assert.equal(response.status, 'complete');
      assert.equal((db.prepare('SELECT COUNT(*) AS n FROM ledger_entries').get() as { n: number }).n, 0);
      assert.deepEqual(posted, []);
    } finally {
      await close();
    }
  });
});
