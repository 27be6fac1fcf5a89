/**
 * The step activities of compound jobs: one per step type, each wrapping the single-step activity
 * (`runInference`, `renderTile`, `processImage`, `runSensorFusion`) reporting in the scheduler's shape (core/job-scheduler.ts
 * `StepRun`). Registered by every process that takes steps: the gateway (embedded mode, and the gateway and
 * backbone queues under Temporal) and `geofabric worker` (its cell's queues).
 *
 * The wrapped activities derive their record ids from job and step and await the write, so a retried step
 * returns the first attempt's record and cost: nothing is written or charged twice. Their failures already
 * are Temporal ApplicationFailures (business errors non-retryable, typed by the spec's error code).
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ImageStepInput, InferenceStepInput, SensorFusionStepInput, TileStepInput } from '../../core/job-steps.js';
import type { ActivityInputOf, STEP_ACTIVITY, StepType } from '../../core/step-types/index.js';
import type { StepRun } from '../../core/job-scheduler.js';
import type { ImageryActivities } from '../imagery/index.js';
import type { Swarm } from '../inference/index.js';
import type { TileActivities } from '../tiles/index.js';
import { runSensorFusion, type FusionStepDeps } from '../telemetry/fusion-step.js';
import type { BlobOwner, StepBlobSink } from '../../store/blob-store.js';
import { compactRun } from './output-store.js';

export interface StepActivityDeps {
  swarm: Pick<Swarm, 'runInference'>;
  tiles: Pick<TileActivities, 'renderTile'>;
  imagery: Pick<ImageryActivities, 'processImage'>;
  /** Where sensor_fusion reads signed readings (the proof store, or the gateway over HTTP) and the epoch grid. */
  fusion?: Omit<FusionStepDeps, 'nodePk'> | undefined;
  /** Who this process is: tile, imagery and fusion steps are served by this node's key. */
  nodePk: string;
  /** Monotonic milliseconds, for latency. */
  now?: () => number;
  /** Where large output fields go (core/output-blobs.ts): the gateway's store, or the gateway over HTTP; none: outputs travel whole. */
  blobs?: StepBlobSink;
}

export function createStepActivities(deps: StepActivityDeps) {
  const now = deps.now ?? (() => performance.now());
  const compact = (run: StepRun, step: BlobOwner): Promise<StepRun> | StepRun =>
    deps.blobs ? compactRun(deps.blobs, run, { job_id: step.job_id, step_id: step.step_id }) : run;
  const timed = async <T>(run: () => Promise<T>): Promise<[T, number]> => {
    const started = now();
    const value = await run();
    return [value, Math.max(0, Math.round(now() - started))];
  };
  /** A step this process runs itself (tiles, imagery): its record and cost come with the output. */
  const onGateway = async (
    step: BlobOwner,
    run: () => Promise<{ cost: number; record_id: string | null }>,
  ): Promise<StepRun> => {
    const [out, latency] = await timed(run);
    const { cost, ...output } = out;
    return compact({ output, cost, worker_pk: deps.nodePk, record_id: out.record_id, latency_ms: latency }, step);
  };

  return {
    async inferenceStep(input: InferenceStepInput): Promise<StepRun> {
      const [out, latency] = await timed(() => deps.swarm.runInference(input));
      const { worker_pk, cost, epoch: _epoch, ...output } = out;
      return compact(
        { output: { ...output }, cost, worker_pk, record_id: out.proof_job_id, latency_ms: latency },
        input,
      );
    },

    tileRenderStep: (input: TileStepInput): Promise<StepRun> =>
      onGateway(input, () => deps.tiles.renderTile(input as Parameters<TileActivities['renderTile']>[0])),

    imageProcessStep: (input: ImageStepInput): Promise<StepRun> =>
      onGateway(input, () => deps.imagery.processImage(input)),

    async sensorFusionStep(input: SensorFusionStepInput): Promise<StepRun> {
      if (!deps.fusion) {
        throw ApplicationFailure.nonRetryable('this process has no telemetry source', 'step_type_unavailable');
      }
      return compact(await runSensorFusion({ ...deps.fusion, nodePk: deps.nodePk }, input), input);
    },
  };
}

export type StepActivities = ReturnType<typeof createStepActivities>;

/**
 * The workflow and the embedded runner call each step type's activity by the name its spec declares
 * (core/step-types/), with the input its spec builds: a type whose activity is missing here, or takes another
 * input, does not compile.
 */
type DeclaredActivities = {
  [K in StepType as (typeof STEP_ACTIVITY)[K]]: (input: ActivityInputOf<K>) => Promise<StepRun>;
};
const _declared = (activities: StepActivities): DeclaredActivities => activities;
