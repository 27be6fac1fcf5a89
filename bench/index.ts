// `npm run bench`: prints figures, asserts nothing. BENCH_SECONDS sets the duration of each run.
import { cpus } from 'node:os';
import { benchGateRejects, benchVerify } from './gates.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);
const verify = benchVerify();
console.log(`ed25519 verify (node:crypto, cached key, one core): ${fmt(verify.perSecond)} /s`);
const gates = await benchGateRejects();
console.log(
  `gateway: signed requests rejected after gate 4 (HTTP keep-alive, 32 connections, server in its own process): ` +
    `${fmt(gates.perSecond)} /s over ${fmt(gates.requests)} requests, p99 ${gates.p99Ms} ms; statuses ${JSON.stringify(gates.statusCounts)}`,
);
