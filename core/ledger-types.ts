/**
 * The credit ledger's records (docs/protocol.md §1.4, §1.10, §2.3 `settlement`, 8). Append-only: balances are
 * sums of entries, never stored alone. Every entry references the proof record that accounts for it (a
 * job's `compute/job` record, or the record whose Merkle proof was bought).
 *
 * A job posts one balanced set of entries (they sum to zero): the requester's charge (negative), each
 * worker's earning for the steps it ran (its steps' cost less the relay fee), each relay's fee, and the
 * Merkle proof's price to the platform (the gateway node that seals). Backbone steps cost 0 and post nothing.
 * Amounts are integer credit units (1e-8 credits, core/credits.ts) so sums never drift.
 */
export type LedgerEntryKind = 'job_charge' | 'step_earning' | 'relay_fee' | 'proof_fee' | 'proof_charge';

export interface LedgerEntry {
  version: 1;
  /** Deterministic from what it accounts for (e.g. `job:<job_id>:earning:<worker_pk>`), so a retry never posts twice. */
  id: string;
  /** The account: an Ed25519 public key (64 hex): requester, worker, relay, or the platform node. */
  account_pk: string;
  kind: LedgerEntryKind;
  /** Signed integer credit units: negative = the account pays, positive = it earns. */
  amount_units: number;
  /** The compute job it belongs to; null for a proof bought outside a job. */
  job_id: string | null;
  /** The proof record that accounts for this entry. */
  record_id: string;
  /** Step ids this entry covers (earnings and relay fees), empty otherwise. */
  step_ids: string[];
  /** The hardware tier (1–3) of the worker that earned it, when known (earnings per tier in /svc/status). */
  hardware_tier: number | null;
  /** ISO 8601, when the entry was posted. */
  created_at: string;
}

/**
 * A payment on the external ledger that settles entries. Append-only like entries:
 * a settlement is first recorded `pending` with the signed transaction envelope (so a crash between submit
 * and record can look the transaction up by its hash instead of paying twice), then `submitted` with the
 * ledger's answer; a later record of the same id supersedes an earlier one.
 */
export interface LedgerSettlement {
  version: 1;
  /** `job:<job_id>` for a per-job settlement, `balance:<account_pk>:<n>` for a balance payout. */
  id: string;
  /** Entries it settles (their ids); each entry is settled by at most one submitted settlement. */
  entry_ids: string[];
  /** Payee account pk → integer credit units paid. */
  payees: Record<string, number>;
  status: 'pending' | 'submitted' | 'failed';
  /** Hex SHA-256 transaction hash (Stellar transaction id), known once the envelope is built. */
  tx_hash: string | null;
  /** Base64 XDR of the signed envelope (pending and submitted). */
  envelope_xdr: string | null;
  /** Ledger sequence the transaction landed in (submitted). */
  ledger: number | null;
  /** Memo: the job hash (per-job) as hex. */
  memo_hash: string | null;
  attempts: number;
  error: string | null;
  /** ISO 8601 of this record. */
  at: string;
}

/** The anchor of a sealed epoch root on the external ledger. */
export interface EpochAnchor {
  version: 1;
  sealer_pk: string;
  epoch: number;
  /** 64 hex: the seal's Merkle root, written as the 32-byte value of data entry `epoch:<n>`. */
  root: string;
  status: 'pending' | 'submitted' | 'failed';
  tx_hash: string | null;
  envelope_xdr: string | null;
  ledger: number | null;
  attempts: number;
  error: string | null;
  at: string;
}
