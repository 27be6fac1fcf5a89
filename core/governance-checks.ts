/**
 * The answers of the governance tool server (docs/protocol.md §4.3): "may this agent act here, for this facet,
 * now?" (verify_jurisdiction) and "may it call this tool?" (check_delegation_chain), judged from the agent's
 * delegation chain (docs/protocol.md §10 "Delegation certificate") with core/delegation-cert.ts's rules.
 *
 * Unlike verifyDelegationChain, which stops at the first failure, every aspect is judged on its own, so a
 * caller sees all reasons at once: a forged chain whose cells do cover the cell still says
 * `cell_authorized: true` next to `signature_valid: false`. Only `authorized` is a decision; the other
 * booleans explain it.
 *
 * Time rule: a link is active when not_before ≤ now ≤ not_after, with NO clock skew. The perception
 * server's pre-flight (core/tool-preflight.ts) blocks calls on exactly that rule, so the governance server
 * never says "authorized" for a call the tool would then refuse as cert_expired. (verifyDelegationChain's
 * 60 s tolerance is for requests signed on another machine's clock.)
 */
import {
  certificateHash,
  delegationChainRights,
  facetGranted,
  linkTimeIssue,
  parseDelegationChain,
  verifyDelegationChainStructure,
  type DelegationCertificate,
} from './delegation-cert.js';
import { toolScopeRefusal, type ToolPolicy } from './gates/tool-policy.js';
import { toolScope } from './gates/tool-scope.js';
import { cellCoveredBy, isCell } from './h3-cell.js';
import { resolveJurisdiction } from './jurisdiction.js';
import type { AgentTier } from './tiers.js';
import { DEFAULT_ALLOWED_TOOLS } from './tool-preflight.js';

export interface JurisdictionInfo {
  h3_cell: string;
  /** ISO 3166-1 alpha-2; null over open sea. */
  country_code: string | null;
  country_name: string | null;
  /** Framework ids (core/regulatory-frameworks.ts), e.g. GDPR, EU_AI_ACT. */
  frameworks: string[];
}

export interface JurisdictionCheck {
  /** signature_valid && cert_active && cell_authorized && facet_authorized. */
  authorized: boolean;
  /** Every link's shape, signature, keys, linkage, narrowing and depth (time aside). */
  signature_valid: boolean;
  /** Every link's window holds nowMs (no skew). */
  cert_active: boolean;
  /** The cell is valid and inside the last link's cells by H3 containment. */
  cell_authorized: boolean;
  /** The facet is granted by the last link ('*' grants all). */
  facet_authorized: boolean;
  /** The last link's agent; '' when the chain is empty or malformed. */
  agent_pk: string;
  /** The root link's principal: the human. '' when the chain is empty or malformed. */
  principal_pk: string;
  /** The earliest not_after over the links, as ISO 8601 UTC with milliseconds; '' without a chain. */
  valid_until: string;
  /** One sentence per failed aspect; empty when authorized. */
  errors: string[];
  /** Where the cell lies and which frameworks apply there; null for an invalid cell. */
  jurisdiction: JurisdictionInfo | null;
  /** SHA-256 cert_hash of the last link; '' without a chain. */
  cert_hash: string;
  /** Number of links; 0 when the chain is empty or malformed. */
  chain_depth: number;
}

export interface DelegationChainCheck {
  /** signature_valid && cert_active && tool_allowed. */
  authorized: boolean;
  /** The root link's principal; '' when the chain is empty or malformed. */
  human_principal_pk: string;
  agent_pk: string;
  signature_valid: boolean;
  /** In allowed_tools (which already excludes every denied tool). */
  tool_allowed: boolean;
  /**
   * The effective list: the chain's narrowed allowed_tools, or the docs/protocol.md §4.3 whitelist when no link
   * restricts tools, minus every tool some link denies. [] when the chain is empty or malformed.
   */
  allowed_tools: string[];
  /** Every tool any link denies. */
  denied_tools: string[];
  /** Number of links. */
  depth: number;
  cert_hash: string;
  cert_active: boolean;
  errors: string[];
  /** Gate 5: whether the tool policy lets the agent run the tool in the cells judged (always present from the server). */
  tool_policy?: ToolPolicyReport;
}

