import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { installTestRuntime } from './temporal-runtime.js';
import { bundleWorkflows, sharedWorkflowBundle } from './workflow-bundle.js';

// Recorded against the dev server by `RECORD_FIXTURES=1 npm run test:live`; re-record only when the probe
// workflow changes on purpose (and then version the change, as a running workflow would need).
const FIXTURE = fileURLToPath(new URL('../fixtures/engine-probe-history.json', import.meta.url));
const DRIFTED = fileURLToPath(new URL('./fixtures/engine-probe-drifted.ts', import.meta.url));

describe('engineProbe workflow replay', function () {
  this.timeout(60_000); // two webpack bundles
  const history = historyFromJSON(JSON.parse(readFileSync(FIXTURE, 'utf8')));
  let bundle: WorkflowBundleWithSourceMap;

  before(async () => {
    installTestRuntime();
    bundle = await sharedWorkflowBundle();
  });

  it('replays the recorded history against the current workflow code', async () => {
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  });

  it('fails replay when the workflow code drifts from the history', async () => {
    const drifted = await bundleWorkflows(DRIFTED);
    await assert.rejects(Worker.runReplayHistory({ workflowBundle: drifted }, history), DeterminismViolationError);
  });
});
