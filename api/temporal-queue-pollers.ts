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

/**
 * How long an answer past POLLERS_CACHE_MS that names pollers is still served while a fresh one is asked for
 * behind it: a job routed then does not wait for the look-up (docs/benchmarks.md). Older answers, and expired ones
 * that name no poller, are not served: the look-up is awaited.
 */
export const POLLERS_STALE_MS = 10_000;

type Poller = { identity: string; lastAccessMs: number | null };

/**
 * Temporal's DescribeTaskQueue: the activity pollers of the queue, by worker identity and last poll. Answers are
 * kept `cacheMs` per queue, then (when they name pollers) served up to `staleMs` while one look-up refreshes them
 * (concurrent look-ups share one call; a failed one is not kept, and the answer before it still serves until
 * `staleMs`), and filtered at each call against the clock.
 */
export function temporalQueuePollers(
  client: Client,
  namespace: string,
  clock: () => number,
  which: typeof activePollers = activePollers,
  cacheMs: number = POLLERS_CACHE_MS,
  staleMs: number = Math.max(cacheMs, POLLERS_STALE_MS),
): QueuePollers {
  const kept = new Map<string, { atMs: number; pollers: Poller[] }>();
  const asking = new Map<string, Promise<Poller[]>>();
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
  const ask = (queue: string, atMs: number): Promise<Poller[]> => {
    let pending = asking.get(queue);
    if (!pending) {
      pending = describe(queue)
        .then((pollers) => {
          kept.set(queue, { atMs, pollers });
          return pollers;
        })
        .finally(() => asking.delete(queue));
      asking.set(queue, pending);
    }
    return pending;
  };
  return async (queue) => {
    const now = clock();
    // Answers too old to serve go as new ones come: the map holds at most the queues routed to within staleMs.
    for (const [name, old] of kept) if (now - old.atMs >= staleMs) kept.delete(name);
    let answer = kept.get(queue);
    if (answer && now - answer.atMs >= cacheMs) {
      // An expired answer that names no poller is not served: a worker that started polling since is routed to now.
      if (answer.pollers.length === 0) answer = undefined;
      else ask(queue, now).catch(() => undefined); // refreshed behind
    }
    return which(answer ? answer.pollers : await ask(queue, now), clock());
  };
}

/** The node keys of the gateways polling `queue` (their Workers' identity is core/worker-identity.ts gatewayIdentity). */
export const temporalGatewayPollers = (client: Client, namespace: string, clock: () => number): QueuePollers =>
  temporalQueuePollers(client, namespace, clock, activeGateways);
