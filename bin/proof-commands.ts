import { parseArgs } from 'node:util';
import { lastDueEpoch } from '../activities/proof/epoch-sealer.js';
import { auditStore } from '../activities/proof/store-audit.js';
import { verifyProofBundle } from '../core/proof-bundle.js';
import { loadConfig } from './config.js';
import { openStores } from './stores.js';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/**
 * `geofabric proof verify <record_id> --url <base>`: fetches the proof bundle and re-verifies it with
 * core/ only; the server's own `verified` flag is shown but not trusted.
 */
export async function proofVerifyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { url: { type: 'string' } },
  });
  const recordId = positionals[0];
  if (!values.url || recordId === undefined) throw new TypeError('usage: proof verify <record_id> --url <base>');
  const res = await fetch(new URL(`/store/proof/${encodeURIComponent(recordId)}`, values.url));
  const body = (await res.json()) as {
    record?: unknown;
    seal?: unknown;
    proof?: unknown;
    verified?: unknown;
    error?: string;
  };
  if (!res.ok) {
    print({
      record_id: recordId,
      verified: false,
      problems: [`server answered ${res.status} ${body.error ?? ''}`.trim()],
    });
    return 1;
  }
  const verdict = verifyProofBundle(
    { record: body.record, seal: body.seal ?? null, proof: body.proof ?? null },
    recordId,
  );
  print({ record_id: recordId, ...verdict, server_said_verified: body.verified });
  return verdict.verified ? 0 : 1;
}

/**
 * `geofabric store audit`: re-verifies every record, seal and chain link in the configured store
 * (DATA_DIR's SQLite, or MONGODB_URI) and prints what is wrong; exit 1 when anything is.
 */
export async function storeAuditCommand(argv: string[]): Promise<number> {
  parseArgs({ args: argv, options: {} });
  const config = loadConfig();
  const stores = await openStores(config);
  try {
    // Every epoch the auto-sealer would have sealed by now must be sealed.
    const sealedThrough = lastDueEpoch(Date.now(), config.epochGenesisMs, config.sealGraceMs);
    const report = await auditStore(stores.proofs, { sealedThrough });
    print({ ok: report.problems.length === 0, ...report });
    return report.problems.length === 0 ? 0 : 1;
  } finally {
    await stores.close();
  }
}
