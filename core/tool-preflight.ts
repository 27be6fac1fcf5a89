/**
 * The delegation pre-flight of a perception tool call (docs/protocol.md §3, §5.7, §7 rule 2): decides, before
 * the tool runs, whether the agent's certificate lets it run this tool, for this facet, in this cell,
 * now. A failure blocks the call and becomes a violation (docs/protocol.md §2.8 types and severities).
 *
 * The certificate's signature and its chain up to the human are NOT checked here: the caller verifies
 * the chain (verifyDelegationChain) once at startup and refuses to serve without it. Pass that grant as
 * `grant` so rights narrowed higher up the chain (inherited denied tools, a lower max_ops_per_hour)
 * apply too; without it only the leaf certificate's own constraints are enforced.
 */
import type { Severity, ViolationType } from './breadcrumb-types.js';
import type { DelegationCertificate, DelegationGrant } from './delegation-cert.js';
import { toolScopeRefusal, type ToolPolicy } from './gates/tool-policy.js';
import { toolScope } from './gates/tool-scope.js';
import { cellCoveredBy, isCell } from './h3-cell.js';
import type { AgentTier } from './tiers.js';

/** docs/protocol.md §4.3 allowed-tools whitelist: the tools a certificate without `allowed_tools` may use. */
export const DEFAULT_ALLOWED_TOOLS: readonly string[] = Object.freeze([
  'perception_fetch_tile',
  'perception_classify',
  'perception_embed',
  'perception_weather',
  'spatial_query',
  'trajectory_audit',
  'compliance_report',
  'idn_get_compliance_report',
  'idn_get_trust_score',
  'idn_verify_chain',
  'idn_roll_epoch',
]);

/** A certificate facet that grants every facet (as core/delegation-cert.ts treats it). */
const WILDCARD_FACET = '*';

export type ChainRights = Pick<
  DelegationGrant,
  'allowed_tools' | 'denied_tools' | 'max_ops_per_hour' | 'require_human_approval'
>;

export type PreflightResult =
  { ok: true } | { ok: false; violation: ViolationType; severity: Severity; detail: string };

const blocked = (violation: ViolationType, severity: Severity, detail: string): PreflightResult => ({
  ok: false,
  violation,
  severity,
  detail,
});

/**
 * Checks, in this order, each failure ending the check: (1) certificate active at `nowMs`
 * (not_before ≤ now ≤ not_after, no skew) else `cert_expired`; (2) `cell` inside one of the certificate's
 * h3_cells by H3 containment (a finer or equal cell; a coarser one is outside) else `jurisdiction_breach`;
 * (3) `facet` granted else `facet_violation`; (4) the tool allowed (constraints.allowed_tools, or the protocol's
 * 4.3 whitelist when absent) and not denied, else `facet_violation`; all critical. With `policy`, (4b) the
 * fifth gate (core/gates/tool-policy.ts) at every jurisdiction the cell touches, for the calling agent's tier, else
 * `jurisdiction_breach` (critical) naming the rule. Then (5) `opsInLastHour` below max_ops_per_hour, else
 * `rate_limit` (warning).
 */
export function preflightTool(input: {
  certificate: DelegationCertificate;
  toolName: string;
  facet: string;
  cell: string;
  nowMs: number;
  opsInLastHour: number;
  /** The verified chain's effective rights (verifyDelegationChain's grant), enforced on top of the leaf's. */
  grant?: ChainRights;
  /** Gate 5: the tool policy and the trust tier of the agent the call is for (no worker runs MCP tools). */
  policy?: { toolPolicy: ToolPolicy; agentTier: AgentTier };
}): PreflightResult {
  const { certificate: cert, toolName, grant } = input;

  const notBefore = Date.parse(cert.not_before);
  const notAfter = Date.parse(cert.not_after);
  if (!(input.nowMs >= notBefore)) {
    return blocked('cert_expired', 'critical', `delegation certificate is not valid before ${cert.not_before}`);
  }
  if (!(input.nowMs <= notAfter)) {
    return blocked('cert_expired', 'critical', `delegation certificate expired at ${cert.not_after}`);
  }

  if (!isCell(input.cell)) {
    return blocked('jurisdiction_breach', 'critical', `cell ${JSON.stringify(input.cell)} is not a valid H3 cell`);
  }
  if (!cellCoveredBy(cert.h3_cells, input.cell)) {
    return blocked(
      'jurisdiction_breach',
      'critical',
      `cell ${input.cell} is outside the delegated cells ${cert.h3_cells.join(', ') || '(none)'}`,
    );
  }

  if (!cert.facets.includes(input.facet) && !cert.facets.includes(WILDCARD_FACET)) {
    return blocked('facet_violation', 'critical', `facet "${input.facet}" is not delegated`);
  }

  const refusal = toolRefusal(cert, grant, toolName);
  if (refusal !== null) {
    return blocked('facet_violation', 'critical', `tool "${toolName}" is ${refusal} by the delegation certificate`);
  }

  if (input.policy !== undefined && input.policy.toolPolicy.rules.length > 0) {
    // The same scope and places as every other entry point: the tool called, at every jurisdiction the cell touches.
    const tools = toolScope({ kind: 'mcp', tool: toolName });
    const refused = toolScopeRefusal(input.policy.toolPolicy, tools, [input.cell], {
      agentTier: input.policy.agentTier,
    });
    if (refused !== null) return blocked('jurisdiction_breach', 'critical', refused.detail);
  }

  const limits = [cert.constraints?.max_ops_per_hour, grant?.max_ops_per_hour].filter(
    (n): n is number => typeof n === 'number',
  );
  const max = limits.length > 0 ? Math.min(...limits) : null;
  if (max !== null && input.opsInLastHour >= max) {
    return blocked(
      'rate_limit',
      'warning',
      `max_ops_per_hour ${max} reached: ${input.opsInLastHour} operations in the last hour`,
    );
  }
  return { ok: true };
}

/**
 * Whether a call of `toolName` under `cert` needs a human principal's approval. GEIANT v1 carries
 * `require_human_approval` as a boolean on the whole certificate, so when it is true every tool call
 * does (and with a `grant`, when any link of the chain sets it); `toolName` keeps callers unchanged
 * should a per-tool form appear.
 */
export function requiresHumanApproval(cert: DelegationCertificate, _toolName: string, grant?: ChainRights): boolean {
  return cert.constraints?.require_human_approval === true || grant?.require_human_approval === true;
}

/**
 * Whether the certificate (and the chain's rights, when given) lets `toolName` run: `not allowed` when it is
 * outside allowed_tools (the docs/protocol.md §4.3 whitelist when the certificate names none), `denied` when a link denies
 * it, null when it may run. Shared by pre-flight and the authorization mappings (core/coaz-mapping.ts).
 */
export function toolRefusal(
  cert: DelegationCertificate,
  grant: ChainRights | undefined,
  toolName: string,
): 'not allowed' | 'denied' | null {
  const allowed = cert.constraints?.allowed_tools ?? DEFAULT_ALLOWED_TOOLS;
  const chainAllowed = grant?.allowed_tools ?? null;
  if (!allowed.includes(toolName) || (chainAllowed !== null && !chainAllowed.includes(toolName))) {
    return 'not allowed';
  }
  if ((cert.constraints?.denied_tools ?? []).includes(toolName) || (grant?.denied_tools ?? []).includes(toolName)) {
    return 'denied';
  }
  return null;
}
