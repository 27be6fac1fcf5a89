import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { installTestRuntime } from './temporal-runtime.js';
import { sharedWorkflowBundle } from './workflow-bundle.js';

// A run the seal Schedule started on the dev server, recorded by `RECORD_FIXTURES=1 npm run test:live`
// (test/live/temporal-seal-schedule.test.ts); re-record only when sealEpoch changes on purpose, and version the
// change (`patched`), as runs in flight would replay it. That replay catches drift is shown for engineProbe.
const FIXTURE = fileURLToPath(new URL('../fixtures/seal-epoch-history.json', import.meta.url));

describe('sealEpoch workflow replay', function () {
  this.timeout(60_000); // a webpack bundle
  const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  let bundle: WorkflowBundleWithSourceMap;

  before(async () => {
    installTestRuntime();
    bundle = await sharedWorkflowBundle();
  });

  it('is the history of a scheduled sealEpoch run: one sealDueEpochs activity', () => {
    const events = history.events ?? [];
    const started = events[0]?.workflowExecutionStartedEventAttributes;
    assert.equal(started?.workflowType?.name, 'sealEpoch');
    assert.ok(started?.searchAttributes?.indexedFields?.TemporalScheduledById, 'started by a Schedule');
    const activities = events.flatMap((event) => event.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
    assert.deepEqual(activities, ['sealDueEpochs']);
    assert.ok(events.at(-1)?.workflowExecutionCompletedEventAttributes, 'the run completed');
  });

  it('replays the recorded history against the current workflow code', async () => {
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });
});
