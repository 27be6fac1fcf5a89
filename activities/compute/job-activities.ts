/**
 * The gateway's activities of a compound job: `routeJob` picks each step's task queue before any
 * step runs; `finishJob` writes the job's `compute/job` proof record and its settlement entry, stores the
 * finished job, posts its ledger entries and counts each worker's outcome once. Both are idempotent:
 * routing only reads, and every write is keyed by the job id, so a retried activity changes nothing twice.
 */
import type { BlobStore } from '../../store/blob-store.js';
import { compactSteps, resolveSteps } from './output-store.js';
import { ApplicationFailure } from '@temporalio/common';
import { jobHash, outputHash } from '../../core/job-hash.js';
import type { ComputeResponse, JobRecord, Settlement, StepResult } from '../../core/job-record.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { requiredTools, STEP_MIN_HARDWARE_TIER } from '../../core/step-types/index.js';
import type { ModelRegistry } from '../../core/model-registry.js';
import { fromCreditUnits, toCreditUnits } from '../../core/credits.js';
import { backboneQueue, gatewayQueue, routingCell, workerQueue, type QueueNaming } from '../../core/task-queues.js';
import { toolMinTiers } from '../../core/tool-registry.js';
import type { WorkerTier } from '../../core/tiers.js';
import {
  describeNeed,
  describeNoWorker,
  eligibleWorkers,
  isOnline,
  type WorkerNeed,
} from '../../core/worker-selection.js';
import { ServiceError } from '../../core/errors.js';
import { fusionWriters as deploymentKeys, trustedWritersOf } from '../../core/telemetry.js';
import { jobLedgerEntries } from '../../core/ledger-entries.js';
import { RELAY_FEE_SHARE, relayFee } from '../../core/pricing.js';
import type { JobStore } from '../../store/job-store.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { BACKBONE_WORKER } from '../inference/inference-record.js';
import type { ProofWriter } from '../proof/record-batcher.js';

export interface StepRoute {
  queue: string;
  /** Why the step does not run on a swarm worker in the job's cell; null when it does. */
  fallback_reason: string | null;
  /** The relay of the cell that routes the step to its worker (only for steps on a cell queue). */
  relay_pk?: string;
  /**
   * Only for steps on a cell queue: where the step goes when no worker takes it from that queue within the
   * claim window (its worker died since it was last seen), or the no_workers refusal naming the cell and the
   * constraint when it may run nowhere else (workflows/compute-job.ts).
   */
  unclaimed?: UnclaimedRoute;
}

export type UnclaimedRoute = { queue: string; fallback_reason: string } | { no_workers: string };

/** The keys of the swarm workers polling a task queue now (routing's "takes work" test, core/worker-identity.ts). */
export type QueuePollers = (queue: string) => Promise<ReadonlySet<string>>;

export interface JobActivityDeps {
  jobs: JobStore;
  /**
   * Who polls a queue now (api/temporal-queue-pollers.ts). A registered worker counts for routing only while
   * it does: a registration is a claim anyone can make, and a step sent to a queue nobody polls waits out its
   * timeout.
   */
  pollers: QueuePollers;
  proofs: ProofWriter;
  workers: WorkerRegistry;
  models: ModelRegistry;
  naming: QueueNaming;
  /** Whether the gateway reaches a backbone (inference without an eligible worker goes there). */
  backbone: boolean;
  /** This gateway's key: its own local worker is reached through the backbone queue's dispatcher. */
  nodePk: string;
  /**
   * The telemetry writers this gateway trusts (itself and SYNC_NODE_KEYS; default itself): a fusion step output
   * whose `trusted_writers` names another key is refused before the job record binds it (docs/protocol.md §2.10).
   * The same keys, the deployment's node keys, are the job record's `node_keys` when there is more than this one
   * (docs/protocol.md §15.4).
   */
  fusionWriters?: readonly string[];
  clock: () => number;
  /** The relay's share of each step it routed (RELAY_FEE_PERCENT / 100); RELAY_FEE_SHARE by default. */
  relayFeeShare?: number;
  /** The credit ledger: when set, finishJob posts each finished job's entries. */
  ledger?: LedgerStore;
  /**
   * Called after a job's entries are posted (the settlement service's cue). Not awaited, so payment never holds
   * up the job; the hook catches and logs its own errors (a throwing hook is ignored here).
   */
  onJobPosted?: (jobId: string) => void;
  /**
   * Told each finished job's status and its time from acceptance (`created_at`) to its stored final record:
   * the gateway's metrics. A Temporal retry of finishJob may tell a job twice.
   */
  onJobFinished?: (outcome: { status: ScheduleResult['status']; durationMs: number }) => void;
  /** Large output fields (core/output-blobs.ts): resolved for the hash and the stored job, referenced in the answer. */
  blobs?: BlobStore;
  /**
   * Told each finished job's stored answer (what finishJob returns) once it is stored: the request waiting in this
   * process takes it from here (api/job-answers.ts). A Temporal retry of finishJob may tell a job twice.
   */
  onAnswer?: (answer: ComputeResponse) => void;
}

