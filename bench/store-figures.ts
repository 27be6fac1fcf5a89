// The proof-store and audit-chain figures with their floors, as named figures (name, value, unit, floor):
// `tsx bench/store-figures.ts` prints them, one per line, and `--json FILE` writes them. The seal's time and
// peak RSS are those of a sealer process of its own over the store file (bench/seal-process.ts). BENCH_SEAL_RECORDS (default
// 1,000,000) and BENCH_AUDIT_BLOCKS (default 100,000) size the two large runs.
import { writeFileSync } from 'node:fs';
import { benchReport } from './audit.js';
import { benchAppend, benchInsert, benchSeal, benchSign } from './proof-store.js';
import { benchVerify } from './gates.js';

export interface Figure {
  name: string;
  value: number;
  unit: string;
  /** The figure it is compared to in the same run, when it has one. */
  floor?: string;
}

export async function storeFigures(
  sealRecords = Number(process.env.BENCH_SEAL_RECORDS ?? 1_000_000),
  auditBlocks = Number(process.env.BENCH_AUDIT_BLOCKS ?? 100_000),
): Promise<Figure[]> {
  const out: Figure[] = [];
  const seal = await benchSeal(sealRecords);
  out.push(
    { name: 'proofs.seal.records', value: seal.records, unit: 'records' },
    { name: 'proofs.seal.seconds', value: seal.process.ms / 1000, unit: 's' },
    { name: 'proofs.seal.cpu_seconds', value: seal.process.cpuMs / 1000, unit: 's' },
    { name: 'proofs.seal.rss_peak_mib', value: seal.process.rssPeakMiB, unit: 'MiB' },
    { name: 'proofs.seal.rss_start_mib', value: seal.process.rssStartMiB, unit: 'MiB' },
    { name: 'proofs.seal.in_bench_process_seconds', value: seal.inProcess.ms / 1000, unit: 's' },
    { name: 'proofs.seal.identical', value: seal.identical ? 1 : 0, unit: 'bool' },
    { name: 'proofs.proof.generate_us', value: seal.proofMicros, unit: 'µs' },
    { name: 'proofs.proof.verify_us', value: seal.verifyMicros, unit: 'µs' },
  );
  const sign = benchSign();
  const insert = await benchInsert();
  const append = await benchAppend();
  out.push(
    { name: 'ed25519.sign_one_core_per_s', value: sign.nodePerSecond, unit: '/s' },
    { name: 'ed25519.sign_noble_one_core_per_s', value: sign.noblePerSecond, unit: '/s' },
    { name: 'proofs.insert_per_s', value: insert.perSecond, unit: 'records/s' },
    {
      name: 'proofs.append_per_s',
      value: append.perSecond,
      unit: 'records/s',
      floor: 'proofs.insert_per_s, ed25519.sign_one_core_per_s',
    },
  );
  const verify = benchVerify();
  const report = await benchReport(auditBlocks);
  out.push(
    { name: 'ed25519.verify_one_core_per_s', value: verify.perSecond, unit: '/s' },
    { name: 'audit.report.blocks', value: report.blocks, unit: 'blocks' },
    // first_ever: a chain nobody verified (every signature); after_restart: a fresh server over the chain the
    // service wrote and marked (bench/audit.ts benchReport).
    {
      name: 'audit.report.first_ever_seconds',
      value: report.unverifiedMs / 1000,
      unit: 's',
      floor: 'audit.report.blocks / ed25519.verify_one_core_per_s',
    },
    { name: 'audit.report.again_seconds', value: report.warmMs / 1000, unit: 's' },
    { name: 'audit.report.after_restart_seconds', value: report.coldMs / 1000, unit: 's' },
    { name: 'audit.report.after_new_block_seconds', value: report.newBlockMs / 1000, unit: 's' },
    { name: 'audit.report.valid', value: report.valid ? 1 : 0, unit: 'bool' },
  );
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await storeFigures();
  for (const f of figures) {
    const value = Math.abs(f.value) >= 100 ? Math.round(f.value).toLocaleString('en-US') : f.value.toFixed(3);
    console.log(`${f.name}: ${value} ${f.unit}${f.floor ? ` (floor: ${f.floor})` : ''}`);
  }
  const at = process.argv.indexOf('--json');
  if (at > 0 && process.argv[at + 1]) writeFileSync(process.argv[at + 1]!, JSON.stringify(figures, null, 2));
}
