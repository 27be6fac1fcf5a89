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

/** Temporal's DescribeTaskQueue: the activity pollers of the queue, by worker identity and last poll. */
export function temporalQueuePollers(
  client: Client,
  namespace: string,
  clock: () => number,
  which: typeof activePollers = activePollers,
): QueuePollers {
  return async (queue) => {
    const described = await client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue, kind: KIND_NORMAL },
      taskQueueType: TYPE_ACTIVITY,
    });
    const pollers = (described.pollers ?? []).map((p) => ({
      identity: p.identity ?? '',
      lastAccessMs: timestampMs(p.lastAccessTime as ProtoTimestamp | null | undefined),
    }));
    return which(pollers, clock());
  };
}

/** The node keys of the gateways polling `queue` (their Workers' identity is core/worker-identity.ts gatewayIdentity). */
export const temporalGatewayPollers = (client: Client, namespace: string, clock: () => number): QueuePollers =>
  temporalQueuePollers(client, namespace, clock, activeGateways);
