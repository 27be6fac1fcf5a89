/**
 * The gateway's activities of a compound job (issue 7): `routeJob` picks each step's task queue before any
 * step runs; `finishJob` writes the job's `compute/job` proof record and its settlement entry, stores the
 * finished job and counts each worker's outcome once. Both are idempotent: routing only reads, and every
 * write is keyed by the job id, so a retried activity changes nothing twice.
 */
import { ApplicationFailure } from '@temporalio/common';
import { jobHash, outputHash } from '../../core/job-hash.js';
import type { ComputeResponse, JobRecord, Settlement } from '../../core/job-record.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import { requiredTools, STEP_MIN_HARDWARE_TIER, type ComputeJobInput } from '../../core/job-steps.js';
import type { ModelRegistry } from '../../core/model-registry.js';
import { fromCreditUnits, toCreditUnits } from '../../core/credits.js';
import { backboneQueue, gatewayQueue, routingCell, stepQueue, type QueueNaming } from '../../core/task-queues.js';
import { toolMinTiers } from '../../core/tool-registry.js';
import type { WorkerTier } from '../../core/tiers.js';
import { describeNoWorker, eligibleWorkers, isOnline, type WorkerNeed } from '../../core/worker-selection.js';
import { relayFee } from '../../core/pricing.js';
import type { JobStore } from '../../store/job-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { BACKBONE_WORKER } from '../inference/inference-record.js';
import type { ProofWriter } from '../proof/record-batcher.js';

export interface StepRoute {
  queue: string;
  /** Why the step does not run on a swarm worker in the job's cell; null when it does. */
  fallback_reason: string | null;
  /** The relay of the cell that routes the step to its worker (only for steps on a cell queue). */
  relay_pk?: string;
}

export interface JobActivityDeps {
  jobs: JobStore;
  proofs: ProofWriter;
  workers: WorkerRegistry;
  models: ModelRegistry;
  naming: QueueNaming;
  /** Whether the gateway reaches a backbone (inference without an eligible worker goes there). */
  backbone: boolean;
  /** This gateway's key: its own local worker is reached through the backbone queue's dispatcher. */
  nodePk: string;
  clock: () => number;
}

