import { patched, proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { SealActivities, SealRunResult } from '../activities/proof/seal-activities.js';

/**
 * One attempt may catch up many epochs after downtime, so it gets minutes, and it heartbeats so a lost worker
 * is noticed within a minute. Retries back off up to two minutes apart and stop after 50 minutes in all, before
 * the Schedule's next run (its workflows time out at 55 minutes, see seal-schedule.ts), which seals whatever is
 * still due. `invalid_seal` (the store refuses a tree built over its own leaves) is a bug: not retried.
 */
const SEAL_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  scheduleToCloseTimeout: '50 minutes',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    nonRetryableErrorTypes: ['invalid_seal'],
  },
};
const { sealDueEpochs, sealerQueues } = proxyActivities<SealActivities>(SEAL_OPTIONS);

/** The patch that made one run seal every gateway's key, each on its own queue. */
export const SEAL_EVERY_GATEWAY_PATCH = 'seal-every-gateway';

/** What a run sealed: its first gateway's result, and with several gateways each one's (`runs`). */
export type SealEpochResult = SealRunResult & { runs?: SealRunResult[] };

/**
 * Seals every due epoch of the central store's key (the Temporal form of the embedded auto-sealer),
 * started every hour by the seal Schedule (activities/proof/seal-schedule.ts). One activity call per run: the
 * activity seals all due epochs, so a run after downtime catches up in that one call, and a run with nothing
 * due returns an empty list.
 *
 * No continue-as-new: each Schedule action starts a new workflow execution, so a run's history is a fixed
 * dozen events however long the Schedule runs (the Schedule's own scheduler workflow is the server's, and it
 * continues-as-new itself). A loop in here would be the only way a history could grow.
 *
 * Its recorded history (test/fixtures/seal-epoch-history.json) is replayed in the unit suite: a change to the
 * commands this workflow issues must be versioned (`patched`), as runs in flight would replay it.
 */
export async function sealEpoch(): Promise<SealEpochResult> {
  if (!patched(SEAL_EVERY_GATEWAY_PATCH)) return sealDueEpochs();
  // Each gateway signs its own epochs, so the one Schedule's run seals every gateway online on its own queue;
  // one that went away meanwhile fails alone (its epochs are sealed by the next run it is there for).
  const queues = await sealerQueues();
  if (queues.length === 0) return sealDueEpochs();
  const settled = await Promise.allSettled(
    queues.map((taskQueue) =>
      proxyActivities<SealActivities>({
        ...SEAL_OPTIONS,
        taskQueue,
        scheduleToStartTimeout: '5 minutes',
      }).sealDueEpochs(),
    ),
  );
  const runs = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (runs.length === 0) throw (settled[0] as PromiseRejectedResult).reason;
  return { ...runs[0]!, runs };
}
