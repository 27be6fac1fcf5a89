// `npm run bench`: prints figures, asserts nothing. BENCH_SECONDS sets the duration of each timed run;
// BENCH_SEAL_RECORDS the size of the sealed epoch (default 1,000,000).
import { cpus } from 'node:os';
import { benchGateRejects, benchVerify } from './gates.js';
import { benchAppend, benchInsert, benchSeal } from './proof-store.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);

const verify = benchVerify();
console.log(`ed25519 verify (node:crypto, cached key, one core): ${fmt(verify.perSecond)} /s`);
const gates = await benchGateRejects();
console.log(
  `gateway: signed requests rejected after gate 4 (HTTP keep-alive, 32 connections, server in its own process): ` +
    `${fmt(gates.perSecond)} /s over ${fmt(gates.requests)} requests, p99 ${gates.p99Ms} ms; statuses ${JSON.stringify(gates.statusCounts)}`,
);

const append = await benchAppend();
console.log(
  `proof store (SQLite WAL): appendRecords, batches of 1,000, hash + Ed25519 sign + insert: ${fmt(append.perSecond)} records/s`,
);
const insert = await benchInsert();
console.log(`proof store (SQLite WAL): batched insert of already-signed records: ${fmt(insert.perSecond)} records/s`);
const seal = await benchSeal(Number(process.env.BENCH_SEAL_RECORDS ?? 1_000_000));
console.log(
  `proof store: seal a ${fmt(seal.records)}-record epoch: ${(seal.totalMs / 1000).toFixed(2)} s ` +
    `(read ${(seal.readMs / 1000).toFixed(2)} s, build + sign ${(seal.buildMs / 1000).toFixed(2)} s, store ${(seal.storeMs / 1000).toFixed(2)} s); ` +
    `RSS peak ${seal.rssMiB.peak} MiB (before ${seal.rssMiB.beforeSeal}, after read ${seal.rssMiB.afterRead}, after build ${seal.rssMiB.afterBuild})`,
);
console.log(
  `proof store: inclusion proof in that epoch: generate ${seal.proofMicros.toFixed(0)} µs, verify ${seal.verifyMicros.toFixed(0)} µs ` +
    `(mean of ${seal.samples})`,
);
