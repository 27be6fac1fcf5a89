import { createRequire } from 'node:module';

// The real package version (docs/protocol.md §9.4 notes the original reported a stale one).
const pkg = createRequire(import.meta.url)('../package.json') as { version: string };
export const SERVICE_VERSION = pkg.version;
