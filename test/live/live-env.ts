import type { OpenEoBatchActivities } from '../../activities/imagery/openeo-batch.js';
import { createTemporalOpenEoRunner } from '../../api/openeo/batch-runner.js';
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import type { NativeConnection } from '@temporalio/worker';
import { MongoClient, type Db } from 'mongodb';
import { pino } from 'pino';
import { temporalQueuePollers } from '../../api/temporal-queue-pollers.js';
import { createTemporalJobRunner, type TemporalRunnerDeps } from '../../api/temporal-job-runner.js';
import {
  connectTemporal,
  gatewayQueueSpecs,
  startTemporalWorkers,
  type TemporalWorkers,
} from '../../bin/temporal-workers.js';
import { createJobAnswers } from '../../api/job-answers.js';
import type { QueueNaming } from '../../core/task-queues.js';
import { startGateway } from '../helpers/gateway.js';
import { sharedWorkflowBundle } from '../workflows/workflow-bundle.js';
import { gatewayIdentity } from '../../core/worker-identity.js';

/**
 * Waits until Temporal reports `workerPk` polling `queue`: routing counts a registered worker only once Temporal
 * has seen it poll (core/worker-identity.ts), and the gateway routes a job before starting its run.
 */
export async function untilPolling(client: Client, namespace: string, queue: string, workerPk: string): Promise<void> {
  const pollers = temporalQueuePollers(client, namespace, Date.now);
  for (let i = 0; i < 150; i++) {
    if ((await pollers(queue)).has(workerPk)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Temporal never saw ${workerPk.slice(0, 12)}… poll ${queue}`);
}

/** Live suites run only against real engines: a missing variable is a setup error, never a skip. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run the live suites with \`npm run test:live\` (scripts/engines.sh starts the engines)`,
    );
  }
  return value;
}

/**
 * The MongoDB-protocol server of MONGODB_URI (FerretDB in CI, any MongoDB), connected for the enclosing
 * `describe`. Each test takes its own database from `freshDb` and drops it, so a shared server is left as it
 * was found.
 */
export function useLiveMongo(): { uri: string; client: MongoClient; freshDb: () => Db } {
  const uri = requireEnv('MONGODB_URI');
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  before(async () => {
    await client.connect();
  });
  after(async () => {
    await client.close();
  });
  return { uri, client, freshDb: () => client.db(`geofabric_test_${randomUUID().replaceAll('-', '')}`) };
}

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/**
 * A test gateway on Temporal, wired as bin/start.ts wires one: routing sees Temporal's queue pollers, jobs run
 * through the Temporal runner (60 s wait, 120 s run timeout unless `runner` says otherwise), and the gateway's
 * Temporal Workers serve its queues (gatewayQueueSpecs). `close` stops them in reverse order.
 */
export async function startTemporalGateway(options: {
  address: string;
  namespace: string;
  naming: QueueNaming;
  gateway?: Parameters<typeof startGateway>[0];
  runner?: Partial<Omit<TemporalRunnerDeps, 'client' | 'naming' | 'answers'>>;
  /** false: the runner starts runs by update-with-start instead of eagerly with answers in-process. */
  eager?: boolean;
  /** The gateway's seal activities, served on its seal queue (as bin/start.ts wires a sealing gateway). */
  seals?: (gw: Gateway, client: Client) => object;
}): Promise<{
  gw: Gateway;
  connection: NativeConnection;
  client: Client;
  workers: TemporalWorkers;
  close: () => Promise<void>;
}> {
  const { address, namespace, naming } = options;
  const logger = pino({ level: 'silent' });
  // As bin/start.ts: one connection for the Workers and the Client, runs started eagerly, answers in-process.
  const connection = await connectTemporal(address, logger);
  const client = new Client({ connection, namespace });
  const answers = createJobAnswers();
  // openEO batch jobs as bin/start.ts runs them: one openEoBatchJob workflow per start, its activity on the job queue.
  let openEo: OpenEoBatchActivities | undefined;
  const gw = await startGateway({
    ...options.gateway,
    naming,
    answers,
    pollers: temporalQueuePollers(client, namespace, Date.now),
    jobRunner: (compute) =>
      createTemporalJobRunner({
        client,
        naming,
        waitMs: 60_000,
        runTimeoutMs: 120_000,
        ...(options.eager === false ? {} : { answers, route: compute.jobs.routeJob }),
        ...options.runner,
      }),
    openEoRunner: (activities) => {
      openEo = activities;
      return createTemporalOpenEoRunner({ client, naming, runTimeoutMs: 120_000 });
    },
  });
  const workers = await startTemporalWorkers({
    address,
    namespace,
    connection,
    logger,
    workflowBundle: await sharedWorkflowBundle(),
    gracefulShutdownMs: 1_000,
    identity: gatewayIdentity(gw.node.publicKey),
    queues: gatewayQueueSpecs(naming, {
      ...gw.compute,
      ...(options.seals ? { seals: options.seals(gw, client), sealer: gw.node.publicKey } : {}),
      ...(openEo ? { openEo } : {}),
    }),
  });
  const close = async () => {
    await workers.shutdown();
    await gw.close();
    await connection.close();
  };
  return { gw, connection, client, workers, close };
}