export function createJobActivities(deps: JobActivityDeps) {
  return {
    /**
     * The queue of every step. A step stays in its job's cell (docs/protocol.md §1.4): it goes to the cell's queue for its
     * tools when an eligible online worker of that cell polls it (registered, heartbeating, and seen polling that
     * queue by Temporal: `pollers`). Inference otherwise goes to the backbone
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
      // docs/protocol.md §1.4: a mobile relay online in the cell routes the job's swarm steps and earns the relay fee.
      const relay = inCell
        .filter((w) => w.relay && isOnline(w, now))
        .sort((a, b) => b.last_seen_ms - a.last_seen_ms || (a.pk < b.pk ? -1 : 1))[0];
      const viaRelay = relay ? { relay_pk: relay.pk } : {};
      // Each queue's pollers once per routing: steps of one job often share a queue.
      const polled = new Map<string, Promise<string[]>>();
      const polling = (queue: string): Promise<string[]> => {
        let pks = polled.get(queue);
        if (pks === undefined) {
          pks = deps.pollers(queue).then((set) => [...set]);
          polled.set(queue, pks);
        }
        return pks;
      };
      // Each worker polls the queue of its whole tool set (core/task-queues.ts): of the eligible workers' queues,
      // the one most of them are seen polling, the fewest tools first (tool-rich workers stay free for tool steps).
      const polledQueue = async (eligible: readonly { pk: string; tools: readonly string[] }[]) => {
        const byQueue = new Map<string, string[]>();
        for (const w of eligible) {
          const queue = workerQueue(job.h3_cell, w.tools, deps.naming);
          byQueue.set(queue, [...(byQueue.get(queue) ?? []), w.pk]);
        }
        const queues = [...byQueue.keys()].sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
        let best: string | null = null;
        let most = 0;
        for (const queue of queues) {
          const pks = await polling(queue);
          const count = byQueue.get(queue)!.filter((pk) => pks.includes(pk)).length;
          if (count > most) [best, most] = [queue, count];
        }
        return best;
      };
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
        const eligible = eligibleWorkers(inCell, need, now);
        // Off the cell's queue: the gateway's own local worker, the backbone or the gateway itself, else refused.
        const elsewhere = (why: string): UnclaimedRoute => {
          if (step.type === 'inference' && eligibleWorkers(own, need, now).length > 0) {
            return { queue: backboneQueue(deps.naming), fallback_reason: why };
          }
          if (step.type !== 'inference') {
            return { queue: gatewayQueue(deps.naming), fallback_reason: `${why}; served by the gateway` };
          }
          const constrained = tools.length > 0 || job.jurisdiction !== null || job.min_tier !== null;
          if (!constrained && deps.backbone) return { queue: backboneQueue(deps.naming), fallback_reason: why };
          const reason = constrained
            ? 'the backbone cannot serve a step with required tools, x-svc-jurisdiction or x-svc-min-tier'
            : 'no backbone is configured';
          const advice = job.jurisdiction ? 'retry later or remove the jurisdiction constraint' : 'retry later';
          return { no_workers: `step "${step.id}" in cell ${cell}: ${why}; ${reason}; ${advice}` };
        };
        const queue = await polledQueue(eligible);
        if (queue !== null) {
          const unclaimed = elsewhere(`no worker took the step from its cell's queue in time (${describeNeed(need)})`);
          routes[step.id] = { queue, fallback_reason: null, ...viaRelay, unclaimed };
          continue;
        }
        if (step.type === 'inference' && eligibleWorkers(own, need, now).length > 0) {
          routes[step.id] = { queue: backboneQueue(deps.naming), fallback_reason: null };
          continue;
        }
        const route = elsewhere(describeNoWorker(need).split(';')[0]!);
        if ('no_workers' in route) {
          throw ApplicationFailure.create({
            message: route.no_workers,
            type: 'no_workers',
            nonRetryable: true,
            details: [step.id],
          });
        }
        routes[step.id] = route;
      }
      return routes;
    },

    /** Writes the job's proof record, stores the finished job and counts worker outcomes; returns the answer. */
    async finishJob(job: ComputeJobInput, compact: ScheduleResult): Promise<ComputeResponse> {
      const resolved = deps.blobs ? { ...compact, steps: await resolveSteps(deps.blobs, compact.steps) } : compact;
      const result = refuseUntrustedFusions(resolved, deps.fusionWriters ?? [deps.nodePk]);
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
        const fee = relayFee(s.cost, deps.relayFeeShare ?? RELAY_FEE_SHARE);
        relayFees.set(s.relay_pk, (relayFees.get(s.relay_pk) ?? 0) + toCreditUnits(fee));
      }
      if (relayFees.size > 0) {
        settlement.relay_fees = Object.fromEntries([...relayFees].map(([pk, units]) => [pk, fromCreditUnits(units)]));
      }
      const hash = jobHash(job.request_hash, result.steps);
      const lastDone = [...result.steps].reverse().find((s) => s.status === 'complete');
      const status = result.status;
      const nodeKeys = deploymentKeys([deps.nodePk, ...(deps.fusionWriters ?? [])]);
      const record = await deps.proofs.write({
        id: jobRecordId(job.job_id, job.run),
        h3_cell: job.h3_cell,
        collection_type: 'compute_job',
        payload_type: 'compute/job',
        // Version 2 binds every field of the answer that is not derived from another (docs/protocol.md §15.2):
        // the job's epoch, cell and worker, and each step's relay and error, beside what version 1 held.
        payload: {
          version: 2,
          job_id: job.job_id,
          job_hash: hash,
          request_hash: job.request_hash,
          requester_pk: job.requester_pk,
          status,
          h3_cell: job.h3_cell,
          epoch: job.epoch,
          worker_pk: lastDone?.worker_pk ?? null,
          steps: result.steps.map((s) => ({
            id: s.id,
            type: s.type,
            status: s.status,
            worker_pk: s.worker_pk,
            relay_pk: s.relay_pk ?? null,
            cost: s.cost,
            record_id: s.record_id,
            latency_ms: s.latency_ms,
            output_hash: s.status === 'complete' ? outputHash(s.output) : null,
            error: s.error ?? null,
          })),
          settlement,
          error: result.error,
          // The deployment's gateways share one store and any of them may sign the seal heads of a receipt: the
          // writer vouches for its peers (docs/protocol.md §15.4). A lone gateway's records name none.
          ...(nodeKeys.length > 1 ? { node_keys: nodeKeys } : {}),
        },
      });
      const stored = record.payload as { job_hash?: unknown };
      // An earlier attempt of this run may have written the record and died before the job was stored; its steps
      // re-ran since (a workflow task retried re-runs its local activities) and measured other latencies. The
      // record is what the receipt proves and the ledger posts, so the answer takes its values (provenAnswer).
      const proven = provenAnswer(record.payload, result.steps, settlement);
      const response: ComputeResponse = {
        job_id: job.job_id,
        status,
        worker_pk: [...proven.steps].reverse().find((s) => s.status === 'complete')?.worker_pk ?? null,
        h3_cell: job.h3_cell,
        epoch: job.epoch,
        steps: proven.steps,
        settlement: proven.settlement,
        proof: {
          job_hash: typeof stored.job_hash === 'string' ? stored.job_hash : hash,
          verify_url: `/store/proof/${encodeURIComponent(record.id)}`,
          record_id: record.id,
        },
        ...(result.error ? { error: result.error } : {}),
      };
      // Each swarm worker that ran a step counts the job once (the registry ignores a repeated job id); the counts
      // do not depend on the stored job, so they are written while it is.
      const workers = new Set(
        result.steps.flatMap((s) =>
          s.status === 'complete' && s.worker_pk && s.worker_pk !== BACKBONE_WORKER && s.worker_pk !== deps.nodePk
            ? [s.worker_pk]
            : [],
        ),
      );
      const finishing = deps.jobs.finish(jobRecordOf(job, status, response, deps.clock())).then(async (finished) => {
        // Posted from the stored job, not this attempt's answer: a duplicate finish posts the very same entries.
        if (deps.ledger) await postJobEntries(deps, deps.ledger, finished, finished.response ?? response);
        return finished;
      });
      const [finished] = await Promise.all([
        finishing,
        ...[...workers].map((pk) => deps.workers.recordOutcome(pk, 'completed', job.job_id)),
      ]);
      if (deps.ledger && deps.onJobPosted) {
        try {
          deps.onJobPosted(job.job_id);
        } catch {
          // The hook logs its own failures; settlement retries from the ledger, the job is done.
        }
      }
      try {
        deps.onJobFinished?.({ status, durationMs: Math.max(0, deps.clock() - Date.parse(job.created_at)) });
      } catch {
        // Metrics never fail a job.
      }
      const kept = finished.response ?? response;
      // The workflow's result stays small: the caller reads the whole job from the job store.
      const answer = deps.blobs ? { ...kept, steps: await compactSteps(deps.blobs, kept.steps) } : kept;
      deps.onAnswer?.(answer);
      return answer;
    },
  };
}

