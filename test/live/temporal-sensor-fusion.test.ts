import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { cellToChildren } from 'h3-js';
import { pino } from 'pino';
import { withHeartbeats } from '../../activities/compute/heartbeat.js';
import { httpTelemetrySource } from '../../activities/telemetry/http-source.js';
import { runSensorFusion } from '../../activities/telemetry/fusion-step.js';
import { startTemporalWorkers } from '../../bin/temporal-workers.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS, epochAt, epochWindow } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { SensorFusionStepInput } from '../../core/job-steps.js';
import { stepQueue, type QueueNaming } from '../../core/task-queues.js';
import { workerIdentity } from '../../core/worker-identity.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import type { startGateway } from '../helpers/gateway.js';
import { signJob } from '../helpers/jobs.js';
import { signedReadings } from '../helpers/telemetry.js';
import { registration } from '../store/worker-registry.contract.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv, startTemporalGateway, untilPolling } from './live-env.js';

const ROME = '861e8050fffffff';
type Gateway = Awaited<ReturnType<typeof startGateway>>;

// sensor_fusion → inference as a computeJob workflow (docs/protocol.md §2.10): the fusion step runs on the
// gateway's queue when no worker of the cell takes it, and on the cell's queue (reading the gateway's signed
// readings over HTTP) when one does; the numbers are the hand-computed ones of test/core/sensor-fusion.test.ts.
describe('Sensor fusion jobs on the Temporal dev server (live)', function () {
  this.timeout(90_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  const naming: QueueNaming = { prefix: `gf-fusion-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  let backbone: FakeRuntime;
  let gw: Gateway;
  let client: Client;
  let close: (() => Promise<void>) | undefined;
  let epoch: number;

  before(async () => {
    installTestRuntime();
    backbone = await startFakeRuntime('backbone', () => ({ content: 'the air is fine' }));
    ({ gw, client, close } = await startTemporalGateway({
      address,
      namespace,
      naming,
      gateway: { swarm: { backboneUrl: backbone.url }, jobWaitMs: 60_000 },
      runner: { stepTimeouts: { heartbeatMs: 2_000, queueWaitMs: 20_000 } },
    }));
    // Six devices in resolution-9 cells of ROME, all readings a few seconds back in the open epoch.
    const now = Date.now();
    epoch = epochAt(now);
    const base = Math.max(epochWindow(epoch).start, now - 10_000);
    const cells = cellToChildren(ROME, 9).sort();
    const sends: number[][] = [[10], [12], [11, 13, 14, 30, 9], [14], [15], [80]];
    for (const [i, values] of sends.entries()) {
      const device = generateKeyPair();
      const readings = values.map((value, k) => ({
        quantity: 'pm2_5',
        value,
        unit: 'ug/m3',
        observed_at: new Date(base + k).toISOString(),
      }));
      const signed = signRequestBody(device.secretKey, {
        h3_cell: cells[i]!,
        readings: signedReadings(device, cells[i]!, readings),
        created_at: new Date().toISOString(),
      });
      const res = await gw.post('/v1/telemetry', signed.body, { 'x-idn-signature': signed.signature });
      assert.equal(res.status, 200, res.text);
    }
  });

  after(async () => {
    await close?.();
    await backbone?.close();
  });

  const fusionJob = () => ({
    h3_cell: ROME,
    nonce: randomUUID(),
    steps: [
      { id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5', context: { epoch } },
      { id: 'explain', type: 'inference', depends_on: 'fuse', messages: [{ role: 'user', content: 'air?' }] },
    ],
    budget_credits: 0.1,
  });

  function assertFused(job: ComputeResponse) {
    assert.equal(job.status, 'complete');
    const fuse = job.steps[0]!;
    assert.equal(fuse.output.value, 13.5);
    assert.equal(fuse.output.device_count, 5);
    assert.equal(fuse.output.reading_count, 9);
    assert.equal((fuse.output.rejected as unknown[]).length, 1);
    assert.ok(Math.abs((fuse.output.mean as number) - 12.8) < 1e-12);
    assert.ok(Math.abs((fuse.output.stderr as number) - Math.sqrt(0.74)) < 1e-12);
    assert.equal(fuse.cost, 0.0005);
    assert.equal((fuse.output.record_ids as string[]).length, 10);
    const chat = backbone.chats().at(-1)!;
    const messages = chat.body.messages as { role: string; content: string }[];
    assert.ok(
      messages.some((m) => m.role === 'system' && m.content.includes('"value":13.5')),
      'the inference step got the fused output as context',
    );
  }

  it('runs sensor_fusion → inference as a workflow, the fusion on the gateway queue without a cell worker', async () => {
    const { body, headers } = signJob(generateKeyPair(), fusionJob());
    const res = await gw.post('/v1/compute', body, headers);
    assert.equal(res.status, 200, res.text);
    const job = res.body as ComputeResponse;
    assertFused(job);
    assert.equal(job.steps[0]!.worker_pk, gw.node.publicKey);
    assert.match(String(job.steps[0]!.output.fallback_reason), /served by the gateway/);
  });

  it("runs the fusion on the cell's queue when a worker of the cell polls it, reading the gateway over HTTP", async () => {
    const worker = generateKeyPair();
    await gw.workers.register(registration({ pk: worker.publicKey, h3_cell: ROME, tools: [] }), Date.now());
    const source = httpTelemetrySource({
      gatewayUrl: gw.url,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      epochMs: EPOCH_MS,
      writers: [gw.node.publicKey],
    });
    const cellWorker = await startTemporalWorkers({
      address,
      namespace,
      logger: pino({ level: 'silent' }),
      gracefulShutdownMs: 1_000,
      identity: workerIdentity(worker.publicKey),
      queues: [
        {
          taskQueue: stepQueue(ROME, [], naming),
          activities: withHeartbeats(
            {
              sensorFusionStep: (input: SensorFusionStepInput) =>
                runSensorFusion(
                  {
                    source,
                    genesisMs: DEFAULT_EPOCH_GENESIS_MS,
                    epochMs: EPOCH_MS,
                    nodePk: worker.publicKey,
                    trustedWriters: [gw.node.publicKey],
                  },
                  input,
                ),
            },
            500,
          ),
        },
      ],
    });
    try {
      await untilPolling(client, namespace, stepQueue(ROME, [], naming), worker.publicKey);
      const { body, headers } = signJob(generateKeyPair(), fusionJob());
      const res = await gw.post('/v1/compute', body, headers);
      assert.equal(res.status, 200, res.text);
      const job = res.body as ComputeResponse;
      assertFused(job);
      assert.equal(job.steps[0]!.worker_pk, worker.publicKey);
    } finally {
      await cellWorker.shutdown();
    }
  });
});
