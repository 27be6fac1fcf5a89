/**
 * Scale-out, shown (docs/operations.md "Several gateways"): two gateways and two swarm workers on one Temporal
 * server and one MongoDB-protocol store (FerretDB in CI). Each gateway is what bin/start.ts builds under
 * ORCHESTRATOR=temporal: its own node key, its own Temporal Workers (job, gateway, backbone and its own seal
 * queue, under its gateway identity) and its own store clients on the shared database. The two workers poll
 * the job cell's queue under their worker identities, as `geofabric worker` does.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ScheduleNotFoundError, type Client, type ScheduleHandle } from '@temporalio/client';
import type { Db } from 'mongodb';
import { pino } from 'pino';
import { withHeartbeats } from '../../activities/compute/heartbeat.js';
import { createSealActivities } from '../../activities/proof/seal-activities.js';
import { ensureSealSchedule } from '../../activities/proof/seal-schedule.js';
import { workflowIdOf } from '../../api/temporal-job-runner.js';
import { temporalGatewayPollers } from '../../api/temporal-queue-pollers.js';
import { startTemporalWorkers, type TemporalWorkers } from '../../bin/temporal-workers.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { InferenceStepInput } from '../../core/job-steps.js';
import { jobQueue, sealQueue, stepQueue, type QueueNaming } from '../../core/task-queues.js';
import { workerIdentity } from '../../core/worker-identity.js';
import { createMongoApiKeyStore } from '../../store/mongo/api-key-store.js';
import { createMongoBlobStore } from '../../store/mongo/blob-store.js';
import { createMongoJobStore } from '../../store/mongo/job-store.js';
import { createMongoLedgerStore } from '../../store/mongo/ledger-store.js';
import { createMongoProofStore } from '../../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../../store/mongo/rate-limit-store.js';
import { createMongoWorkerRegistry } from '../../store/mongo/worker-registry.js';
import type { sealEpoch } from '../../workflows/seal-epoch.js';
import { startGateway } from '../helpers/gateway.js';
import { certFor, certHeader, inferenceJob, signJob } from '../helpers/jobs.js';
import { registration } from '../store/worker-registry.contract.js';
import { installTestRuntime } from '../workflows/temporal-runtime.js';
import { requireEnv, startTemporalGateway, useLiveMongo } from './live-env.js';

const ROME = '861e8050fffffff';
const MODEL = 'lfm2.5-1.2b-instruct';
const HOUR = 3_600_000;

type Gateway = Awaited<ReturnType<typeof startGateway>>;

describe('Two gateways and two workers on one Temporal and one MongoDB store (live)', function () {
  this.timeout(120_000);
  const address = requireEnv('TEMPORAL_ADDRESS');
  const namespace = process.env.TEMPORAL_NAMESPACE || 'default';
  let db: Db | undefined;
  // Before useLiveMongo's own `after` closes the client: mocha runs `after` hooks in the order they are declared.
  after(async () => {
    await db?.dropDatabase();
  });
  const mongo = useLiveMongo();
  const naming: QueueNaming = { prefix: `gf-scale-${randomUUID().slice(0, 8)}`, routingResolution: 5 };
  const scheduleId = `${naming.prefix}-seal-epochs`;
  // The gateways run three hours behind, so the epoch their records land in is already due for sealing.
  const clock = () => Date.now() - 3 * HOUR;
  const alice = generateKeyPair();
  const workerKeys = [generateKeyPair(), generateKeyPair()];
  /** Runs of each (job, step) on the two workers, to show every step runs exactly once. */
  const executions = new Map<string, string[]>();
  const gateways: Awaited<ReturnType<typeof startTemporalGateway>>[] = [];
  const swarmWorkers: TemporalWorkers[] = [];

  before(async () => {
    installTestRuntime();
    db = mongo.freshDb();
    for (let i = 0; i < 2; i++) {
      const node = generateKeyPair();
      gateways.push(
        await startTemporalGateway({
          address,
          namespace,
          naming,
          gateway: {
            node,
            clock,
            // Each gateway opens its own clients on the shared database, as two processes do.
            proofs: await createMongoProofStore(db),
            jobs: await createMongoJobStore(db),
            ledger: await createMongoLedgerStore(db),
            rateLimits: await createMongoRateLimitStore(db),
            workers: await createMongoWorkerRegistry(db),
            apiKeyStore: await createMongoApiKeyStore(db),
            blobs: await createMongoBlobStore(db),
            jobWaitMs: 60_000,
          },
          seals: (gw, client) => {
            const gatewaysOnline = temporalGatewayPollers(client, namespace, Date.now);
            return createSealActivities({
              store: gw.proofs,
              signer: node,
              clock: Date.now,
              genesisMs: DEFAULT_EPOCH_GENESIS_MS,
              sealers: async () => [...(await gatewaysOnline(jobQueue(naming)))].map((pk) => sealQueue(naming, pk)),
            });
          },
        }),
      );
    }
    for (const [i, key] of workerKeys.entries()) {
      await gateways[i]!.gw.workers.register(
        registration({ pk: key.publicKey, h3_cell: ROME, models: [MODEL], tools: [] }),
        clock(),
      );
      swarmWorkers.push(
        await startTemporalWorkers({
          address,
          namespace,
          logger: pino({ level: 'silent' }),
          gracefulShutdownMs: 1_000,
          identity: workerIdentity(key.publicKey),
          role: 'worker',
          queues: [
            {
              taskQueue: stepQueue(ROME, [], naming),
              activities: withHeartbeats(
                {
                  inferenceStep: async (input: InferenceStepInput) => {
                    const key_ = `${input.job_id}/${input.step_id}`;
                    executions.set(key_, [...(executions.get(key_) ?? []), key.publicKey]);
                    await sleep(50);
                    return {
                      output: { text: `worker ${i} answers`, provider: 'worker', model: MODEL },
                      cost: 0.0002,
                      worker_pk: key.publicKey,
                      record_id: null,
                      latency_ms: 50,
                    };
                  },
                },
                500,
              ),
            },
          ],
        }),
      );
    }
  });

  after(async () => {
    for (const w of swarmWorkers) await w.shutdown();
    await gateways[0]?.client.schedule
      .getHandle(scheduleId)
      .delete()
      .catch((error: unknown) => {
        if (!(error instanceof ScheduleNotFoundError)) throw error;
      });
    for (const { close } of gateways) await close();
  });

  const gw = (i: number) => gateways[i]!.gw;
  const send = (i: number, signed: ReturnType<typeof signJob>, headers: Record<string, string> = {}) =>
    gw(i).post('/v1/compute', signed.body, { ...signed.headers, ...headers });

  it('runs jobs sent to either gateway exactly once, on the two workers, charged once', async () => {
    const signed = Array.from({ length: 6 }, (_, n) => signJob(alice, inferenceJob(`scale-out ${n}`)));
    const answers = await Promise.all(signed.map((job, n) => send(n % 2, job)));
    // The same signed request to both gateways at once: one job, one workflow, one run.
    const twice = signJob(alice, inferenceJob('to both at once'));
    const [first, second] = await Promise.all([send(0, twice), send(1, twice)]);
    for (const res of [...answers, first, second]) assert.equal(res.status, 200, res.text);
    assert.deepEqual(withoutUrl(second.body), withoutUrl(first.body));

    const jobs = [...answers, first].map((res) => res.body as ComputeResponse);
    for (const job of jobs) {
      assert.equal(job.status, 'complete');
      assert.deepEqual(executions.get(`${job.job_id}/ask`)?.length, 1, `job ${job.job_id} ran its step once`);
      assert.ok(
        workerKeys.some((k) => k.publicKey === job.worker_pk),
        'a swarm worker ran it',
      );
      // Either gateway answers the same stored job (verify_url names the gateway asked).
      for (const i of [0, 1]) {
        assert.deepEqual(withoutUrl((await gw(i).get(`/v1/compute/${job.job_id}`)).body), withoutUrl(job));
      }
      const charges = (await gw(0).ledger.jobEntries(job.job_id)).filter((e) => e.kind === 'job_charge');
      assert.equal(charges.length, 1, 'charged once');
      const runs: string[] = [];
      for await (const run of gateways[0]!.client.workflow.list({
        query: `WorkflowId = '${workflowIdOf(job.job_id)}'`,
      })) {
        runs.push(run.runId);
      }
      assert.ok(runs.length <= 1, `one workflow run for job ${job.job_id}, listed ${runs.length}`);
    }
    const used = new Set(jobs.map((job) => job.worker_pk));
    console.log(`      7 jobs ran on ${used.size} worker(s); ${executions.size} step executions`);
    assert.equal(executions.size, jobs.length, 'no step ran twice, none ran for a job not sent');
  });

  it('holds max_ops_per_hour across both gateways (counted in the shared store)', async () => {
    const human = generateKeyPair();
    const agent = generateKeyPair();
    const cert = certHeader(certFor(human, agent.publicKey, { constraints: { max_ops_per_hour: 3 } }, clock()));
    const job = (n: number) => signJob(agent, inferenceJob(`limited ${n}`));
    const statuses = [];
    for (const [n, i] of [0, 1, 0, 1, 0].entries()) {
      statuses.push((await send(i, job(n), { 'x-svc-delegation-cert': cert })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
  });

  it('keeps exactly one seal Schedule, whose run seals each gateway’s epochs once', async () => {
    // Both gateways ensure the schedule at once, as two gateways starting together do.
    const ensured = await Promise.all(
      gateways.map(({ client }) =>
        ensureSealSchedule(client, { scheduleId, taskQueue: jobQueue(naming), paused: true }),
      ),
    );
    assert.deepEqual(ensured.map((e) => e.created).sort(), [false, true]);
    assert.equal(await countSchedules(gateways[0]!.client, naming.prefix, 1), 1);

    // Each gateway has a record of its own in the due epoch.
    const epoch = epochAt(clock(), DEFAULT_EPOCH_GENESIS_MS);
    for (const [i, { gw: g }] of gateways.entries()) {
      await g.writer.write({
        id: `scale-out-${i}-${randomUUID()}`,
        h3_cell: ROME,
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { model: MODEL, provider: 'worker', tokens_in: 1, tokens_out: 1, text: `gateway ${i}` },
      });
    }
    const schedule = gateways[0]!.client.schedule.getHandle(scheduleId);
    await schedule.trigger();
    const result = await (await nthRun(gateways[0]!.client, schedule, 1)).result();
    const pks = gateways.map(({ gw: g }) => g.node.publicKey).sort();
    assert.deepEqual(
      (result.runs ?? [result]).map((run) => run.sealerPk).sort(),
      pks,
      'the one run sealed both gateways',
    );
    for (const { gw: g } of gateways) {
      const seals = await g.proofs.sealsOf(g.node.publicKey);
      const epochs = seals.map((s) => s.epoch);
      assert.ok(epochs.includes(epoch), `gateway ${g.node.publicKey.slice(0, 8)} sealed epoch ${epoch}`);
      assert.equal(new Set(epochs).size, epochs.length, 'each epoch sealed once');
    }
    const counts = await Promise.all(gateways.map(({ gw: g }) => g.proofs.sealsOf(g.node.publicKey)));

    // The next run finds nothing left to seal.
    await schedule.trigger();
    const again = await (await nthRun(gateways[0]!.client, schedule, 2)).result();
    for (const run of again.runs ?? [again]) assert.deepEqual(run.sealed, []);
    for (const [i, { gw: g }] of gateways.entries()) {
      assert.equal((await g.proofs.sealsOf(g.node.publicKey)).length, counts[i]!.length);
    }
  });
});

/**
 * The per-address and per-principal request limits (RATE_LIMIT_IP_PER_MINUTE, RATE_LIMIT_PRINCIPAL_PER_MINUTE)
 * are token buckets in each gateway's memory: across gateways they add up. docs/operations.md says what a
 * deployment puts in front; this shows the behaviour it documents.
 */
describe('Per-address request limits with two gateways on one store (live)', function () {
  this.timeout(30_000);
  const opened: Gateway[] = [];
  let db: Db | undefined;
  after(async () => {
    for (const g of opened) await g.close();
    await db?.dropDatabase();
  });
  const mongo = useLiveMongo();

  it('are each gateway’s own: a client limited on one gateway is still served by the other', async () => {
    db = mongo.freshDb();
    const httpLimits = {
      ipPerMinute: 60,
      principalPerMinute: 0,
      burstSeconds: 3,
      trustProxy: false,
      requestTimeoutMs: 10_000,
      headersTimeoutMs: 5_000,
    };
    for (let i = 0; i < 2; i++) {
      opened.push(await startGateway({ config: { httpLimits }, rateLimits: await createMongoRateLimitStore(db) }));
    }
    const [a, b] = opened as [Gateway, Gateway];
    const statuses = [];
    for (let n = 0; n < 4; n++) statuses.push((await a.get('/v1/tools')).status);
    assert.deepEqual(statuses, [200, 200, 200, 429]);
    assert.equal((await b.get('/v1/tools')).status, 200);
  });
});

/** A job answer without its absolute `verify_url`, which names the gateway that answered. */
function withoutUrl(body: unknown): unknown {
  const job = body as ComputeResponse;
  return job.proof ? { ...job, proof: { ...job.proof, verify_url: new URL(job.proof.verify_url).pathname } } : job;
}

/** The workflow of the schedule's `n`-th action (1-based), once the schedule reports it. */
async function nthRun(client: Client, schedule: ScheduleHandle, n: number, timeoutMs = 20_000) {
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

/** Schedules whose id starts with `prefix`, polled until `expected` (listing is eventually consistent). */
async function countSchedules(client: Client, prefix: string, expected: number, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let count = 0;
    for await (const summary of client.schedule.list()) if (summary.scheduleId.startsWith(prefix)) count++;
    if (count >= expected || Date.now() > deadline) return count;
    await sleep(200);
  }
}