export type JobActivities = ReturnType<typeof createJobActivities>;

/** The fields of a step the `compute/job` record binds beside its output (docs/protocol.md §15.2). */
interface RecordedStep {
  id: string;
  latency_ms: number;
  worker_pk: string | null;
  relay_pk: string | null;
  cost: number;
  record_id: string | null;
  error: { code: string; detail: string } | null;
}

/**
 * The answer's steps and settlement as the stored `compute/job` record binds them: the same as this attempt's,
 * unless an earlier attempt of the run wrote the record first (its write wins, by id). The record's own values
 * win, so the stored answer, the ledger's entries and the receipt agree. Outputs are not taken from the record
 * (it holds only their hashes); a retried step returns its first attempt's record and output anyway.
 */
export function provenAnswer(
  payload: unknown,
  steps: StepResult[],
  settlement: Settlement,
): { steps: StepResult[]; settlement: Settlement } {
  const recorded = payload as { steps?: RecordedStep[]; settlement?: Settlement } | null;
  if (!Array.isArray(recorded?.steps)) return { steps, settlement };
  const byId = new Map(recorded.steps.map((s) => [s.id, s]));
  const proven = steps.map((step): StepResult => {
    const r = byId.get(step.id);
    if (!r) return step;
    const { relay_pk: _relay, error: _error, ...rest } = step;
    return {
      ...rest,
      latency_ms: r.latency_ms,
      worker_pk: r.worker_pk,
      cost: r.cost,
      record_id: r.record_id,
      ...(r.relay_pk ? { relay_pk: r.relay_pk } : {}),
      ...(r.error ? { error: r.error } : {}),
    };
  });
  return { steps: proven, settlement: recorded.settlement ?? settlement };
}

