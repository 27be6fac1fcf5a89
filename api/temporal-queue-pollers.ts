import type { Client } from '@temporalio/client';
import type { QueuePollers } from '../activities/compute/job-activities.js';
import { activeGateways, activePollers } from '../core/worker-identity.js';

// temporal.api.enums.v1: TaskQueueKind NORMAL = 1, TaskQueueType ACTIVITY = 2 (steps are activities).
const KIND_NORMAL = 1;
const TYPE_ACTIVITY = 2;

interface ProtoTimestamp {
  seconds?: { toString(): string } | number | null;
  nanos?: number | null;
}

const timestampMs = (ts: ProtoTimestamp | null | undefined): number | null =>
  ts ? Number(String(ts.seconds ?? 0)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : null;

/**
 * How long one DescribeTaskQueue answer serves routing: a poller counts while it polled within ACTIVE_POLLER_MS
 * (two minutes), so a second-old answer tells the same, and a job no longer pays a Temporal round trip before its
 * run starts (docs/architecture.md §4). A worker that started polling meanwhile is routed to a second later.
 */
export const POLLERS_CACHE_MS = 1_000;

type Poller = { identity: string; lastAccessMs: number | null };

/**
 * Temporal's DescribeTaskQueue: the activity pollers of the queue, by worker identity and last poll. Answers are
 * kept `cacheMs` per queue (concurrent look-ups share one call; a failed one is not kept), and filtered at each
 * call against the clock.
 */
export function temporalQueuePollers(
  client: Client,
  namespace: string,
  clock: () => number,
  which: typeof activePollers = activePollers,
  cacheMs: number = POLLERS_CACHE_MS,
): QueuePollers {
  const cache = new Map<string, { atMs: number; pollers: Promise<Poller[]> }>();
  const describe = async (queue: string): Promise<Poller[]> => {
    const described = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue, kind: KIND_NORMAL },
      taskQueueType: TYPE_ACTIVITY,
    });
    return (described.pollers ?? []).map((p) => ({
      identity: p.identity ?? '',
      lastAccessMs: timestampMs(p.lastAccessTime as ProtoTimestamp | null | undefined),
    }));
  };
  return async (queue) => {
    const now = clock();
    let entry = cache.get(queue);
    if (!entry || now - entry.atMs >= cacheMs) {
      // Expired answers go as new ones come: the map holds at most the queues routed to within cacheMs.
      for (const [name, old] of cache) if (now - old.atMs >= cacheMs) cache.delete(name);
      const fresh = { atMs: now, pollers: describe(queue) };
      cache.set(queue, fresh);
      fresh.pollers.catch(() => cache.get(queue) === fresh && cache.delete(queue));
      entry = fresh;
    }
    return which(await entry.pollers, clock());
  };
}

/** The node keys of the gateways polling `queue` (their Workers' identity is core/worker-identity.ts gatewayIdentity). */
export const temporalGatewayPollers = (client: Client, namespace: string, clock: () => number): QueuePollers =>
  temporalQueuePollers(client, namespace, clock, activeGateways);
