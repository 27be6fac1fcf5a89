/**
 * Compound jobs' activities, built from their dependencies: the step activities every process
 * that takes steps registers, and the gateway's job activities (routing, the final record).
 */
import type { QueueNaming } from '../../core/task-queues.js';
import type { BlobStore } from '../../store/blob-store.js';
import type { JobStore } from '../../store/job-store.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import type { ImageryActivities } from '../imagery/index.js';
import type { Swarm } from '../inference/index.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import type { TileActivities } from '../tiles/index.js';
import { createJobActivities, type JobActivityDeps } from './job-activities.js';
import { createStepActivities, type StepActivityDeps } from './step-activities.js';

export interface ComputeActivityDeps {
  jobs: JobStore;
  /** Who polls a task queue now: routing sends steps only to workers that take work (JobActivityDeps). */
  pollers: JobActivityDeps['pollers'];
  proofs: ProofWriter;
  workers: WorkerRegistry;
  swarm: Swarm;
  tiles: TileActivities;
  imagery: ImageryActivities;
  /** sensor_fusion's source of signed readings and the epoch grid (StepActivityDeps.fusion). */
  fusion?: StepActivityDeps['fusion'];
  nodePk: string;
  naming: QueueNaming;
  /** Whether a backbone is configured (routing sends inference there when no worker can take it). */
  backbone: boolean;
  clock: () => number;
  /** The relay's share of each step it routed; RELAY_FEE_SHARE (core/pricing.ts) by default. */
  relayFeeShare?: number;
  /** The credit ledger finishJob posts each finished job to; none: nothing is posted. */
  ledger?: LedgerStore;
  /** Called after a job's entries are posted; not awaited, catches its own errors (JobActivityDeps). */
  onJobPosted?: (jobId: string) => void;
  /** Told each finished job's status and duration (JobActivityDeps.onJobFinished): the gateway's metrics. */
  onJobFinished?: JobActivityDeps['onJobFinished'];
  /** Where large step outputs are kept (core/output-blobs.ts); none: outputs travel whole. */
  blobs?: BlobStore;
  /** Told each finished job's stored answer (JobActivityDeps.onAnswer): the requests waiting in this process. */
  onAnswer?: JobActivityDeps['onAnswer'];
}

export function createComputeActivities(deps: ComputeActivityDeps) {
  return {
    steps: createStepActivities({
      swarm: deps.swarm,
      tiles: deps.tiles,
      imagery: deps.imagery,
      fusion: deps.fusion,
      nodePk: deps.nodePk,
      ...(deps.blobs ? { blobs: deps.blobs } : {}),
    }),
    jobs: createJobActivities({
      jobs: deps.jobs,
      pollers: deps.pollers,
      proofs: deps.proofs,
      workers: deps.workers,
      models: deps.swarm.models,
      naming: deps.naming,
      backbone: deps.backbone,
      nodePk: deps.nodePk,
      ...(deps.fusion ? { fusionWriters: deps.fusion.trustedWriters } : {}),
      clock: deps.clock,
      ...(deps.relayFeeShare === undefined ? {} : { relayFeeShare: deps.relayFeeShare }),
      ...(deps.ledger ? { ledger: deps.ledger } : {}),
      ...(deps.onJobPosted ? { onJobPosted: deps.onJobPosted } : {}),
      ...(deps.onJobFinished ? { onJobFinished: deps.onJobFinished } : {}),
      ...(deps.blobs ? { blobs: deps.blobs } : {}),
      ...(deps.onAnswer ? { onAnswer: deps.onAnswer } : {}),
    }),
  };
}
export type ComputeActivities = ReturnType<typeof createComputeActivities>;

export {
  createJobActivities,
  jobRecordId,
  jobRecordOf,
  jobRunOf,
  type JobActivities,
  type QueuePollers,
  type StepRoute,
} from './job-activities.js';
export { createStepActivities, type StepActivities } from './step-activities.js';
