/**
 * The openEO API on the gateway (docs/protocol.md §16): discovery, accounts, synchronous processing, batch jobs
 * (with a job store and runner) and XYZ services under OPENEO_BASE, the well-known document at the root, and
 * FeatureUnsupported for the endpoints not built.
 */
import { OpenEoError } from '../../core/openeo/errors.js';
import type { AppDeps } from '../app-deps.js';
import type { RouteSpec } from '../route-spec.js';
import { accountRoutes } from './account.js';
import { discoveryRoutes, unbuiltRoutes } from './discovery.js';
import { jobRoutes } from './jobs.js';
import { resultRoutes } from './result.js';
import { serviceRoutes } from './services.js';

export { OPENEO_BASE, WELL_KNOWN } from './discovery.js';
export { openEoHttp } from './cors.js';

/** The openEO routes. Dependencies are read when a request comes, not here (the reference builds routes alone). */
export function openEoRoutes(deps: AppDeps): RouteSpec<unknown>[] {
  const built: RouteSpec<unknown>[] = [];
  const services = serviceRoutes({ imagery: () => deps.imagery, clock: () => deps.clock() });
  built.push(
    ...discoveryRoutes({
      catalogCollection: () => deps.imagery.catalogCollection(),
      endpoints: () => built,
      clock: () => deps.clock(),
      logger: deps.logger,
    }),
    ...accountRoutes(),
    ...resultRoutes({ imagery: () => deps.imagery, clock: () => deps.clock() }),
    ...services.api,
  );
  // Without a job store and runner (a gateway built for a test of other routes), batch jobs are not offered.
  const batch = () => {
    if (deps.openEo === undefined) throw new OpenEoError('FeatureUnsupported', 'Batch jobs are not offered here.');
    return deps.openEo;
  };
  built.push(
    ...jobRoutes({
      jobs: () => batch().jobs,
      runner: () => batch().runner,
      imagery: () => deps.imagery,
      receipts: () => ({ proofs: deps.proofs, ledger: deps.ledger, networkPassphrase: deps.networkPassphrase }),
      clock: () => deps.clock(),
    }),
  );
  // The tiles are no openEO endpoint (not in `endpoints`).
  return [...built, ...services.tiles, ...unbuiltRoutes()];
}
