import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Client, Connection, type WorkflowExecutionInfo } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createEngineProbeActivities } from '../../activities/engine-probe.js';
import type { engineProbe } from '../../workflows/engine-probe.js';
import { H3_CELL } from '../../workflows/search-attributes.js';
import { bundleWorkflows } from '../workflows/workflow-bundle.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv } from './live-env.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/engine-probe-history.json', import.meta.url));
const ROME = '861e8050fffffff';

// Against a real Temporal server (TEMPORAL_ADDRESS; scripts/engines.sh starts the dev server): a worker on a
// task queue of its own runs the probe workflow, and the run is found again through its H3Cell attribute.
describe('Temporal dev server (live)', function () {
  this.timeout(60_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const taskQueue = `engine-probe-${randomUUID()}`;
  let workerConnection: NativeConnection;
  let clientConnection: Connection;
  let client: Client;
  let worker: Worker;
  let running: Promise<void>;

  before(async () => {
    installTestRuntime();
    workerConnection = await NativeConnection.connect({ address });
    worker = await Worker.create({
      connection: workerConnection,
      namespace,
      taskQueue,
      workflowBundle: await bundleWorkflows(),
      activities: createEngineProbeActivities({ now: () => new Date() }),
    });
    running = worker.run();
    clientConnection = await Connection.connect({ address });
    client = new Client({ connection: clientConnection, namespace });
  });

  after(async () => {
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running;
    await workerConnection?.close();
    await clientConnection?.close();
  });

  it('runs the probe workflow and its activity on a real worker, then finds it by H3Cell', async () => {
    const workflowId = `engine-probe-${randomUUID()}`;
    const handle = await client.workflow.start<typeof engineProbe>('engineProbe', {
      taskQueue,
      workflowId,
      args: ['hello from the live suite'],
      typedSearchAttributes: [{ key: H3_CELL, value: ROME }],
    });

    const result = await handle.result();
    assert.equal(result.echo.message, 'hello from the live suite');
    assert.equal(result.echo.attempt, 1);
    assert.equal(result.h3Cell, ROME, 'the workflow sees its own search attribute');

    const described = await handle.describe();
    assert.equal(described.status.name, 'COMPLETED');
    assert.equal(described.typedSearchAttributes.get(H3_CELL), ROME);

    // Visibility is eventually consistent: poll the list API until the run shows up.
    const found = await pollList(client, `H3Cell = '${ROME}' AND WorkflowId = '${workflowId}'`, 1);
    assert.deepEqual(
      found.map((run) => [run.workflowId, run.status.name]),
      [[workflowId, 'COMPLETED']],
    );
    const elsewhere = await list(client, `H3Cell = '851e8053fffffff' AND WorkflowId = '${workflowId}'`);
    assert.deepEqual(elsewhere, [], 'another cell does not match');

    if (process.env.RECORD_FIXTURES === '1') {
      const history = JSON.parse(historyToJSON(await handle.fetchHistory()));
      writeFileSync(FIXTURE, `${JSON.stringify(history, null, 2)}\n`);
    }
  });
});

async function list(client: Client, query: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const run of client.workflow.list({ query })) runs.push(run);
  return runs;
}

async function pollList(client: Client, query: string, expected: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const runs = await list(client, query);
    if (runs.length >= expected || Date.now() > deadline) return runs;
    await sleep(200);
  }
}
