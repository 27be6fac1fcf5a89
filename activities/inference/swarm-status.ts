/**
 * The public swarm views (docs/protocol.md §4.1; shapes are ours): `GET /svc/status` (workers online by tier and cell,
 * models, jobs in the last hour, backbone reachability, current epoch; the route adds the version) and `GET /svc/models` (the
 * marketplace: per model, workers online, their cells, warm or cold, price).
 *
 * Warm state is known only for this node's worker (see local-worker.ts); a model served only by remote
 * workers is reported `cold` (unknown is not warm). Backbone reachability is a `GET /models` probe made at
 * most once a minute, refreshed by every real backbone call in between.
 */
import { BACKBONE_MODEL } from '../../core/models.js';
import type { ModelRegistry } from '../../core/model-registry.js';
import { eligibleWorkers, isOnline } from '../../core/worker-selection.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import type { InferenceStats } from './inference-stats.js';
import type { LocalWorker } from './local-worker.js';
import type { RuntimeClient } from './runtime-client.js';

export const PROBE_EVERY_MS = 60_000;
const PROBE_TIMEOUT_MS = 2_000;

export interface StatusDeps {
  registry: ModelRegistry;
  workers: WorkerRegistry;
  local: LocalWorker | null;
  localCell: string;
  backbone: RuntimeClient | null;
  stats: InferenceStats;
  clock: () => number;
  epochNow: () => number;
}

const countBy = <T>(items: readonly T[], key: (item: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
};

export function createSwarmStatus(deps: StatusDeps) {
  let reachable: boolean | null = null;
  let checkedAt: number | null = null;
  let probing: Promise<void> | undefined;

  /** A real backbone call's outcome counts as a fresh probe. */
  function noteBackbone(ok: boolean): void {
    reachable = ok;
    checkedAt = deps.clock();
  }

  async function backboneView() {
    const backbone = deps.backbone;
    if (backbone && (checkedAt === null || deps.clock() - checkedAt >= PROBE_EVERY_MS)) {
      probing ??= backbone
        .probe(PROBE_TIMEOUT_MS)
        .then(noteBackbone)
        .finally(() => (probing = undefined));
      await probing;
    }
    return {
      configured: backbone !== null,
      model: BACKBONE_MODEL,
      reachable: backbone ? reachable : false,
      checked_at: checkedAt === null ? null : new Date(checkedAt).toISOString(),
    };
  }

  async function status() {
    const now = deps.clock();
    const all = await deps.workers.list();
    const online = all.filter((w) => isOnline(w, now));
    const compute = online.filter((w) => !w.relay);
    return {
      epoch: deps.epochNow(),
      now: new Date(now).toISOString(),
      workers: {
        registered: all.length,
        online: compute.length,
        relays_online: online.length - compute.length,
        by_hardware_tier: { '1': 0, '2': 0, '3': 0, ...countBy(compute, (w) => String(w.hardware_tier)) },
        by_trust_tier: countBy(compute, (w) => w.trust_tier),
        by_cell: countBy(compute, (w) => w.h3_cell),
      },
      local_worker: deps.local
        ? {
            pk: deps.local.pk,
            h3_cell: deps.localCell,
            online: compute.some((w) => w.pk === deps.local?.pk),
            warm_models: deps.local.warmModels(),
          }
        : null,
      models: deps.registry.models.map((m) => m.id),
      default_model: deps.registry.defaultModel,
      jobs_last_hour: deps.stats.lastHour(now),
      backbone: await backboneView(),
    };
  }

  async function marketplace() {
    const now = deps.clock();
    const all = await deps.workers.list();
    const backbone = await backboneView();
    const models = deps.registry.models.map((model) => {
      const serving =
        model.provider === 'worker'
          ? eligibleWorkers(all, { model: model.id, minHardwareTier: model.min_hardware_tier ?? 1 }, now)
          : [];
      const local = deps.local;
      const warm = local !== null && local.isWarm(model.id) && serving.some((w) => w.pk === local.pk);
      const state =
        model.provider === 'backbone'
          ? backbone.configured
            ? 'backbone'
            : 'offline'
          : serving.length > 0
            ? warm
              ? 'warm'
              : 'cold'
            : backbone.configured
              ? 'backbone'
              : 'offline';
      return {
        ...model,
        default: model.id === deps.registry.defaultModel,
        workers_online: serving.length,
        cells: [...new Set(serving.map((w) => w.h3_cell))].sort(),
        warm,
        // warm / cold: swarm workers serve it; backbone: the backbone answers for it; offline: nobody can.
        state,
      };
    });
    return { models, backbone };
  }

  return { status, marketplace, noteBackbone };
}
export type SwarmStatus = ReturnType<typeof createSwarmStatus>;
