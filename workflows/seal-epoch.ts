import { proxyActivities } from '@temporalio/workflow';
import type { SealActivities, SealRunResult } from '../activities/proof/seal-activities.js';

/**
 * One attempt may catch up many epochs after downtime, so it gets minutes, and it heartbeats so a lost worker
 * is noticed within a minute. Retries back off up to two minutes apart and stop after 50 minutes in all, before
 * the Schedule's next run (its workflows time out at 55 minutes, see seal-schedule.ts), which seals whatever is
 * still due. `invalid_seal` (the store refuses a tree built over its own leaves) is a bug: not retried.
 */
const { sealDueEpochs } = proxyActivities<SealActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  scheduleToCloseTimeout: '50 minutes',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    nonRetryableErrorTypes: ['invalid_seal'],
  },
});

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
export async function sealEpoch(): Promise<SealRunResult> {
  return sealDueEpochs();
}
