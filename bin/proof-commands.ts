import { parseArgs } from 'node:util';
import { lastDueEpoch } from '../activities/proof/epoch-sealer.js';
import { auditStore } from '../activities/proof/store-audit.js';
import { verifyAnchorOnHorizon } from '../activities/settlement/epoch-anchorer.js';
import { createHorizonClient } from '../activities/settlement/horizon.js';
import { verifyProofBundle } from '../core/proof-bundle.js';
import { loadConfig } from './config.js';
import { openStores } from './stores.js';

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

export const PROOF_VERIFY_USAGE = 'proof verify <record_id> --url <base> [--anchor [--horizon <url>]]';

/**
 * `geofabric proof verify <record_id> --url <base> [--anchor [--horizon <url>]]`: fetches the proof bundle and
 * re-verifies it with core/ only; the server's own `verified` flag is shown but not trusted. With `--anchor`, the
 * seal's Merkle root must also be anchored (issue 10): the bundle's `anchor` names a transaction, and Horizon
 * (`--horizon`, else HORIZON_URL, else the public testnet) must show it writing `epoch:<n>` = that root from the
 * sealer's account. Exit 1 when anything does not hold.
 */
export async function proofVerifyCommand(argv: string[], out: (value: unknown) => void = print): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { url: { type: 'string' }, anchor: { type: 'boolean', default: false }, horizon: { type: 'string' } },
  });
  const recordId = positionals[0];
  if (!values.url || recordId === undefined || positionals.length > 1 || (values.horizon && !values.anchor)) {
    throw new TypeError(`usage: ${PROOF_VERIFY_USAGE}`);
  }
  const res = await fetch(new URL(`/store/proof/${encodeURIComponent(recordId)}`, values.url));
  const body = (await res.json()) as {
    record?: unknown;
    seal?: unknown;
    proof?: unknown;
    verified?: unknown;
    anchor?: unknown;
    error?: string;
  };
  if (!res.ok) {
    out({
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
  if (!values.anchor) {
    out({ record_id: recordId, ...verdict, server_said_verified: body.verified });
    return verdict.verified ? 0 : 1;
  }
  // The offline verdict checked the seal, so its root and sealer are trusted from here on; the anchor is not.
  const anchor = verdict.verified
    ? await checkAnchor(body.seal as SealView, body.anchor, values.horizon)
    : { ok: false, detail: 'not checked: the proof does not verify' };
  const problems = anchor.ok ? verdict.problems : [...verdict.problems, `anchor: ${anchor.detail}`];
  out({ record_id: recordId, verified: problems.length === 0, problems, server_said_verified: body.verified, anchor });
  return problems.length === 0 ? 0 : 1;
}

interface SealView {
  sealer_pk: string;
  epoch: number;
  merkle_root: string;
}

interface AnchorCheck {
  ok: boolean;
  detail: string;
  tx_hash?: string;
  ledger?: number;
  horizon?: string;
  network_passphrase?: string;
}

/** The bundle's anchor against the verified seal, then against the ledger as Horizon shows it. */
async function checkAnchor(seal: SealView, given: unknown, horizonOption: string | undefined): Promise<AnchorCheck> {
  if (given === null || given === undefined) {
    return {
      ok: false,
      detail: `epoch ${seal.epoch} of ${seal.sealer_pk} is not anchored (the server shows no anchor)`,
    };
  }
  const anchor = given as { tx_hash?: unknown; epoch?: unknown; root?: unknown; network_passphrase?: unknown };
  const txHash = typeof anchor.tx_hash === 'string' ? anchor.tx_hash : '';
  const network =
    typeof anchor.network_passphrase === 'string' ? { network_passphrase: anchor.network_passphrase } : {};
  // The server's own account of the anchor must at least name this seal before the ledger is asked.
  if (anchor.epoch !== seal.epoch || anchor.root !== seal.merkle_root) {
    return {
      ok: false,
      detail: `the server's anchor (epoch ${String(anchor.epoch)}, root ${String(anchor.root)}) is not this seal's (epoch ${seal.epoch}, root ${seal.merkle_root})`,
      tx_hash: txHash,
      ...network,
    };
  }
  // HORIZON_URL alone is read (not the whole configuration): a verifier needs no server settings.
  const horizonUrl = horizonOption ?? loadConfig({ HORIZON_URL: process.env.HORIZON_URL }).ledger.horizonUrl;
  const checked = await verifyAnchorOnHorizon({
    horizon: createHorizonClient({ url: horizonUrl }),
    txHash,
    epoch: seal.epoch,
    root: seal.merkle_root,
    sourcePk: seal.sealer_pk,
  });
  return {
    ok: checked.ok,
    detail: checked.detail,
    tx_hash: txHash,
    ...(checked.ledger === undefined ? {} : { ledger: checked.ledger }),
    horizon: horizonUrl,
    ...network,
  };
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