/**
 * Posts the ledger entries of a finished job (core/ledger-entries.ts): the platform is this gateway, the
 * entries' time the stored finish time, the run the one the stored answer's record names (a re-run posts the
 * difference to the earlier runs' entries), and each earner's hardware tier the one this run already posted
 * (a re-post must match what is stored), else the registry's. A failed post throws, failing the activity so
 * Temporal retries it: storing the job and the record again changes nothing, and the post is idempotent by id.
 */
async function postJobEntries(
  deps: JobActivityDeps,
  ledger: LedgerStore,
  finished: JobRecord,
  response: ComputeResponse,
): Promise<void> {
  const jobId = response.job_id;
  const recordId = response.proof?.record_id ?? jobRecordId(jobId);
  const run = jobRunOf(jobId, recordId) ?? 1;
  // Another gateway of the deployment may have posted this run or an earlier one (its attempt died after the post
  // and Temporal retried the activity here, or a replay re-ran the job here): the platform account is the one it
  // posted (postEntriesOnce), so the entries fit the posted ones. Read again if one appeared meanwhile.
  const post = () => postEntriesOnce(deps, ledger, finished, response, recordId, run);
  try {
    await post().catch((error: unknown) => {
      if (!(error instanceof ServiceError && error.code === 'record_conflict')) throw error;
      return post();
    });
  } catch (error) {
    // Entries that contradict stored ones, or that are not valid, will not change on a retry: stop retrying
    // and say why (an operator must look); store outages stay retryable.
    const permanent =
      error instanceof RangeError || (error instanceof ServiceError && error.code === 'record_conflict');
    if (permanent) {
      throw ApplicationFailure.nonRetryable(
        `ledger entries of job ${jobId} refused: ${(error as Error).message}`,
        'ledger_conflict',
      );
    }
    throw error;
  }
}