export function createJobActivities(deps: JobActivityDeps) {
  return {
    /**
     * The queue of every step. A step stays in its job's cell (SPEC 1.4): it goes to the cell's queue for its
     * tools when an eligible online worker of that cell polls it. Inference otherwise goes to the backbone
     * queue, served by the gateway, whose dispatcher prefers the gateway's own local worker: there when that
     * worker is eligible, or when the backbone may serve (no worker constraints) and is configured; else the
     * job fails 503 no_workers. Tiles and imagery otherwise run on the gateway itself. Jurisdiction and minimum tier are eligibility checks here, and
     * again on the worker that takes the task (activities/compute/worker-guard.ts).
     */
    async routeJob(job: ComputeJobInput): Promise<Record<string, StepRoute>> {
      const now = deps.clock();
      const cell = routingCell(job.h3_cell, deps.naming);
      const registered = await deps.workers.list();
      const inCell = registered.filter((w) => w.pk !== deps.nodePk && routingCell(w.h3_cell, deps.naming) === cell);
      // The gateway's own local worker (WORKER_RUNTIME_URL) is reached through the backbone queue's dispatcher.
      const own = registered.filter((w) => w.pk === deps.nodePk);
      // SPEC 1.4: a mobile relay online in the cell routes the job's swarm steps and earns the relay fee.
      const relay = inCell
        .filter((w) => w.relay && isOnline(w, now))
        .sort((a, b) => b.last_seen_ms - a.last_seen_ms || (a.pk < b.pk ? -1 : 1))[0];
      const viaRelay = relay ? { relay_pk: relay.pk } : {};
      const routes: Record<string, StepRoute> = {};
      for (const step of job.steps) {
        const tools = requiredTools(step);
        let model: string | undefined;
        if (step.type === 'inference') {
          const checked = deps.models.check(step.model ?? deps.models.defaultModel);
          if (!checked.ok) throw ApplicationFailure.nonRetryable(checked.detail, checked.error);
          if (checked.value.provider === 'backbone') {
            routes[step.id] = { queue: backboneQueue(deps.naming), fallback_reason: null };
            continue;
          }
          model = checked.value.id;
        }
        const need: WorkerNeed = {
          tools,
          toolMinTiers: toolMinTiers(tools),
          jurisdiction: job.jurisdiction,
          minTier: job.min_tier as WorkerTier | null,
          minHardwareTier: STEP_MIN_HARDWARE_TIER[step.type],
          cell: job.h3_cell,
          ...(model ? { model } : {}),
        };
        if (eligibleWorkers(inCell, need, now).length > 0) {
          routes[step.id] = { queue: stepQueue(job.h3_cell, tools, deps.naming), fallback_reason: null, ...viaRelay };
          continue;
        }
        if (step.type === 'inference' && eligibleWorkers(own, need, now).length > 0) {
          routes[step.id] = { queue: backboneQueue(deps.naming), fallback_reason: null };
          continue;
        }
        const why = describeNoWorker(need).split(';')[0]!;
        if (step.type !== 'inference') {
          routes[step.id] = { queue: gatewayQueue(deps.naming), fallback_reason: `${why}; served by the gateway` };
          continue;
        }
        const constrained = tools.length > 0 || job.jurisdiction !== null || job.min_tier !== null;
        if (constrained || !deps.backbone) {
          const reason = constrained
            ? 'the backbone cannot serve a step with required tools, x-svc-jurisdiction or x-svc-min-tier'
            : 'no backbone is configured';
          const advice = job.jurisdiction ? 'retry later or remove the jurisdiction constraint' : 'retry later';
          throw ApplicationFailure.create({
            message: `step "${step.id}": ${why}; ${reason}; ${advice}`,
            type: 'no_workers',
            nonRetryable: true,
            details: [step.id],
          });
        }
        routes[step.id] = { queue: backboneQueue(deps.naming), fallback_reason: why };
      }
      return routes;
    },

    /** Writes the job's proof record, stores the finished job and counts worker outcomes; returns the answer. */
    async finishJob(job: ComputeJobInput, result: ScheduleResult): Promise<ComputeResponse> {
      const ran = result.steps.some((s) => s.status === 'complete');
      const proofCredits = ran ? job.proof_credits : 0;
      const breakdown = Object.fromEntries(result.steps.map((s) => [s.id, s.cost]));
      const settlement: Settlement = {
        stellar_tx: null,
        total_credits: fromCreditUnits(toCreditUnits(result.charged) + toCreditUnits(proofCredits)),
        breakdown,
        proof_credits: proofCredits,
      };
      const relayFees = new Map<string, number>();
      for (const s of result.steps) {
        if (s.status !== 'complete' || !s.relay_pk) continue;
        relayFees.set(s.relay_pk, (relayFees.get(s.relay_pk) ?? 0) + toCreditUnits(relayFee(s.cost)));
      }
      if (relayFees.size > 0) {
        settlement.relay_fees = Object.fromEntries([...relayFees].map(([pk, units]) => [pk, fromCreditUnits(units)]));
      }
      const hash = jobHash(job.request_hash, result.steps);
      const status = result.status;
      const record = await deps.proofs.write({
        id: jobRecordId(job.job_id, job.run),
        h3_cell: job.h3_cell,
        collection_type: 'compute_job',
        payload_type: 'compute/job',
        payload: {
          version: 1,
          job_id: job.job_id,
          job_hash: hash,
          request_hash: job.request_hash,
          requester_pk: job.requester_pk,
          status,
          steps: result.steps.map((s) => ({
            id: s.id,
            type: s.type,
            status: s.status,
            worker_pk: s.worker_pk,
            cost: s.cost,
            record_id: s.record_id,
            latency_ms: s.latency_ms,
            output_hash: s.status === 'complete' ? outputHash(s.output) : null,
          })),
          settlement,
          error: result.error,
        },
      });
      const stored = record.payload as { job_hash?: unknown };
      const lastDone = [...result.steps].reverse().find((s) => s.status === 'complete');
      const response: ComputeResponse = {
        job_id: job.job_id,
        status,
        worker_pk: lastDone?.worker_pk ?? null,
        h3_cell: job.h3_cell,
        epoch: job.epoch,
        steps: result.steps,
        settlement,
        proof: {
          job_hash: typeof stored.job_hash === 'string' ? stored.job_hash : hash,
          verify_url: `/store/proof/${encodeURIComponent(record.id)}`,
          record_id: record.id,
        },
        ...(result.error ? { error: result.error } : {}),
      };
      const finished = await deps.jobs.finish(jobRecordOf(job, status, response, deps.clock()));
      // Each swarm worker that ran a step counts the job once (the registry ignores a repeated job id).
      const workers = new Set(
        result.steps.flatMap((s) =>
          s.status === 'complete' && s.worker_pk && s.worker_pk !== BACKBONE_WORKER && s.worker_pk !== deps.nodePk
            ? [s.worker_pk]
            : [],
        ),
      );
      for (const pk of workers) await deps.workers.recordOutcome(pk, 'completed', job.job_id);
      return finished.response ?? response;
    },
  };
}

export type JobActivities = ReturnType<typeof createJobActivities>;

/**
 * The `compute/job` record of a job's run: `compute:<job_id>`, and `compute:<job_id>:run-<n>` for the n-th run
 * (a replay re-running a job that failed for a transient reason). Records never change, so each run that
 * finishes has its own; the stored job's `verify_url` names the latest.
 */
export const jobRecordId = (jobId: string, run = 1): string =>
  run > 1 ? `compute:${jobId}:run-${run}` : `compute:${jobId}`;

/** The run a `compute/job` record id names (1 for `compute:<job_id>`); null when it is not one of `jobId`'s. */
export function jobRunOf(jobId: string, recordId: string): number | null {
  if (recordId === jobRecordId(jobId)) return 1;
  const match = /^:run-([1-9][0-9]{0,8})$/.exec(recordId.slice(jobRecordId(jobId).length));
  return recordId.startsWith(jobRecordId(jobId)) && match ? Number(match[1]) : null;
}

/** The job store's record of `job` in `status` (response null while running). */
export function jobRecordOf(
  job: ComputeJobInput,
  status: JobRecord['status'],
  response: ComputeResponse | null,
  nowMs: number,
): JobRecord {
  return {
    version: 1,
    job_id: job.job_id,
    status,
    requester_pk: job.requester_pk,
    h3_cell: job.h3_cell,
    epoch: job.epoch,
    step_types: job.steps.map((s) => s.type),
    request_hash: job.request_hash,
    created_at: job.created_at,
    updated_at: new Date(nowMs).toISOString(),
    response,
  };
}
