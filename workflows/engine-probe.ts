import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { EngineProbeActivities, EngineProbeEcho } from '../activities/engine-probe.js';
import { H3_CELL } from './search-attributes.js';

const { echo } = proxyActivities<EngineProbeActivities>({
  startToCloseTimeout: '10 s',
  retry: { maximumAttempts: 3 },
});

export interface EngineProbeResult {
  echo: EngineProbeEcho;
  /** The H3Cell search attribute as the workflow sees it. */
  h3Cell: string | undefined;
}

/**
 * Probe of the engine wiring (worker, activity, search attributes): one activity, nothing else. Its recorded
 * history (test/fixtures/engine-probe-history.json) is replayed in the unit suite, so keep it deterministic.
 */
export async function engineProbe(message: string): Promise<EngineProbeResult> {
  const result = await echo(message);
  return { echo: result, h3Cell: workflowInfo().typedSearchAttributes.get(H3_CELL) };
}