async function postEntriesOnce(
  deps: JobActivityDeps,
  ledger: LedgerStore,
  finished: JobRecord,
  response: ComputeResponse,
  recordId: string,
  run: number,
): Promise<void> {
  const jobId = response.job_id;
  const posted = await ledger.jobEntries(jobId);
  // The job's platform is the first run's: a later run posts the difference to earlier runs' entries per account,
  // so a run on another gateway naming itself would reverse one proof fee and post another under one entry id.
  const platformPk =
    (
      posted.find((e) => e.kind === 'proof_fee' && e.record_id === recordId) ??
      posted.find((e) => e.kind === 'proof_fee')
    )?.account_pk ?? deps.nodePk;
  const tiers = new Map<string, number | null>();
  for (const e of posted) {
    if (e.record_id === recordId && (e.kind === 'step_earning' || e.kind === 'relay_fee')) {
      tiers.set(e.account_pk, e.hardware_tier);
    }
  }
  const earners = new Set([platformPk]);
  for (const s of response.steps) {
    if (s.status !== 'complete') continue;
    if (s.worker_pk && s.worker_pk !== BACKBONE_WORKER) earners.add(s.worker_pk);
    if (s.relay_pk) earners.add(s.relay_pk);
  }
  await Promise.all(
    [...earners]
      .filter((pk) => !tiers.has(pk))
      .map(async (pk) => tiers.set(pk, (await deps.workers.get(pk))?.hardware_tier ?? null)),
  );
  const entries = jobLedgerEntries({
    response,
    requesterPk: finished.requester_pk,
    platformPk,
    recordId,
    nowMs: Date.parse(finished.updated_at),
    hardwareTierOf: (pk) => tiers.get(pk) ?? null,
    run,
    earlier: posted.filter((e) => (jobRunOf(jobId, e.record_id) ?? 1) < run),
    ...(deps.relayFeeShare === undefined ? {} : { relayFeeShare: deps.relayFeeShare }),
  });
  await ledger.post(entries);
}

/**
 * The `compute/job` record of a job's run: `compute:<job_id>`, and `compute:<job_id>:run-<n>` for the n-th run
 * (a replay re-running a job that failed for a transient reason). Records never change, so each run that
 * finishes has its own; the stored job's `verify_url` names the latest.
 */
export const jobRecordId = (jobId: string, run = 1): string =>
  run > 1 ? `compute:${jobId}:run-${run}` : `compute:${jobId}`;

/** The run a `compute/job` record id names (1 for `compute:<job_id>`); null when it is not one of `jobId`'s. */
export function jobRunOf(jobId: string, scopedOrPlainId: string): number | null {
  // The node's own record moves to its writer-scoped id (store/record-append.ts) when another key held the id.
  const recordId = scopedOrPlainId.replace(/:w-[0-9a-f]{32}$/, '');
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
    ...(job.request === undefined ? {} : { request: job.request }),
  };
}

/**
 * The job record binds each step output, so a verifier reads a fusion output's `trusted_writers` as the statement
 * of the job record's writer (docs/protocol.md §2.10): a step runner (a swarm worker) naming a key this gateway
 * does not trust, perhaps its own, would otherwise get its own records counted as inputs. Such a step is failed
 * `invalid_step_output`, uncharged, as the scheduler fails an output it cannot hash; the job fails with it.
 */
export function refuseUntrustedFusions(result: ScheduleResult, fusionWriters: readonly string[]): ScheduleResult {
  const trusted = new Set(fusionWriters);
  let refunded = 0;
  let error = result.error;
  const steps = result.steps.map((s) => {
    if (s.type !== 'sensor_fusion' || s.status !== 'complete') return s;
    const named = trustedWritersOf(s.output);
    const untrusted = named.issue ?? named.writers?.find((pk) => !trusted.has(pk));
    if (untrusted === undefined) return s;
    const detail =
      named.issue ?? `the fusion trusted telemetry written by ${untrusted}, not a node key of this deployment`;
    refunded += toCreditUnits(s.cost);
    error ??= { step_id: s.id, code: 'invalid_step_output', detail };
    return {
      ...s,
      status: 'failed' as const,
      output: {},
      cost: 0,
      record_id: null,
      error: { code: 'invalid_step_output', detail },
    };
  });
  if (refunded === 0 && error === result.error) return result;
  return {
    status: 'failed',
    steps,
    charged: fromCreditUnits(toCreditUnits(result.charged) - refunded),
    error,
  };
}
