/**
 * The compliance report, version 1 (docs/protocol.md §2.8, §4.2): what an agent did in a period under its delegation,
 * whether its audit chain holds, and what that earns it. Pure: the caller loads the period's blocks, the
 * anchor-based chain verification, epochs, violations and approvals, and passes the clock in.
 *
 * Counting rules (the protocol leaves them open):
 * - An operation is a block whose outcome is `ok`: the call did its work (core/trust-score.ts isOperation),
 *   for a caller with a token: an anonymous call (`meta.anonymous: true`) counts for nothing.
 *   A `blocked` call never ran (a violation, listed under `violations`); an `error` call did nothing
 *   (not_available, not_configured, an upstream down). Neither counts, nor earns anything in the trust score.
 * - jurisdiction_cells are the cells of operations only, so a jurisdiction breach never counts as territory.
 * - human_approvals_required counts operations of tools that require approval; human_approvals_received
 *   counts those operations (distinct blocks) with an approval signed by the report's principal.
 */
import { canonicalJson } from './canonical-json.js';
import type { ChainVerification } from './breadcrumb.js';
import type { AgentEpoch, Breadcrumb, HumanApproval, TrustTier, Violation } from './breadcrumb-types.js';
import type { DelegationCertificate } from './delegation-cert.js';
import { verifySignature } from './identity.js';
import { isOperation, tierFor, trustScore } from './trust-score.js';

export type EpochSummary = Pick<
  AgentEpoch,
  | 'epoch_index'
  | 'start_block'
  | 'end_block'
  | 'block_count'
  | 'merkle_root'
  | 'epoch_hash'
  | 'tier_at_close'
  | 'rolled_at'
>;

export interface ComplianceReport {
  version: 1;
  generated_at: string;
  agent_pk: string;
  agent_handle: string;
  principal_pk: string;
  reporting_period: { from: string; to: string };
  total_operations: number;
  operations_by_tool: Record<string, number>;
  jurisdiction_cells: string[];
  chain_verification: ChainVerification;
  epochs: EpochSummary[];
  delegation_certificate: DelegationCertificate & { principal_local: boolean };
  delegation_chain_depth: number;
  human_approvals_required: number;
  human_approvals_received: number;
  current_tier: TrustTier;
  trust_score: number;
  violations: Violation[];
}

export interface ComplianceReportInput {
  agentPk: string;
  agentHandle: string;
  /** The human principal (root of the delegation chain); approvals must be signed by this key. */
  principalPk: string;
  /** True when the principal is the development principal provisioned on this machine. */
  principalLocal: boolean;
  period: { from: string; to: string };
  /** The agent's parsed blocks with timestamps in the period, ascending. */
  blocks: readonly Breadcrumb[];
  /** verifyChain over the same blocks, anchored on the block before the period. */
  verification: ChainVerification;
  /** The epochs to list, in any order (reported by epoch_index). */
  epochs: readonly AgentEpoch[];
  /** The certificate in force (the chain's leaf). */
  certificate: DelegationCertificate;
  chainDepth: number;
  violations: readonly Violation[];
  approvals: readonly HumanApproval[];
  /** Timestamp of the agent's block 0 (longevity), null when it has none. */
  firstBlockEverAt: string | null;
  nowMs: number;
  requiresApproval: (toolName: string) => boolean;
}

/** The text a principal signs to approve one call: JCS of every HumanApproval field but the signature. */
export function approvalSigningString(approval: Omit<HumanApproval, 'signature'> | HumanApproval): string {
  return canonicalJson({
    version: approval.version,
    agent_pk: approval.agent_pk,
    principal_pk: approval.principal_pk,
    block_index: approval.block_index,
    approved_at: approval.approved_at,
  });
}

/** True when the approval is signed by its principal_pk (callers still check who that principal is). */
export const approvalSignatureValid = (approval: HumanApproval): boolean =>
  verifySignature(approval.principal_pk, approvalSigningString(approval), approval.signature);

export function buildComplianceReport(input: ComplianceReportInput): ComplianceReport {
  const byTool = new Map<string, number>();
  const cells = new Set<string>();
  const needsApproval = new Set<number>();
  let operations = 0;
  for (const block of input.blocks) {
    if (!isOperation(block)) continue;
    operations++;
    byTool.set(block.tool_name, (byTool.get(block.tool_name) ?? 0) + 1);
    cells.add(block.loc_cell);
    if (input.requiresApproval(block.tool_name)) needsApproval.add(block.index);
  }

  const approved = new Set<number>();
  for (const approval of input.approvals) {
    if (
      approval.agent_pk === input.agentPk &&
      approval.principal_pk === input.principalPk &&
      needsApproval.has(approval.block_index) &&
      approvalSignatureValid(approval)
    ) {
      approved.add(approval.block_index);
    }
  }

  const jurisdictionCells = [...cells].sort();
  const { score } = trustScore({
    operations,
    uniqueCells: jurisdictionCells.length,
    firstBlockAt: input.firstBlockEverAt,
    nowMs: input.nowMs,
    chainValid: input.verification.is_valid,
  });
  const v = input.verification;

  return {
    version: 1,
    generated_at: new Date(input.nowMs).toISOString(),
    agent_pk: input.agentPk,
    agent_handle: input.agentHandle,
    principal_pk: input.principalPk,
    reporting_period: { from: input.period.from, to: input.period.to },
    total_operations: operations,
    operations_by_tool: Object.fromEntries([...byTool].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    jurisdiction_cells: jurisdictionCells,
    chain_verification: {
      is_valid: v.is_valid,
      block_count: v.block_count,
      issues: [...v.issues],
      first_block_at: v.first_block_at,
      last_block_at: v.last_block_at,
      delegation_cert_hash: v.delegation_cert_hash,
      invalid_blocks: [...v.invalid_blocks],
    },
    epochs: [...input.epochs]
      .sort((a, b) => a.epoch_index - b.epoch_index)
      .map((e) => ({
        epoch_index: e.epoch_index,
        start_block: e.start_block,
        end_block: e.end_block,
        block_count: e.block_count,
        merkle_root: e.merkle_root,
        epoch_hash: e.epoch_hash,
        tier_at_close: e.tier_at_close,
        rolled_at: e.rolled_at,
      })),
    delegation_certificate: { ...input.certificate, principal_local: input.principalLocal },
    delegation_chain_depth: input.chainDepth,
    human_approvals_required: needsApproval.size,
    human_approvals_received: approved.size,
    current_tier: tierFor(score),
    trust_score: score,
    violations: input.violations.map((violation) => ({ ...violation })),
  };
}
