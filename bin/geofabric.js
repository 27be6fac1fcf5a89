#!/usr/bin/env node
// Installed entry point: runs the TypeScript CLI through tsx's loader (tsx is a runtime dependency).
import { register } from 'tsx/esm/api';

register();
await import('./geofabric.ts');
