/**
 * Receipts over the years (docs/protocol.md §15.4): one sealer seals every hour, and a 4-step delegated job run when
 * its log holds 1, 30, 365 and 1,095 days of hourly seals (24 … 26,280) gets a sealed receipt from the gateway.
 * Printed per point: the receipt's JSON bytes (gzipped too), the proof hashes it carries, the time to build it
 * (`GET /v1/compute/:id/receipt`) and to verify it in the server's core (mean of repeated runs); and, for contrast,
 * the version-1 receipt of the same job (every seal since the sealer's first) built from the same store.
 *
 *   npx tsx bench/receipt-year.ts                      (BENCH_RECEIPT_DAYS=1,30,365 for other points)
 *   BENCH_ONLY=receipt-year npm run bench
 *
 * The earlier seals are made straight in the store (empty epochs, chained, signed by the node key) before each job:
 * the history a year of hourly sealing leaves, without waiting a year.
 */
import { gzipSync } from 'node:zlib';
import { performance } from 'node:perf_hooks';
import { buildJobReceipt } from '../activities/proof/job-receipt.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../core/epoch.js';
import { generateKeyPair } from '../core/identity.js';
import { GENESIS_PREV_HASH } from '../core/proof-types.js';
import { verifyReceipt, type JobReceipt } from '../core/receipt.js';
import { createSealOverTree } from '../core/seal.js';
import { startFakeRuntime } from '../test/helpers/fake-openai-runtime.js';
import { startGateway } from '../test/helpers/gateway.js';
import { certFor, certHeader, signJob } from '../test/helpers/jobs.js';
import { sealThrough } from '../test/helpers/proofs.js';
import { RECEIPT_JOB_MODEL } from '../test/helpers/receipt-job.js';
import { fourStepJob, timeMs } from './receipt.js';

export interface ReceiptYearPoint {
  day: number;
  /** Seals in the sealer's log when the receipt is fetched (the job's epoch the last). */
  seals: number;
  bytes: number;
  gzipBytes: number;
  /** Proof hashes per record (the seal's inclusion in the head). */
  proofHashes: number;
  buildMs: number;
  verifyMs: number;
  v1Bytes: number;
  v1VerifyMs: number;
}

/** The job's epoch, every point alike: its sealer's log ends there, and starts 24·d − 1 epochs before it. */
const JOB_EPOCH = 30_000;

/** One point: a fresh node whose log holds `day` days of hourly seals, the job's epoch the last. */
async function pointOf(day: number): Promise<ReceiptYearPoint> {
  const node = generateKeyPair();
  const human = generateKeyPair();
  const requester = generateKeyPair();
  const runtime = await startFakeRuntime(RECEIPT_JOB_MODEL, () => ({
    content: 'Villa Borghese, Villa Ada, Villa Pamphili.',
    usage: { prompt_tokens: 12, completion_tokens: 9 },
  }));
  const now = DEFAULT_EPOCH_GENESIS_MS + JOB_EPOCH * EPOCH_MS + 30 * 60_000;
  const gw = await startGateway({
    clock: () => now,
    node,
    swarm: { workerRuntimeUrl: runtime.url, workerModels: [RECEIPT_JOB_MODEL] },
  });
  try {
    // The hours before the job: empty epochs, each sealed and chained as the seal schedule would.
    let prev = GENESIS_PREV_HASH;
    for (let epoch = JOB_EPOCH - day * 24 + 1; epoch < JOB_EPOCH; epoch++) {
      const sealedAt = new Date(DEFAULT_EPOCH_GENESIS_MS + (epoch + 1) * EPOCH_MS + 61_000).toISOString();
      const { seal } = await gw.proofs.sealEpoch(node.publicKey, epoch, (tree) =>
        createSealOverTree(node.secretKey, { epoch, tree, prevSealHash: prev, sealedAt }),
      );
      prev = seal.seal_hash;
    }
    const signed = signJob(requester, fourStepJob(`year-${day}`));
    const chain = [certFor(human, requester.publicKey, {}, now)];
    const headers = { ...signed.headers, 'x-svc-delegation-cert': certHeader(chain) };
    const res = await gw.post('/v1/compute', signed.body, headers);
    if (res.status !== 200) throw new Error(`job of day ${day}: ${res.text}`);
    const jobId = (res.body as { job_id: string }).job_id;
    await gw.writer.flush();
    await sealThrough(gw.proofs, node, JOB_EPOCH);

    const began = performance.now();
    const got = await gw.get(`/v1/compute/${jobId}/receipt`);
    const buildMs = performance.now() - began;
    const receipt = got.body as JobReceipt;
    const verdict = verifyReceipt(receipt, { sealerPk: node.publicKey });
    if (receipt.status !== 'complete' || !verdict.ok) {
      const failed = verdict.checks.find((c) => !c.ok);
      throw new Error(`the receipt of day ${day} does not verify: ${JSON.stringify(failed ?? receipt.pending)}`);
    }
    const text = JSON.stringify(receipt);
    const v1 = await buildJobReceipt({ jobs: gw.jobs, proofs: gw.proofs, ledger: gw.ledger }, jobId);
    if (!v1.found) throw new Error('no version-1 receipt');
    const v1Began = performance.now();
    if (!verifyReceipt(v1.receipt, { sealerPk: node.publicKey }).ok) throw new Error('the version-1 receipt fails');
    const v1VerifyMs = performance.now() - v1Began;
    return {
      day,
      seals: receipt.seal_heads![0]!.head.tree_size,
      bytes: Buffer.byteLength(text),
      gzipBytes: gzipSync(text).length,
      proofHashes: receipt.records[0]!.seal_proof!.hashes.length,
      buildMs,
      verifyMs: timeMs(() => verifyReceipt(receipt, { sealerPk: node.publicKey }), 500),
      v1Bytes: Buffer.byteLength(JSON.stringify(v1.receipt)),
      v1VerifyMs,
    };
  } finally {
    await gw.close();
    await runtime.close();
  }
}

export async function benchReceiptYear(days: readonly number[] = [1, 30, 365, 1_095]): Promise<ReceiptYearPoint[]> {
  const points: ReceiptYearPoint[] = [];
  for (const day of days) points.push(await pointOf(day));
  return points;
}

const kb = (bytes: number) => `${(bytes / 1000).toFixed(1)} KB`;

export function receiptYearTable(points: readonly ReceiptYearPoint[]): string {
  const rows = points.map(
    (p) =>
      `| ${p.day.toLocaleString('en-US')} | ${p.seals.toLocaleString('en-US')} | ${kb(p.bytes)} (${kb(p.gzipBytes)} gzipped) | ` +
      `${p.proofHashes} | ${p.verifyMs.toFixed(2)} ms | ${p.buildMs.toFixed(0)} ms | ${kb(p.v1Bytes)} | ${p.v1VerifyMs.toFixed(0)} ms |`,
  );
  return [
    '| Day | Seals in the log | Receipt (v2) | Proof hashes per record | Core verify (v2) | Build (HTTP) | Receipt (v1) | Core verify (v1) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const days = process.env.BENCH_RECEIPT_DAYS?.split(',').map(Number);
  console.log(receiptYearTable(await benchReceiptYear(days)));
}