/** check_delegation_chain's account of the tool policy (core/gates/tool-policy.ts). */
export interface ToolPolicyReport {
  allowed: boolean;
  /** The cells judged: the one asked about, else the certificate's own cells. */
  cells: string[];
  /** The agent tier the rules were read with (its last epoch's tier_at_close; provisioned before one). */
  agent_tier: AgentTier;
  /** The refusing rule, the place it refused and why; null when allowed. */
  rule: string | null;
  jurisdiction: string | null;
  detail: string | null;
}

/**
 * The tool policy's verdict on `toolName` for an agent at `agentTier` in `cells` (no worker runs an MCP tool, so a
 * `min_worker_tier` rule refuses), as the pre-flight judges it: at every jurisdiction each cell touches. Pure:
 * cells resolve with core/jurisdiction.ts.
 */
export function toolPolicyReport(
  policy: ToolPolicy,
  toolName: string,
  cells: readonly string[],
  agentTier: AgentTier,
): ToolPolicyReport {
  const tools = toolScope({ kind: 'mcp', tool: toolName });
  const refusal = toolScopeRefusal(policy, tools, cells.filter(isCell), { agentTier });
  return {
    allowed: refusal === null,
    cells: [...cells],
    agent_tier: agentTier,
    rule: refusal?.rule ?? null,
    jurisdiction: refusal?.jurisdiction ?? null,
    detail: refusal?.detail ?? null,
  };
}

/** What both answers share: the chain judged once, each aspect separately. */
interface ChainAssessment {
  chain: DelegationCertificate[];
  root: DelegationCertificate;
  last: DelegationCertificate;
  signatureValid: boolean;
  certActive: boolean;
  validUntil: string;
  /** The structure and time sentences, in that order, for the aspects that failed. */
  errors: string[];
}

type Assessed = { ok: true; value: ChainAssessment } | { ok: false; error: string };

function assessChain(
  input: readonly DelegationCertificate[],
  nowMs: number,
  trustedPrincipals: ReadonlySet<string> | undefined,
): Assessed {
  const parsed = parseDelegationChain(input);
  if (!parsed.ok) return { ok: false, error: `the delegation chain is unusable: ${parsed.detail}` };
  const chain = parsed.value;
  const root = chain[0] as DelegationCertificate;
  const last = chain[chain.length - 1] as DelegationCertificate;
  const errors: string[] = [];

  // The same rules as gate 3 (core/delegation-cert.ts), trust anchors included: an untrusted root is no valid chain.
  const structure = verifyDelegationChainStructure(chain, trustedPrincipals === undefined ? {} : { trustedPrincipals });
  if (!structure.ok) errors.push(`the delegation chain does not verify: ${structure.detail}`);

  // Judged link by link (not from the last link alone): an invalid chain may have a widened window.
  const validUntil = new Date(Math.min(...chain.map((link) => Date.parse(link.not_after)))).toISOString();
  let timeIssue: string | undefined;
  if (!Number.isFinite(nowMs)) timeIssue = 'the current time is not a number';
  for (let i = 0; i < chain.length && timeIssue === undefined; i++) {
    timeIssue = linkTimeIssue(chain[i] as DelegationCertificate, i, nowMs, 0);
  }
  if (timeIssue !== undefined) errors.push(`the delegation chain is not active now: ${timeIssue}`);

  return {
    ok: true,
    value: {
      chain,
      root,
      last,
      signatureValid: structure.ok,
      certActive: timeIssue === undefined,
      validUntil,
      errors,
    },
  };
}

function jurisdictionOf(cell: string): JurisdictionInfo | null {
  if (!isCell(cell)) return null;
  const j = resolveJurisdiction(cell);
  return {
    h3_cell: cell,
    country_code: j.country_code,
    country_name: j.country_name,
    frameworks: j.frameworks.map((f) => f.id),
  };
}

/**
 * verify_jurisdiction (docs/protocol.md §4.3): may the chain's agent act in `h3Cell` for `facet` at `nowMs`? A child
 * cell of a delegated cell is inside it; a coarser cell is not (it covers ground outside the grant).
 */
