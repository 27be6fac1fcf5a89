import { verifyAnchorOnHorizon } from '../activities/settlement/epoch-anchorer.js';
import { createHorizonClient } from '../activities/settlement/horizon.js';
import type { JobReceipt, ReceiptCheck, ReceiptCheckName, ReceiptVerdict } from '../core/receipt.js';

/** A verdict that may carry the network check after the offline ones. */
export interface AnchoredVerdict {
  ok: boolean;
  checks: (ReceiptCheck | { name: 'ledger_anchor'; ok: boolean; detail: string })[];
  failedCheck?: ReceiptCheckName | 'ledger_anchor';
}

/**
 * `receipt verify --anchor` (docs/protocol.md §15.2): the offline verdict, then one more check, `ledger_anchor`:
 * every seal a record of the receipt needs is anchored, and the ledger, as the Horizon-compatible API at
 * `horizonUrl` shows it, holds the anchor transaction writing `epoch:<n>` = the seal's Merkle root from the
 * sealer's account. Only asked when the offline checks passed: until then no seal in the receipt is trusted.
 */
export async function withLedgerAnchors(
  receipt: JobReceipt,
  verdict: ReceiptVerdict,
  horizonUrl: string,
): Promise<AnchoredVerdict> {
  const outcome = verdict.ok
    ? await ledgerAnchors(receipt, horizonUrl)
    : { ok: false, detail: 'not asked: the receipt failed offline' };
  const checks = [...verdict.checks, { name: 'ledger_anchor' as const, ...outcome }];
  if (verdict.ok && !outcome.ok) return { ok: false, checks, failedCheck: 'ledger_anchor' };
  return { ...verdict, checks };
}

async function ledgerAnchors(receipt: JobReceipt, horizonUrl: string): Promise<{ ok: boolean; detail: string }> {
  const horizon = createHorizonClient({ url: horizonUrl });
  const asked = new Map<string, string>();
  for (const entry of receipt.records) {
    if (entry.seal === null) continue; // --allow-pending: an unsealed record has no anchor yet
    const key = `${entry.seal.sealer_pk}/${entry.seal.epoch}`;
    if (asked.has(key)) continue;
    if (entry.anchor === null || entry.anchor === undefined) {
      return { ok: false, detail: `epoch ${entry.seal.epoch} of ${entry.seal.sealer_pk} is not anchored (yet)` };
    }
    const checked = await verifyAnchorOnHorizon({
      horizon,
      txHash: entry.anchor.tx_hash,
      epoch: entry.seal.epoch,
      root: entry.seal.merkle_root,
      sourcePk: entry.seal.sealer_pk,
    });
    if (!checked.ok) return { ok: false, detail: `${entry.record_id}: ${checked.detail}` };
    asked.set(key, checked.detail);
  }
  if (asked.size === 0) return { ok: false, detail: 'no sealed record to check on the ledger' };
  return { ok: true, detail: `${[...asked.values()].join('; ')} (${horizonUrl})` };
}
