/**
 * The audit store port: perception breadcrumb chains, agent epochs, violations and human
 * approvals, per agent. Adapters: `sqlite/audit-store.ts`, `mongo/audit-store.ts`; the contract is
 * `test/store/audit-store.contract.ts`. Records are checked by their writers (core/breadcrumb.ts); the store
 * keeps the exact signed text of every block and never rewrites one.
 *
 * The store checks shapes (store/audit-record-schema.ts): a malformed record or query argument is the caller's
 * bug and throws RangeError; a stored record that fails its schema throws Error. Fields beyond a record's
 * declared ones are not stored. Timestamps are ISO 8601 with `Z` or an offset, compared as instants (not as
 * text); a record's timestamp names a whole millisecond (`Date#toISOString`), query bounds may be finer.
 */
import type { AgentEpoch, HumanApproval, StoredBreadcrumb, Violation } from '../core/breadcrumb-types.js';
import type { SignedVerifiedMark } from '../core/verified-mark.js';

export interface BlockRange {
  /** Inclusive bounds on the block index (integers). */
  fromIndex?: number;
  toIndex?: number;
  /** Inclusive bounds on the block timestamp (ISO 8601, compared as instants). */
  from?: string;
  to?: string;
}

/**
 * How far an agent's chain has been verified (core/verified-mark.ts): every block through `index` passed all
 * five checks, the block at `index` had `block_hash`, and `verifier_pk` signed that. The store keeps it as given.
 */
export type VerifiedMark = SignedVerifiedMark;

export interface AuditStore {
  /**
   * Appends the agent's next block. Atomic: a block whose (agent_pk, index) exists is refused with
   * ServiceError('record_conflict') and nothing changes, so two writers can never fork a chain (of concurrent
   * appends of one index exactly one succeeds). So is a block that does not continue the stored chain: index
   * above 0 without block index - 1 (a gap), or a timestamp before that block's (timestamps never decrease).
   */
  appendBlock(block: StoredBreadcrumb): Promise<void>;
  /** The agent's highest-index block, or null. */
  tip(agentPk: string): Promise<StoredBreadcrumb | null>;
  /**
   * The agent's blocks in the range, ascending by index; at most `limit` (an integer >= 0; default: all), the
   * lowest indexes first. One query, served by an index on SQLite and MongoDB (FerretDB v1 scans).
   */
  blocks(agentPk: string, range?: BlockRange, limit?: number): Promise<StoredBreadcrumb[]>;
  /** The agent's last (highest-index) block strictly before `time` (the anchor of a report period), or null. */
  blockBefore(agentPk: string, time: string): Promise<StoredBreadcrumb | null>;
  /** Agents with at least one block, ascending. */
  agents(): Promise<string[]>;

  /** The agent's verified-through mark (see VerifiedMark), or null before its chain was first verified. */
  verifiedThrough(agentPk: string): Promise<VerifiedMark | null>;
  /**
   * Moves the mark up to `mark` once the caller has verified the chain through it (a lower or equal index
   * leaves the stored mark as it is, so concurrent verifiers never move it down). Only a verifier calls it:
   * a report over the blocks it checked, or the writer that signed a block, verified its signature and chained
   * it to the block the mark stood on (docs/architecture.md "Audit chains"). appendBlock never moves it.
   */
  markVerified(agentPk: string, mark: VerifiedMark): Promise<void>;

  /** Appends an epoch; an existing (agent_pk, epoch_index) is ServiceError('record_conflict'). */
  appendEpoch(epoch: AgentEpoch): Promise<void>;
  /** The agent's epochs ascending by epoch_index. */
  epochs(agentPk: string): Promise<AgentEpoch[]>;

  /** Records a violation; an existing id is ServiceError('record_conflict'). */
  addViolation(violation: Violation): Promise<void>;
  /** The agent's violations with `at` in [from, to], oldest first (ties by id). */
  violations(agentPk: string, from: string, to: string): Promise<Violation[]>;

  /** Records an approval; the same (agent_pk, block_index) twice is ServiceError('record_conflict'). */
  addApproval(approval: HumanApproval): Promise<void>;
  /** The agent's approvals with `approved_at` in [from, to], oldest first (ties by block_index). */
  approvals(agentPk: string, from: string, to: string): Promise<HumanApproval[]>;

  close(): Promise<void>;
}
