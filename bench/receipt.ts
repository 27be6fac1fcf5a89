/**
 * Job receipts (docs/protocol.md §15): the size of a sealed receipt of a 4-step delegated job, and the time to
 * verify it offline in each implementation — the server's core/receipt.ts, the TypeScript client
 * (clients/typescript) and the Python client (clients/python, run by MCP_PYTHON — the live suite's Python with the
 * client installed — else `python3`; skipped when `geofabric_client` does not import there).
 *
 *   npx tsx bench/receipt.ts          (or BENCH_ONLY=receipt npm run bench)
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { verifyReceipt as clientVerify } from '../clients/typescript/src/index.js';
import { DEFAULT_JOB_CELL } from '../core/h3-cell.js';
import { generateKeyPair } from '../core/identity.js';
import { verifyReceipt } from '../core/receipt.js';
import { certFor } from '../test/helpers/jobs.js';
import { runReceiptJob } from '../test/helpers/receipt-job.js';

/** Four inference steps, each depending on the one before. */
export const fourStepJob = (nonce: string) => ({
  h3_cell: DEFAULT_JOB_CELL,
  steps: ['ask', 'pick', 'explain', 'summarise'].map((id, i, ids) => ({
    id,
    type: 'inference',
    ...(i > 0 ? { depends_on: ids[i - 1] } : {}),
    messages: [{ role: 'user', content: `Step ${i + 1} about parks in Rome` }],
    max_tokens: 64,
  })),
  budget_credits: 0.1,
  nonce,
});

export interface ReceiptBench {
  steps: number;
  records: number;
  seals: number;
  bytes: number;
  gzipBytes: number;
  /** Mean milliseconds per verification. */
  serverMs: number;
  clientMs: number;
  pythonMs: number | null;
  pythonNote?: string;
}

/** Mean milliseconds of `run`, over at least `minMs` and five runs, after one to warm up. */
export function timeMs(run: () => void, minMs = 1_000): number {
  run(); // warm caches and JIT once
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < minMs || n < 5) {
    run();
    n++;
  }
  return (performance.now() - start) / n;
}

const PY_TIMER = `
import json, sys, time
from geofabric_client import verify_receipt
receipt = json.load(open(sys.argv[1]))
pk = sys.argv[2]
assert verify_receipt(receipt, sealer_pk=pk).ok
n, start = 0, time.perf_counter()
while time.perf_counter() - start < 1.0 or n < 5:
    verify_receipt(receipt, sealer_pk=pk)
    n += 1
print((time.perf_counter() - start) * 1000 / n)
`;

export async function benchReceipt(): Promise<ReceiptBench> {
  const human = generateKeyPair();
  const requester = generateKeyPair();
  const now = Date.now();
  const job = await runReceiptJob({
    requester,
    nowMs: now,
    nonce: 'bench',
    job: fourStepJob,
    chain: [certFor(human, requester.publicKey, {}, now)],
  });
  const dir = mkdtempSync(join(tmpdir(), 'bench-receipt-'));
  try {
    await job.seal();
    const receipt = await job.receipt();
    const text = JSON.stringify(receipt);
    const sealerPk = job.gateway.node.publicKey;
    if (!verifyReceipt(receipt, { sealerPk }).ok || !clientVerify(receipt, { sealerPk }).ok) {
      throw new Error('the benchmark receipt does not verify');
    }
    const { gzipSync } = await import('node:zlib');
    const file = join(dir, 'receipt.json');
    writeFileSync(file, text);
    const result: ReceiptBench = {
      steps: 4,
      records: receipt.records.length,
      seals: (receipt.seal_heads ?? []).reduce((n, h) => n + h.head.tree_size, 0),
      bytes: Buffer.byteLength(text),
      gzipBytes: gzipSync(text).length,
      serverMs: timeMs(() => verifyReceipt(receipt, { sealerPk })),
      clientMs: timeMs(() => clientVerify(receipt, { sealerPk })),
      pythonMs: null,
    };
    const python = process.env.MCP_PYTHON ?? 'python3';
    try {
      const { stdout } = await promisify(execFile)(python, ['-c', PY_TIMER, file, sealerPk], { timeout: 120_000 });
      result.pythonMs = Number(stdout.trim());
    } catch (error) {
      result.pythonNote = `skipped: ${python} cannot run geofabric_client (${(error as Error).message.split('\n')[0]})`;
    }
    return result;
  } finally {
    await job.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function describeReceiptBench(r: ReceiptBench): string {
  const py = r.pythonMs === null ? (r.pythonNote ?? 'skipped') : `${r.pythonMs.toFixed(2)} ms`;
  return (
    `job receipt (${r.steps}-step delegated job, ${r.records} records, ${r.seals} seal(s) in its sealer's log): ` +
    `${r.bytes.toLocaleString('en-US')} bytes JSON (${r.gzipBytes.toLocaleString('en-US')} gzipped); offline ` +
    `verification: server core ${r.serverMs.toFixed(2)} ms, TypeScript client ${r.clientMs.toFixed(2)} ms, ` +
    `Python client ${py}`
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(describeReceiptBench(await benchReceipt()));
}
