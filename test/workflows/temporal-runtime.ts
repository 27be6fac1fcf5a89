import { DefaultLogger, Runtime } from '@temporalio/worker';

let installed = false;

/**
 * Installs Temporal's runtime for tests, once per process (a second Runtime.install throws): SDK messages at
 * WARN, Core's at ERROR, so the nondeterminism that a replay test provokes on purpose does not read as a fault.
 * Call it before the first Worker or NativeConnection of a suite.
 */
export function installTestRuntime(): void {
  if (installed) return;
  Runtime.install({
    logger: new DefaultLogger('WARN'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, forward: {} } },
  });
  installed = true;
}
