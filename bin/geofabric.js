#!/usr/bin/env node
// The package's entry point (`npx geofabric`). In a checkout, where bin/geofabric.ts is beside this file, it runs
// the TypeScript through tsx's loader, so what runs is what you edited (no build step). In a compiled install
// (the Docker images: `npm run build` output without the sources) it runs dist/bin/geofabric.js with plain
// Node, and tsx is never loaded. docs/operations.md "Build".
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

if (existsSync(fileURLToPath(new URL('./geofabric.ts', import.meta.url)))) {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./geofabric.ts');
} else {
  await import('../dist/bin/geofabric.js');
}
