/**
 * The ledger store port: the append-only credit ledger, the settlements that pay it out on an
 * external ledger, and the anchors of epoch roots. Adapters: `sqlite/ledger-store.ts`, `mongo/ledger-store.ts`;
 * the contract is `test/store/ledger-store.contract.ts`. Records are checked against
 * store/ledger-record-schema.ts on the way in: an invalid record is a caller bug and throws RangeError.
 */
import type { EpochAnchor, LedgerEntry, LedgerSettlement } from '../core/ledger-types.js';

export interface LedgerStore {
  /**
   * Posts entries, idempotent by id: an entry whose id exists is skipped when identical, and refused with
   * ServiceError('record_conflict') when it differs (nothing of the batch is stored then). All of one call
   * land together or none do (SQLite: one transaction; Mongo: unique ids make a retry complete a partial batch).
   * Returns the ids newly stored.
   */
  post(entries: LedgerEntry[]): Promise<string[]>;
  /** Sum of an account's entries (integer credit units), optionally only those created at or after `sinceIso`. */
  balance(accountPk: string, sinceIso?: string): Promise<number>;
  /**
   * An account's entries, oldest first (then in the order posted), created in [fromIso, toIso] (both optional,
   * compared as instants), at most `limit` (default 1000).
   */
  entries(accountPk: string, range?: { fromIso?: string; toIso?: string; limit?: number }): Promise<LedgerEntry[]>;
  /** Every entry of a job (any account), oldest first; entries created at one instant in the order posted. */
  jobEntries(jobId: string): Promise<LedgerEntry[]>;
  /**
   * Per UTC day (YYYY-MM-DD) and hardware tier, the sum of positive `step_earning` and `relay_fee` entries
   * created in [fromIso, toIso]; one account when `accountPk` is given, else every account. Ordered by day, then
   * tier (unknown first).
   */
  earningsByDay(range: {
    fromIso: string;
    toIso: string;
    accountPk?: string;
  }): Promise<{ day: string; hardware_tier: number | null; units: number; entries: number }[]>;
  /**
   * Positive entries of the account not covered by a `submitted` settlement (one whose latest record is
   * `submitted` and lists the entry in `entry_ids`), oldest first.
   */
  unsettled(accountPk: string): Promise<LedgerEntry[]>;
  /**
   * Appends a settlement record (a later record of the same id supersedes it); a record identical to the
   * current one (a retried call) appends nothing. The store does not check which entries other settlements
   * cover: paying each entry at most once is the settlement service's rule.
   */
  recordSettlement(settlement: LedgerSettlement): Promise<void>;
  /** The latest record of a settlement id; null if none. */
  settlement(id: string): Promise<LedgerSettlement | null>;
  /**
   * Latest records of settlements whose latest status is `pending` or `failed` (to retry), oldest latest record
   * first (a retry that fails again goes to the back), at most `limit` (default 100).
   */
  openSettlements(limit?: number): Promise<LedgerSettlement[]>;
  /** Appends an anchor record (a later record of the same sealer_pk + epoch supersedes it; an identical one is a no-op). */
  recordAnchor(anchor: EpochAnchor): Promise<void>;
  /** The latest anchor record of a sealer's epoch; null if none. */
  anchor(sealerPk: string, epoch: number): Promise<EpochAnchor | null>;
  /** Latest anchor records whose status is `pending` or `failed`, oldest latest record first, at most `limit` (default 100). */
  openAnchors(limit?: number): Promise<EpochAnchor[]>;
  close(): Promise<void>;
}
