import { parseArgs } from 'node:util';
import { lastDueEpoch } from '../activities/proof/epoch-sealer.js';
import { auditStore } from '../activities/proof/store-audit.js';
import { loadConfig } from './config.js';
import { createProgress, type Progress, type ProgressStream } from './progress.js';
import { verifyMany } from './proof-verify-many.js';
import { verifyRecordAt } from './record-verifier.js';
import type { StoreCommandIo } from './store-sync.js';
import { openStores } from './stores.js';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

export const PROOF_VERIFY_USAGE =
  'proof verify <record_id> [--wait <seconds>] | <record_id>... | --all [--cell <cell>] [--epoch <n>] [--collection <type>] [--allow-pending] [--node-pk <hex>] --url <base> [--anchor [--horizon <url>]]';

/**
 * `proof verify`'s exit codes, so a script can tell "try again later" from "something is wrong":
 * 0 every record verified (with --allow-pending, pending ones count as verified);
 * 1 a record failed: unknown id (404), tampered or wrongly signed record, seal or path, another node's key
 *   (--node-pk), a failed anchor, a listing the server refused;
 * 2 usage error, or the command could not run (bad arguments, a server that cannot be reached for one record);
 * 3 pending: every record that did not verify is intact and only waits for its epoch's seal (after --wait
 *   ran out, for one record). A mix of pending and failed records is 1.
 */
export const PROOF_EXIT = { verified: 0, failed: 1, usage: 2, pending: 3 } as const;

/**
 * `geofabric proof verify <record_id> --url <base> [--anchor [--horizon <url>]]`: fetches the proof bundle and
 * re-verifies it with core/ only (bin/record-verifier.ts); exit codes in PROOF_EXIT.
 *
 * Several ids, or `--all` (every record `/store/query` lists, narrowed by `--cell`, `--epoch`, `--collection`),
 * verify each record the same way with progress on stderr and print one report: counts and every failure. An
 * unsealed record is exit 3 (pending) like a single one, unless `--allow-pending` (then it counts as verified,
 * and is listed as pending); `--wait` (one record) asks again while it is pending.
 * `--node-pk <hex>` pins the key that must have written and sealed each record (a job's proof is the node's), or
 * signed its custodial seal (docs/protocol.md §10.7).
 */
export async function proofVerifyCommand(
  argv: string[],
  out: (value: unknown) => void = print,
  io: { progress?: ProgressStream } = {},
): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      url: { type: 'string' },
      anchor: { type: 'boolean', default: false },
      horizon: { type: 'string' },
      all: { type: 'boolean', default: false },
      cell: { type: 'string' },
      epoch: { type: 'string' },
      collection: { type: 'string' },
      'allow-pending': { type: 'boolean', default: false },
      wait: { type: 'string' },
      'node-pk': { type: 'string' },
    },
  });
  const waitSeconds = values.wait === undefined ? 0 : /^\d{1,5}$/.test(values.wait) ? Number(values.wait) : NaN;
  const filtered = values.cell !== undefined || values.epoch !== undefined || values.collection !== undefined;
  const epoch = values.epoch === undefined ? undefined : /^\d{1,15}$/.test(values.epoch) ? Number(values.epoch) : NaN;
  if (
    !values.url ||
    (values.all ? positionals.length > 0 : positionals.length === 0) ||
    (filtered && !values.all) ||
    Number.isNaN(epoch) ||
    Number.isNaN(waitSeconds) ||
    (values.wait !== undefined && (values.all || positionals.length !== 1)) ||
    (values.horizon && !values.anchor) ||
    (values['node-pk'] !== undefined && !/^[0-9a-f]{64}$/.test(values['node-pk']))
  ) {
    throw new TypeError(`usage: ${PROOF_VERIFY_USAGE}`);
  }
  const options = { anchor: values.anchor, horizon: values.horizon, nodePk: values['node-pk'] };
  const recordId = positionals[0];
  if (!values.all && positionals.length === 1 && recordId !== undefined) {
    let verdict = await verifyRecordAt(values.url, recordId, options);
    // --wait: a record whose only problem is its open epoch is asked for again until the seal is there.
    const deadline = Date.now() + waitSeconds * 1000;
    if (verdict.pending && waitSeconds > 0) {
      (io.progress ?? process.stderr).write(
        `record ${recordId} is signed and intact; waiting up to ${waitSeconds} s for its epoch to be sealed\n`,
      );
    }
    while (verdict.pending && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, Math.max(0, deadline - Date.now()))));
      verdict = await verifyRecordAt(values.url, recordId, options);
    }
    out(verdict);
    if (verdict.verified) return PROOF_EXIT.verified;
    if (verdict.pending) return values['allow-pending'] ? PROOF_EXIT.verified : PROOF_EXIT.pending;
    return PROOF_EXIT.failed;
  }
  const report = await verifyMany(
    values.url,
    values.all
      ? {
          query: {
            ...(values.cell === undefined ? {} : { cell: values.cell }),
            ...(epoch === undefined ? {} : { epoch }),
            ...(values.collection === undefined ? {} : { collection: values.collection }),
          },
        }
      : { ids: positionals },
    { ...options, allowPending: values['allow-pending'], ...(io.progress ? { progress: io.progress } : {}) },
  );
  out(report);
  if (report.verified) return PROOF_EXIT.verified;
  // Without --allow-pending a pending record is counted as failed and as pending: all failures pending → 3.
  const onlyPending =
    !values['allow-pending'] && report.listing_error === undefined && report.failed === report.pending;
  return onlyPending ? PROOF_EXIT.pending : PROOF_EXIT.failed;
}

/**
 * `geofabric store audit`: re-verifies every record, seal and chain link in the configured store
 * (DATA_DIR's SQLite, or MONGODB_URI) and prints what is wrong; exit 1 when anything is. Progress (records, then
 * seals) goes to stderr: the report is stdout's.
 */
export async function storeAuditCommand(argv: string[], io: StoreCommandIo = {}): Promise<number> {
  parseArgs({ args: argv, options: {} });
  const config = loadConfig(io.env);
  const stores = await openStores(config);
  const bars = new Map<string, Progress>();
  try {
    // Every epoch the auto-sealer would have sealed by now must be sealed.
    const sealedThrough = lastDueEpoch(Date.now(), config.epochGenesisMs, config.sealGraceMs, config.epochMs);
    const report = await auditStore(stores.proofs, {
      sealedThrough,
      progress: {
        start: (phase, expected) =>
          bars.set(
            phase,
            createProgress({
              label: 'store audit',
              unit: phase,
              total: expected,
              ...(io.progress ? { stream: io.progress } : {}),
            }),
          ),
        checked: (phase, n) => bars.get(phase)?.tick(n),
        end: (phase) => bars.get(phase)?.done(),
      },
    });
    (io.out ?? print)({ ok: report.problems.length === 0, ...report });
    return report.problems.length === 0 ? 0 : 1;
  } finally {
    for (const bar of bars.values()) bar.stop();
    await stores.close();
  }
}
