/**
 * generate_audit_proof's evidence: everything a regulator needs to check what an agent did in a
 * period without trusting this server or the perception service, gathered from the audit store and signed
 * by the governance server (core/audit-bundle.ts builds and verifies the bundle):
 *
 *   blocks       the agent's breadcrumbs with timestamps in [from, to], plus the block just before (anchor),
 *                so the first block's link is checkable
 *   epochs       every epoch whose [start_block, end_block] overlaps the period's blocks, with the hashes of
 *                all its blocks, so each period block gets a Merkle inclusion proof under its epoch root
 *   violations   the agent's violations in the period
 *   report       the compliance report from COMPLIANCE_URL (or report: null + report_error when unreachable);
 *                the trust score and tier are the report's
 *   chain        the delegation chain the caller chose (tools.ts), or null when none is known
 *
 * Reads only: the store is shared with the perception server, which alone writes it.
 */
import { buildAuditBundle, type AuditBundle } from '../../core/audit-bundle.js';
import type { AgentEpoch, StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import { ServiceError } from '../../core/errors.js';
import type { KeyPair } from '../../core/identity.js';
import type { AuditStore } from '../../store/audit-store.js';
import type { ComplianceClient } from './compliance-client.js';

/** Blocks one bundle carries at most (about 1 KB each with its proof); a longer period is refused. */
export const MAX_BUNDLE_BLOCKS = 20_000;

export interface AuditProofDeps {
  store: AuditStore;
  compliance: ComplianceClient;
  /** The governance server's key: it signs the bundle. */
  key: KeyPair;
  clock: () => number;
  maxBlocks?: number;
}

export interface AuditProofRequest {
  agentPk: string;
  /** ISO 8601 instants, from ≤ to. */
  period: { from: string; to: string };
  chain: DelegationCertificate[] | null;
  signal?: AbortSignal;
}

/** The report's trust score and tier, when it has them. */
function trustOf(report: unknown): { trust_score: number; current_tier: string } | null {
  if (typeof report !== 'object' || report === null) return null;
  const { trust_score, current_tier } = report as Record<string, unknown>;
  return typeof trust_score === 'number' && typeof current_tier === 'string' ? { trust_score, current_tier } : null;
}

/** Epochs overlapping [first, last] block index, each with the block_hash of all its blocks in index order. */
async function epochsCovering(
  store: AuditStore,
  agentPk: string,
  blocks: readonly StoredBreadcrumb[],
): Promise<{ epoch: AgentEpoch; blockHashes: string[] }[]> {
  const first = blocks[0]?.index;
  const last = blocks[blocks.length - 1]?.index;
  if (first === undefined || last === undefined) return [];
  const overlapping = (await store.epochs(agentPk)).filter((e) => e.start_block <= last && e.end_block >= first);
  return Promise.all(
    overlapping.map(async (epoch) => ({
      epoch,
      blockHashes: (await store.blocks(agentPk, { fromIndex: epoch.start_block, toIndex: epoch.end_block })).map(
        (b) => b.block_hash,
      ),
    })),
  );
}

export async function generateAuditProof(deps: AuditProofDeps, request: AuditProofRequest): Promise<AuditBundle> {
  const { store } = deps;
  const { agentPk, period } = request;
  const maxBlocks = deps.maxBlocks ?? MAX_BUNDLE_BLOCKS;
  // The report is fetched while the store is read: it is the slow part.
  const reportPending = deps.compliance.report(agentPk, period, request.signal);
  const blocks = await store.blocks(agentPk, { from: period.from, to: period.to }, maxBlocks + 1);
  if (blocks.length > maxBlocks) {
    await reportPending;
    throw new ServiceError(
      'invalid_request',
      `the period holds more than ${maxBlocks} blocks of agent ${agentPk}; ask for a shorter period`,
    );
  }
  const [anchor, epochs, violations, fetched] = await Promise.all([
    store.blockBefore(agentPk, period.from),
    epochsCovering(store, agentPk, blocks),
    store.violations(agentPk, period.from, period.to),
    reportPending,
  ]);
  return buildAuditBundle(
    {
      generatedAtMs: deps.clock(),
      agentPk,
      period,
      report: fetched.ok ? fetched.report : null,
      ...(fetched.ok ? {} : { report_error: fetched.error }),
      blocks,
      anchor,
      epochs,
      chain: request.chain,
      trust: fetched.ok ? trustOf(fetched.report) : null,
      violations,
    },
    deps.key,
  );
}