export function verifyJurisdiction(input: {
  chain: DelegationCertificate[];
  h3Cell: string;
  facet: string;
  nowMs: number;
  /** TRUSTED_PRINCIPALS: when non-empty, a chain from another root does not verify. */
  trustedPrincipals?: ReadonlySet<string>;
}): JurisdictionCheck {
  const { h3Cell, facet } = input;
  const jurisdiction = jurisdictionOf(h3Cell);
  const assessed = assessChain(input.chain, input.nowMs, input.trustedPrincipals);
  if (!assessed.ok) {
    return {
      authorized: false,
      signature_valid: false,
      cert_active: false,
      cell_authorized: false,
      facet_authorized: false,
      agent_pk: '',
      principal_pk: '',
      valid_until: '',
      errors: [assessed.error],
      jurisdiction,
      cert_hash: '',
      chain_depth: 0,
    };
  }
  const a = assessed.value;
  const errors = [...a.errors];

  const cellAuthorized = jurisdiction !== null && cellCoveredBy(a.last.h3_cells, h3Cell);
  if (jurisdiction === null) {
    errors.push(`cell ${JSON.stringify(h3Cell)} is not a valid H3 cell (15 lowercase hex)`);
  } else if (!cellAuthorized) {
    errors.push(
      `cell ${h3Cell} is outside the delegated cells ${a.last.h3_cells.join(', ') || '(none)'} (a cell must lie inside one of them)`,
    );
  }
  const facetAuthorized = facetGranted(a.last.facets, facet);
  if (!facetAuthorized) {
    errors.push(`facet ${JSON.stringify(facet)} is not delegated (granted: ${a.last.facets.join(', ') || 'none'})`);
  }

  return {
    authorized: a.signatureValid && a.certActive && cellAuthorized && facetAuthorized,
    signature_valid: a.signatureValid,
    cert_active: a.certActive,
    cell_authorized: cellAuthorized,
    facet_authorized: facetAuthorized,
    agent_pk: a.last.agent_pk,
    principal_pk: a.root.principal_pk,
    valid_until: a.validUntil,
    errors,
    jurisdiction,
    cert_hash: certificateHash(a.last),
    chain_depth: a.chain.length,
  };
}

/**
 * check_delegation_chain (docs/protocol.md §4.3): may the chain's agent call `toolName` at `nowMs`? Unlike the original
 * product, which approved every tool, the tool must be in the effective allowed list and denied by no link.
 */
export function checkDelegationChain(input: {
  chain: DelegationCertificate[];
  toolName: string;
  nowMs: number;
  trustedPrincipals?: ReadonlySet<string>;
  /** Gate 5: the policy, the agent's tier and the cells to judge (default: the last certificate's cells). */
  policy?: { toolPolicy: ToolPolicy; agentTier: AgentTier; cells?: readonly string[] | undefined };
}): DelegationChainCheck {
  const { toolName } = input;
  const assessed = assessChain(input.chain, input.nowMs, input.trustedPrincipals);
  if (!assessed.ok) {
    return {
      authorized: false,
      human_principal_pk: '',
      agent_pk: '',
      signature_valid: false,
      tool_allowed: false,
      allowed_tools: [],
      denied_tools: [],
      depth: 0,
      cert_hash: '',
      cert_active: false,
      errors: [assessed.error],
    };
  }
  const a = assessed.value;
  const errors = [...a.errors];

  const rights = delegationChainRights(a.chain);
  const base = rights.allowed_tools ?? DEFAULT_ALLOWED_TOOLS;
  const allowed = [...new Set(base)].filter((tool) => !rights.denied_tools.includes(tool));
  const toolAllowed = allowed.includes(toolName);
  if (rights.denied_tools.includes(toolName)) {
    const by = a.chain.findIndex((link) => link.constraints?.denied_tools?.includes(toolName) === true);
    errors.push(`tool ${JSON.stringify(toolName)} is denied by link ${by} of the delegation chain`);
  } else if (!toolAllowed) {
    errors.push(
      rights.allowed_tools === null
        ? `tool ${JSON.stringify(toolName)} is not in the default allowed-tools whitelist`
        : `tool ${JSON.stringify(toolName)} is not in the chain's allowed_tools`,
    );
  }

  const policy =
    input.policy &&
    toolPolicyReport(input.policy.toolPolicy, toolName, input.policy.cells ?? a.last.h3_cells, input.policy.agentTier);
  if (policy && !policy.allowed) errors.push(policy.detail!);

  return {
    authorized: a.signatureValid && a.certActive && toolAllowed && (policy?.allowed ?? true),
    human_principal_pk: a.root.principal_pk,
    agent_pk: a.last.agent_pk,
    signature_valid: a.signatureValid,
    tool_allowed: toolAllowed,
    allowed_tools: allowed,
    denied_tools: [...rights.denied_tools],
    depth: a.chain.length,
    cert_hash: certificateHash(a.last),
    cert_active: a.certActive,
    errors,
    ...(policy ? { tool_policy: policy } : {}),
  };
}
