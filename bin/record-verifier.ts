import { verifyAnchorOnHorizon } from '../activities/settlement/epoch-anchorer.js';
import { createHorizonClient } from '../activities/settlement/horizon.js';
import { verifyProofBundle } from '../core/proof-bundle.js';
import { loadConfig } from './config.js';

/**
 * One record's proof, fetched from a gateway and re-verified with core/ only: the server's own `verified` flag
 * is shown but not trusted. With `anchor`, the seal's Merkle root must also be anchored: the bundle's
 * `anchor` names a transaction, and Horizon must show it writing `epoch:<n>` = that root from the sealer's
 * account. `proof verify` prints this object as is for one record.
 */
export interface RecordVerdict {
  record_id: string;
  verified: boolean;
  problems: string[];
  server_said_verified?: unknown;
  anchor?: AnchorCheck;
  /** Which seal was checked, and who signed it (core/proof-bundle.ts BundleVerdict). */
  seal_kind?: 'writer' | 'custodial';
  sealed_by?: string | undefined;
  /** The record checks out but its epoch is not sealed yet (the server says `pending`). */
  pending?: true;
  /** What verified but is not pinned: a custodial seal checked without `--node-pk` names its custodian here. */
  warnings?: string[];
}

export interface AnchorCheck {
  ok: boolean;
  detail: string;
  tx_hash?: string;
  ledger?: number;
  horizon?: string;
  network_passphrase?: string;
}

export interface VerifyOptions {
  /** Also check the epoch root's anchor on the ledger. */
  anchor?: boolean;
  /** Horizon to ask; else HORIZON_URL, else the public testnet. */
  horizon?: string | undefined;
  /**
   * Anchor checks by seal (sealer, epoch, root): many records share one seal, so a bulk verify asks Horizon once
   * per epoch. The seal was verified before it is used as a key.
   */
  anchorCache?: Map<string, Promise<AnchorCheck>>;
  /**
   * `--node-pk`: the key expected to have written and sealed the record (a job's `compute/job` record is the
   * node's). A record that verifies under any other key is a problem: a valid signature says who wrote it, not
   * that it is the record the verifier meant. A custodial seal (docs/protocol.md §12.3) must be the node's: its
   * custodian must be this key, and then the record is the gone worker's, vouched for by the node's seal.
   */
  nodePk?: string | undefined;
}

interface SealView {
  sealer_pk: string;
  epoch: number;
  merkle_root: string;
}

const NOT_SEALED = 'record is not sealed yet';

/**
 * `listedHash`: the record_hash a listing (`/store/query`) showed for this id; a proof of another version of the
 * record is then a problem too (the server answers two different stores).
 */
export async function verifyRecordAt(
  baseUrl: string,
  recordId: string,
  options: VerifyOptions = {},
  listedHash?: string,
): Promise<RecordVerdict> {
  const res = await fetch(new URL(`/store/proof/${encodeURIComponent(recordId)}`, baseUrl));
  const body = (await res.json()) as {
    record?: unknown;
    seal?: unknown;
    proof?: unknown;
    verified?: unknown;
    anchor?: unknown;
    pending?: unknown;
    error?: string;
  };
  if (!res.ok) {
    return {
      record_id: recordId,
      verified: false,
      problems: [`server answered ${res.status} ${body.error ?? ''}`.trim()],
    } satisfies RecordVerdict;
  }
  const verdict = verifyProofBundle(
    { record: body.record, seal: body.seal ?? null, proof: body.proof ?? null },
    recordId,
  );
  const warnings: string[] = [];
  if (options.nodePk !== undefined) {
    const writer = (body.record as { address?: { pk?: unknown } } | undefined)?.address?.pk;
    const sealer = (body.seal as { sealer_pk?: unknown } | null | undefined)?.sealer_pk;
    if (verdict.seal_kind === 'custodial') {
      // Any key can sign a seal naming itself custodian: only the pinned node's custodial seal is trusted.
      if (verdict.sealed_by !== options.nodePk) {
        verdict.problems.push(`custodial seal by ${String(verdict.sealed_by)}, not by node ${options.nodePk}`);
      }
    } else {
      if (writer !== options.nodePk) {
        verdict.problems.push(`written by ${String(writer)}, not by node ${options.nodePk}`);
      }
      if (sealer !== undefined && sealer !== options.nodePk) {
        verdict.problems.push(`sealed by ${String(sealer)}, not by node ${options.nodePk}`);
      }
    }
    verdict.verified = verdict.problems.length === 0;
  } else if (verdict.verified && verdict.seal_kind === 'custodial') {
    // Unpinned, like an unpinned writer: accepted, but the verdict names the key to compare with the node's.
    warnings.push(
      `custodial seal by ${String(verdict.sealed_by)}, not pinned: pass --node-pk to check that it is the node's key`,
    );
  }
  const warned = warnings.length > 0 ? { warnings } : {};
  const provedHash = (body.record as { record_hash?: unknown } | undefined)?.record_hash;
  if (listedHash !== undefined && provedHash !== listedHash) {
    verdict.problems.push(`the listing showed record_hash ${listedHash}, the proof ${String(provedHash)}`);
    verdict.verified = false;
  }
  // Pending only when the record itself verified and a seal is all that is missing.
  const pending = verdict.problems.length === 1 && verdict.problems[0] === NOT_SEALED ? { pending: true as const } : {};
  if (!options.anchor) {
    return {
      record_id: recordId,
      ...verdict,
      server_said_verified: body.verified,
      ...pending,
      ...warned,
    } satisfies RecordVerdict;
  }
  // The offline verdict checked the seal, so its root and sealer are trusted from here on; the anchor is not.
  const anchor = verdict.verified
    ? await cachedAnchorCheck(body.seal as SealView, body.anchor, options)
    : { ok: false, detail: 'not checked: the proof does not verify' };
  const problems = anchor.ok ? verdict.problems : [...verdict.problems, `anchor: ${anchor.detail}`];
  return {
    record_id: recordId,
    verified: problems.length === 0,
    problems,
    server_said_verified: body.verified,
    anchor,
    ...(verdict.seal_kind ? { seal_kind: verdict.seal_kind, sealed_by: verdict.sealed_by } : {}),
    ...pending,
    ...warned,
  } satisfies RecordVerdict;
}

function cachedAnchorCheck(seal: SealView, given: unknown, options: VerifyOptions): Promise<AnchorCheck> {
  const cache = options.anchorCache;
  if (!cache) return checkAnchor(seal, given, options.horizon);
  // The server's anchor is part of the key: two answers for one seal are each checked.
  const key = JSON.stringify([seal.sealer_pk, seal.epoch, seal.merkle_root, given ?? null]);
  let check = cache.get(key);
  if (!check) {
    check = checkAnchor(seal, given, options.horizon);
    cache.set(key, check);
  }
  return check;
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
