/**
 * Which upstream answers an inference (docs/protocol.md §1.4, §1.5, §7): an eligible swarm worker when one is online, else
 * the backbone, else 503 `no_workers`.
 *
 * What this process can reach: its own worker (this node, when WORKER_RUNTIME_URL is set). Remote workers
 * are in the registry and are asked for by `eligibleWorkers`, but only compute steps on Temporal reach them
 * (through their cell's task queues); this dispatcher serves chat completions, embedded jobs and the gateway's
 * backbone queue. So the first eligible worker that is this node serves; when only remote workers are
 * eligible the backbone answers and the answer says why (`fallback_reason`).
 *
 * The backbone is not a swarm worker: it has no cell, no trust tier and runs no worker tools. A request that
 * constrains workers (x-svc-jurisdiction, x-svc-min-tier, required tools) is never sent to it; without an
 * eligible worker that request is 503 `no_workers`, and the detail says to retry or drop the constraint.
 */
import { ServiceError } from '../../core/errors.js';
import type { ModelInfo } from '../../core/model-registry.js';
import type { WorkerTier } from '../../core/tiers.js';
import { describeNoWorker, eligibleWorkers, type WorkerNeed } from '../../core/worker-selection.js';
import type { WorkerRecord, WorkerRegistry } from '../../store/worker-registry.js';
import type { RuntimeClient } from './runtime-client.js';

export interface DispatchNeed {
  model: ModelInfo;
  /** Registry tools the answer needs (server-side tool calling). */
  tools: readonly string[];
  toolMinTiers: Readonly<Record<string, WorkerTier>>;
  jurisdiction: string | null;
  minTier: WorkerTier | null;
  /** Job cell: nearer workers first. */
  cell: string;
}

export type Target =
  | { provider: 'worker'; worker: WorkerRecord; client: RuntimeClient }
  | { provider: 'backbone'; client: RuntimeClient; fallbackReason: string | null };

/** The worker this process reaches directly (its own runtime). */
export interface ReachableWorker {
  pk: string;
  client: RuntimeClient;
}

export interface DispatcherDeps {
  workers: WorkerRegistry;
  clock: () => number;
  local: ReachableWorker | null;
  backbone: RuntimeClient | null;
}

/**
 * How old a read of this node's own worker record dispatch may use (WorkerRegistry.recent): a change another
 * process makes to it (its leave, a demotion counted by another gateway process) is seen within this; this
 * process's own writes at once. A second against the 30 s a silent worker stays online (ONLINE_WINDOW_MS).
 */
export const OWN_RECORD_MAX_AGE_MS = 1000;

export function createDispatcher(deps: DispatcherDeps) {
  return async function dispatch(need: DispatchNeed): Promise<Target> {
    const { backbone } = deps;
    if (need.model.provider === 'backbone') {
      if (backbone) return { provider: 'backbone', client: backbone, fallbackReason: null };
      throw new ServiceError(
        'no_workers',
        `model ${need.model.id} runs on the backbone, and no backbone is configured; retry later or ask for a swarm model`,
        { 'retry-after': '30' },
      );
    }
    const workerNeed: WorkerNeed = {
      model: need.model.id,
      tools: need.tools,
      toolMinTiers: need.toolMinTiers,
      jurisdiction: need.jurisdiction,
      minTier: need.minTier,
      minHardwareTier: need.model.min_hardware_tier ?? 1,
      cell: need.cell,
    };
    // This node serves whenever it is eligible, wherever it ranks: its own record decides, one row read instead
    // of the whole registry (and no cell distances: a single candidate has nothing to be ordered against).
    const local = deps.local;
    const own = local
      ? (deps.workers.recent?.(local.pk, OWN_RECORD_MAX_AGE_MS) ?? (await deps.workers.get(local.pk)))
      : null;
    if (local && own && eligibleWorkers([own], { ...workerNeed, cell: undefined }, deps.clock()).length > 0) {
      return { provider: 'worker', worker: own, client: local.client };
    }
    const eligible = eligibleWorkers(await deps.workers.list(), workerNeed, deps.clock());

    const remoteOnly =
      eligible.length > 0
        ? `${eligible.length} eligible worker(s) are registered elsewhere, and this gateway cannot dispatch to remote ` +
          'workers yet (Temporal task queues)'
        : null;
    const constraints = [
      ...(need.tools.length > 0 ? [`tools ${need.tools.join(', ')} run only on swarm workers`] : []),
      ...(need.jurisdiction ? ['x-svc-jurisdiction constrains workers'] : []),
      ...(need.minTier ? ['x-svc-min-tier constrains workers'] : []),
    ];
    const noWorker = describeNoWorker(workerNeed);
    if (constraints.length > 0 || !backbone) {
      const why = [
        remoteOnly ?? noWorker,
        ...(constraints.length > 0 ? [`the backbone cannot serve this request (${constraints.join('; ')})`] : []),
        ...(!backbone && constraints.length === 0 ? ['no backbone is configured'] : []),
      ];
      const advice = need.jurisdiction ? 'retry later or remove the jurisdiction constraint' : 'retry later';
      const detail = remoteOnly ? `${why.join('; ')}; ${advice}` : why.join('; ');
      throw new ServiceError('no_workers', detail, { 'retry-after': '30' });
    }
    // describeNoWorker ends with advice for a client that gets nothing; this client gets an answer.
    return { provider: 'backbone', client: backbone, fallbackReason: remoteOnly ?? noWorker.split(';')[0]! };
  };
}
export type Dispatch = ReturnType<typeof createDispatcher>;
