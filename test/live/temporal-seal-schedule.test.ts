import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, ScheduleNotFoundError, type ScheduleHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { DEFAULT_SEAL_GRACE_MS, lastDueEpoch } from '../../activities/proof/epoch-sealer.js';
import { createSealActivities } from '../../activities/proof/seal-activities.js';
import { ensureSealSchedule } from '../../activities/proof/seal-schedule.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofStore } from '../../store/proof-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import type { sealEpoch } from '../../workflows/seal-epoch.js';
import { inferenceEntry } from '../helpers/proofs.js';
import { bundleWorkflows } from '../workflows/workflow-bundle.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv } from './live-env.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/seal-epoch-history.json', import.meta.url));
const GENESIS = DEFAULT_EPOCH_GENESIS_MS;
const HOUR = 3_600_000;

// Against a real Temporal server (TEMPORAL_ADDRESS): the seal Schedule is created once however many gateways
// ensure it, and a run it starts seals a SQLite proof store's due epochs on a worker of this suite's own task
// queue. Every schedule gets an id of this run and is deleted afterwards; they are created paused, so only the
// test's triggers start runs.
describe('Temporal seal schedule (live)', function () {
  this.timeout(60_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const suiteId = randomUUID();
  const taskQueue = `seal-epoch-${suiteId}`;
  const scheduleIds: string[] = [];
  const newScheduleId = () => {
    const id = `seal-test-${suiteId}-${scheduleIds.length}`;
    scheduleIds.push(id);
    return id;
  };
  const node = generateKeyPair();
  let db: SqliteDatabase;
  let store: ProofStore;
  let workerConnection: NativeConnection;
  let clientConnection: Connection;
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;

  before(async () => {
    installTestRuntime();
    db = openSqlite(':memory:');
    store = createSqliteProofStore(db);
    workerConnection = await NativeConnection.connect({ address });
    worker = await Worker.create({
      connection: workerConnection,
      namespace,
      taskQueue,
      workflowBundle: await bundleWorkflows(),
      activities: createSealActivities({
        store,
        signer: node,
        clock: Date.now,
        genesisMs: GENESIS,
        graceMs: DEFAULT_SEAL_GRACE_MS,
      }),
    });
    running = worker.run();
    clientConnection = await Connection.connect({ address });
    client = new Client({ connection: clientConnection, namespace });
  });

  after(async () => {
    for (const id of scheduleIds) {
      await client?.schedule
        .getHandle(id)
        .delete()
        .catch((error: unknown) => {
          if (!(error instanceof ScheduleNotFoundError)) throw error;
        });
    }
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await workerConnection?.close();
    await clientConnection?.close();
    await store?.close();
    db?.close();
  });

  it('is created once when gateways ensure it at the same time, and updated only when it differs', async () => {
    const scheduleId = newScheduleId();
    const opts = { scheduleId, taskQueue, paused: true };
    // Three gateways starting together, each with its own connection.
    const gateways = await Promise.all([0, 1, 2].map(() => Connection.connect({ address })));
    try {
      const results = await Promise.all(
        gateways.map((connection) => ensureSealSchedule(new Client({ connection, namespace }), opts)),
      );
      assert.deepEqual(results.map((r) => r.created).sort(), [false, false, true]);
      assert.ok(results.every((r) => r.scheduleId === scheduleId && !r.updated));
    } finally {
      await Promise.all(gateways.map((connection) => connection.close()));
    }
    assert.deepEqual(await ensureSealSchedule(client, opts), { scheduleId, created: false, updated: false });

    const handle = client.schedule.getHandle(scheduleId);
    const described = await handle.describe();
    assert.deepEqual(described.spec.intervals, [{ every: HOUR, offset: 2 * 60_000 }]);
    assert.equal(described.action.workflowType, 'sealEpoch');
    assert.equal(described.action.taskQueue, taskQueue);
    assert.equal(described.action.workflowId, scheduleId);
    assert.deepEqual(described.policies, { overlap: 'SKIP', catchupWindow: 24 * HOUR, pauseOnFailure: false });
    assert.equal(described.state.paused, true);
    const ours = await pollSchedules(client, scheduleId, 1);
    assert.equal(ours, 1, 'one schedule with this id is listed');

    // Another configuration replaces spec and action, and keeps the schedule's state (here: paused).
    assert.deepEqual(await ensureSealSchedule(client, { scheduleId, taskQueue, offsetMinutes: 5 }), {
      scheduleId,
      created: false,
      updated: true,
    });
    const updated = await handle.describe();
    assert.deepEqual(updated.spec.intervals, [{ every: HOUR, offset: 5 * 60_000 }]);
    assert.equal(updated.state.paused, true);
    assert.deepEqual(await ensureSealSchedule(client, { scheduleId, taskQueue, offsetMinutes: 5 }), {
      scheduleId,
      created: false,
      updated: false,
    });
  });

  it('starts a sealEpoch run on trigger that seals the due epochs; the next run finds nothing to seal', async () => {
    const current = epochAt(Date.now(), GENESIS);
    await store.appendRecords(node, [
      inferenceEntry('live-a', current - 3),
      inferenceEntry('live-b', current - 3),
      inferenceEntry('live-c', current - 2),
    ]);
    const scheduleId = newScheduleId();
    const { created } = await ensureSealSchedule(client, { scheduleId, taskQueue, paused: true });
    assert.equal(created, true);
    const schedule = client.schedule.getHandle(scheduleId);

    const dueBefore = lastDueEpoch(Date.now(), GENESIS, DEFAULT_SEAL_GRACE_MS);
    await schedule.trigger();
    const run = await nthRun(client, schedule, 1);
    const result = await run.result();
    const dueAfter = lastDueEpoch(Date.now(), GENESIS, DEFAULT_SEAL_GRACE_MS);
    // Every epoch from the first record's through the last due one, read by the activity between the two
    // readings (they differ only when an epoch's grace ends during the run).
    const last = result.sealed.at(-1) ?? -1;
    assert.ok(dueBefore <= last && last <= dueAfter, `sealed through ${last}, due: ${dueBefore}..${dueAfter}`);
    assert.deepEqual(
      result.sealed,
      Array.from({ length: last - (current - 3) + 1 }, (_, i) => current - 3 + i),
    );
    const seals = await store.sealsOf(node.publicKey);
    assert.equal(result.sealerPk, node.publicKey);
    assert.deepEqual(
      result.sealed,
      seals.map((seal) => seal.epoch),
    );
    assert.deepEqual(
      result.roots,
      seals.map((seal) => seal.merkle_root),
    );
    const described = await run.describe();
    assert.equal(described.type, 'sealEpoch');
    assert.equal(described.status.name, 'COMPLETED');
    assert.ok(described.workflowId.startsWith(`${scheduleId}-`), described.workflowId);

    if (process.env.RECORD_FIXTURES === '1') {
      const history = JSON.parse(historyToJSON(await run.fetchHistory()));
      writeFileSync(FIXTURE, `${JSON.stringify(history, null, 2)}\n`);
    }

    await schedule.trigger();
    const second = await (await nthRun(client, schedule, 2)).result();
    assert.deepEqual(second, { sealerPk: node.publicKey, sealed: [], roots: [] });
    assert.equal((await store.sealsOf(node.publicKey)).length, seals.length);
  });
});

/** The workflow of the schedule's `n`-th action (1-based), once the schedule reports it. */
async function nthRun(client: Client, schedule: ScheduleHandle, n: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { recentActions } = (await schedule.describe()).info;
    const action = recentActions[n - 1];
    if (action) {
      const { workflowId, firstExecutionRunId } = action.action.workflow;
      return client.workflow.getHandle<typeof sealEpoch>(workflowId, firstExecutionRunId);
    }
    if (Date.now() > deadline) throw new Error(`schedule ${schedule.scheduleId} took no action ${n}`);
    await sleep(200);
  }
}

/** How many schedules `scheduleId` lists as, polled until `expected` (listing is eventually consistent). */
async function pollSchedules(client: Client, scheduleId: string, expected: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let count = 0;
    for await (const summary of client.schedule.list()) if (summary.scheduleId === scheduleId) count++;
    if (count >= expected || Date.now() > deadline) return count;
    await sleep(200);
  }
}
