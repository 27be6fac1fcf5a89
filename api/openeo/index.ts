/**
 * The openEO API on the gateway (docs/protocol.md §16): discovery, accounts, synchronous processing and XYZ
 * services under OPENEO_BASE, the well-known document at the root, and FeatureUnsupported for the endpoints not
 * built.
 */
import type { AppDeps } from '../app-deps.js';
import type { RouteSpec } from '../route-spec.js';
import { accountRoutes } from './account.js';
import { discoveryRoutes, unbuiltRoutes } from './discovery.js';
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
  // An endpoint built here is no longer an unbuilt one; the tiles are no openEO endpoint (not in `endpoints`).
  const isBuilt = (spec: RouteSpec<unknown>) => built.some((b) => b.method === spec.method && b.path === spec.path);
  return [...built, ...services.tiles, ...unbuiltRoutes().filter((spec) => !isBuilt(spec))];
}
