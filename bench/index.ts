// `npm run bench`: prints figures, asserts nothing. BENCH_SECONDS sets the duration of each timed run;
// BENCH_SEAL_RECORDS the size of the sealed epoch (default 1,000,000); BENCH_ONLY a comma-separated list of
// sections to run (gates, proofs, tiles, ndvi, chat, jobs, audit, receipt); BENCH_AUDIT_BLOCKS the chain length of the audit
// report figure (default 100,000).
import { cpus } from 'node:os';
import { benchAuditOverhead, benchReport, benchVerifyChain } from './audit.js';
import { benchChat, describeChatBench } from './chat.js';
import { benchGateRejects, benchRateLimiter, benchVerify } from './gates.js';
import { benchAppend, benchInsert, benchSeal } from './proof-store.js';
import { benchEmbeddedJobs, benchScheduler } from './jobs.js';
import { benchNdvi } from './ndvi.js';
import { benchTileHits } from './tiles.js';
import { benchReceipt, describeReceiptBench } from './receipt.js';

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const only = process.env.BENCH_ONLY?.split(',').map((s) => s.trim());
const wanted = (section: string) => !only || only.includes(section);

console.log(`machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, node ${process.version}`);

if (wanted('gates')) {
  const verify = benchVerify();
  console.log(`ed25519 verify (node:crypto, cached key, one core): ${fmt(verify.perSecond)} /s`);
  const limiter = benchRateLimiter();
  console.log(
    `rate limit check (IPv6 /64 key + GCRA bucket, 100,000 clients): ${limiter.nsPerCheck.toFixed(0)} ns; ` +
      `keys held after 300,000 new addresses at once: ${fmt(limiter.keysAfterFlood)} (bound 100,000)`,
  );
  const gates = await benchGateRejects();
  console.log(
    `gateway: signed requests rejected after gate 4 (HTTP keep-alive, 32 connections, server in its own process): ` +
      `${fmt(gates.perSecond)} /s over ${fmt(gates.requests)} requests, p99 ${gates.p99Ms} ms; statuses ${JSON.stringify(gates.statusCounts)}`,
  );
}

if (wanted('proofs')) {
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
}

if (wanted('tiles')) {
  const tiles = await benchTileHits();
  console.log(
    `tiles: cache hits with proof records ${fmt(tiles.tilePerSecond)} /s (p99 ${tiles.tileP99Ms} ms) vs bare Koa route ` +
      `${fmt(tiles.barePerSecond)} /s (p99 ${tiles.bareP99Ms} ms): ratio ${tiles.ratio.toFixed(2)} (goal ≥ 0.8); ` +
      `statuses ${JSON.stringify(tiles.statuses)}`,
  );
}

if (wanted('ndvi')) {
  const ndvi = await benchNdvi();
  console.log(
    `imagery: pixel NDVI of one cell (red + nir + SCL COG range reads over loopback, clip, mask): ` +
      `${ndvi.ms.toFixed(1)} ms for a ${ndvi.megapixels.toFixed(3)} MP window`,
  );
}

if (wanted('chat')) console.log(describeChatBench(await benchChat()));

if (wanted('jobs')) {
  const scheduler = await benchScheduler();
  console.log(
    `jobs: scheduler overhead per 4-step, 3-level job with instant activities: p50 ${(scheduler.p50Ms * 1000).toFixed(1)} µs, ` +
      `p99 ${(scheduler.p99Ms * 1000).toFixed(1)} µs (goal p50 < 2 ms)`,
  );
  const embedded = await benchEmbeddedJobs();
  console.log(
    `jobs: embedded 3-step jobs over HTTP (gates, plan, job store, scheduler, signed compute/job record; instant activities; ` +
      `16 concurrent): ${fmt(embedded.perSecond)} jobs/s, p50 ${embedded.p50Ms.toFixed(2)} ms, p99 ${embedded.p99Ms.toFixed(2)} ms; ` +
      `statuses ${JSON.stringify(embedded.statuses)}`,
  );
}

if (wanted('audit')) {
  const overhead = benchAuditOverhead();
  console.log(
    `audit: overhead per MCP tool call (pre-flight + call digest + next block + Ed25519 sign, no tool work, no store): ` +
      `p50 ${overhead.p50Micros.toFixed(1)} µs, p99 ${overhead.p99Micros.toFixed(1)} µs (pre-flight alone p50 ` +
      `${overhead.preflightP50Micros.toFixed(1)} µs; goal p50 < 500 µs)`,
  );
  const chain = benchVerifyChain(Number(process.env.BENCH_AUDIT_BLOCKS ?? 100_000));
  console.log(
    `audit: ${fmt(chain.blocks)}-block chain: build + sign ${(chain.buildMs / 1000).toFixed(2)} s; verify (the five checks) ` +
      `${(chain.verifyMs / 1000).toFixed(2)} s, again with the signature cache ${(chain.cachedVerifyMs / 1000).toFixed(2)} s; ` +
      `valid ${chain.valid}`,
  );
  const report = await benchReport(chain.blocks);
  console.log(
    `audit: compliance report of that chain, GET /compliance/:agent_pk over a SQLite store: first after start ` +
      `${(report.coldMs / 1000).toFixed(2)} s, again ${(report.warmMs / 1000).toFixed(2)} s; valid ${report.valid}, ` +
      `${fmt(report.operations)} operations`,
  );
}

if (wanted('receipt')) console.log(describeReceiptBench(await benchReceipt()));
