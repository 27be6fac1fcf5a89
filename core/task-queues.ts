/**
 * Temporal task queue names (docs/protocol.md §1.4). A worker polls one queue: that of its routing cell and its
 * whole advertised tool set, e.g. `geofabric/851e8053fffffff/web-search`. The gateway sends a step to the queue
 * of an eligible worker seen polling (its tool set contains the step's), so Temporal's atomic task hand-off
 * is the claim rule: one worker per task, and only a worker whose tools contain the step's. Polling one queue
 * rather than one per tool subset (up to 32) keeps a worker's pollers, and its memory, small; workers with the
 * same tools share a queue. The gateway polls the job, gateway and backbone queues.
 *
 * Names are `<prefix>/<cell>[/<tool>+<tool>…]` with tools sorted and deduplicated, so one tool set always
 * names one queue. The prefix separates deployments (or test runs) sharing a Temporal namespace.
 */
import { cellToParent, getResolution } from 'h3-js';
import { TOOL_IDS } from './tool-registry.js';

export const DEFAULT_QUEUE_PREFIX = 'geofabric';
/** Resolution-5 cells are about 250 km²: a metropolitan area, where a pipeline's workers meet. */
export const DEFAULT_ROUTING_RESOLUTION = 5;

export interface QueueNaming {
  prefix: string;
  /** H3 resolution of the routing cell (0..15); a job cell finer than it is routed by its parent. */
  routingResolution: number;
}

export const DEFAULT_QUEUE_NAMING: QueueNaming = {
  prefix: DEFAULT_QUEUE_PREFIX,
  routingResolution: DEFAULT_ROUTING_RESOLUTION,
};

/** Where compute-job workflows run (the gateway or an orchestrator process polls it). */
export const jobQueue = (naming: QueueNaming): string => `${naming.prefix}/jobs`;
/** Gateway activities: routing, the final job record, and steps no swarm worker in the cell can take. */
export const gatewayQueue = (naming: QueueNaming): string => `${naming.prefix}/gateway`;
/** Inference on the fast-inference backbone, served by the gateway (docs/protocol.md §1.5). */
export const backboneQueue = (naming: QueueNaming): string => `${naming.prefix}/backbone`;
/** The seal activity of the gateway with key `pk`: only it can sign its epochs (docs/operations.md). */
export const sealQueue = (naming: QueueNaming, pk: string): string => `${naming.prefix}/seal/${pk}`;

/** The routing cell of a job cell: its parent at the routing resolution, or itself when coarser. */
export function routingCell(cell: string, naming: QueueNaming): string {
  return getResolution(cell) > naming.routingResolution ? cellToParent(cell, naming.routingResolution) : cell;
}

/** The queue of a step needing `tools` in `cell`. */
export function stepQueue(cell: string, tools: readonly string[], naming: QueueNaming): string {
  const base = `${naming.prefix}/${routingCell(cell, naming)}`;
  const set = [...new Set(tools)].sort();
  return set.length === 0 ? base : `${base}/${set.join('+')}`;
}

/**
 * The one queue a worker in `cell` advertising `tools` polls: that of its whole registry tool set. Unknown tool
 * names are ignored: no step can require them.
 */
export function workerQueue(cell: string, tools: readonly string[], naming: QueueNaming): string {
  return stepQueue(
    cell,
    tools.filter((t) => (TOOL_IDS as readonly string[]).includes(t)),
    naming,
  );
}
