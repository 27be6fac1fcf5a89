import { fileURLToPath } from 'node:url';
import { DefaultLogger, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

/** The bundle entry a Geofabric worker serves; tests bundle the same file, so replay checks what runs. */
export const WORKFLOWS_ENTRY = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/**
 * Bundles the workflows with Temporal's webpack bundler (a few seconds). It resolves our `./x.js` imports
 * to `x.ts` itself (resolve.extensionAlias), so no webpack hook is needed.
 */
export function bundleWorkflows(workflowsPath = WORKFLOWS_ENTRY): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') });
}

let shared: Promise<WorkflowBundleWithSourceMap> | undefined;
/** One bundle of workflows/index.ts per test process: replay suites share it instead of re-bundling. */
export function sharedWorkflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  shared ??= bundleWorkflows();
  return shared;
}
