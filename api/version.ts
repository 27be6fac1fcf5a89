import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The package's package.json: one level up from `api/` in the sources, two from `dist/api/` in a compiled build
 * (the first one found whose name is this package's).
 */
function packageVersion(): string {
  for (const up of ['..', join('..', '..')]) {
    const file = resolve(import.meta.dirname, up, 'package.json');
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (pkg.name === 'geofabric' && typeof pkg.version === 'string') return pkg.version;
  }
  throw new Error(`geofabric: package.json not found above ${import.meta.dirname}`);
}

// The real package version (docs/protocol.md §9.4 notes the original reported a stale one).
export const SERVICE_VERSION = packageVersion();
