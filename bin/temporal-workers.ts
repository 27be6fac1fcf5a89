/**
 * Temporal Workers of one process: one Worker per task queue (a Temporal Worker polls one queue),
 * sharing one connection and one workflow bundle. `shutdown()` drains: pollers stop, running activities get
 * `gracefulShutdownMs` to finish, then the connection closes.
 */
import { fileURLToPath } from 'node:url';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Logger } from 'pino';
import type { JobActivities } from '../activities/compute/job-activities.js';
import type { StepActivities } from '../activities/compute/step-activities.js';
import { backboneQueue, gatewayQueue, jobQueue, sealQueue, type QueueNaming } from '../core/task-queues.js';
import { connectingToTemporal } from './startup-errors.js';
import { installTemporalRuntime } from './temporal-logger.js';

export interface QueueSpec {
  taskQueue: string;
  activities?: object;
  /** Serve the compute-job and seal workflows on this queue. */
  workflows?: boolean;
}

/**
 * A gateway's queues: the job queue runs the workflows and, as local activities, routeJob, finishJob and the
 * steps the gateway runs itself (a local activity runs in the process of the workflow task, so this one must
 * hold the gateway's stores), plus
 * the seal activities; the gateway's own seal queue (`sealer`: its node key) serves the seal run's activity for
 * this gateway's epochs; the gateway queue serves the steps no cell worker takes, and routeJob and finishJob
 * for runs started before they became local (workflows/compute-job.ts LOCAL_GATEWAY_PATCH); the backbone queue
 * serves inference.
 */
export function gatewayQueueSpecs(
  naming: QueueNaming,
  {
    jobs,
    steps,
    seals,
    sealer,
    openEo,
  }: { jobs: JobActivities; steps: StepActivities; seals?: object; sealer?: string; openEo?: object },
): QueueSpec[] {
  return [
    // openEoBatchJob runs its one activity locally on the job queue's Worker (workflows/openeo-batch-job.ts).
    { taskQueue: jobQueue(naming), workflows: true, activities: { ...seals, ...steps, ...jobs, ...openEo } },
    ...(seals && sealer ? [{ taskQueue: sealQueue(naming, sealer), activities: seals }] : []),
    { taskQueue: gatewayQueue(naming), activities: { ...jobs, ...steps } },
    { taskQueue: backboneQueue(naming), activities: { inferenceStep: steps.inferenceStep } },
  ];
}

export interface TemporalWorkersOptions {
  address: string;
  namespace: string;
  queues: QueueSpec[];
  logger: Logger;
  gracefulShutdownMs?: number;
  /** The Workers' identity in Temporal (a swarm worker's names its key: core/worker-identity.ts); default the SDK's. */
  identity?: string;
  /** Who connects, for the message when Temporal is not reachable (only a gateway can do without it). */
  role?: 'gateway' | 'worker';
  /** A prebuilt bundle (tests share one); default: bundle workflows/index.ts at start (a few seconds). */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /**
   * The connection to poll on, owned by the caller (it stays open after shutdown): a Client on the same
   * connection may start runs eagerly on these Workers (connectTemporal). Default: one of their own.
   */
  connection?: NativeConnection;
}

// workflows/index.ts from the sources (tsx), dist/workflows/index.js from a compiled build: the same extension
// as this module's, so the bundle is made from the code that runs.
export const WORKFLOWS_ENTRY = fileURLToPath(
  new URL(`../workflows/index${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);

export interface TemporalWorkers {
  /** Resolves when every Worker has stopped; rejects if one fails. */
  running: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * A NativeConnection to Temporal, after installing the Runtime with `logger` (the SDK's and Core's logs as the
 * process's JSON lines). Workers and a Client on one such connection can start runs eagerly: the first workflow
 * task comes back with the start call to a Worker of this process instead of through the server's matching.
 */
export async function connectTemporal(
  address: string,
  logger: Logger,
  role: 'gateway' | 'worker' = 'gateway',
): Promise<NativeConnection> {
  installTemporalRuntime(logger);
  return connectingToTemporal(address, role, () => NativeConnection.connect({ address }));
}

export async function startTemporalWorkers(options: TemporalWorkersOptions): Promise<TemporalWorkers> {
  const owned = options.connection === undefined;
  const connection = options.connection ?? (await connectTemporal(options.address, options.logger, options.role));
  try {
    const needsBundle = options.queues.some((q) => q.workflows);
    const bundle =
      needsBundle && !options.workflowBundle
        ? await bundleWorkflowCode({ workflowsPath: WORKFLOWS_ENTRY, logger: new DefaultLogger('WARN') })
        : options.workflowBundle;
    const workers = await Promise.all(
      options.queues.map((queue) =>
        Worker.create({
          connection,
          namespace: options.namespace,
          taskQueue: queue.taskQueue,
          ...(options.identity ? { identity: options.identity } : {}),
          ...(queue.activities ? { activities: queue.activities } : {}),
          ...(queue.workflows && bundle ? { workflowBundle: bundle } : {}),
          shutdownGraceTime: options.gracefulShutdownMs ?? 30_000,
        }),
      ),
    );
    const running = Promise.all(workers.map((w) => w.run())).then(() => undefined);
    const closed = owned ? running.finally(() => connection.close()) : running;
    options.logger.info(
      { address: options.address, queues: options.queues.map((q) => q.taskQueue) },
      'temporal workers polling',
    );
    return {
      running: closed,
      async shutdown() {
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await closed.catch(() => undefined);
      },
    };
  } catch (error) {
    if (owned) await connection.close();
    throw error;
  }
}
