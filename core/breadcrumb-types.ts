/**
 * The shapes of the perception server's audit chain (docs/protocol.md §1.9, §2.8, §3; docs/protocol.md §10): one
 * hash-chained, Ed25519-signed breadcrumb block per tool call, rolled into agent epochs, judged by
 * compliance reports. Functions live beside them (core/breadcrumb.ts, core/agent-epoch.ts,
 * core/trust-score.ts, core/compliance-report.ts, core/tool-preflight.ts).
 */

/** What the agent signs: `data_to_sign` = JCS of exactly these eleven fields (docs/protocol.md §10). */
export interface BreadcrumbContent {
  /** 0, 1, 2 … per agent, no gaps. */
  index: number;
  /** The agent's Ed25519 public key (64 hex). */
  identity: string;
  /** ISO 8601 UTC with milliseconds; never decreases along the chain. */
  timestamp: string;
  /** The call's H3 cell and its resolution. */
  loc_cell: string;
  loc_res: number;
  /** Digest of the call: SHA-256 hex of JCS of the arguments and of the result (null when none), and outcome. */
  context: { args_hash: string; result_hash: string | null; outcome: 'ok' | 'error' | 'blocked' };
  /** cert_hash (SHA-256 hex of the certificate's canonical signed fields) of the certificate in force. */
  delegation_cert_hash: string;
  /** The capability exercised (a certificate facet, e.g. `perception`). */
  facet: string;
  /** Small extra facts: duration_ms, the violation type of a blocked call, the error code … */
  meta: Record<string, unknown>;
  /** The previous block's block_hash; "genesis" at index 0. */
  prev_hash: string;
  tool_name: string;
}

export interface Breadcrumb extends BreadcrumbContent {
  /** Ed25519 signature (128 hex) over the UTF-8 of data_to_sign. */
  signature: string;
  /** SHA-256 hex of (data_to_sign + ":" + signature). */
  block_hash: string;
}

/** A block as stored: the exact signed text travels with it, so verification survives any round trip. */
export interface StoredBreadcrumb {
  agent_pk: string;
  index: number;
  timestamp: string;
  data_to_sign: string;
  signature: string;
  block_hash: string;
}

/** One rolled epoch of an agent's chain (docs/protocol.md §2.8 epoch roll result, plus what makes it checkable). */
export interface AgentEpoch {
  version: 1;
  agent_pk: string;
  epoch_index: number;
  start_block: number;
  end_block: number;
  block_count: number;
  /** RFC 9162 Merkle root (hex) over the block hashes, in index order. */
  merkle_root: string;
  /** The previous epoch's epoch_hash; 64 zeros before the first. */
  prev_epoch_hash: string;
  tier_at_close: TrustTier;
  rolled_at: string;
  /** SHA-256 hex of JCS of every field above. */
  epoch_hash: string;
  /** The agent's signature over the UTF-8 of epoch_hash. */
  signature: string;
}

export const VIOLATION_TYPES = [
  'jurisdiction_breach',
  'facet_violation',
  'rate_limit',
  'cert_expired',
  'chain_break',
] as const;
export type ViolationType = (typeof VIOLATION_TYPES)[number];
export type Severity = 'warning' | 'critical';

export interface Violation {
  version: 1;
  /** Unique (uuid). */
  id: string;
  agent_pk: string;
  type: ViolationType;
  severity: Severity;
  tool_name: string;
  h3_cell: string | null;
  detail: string;
  at: string;
  /** The breadcrumb that recorded the blocked call; null when none could be written (chain_break). */
  block_index: number | null;
}

/** A human principal's signed approval of one call of a `require_human_approval` tool (POST /approvals). */
export interface HumanApproval {
  version: 1;
  agent_pk: string;
  principal_pk: string;
  /** The breadcrumb of the approved call. */
  block_index: number;
  approved_at: string;
  /** The principal's signature over JCS of the fields above. */
  signature: string;
}

/** docs/protocol.md §3's ladder of the agent tier gate; thresholds in core/trust-score.ts. */
export const TRUST_TIERS = ['provisioned', 'observed', 'trusted', 'certified', 'sovereign'] as const;
export type TrustTier = (typeof TRUST_TIERS)[number];
