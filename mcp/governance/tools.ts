/**
 * The three tools of the governance server (docs/protocol.md §4.3), thin adapters over pure checks:
 *
 *   verify_jurisdiction     {h3_cell, facet}       core/governance-checks.ts verifyJurisdiction
 *   check_delegation_chain  {tool_name}            core/governance-checks.ts checkDelegationChain
 *   generate_audit_proof    {agent_pk, from, to}   audit-proof.ts → core/audit-bundle.ts, signed by this server
 *
 * Each also takes `agent_pk` and `delegation_chain` (both optional), so the server answers for any agent, not
 * only its configured subject: the chain judged is the one passed, else the one known for agent_pk
 * (chain-book.ts), else the call is a tool error saying no certificate is known. A chain that is not
 * authorized is an answer (`authorized: false` with the reasons), not an error; an argument that cannot be
 * read (bad cell, bad key, a chain that is not certificate-shaped) is a tool error naming the field.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { EMPTY_TOOL_POLICY, type ToolPolicy } from '../../core/gates/tool-policy.js';
import { checkDelegationChain, verifyJurisdiction } from '../../core/governance-checks.js';
import { MAX_CHAIN_LENGTH, type DelegationCertificate } from '../../core/delegation-cert.js';
import { ServiceError } from '../../core/errors.js';
import { checkPublicKey, type KeyPair } from '../../core/identity.js';
import type { AuditStore } from '../../store/audit-store.js';
import { DEFAULT_REPORT_FROM } from '../perception/reports.js';
import { cellArgument, errorResult, okResult, outputSchemaOf } from '../shared/structured.js';
import { generateAuditProof } from './audit-proof.js';
import { parseChainArgument, type ChainBook } from './chain-book.js';
import type { ComplianceClient } from './compliance-client.js';

export const GOVERNANCE_TOOL_NAMES = ['verify_jurisdiction', 'generate_audit_proof', 'check_delegation_chain'] as const;

/** A failure the caller can act on: the MCP result has `isError: true` and the text names code and cause. */
export class GovernanceToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'GovernanceToolError';
  }
}

export interface GovernanceToolDeps {
  store: AuditStore;
  chains: ChainBook;
  compliance: ComplianceClient;
  /** The server's key: it signs audit bundles. */
  key: KeyPair;
  clock: () => number;
  /** TRUSTED_PRINCIPALS: chains from other roots are reported as not verifying. */
  trustedPrincipals?: ReadonlySet<string> | undefined;
  /** Most blocks in one audit bundle (audit-proof.ts MAX_BUNDLE_BLOCKS by default). */
  maxBundleBlocks?: number;
  /** Gate 5 (TOOL_POLICY_FILE): check_delegation_chain reports whether it allows the tool; default no rules. */
  toolPolicy?: ToolPolicy | undefined;
}

export interface GovernanceTool<Shape extends z.ZodRawShape> {
  name: (typeof GOVERNANCE_TOOL_NAMES)[number];
  title: string;
  description: string;
  inputSchema: Shape;
  /** The fields of a successful result, declared in the outputSchema (mcp/shared/structured.ts). */
  outputSchema?: z.ZodRawShape;
  /** A signed document: its text is kept as signed, structured under this name (structured.ts okResult). */
  document?: string;
  run(args: z.infer<z.ZodObject<Shape>>, signal: AbortSignal | undefined): Promise<unknown>;
}

/** A tool of any argument shape (each validates its own arguments with its own schema). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tool argument types are contravariant
export type AnyGovernanceTool = GovernanceTool<any>;

const HEX64 = /^[0-9a-f]{64}$/;
const MAX_CHAIN_TEXT = 65_536;

/** Shape, then core/identity.ts's key policy (canonical, not small-order): no agent can hold any other key. */
const agentKey = z
  .string()
  .regex(HEX64, 'must be an Ed25519 public key (64 lowercase hex)')
  .superRefine((pk, ctx) => {
    const key = HEX64.test(pk) ? checkPublicKey(pk) : null;
    if (key !== null && !key.ok) ctx.addIssue({ code: 'custom', message: `invalid_public_key: ${key.detail}` });
  });

const subjectArgs = {
  agent_pk: agentKey
    .optional()
    .describe(
      "the agent to answer for: its Ed25519 public key, 64 lowercase hex (default: the server's configured subject)",
    )
    .meta({ examples: ['3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29'] }),
  delegation_chain: z
    .union([
      z.string().min(1).max(MAX_CHAIN_TEXT),
      z.record(z.string(), z.unknown()),
      z.array(z.record(z.string(), z.unknown())).min(1).max(MAX_CHAIN_LENGTH),
    ])
    .optional()
    .describe(
      'the delegation certificate or chain (root first) to judge: JSON, or base64 of it as in x-svc-delegation-cert ' +
        '(default: the chain the server knows for agent_pk)',
    )
    .meta({ examples: ['W3sidmVyc2lvbiI6MSwiYWdlbnRfcGsiOiIuLi4ifV0='] }),
};

const instant = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()])
  .describe('ISO 8601 date-time with Z or an offset, or a date')
  .meta({ examples: ['2026-03-01T00:00:00Z', '2026-03-01'] });

const jurisdictionArgs = {
  h3_cell: cellArgument('the cell the agent wants to act in'),
  facet: z
    .string()
    .min(1)
    .max(200)
    .describe('the capability to exercise (a facet of the certificate)')
    .meta({ examples: ['perception'] }),
  ...subjectArgs,
};
const delegationArgs = {
  tool_name: z
    .string()
    .min(1)
    .max(200)
    .describe('the MCP tool the agent wants to call')
    .meta({ examples: ['perception_weather'] }),
  h3_cell: cellArgument(
    'the cell the tool would act in, for the tool policy (default: the certificate cells)',
  ).optional(),
  ...subjectArgs,
};
const auditArgs = {
  ...subjectArgs,
  agent_pk: subjectArgs.agent_pk.describe("the audited agent (default: the server's configured subject)"),
  from: instant.optional().describe(`start of the period, ISO 8601 (default ${DEFAULT_REPORT_FROM})`),
  to: instant.optional().describe('end of the period, ISO 8601 (default now)'),
};

type SubjectArgs = { agent_pk?: string | undefined; delegation_chain?: unknown };

/** The agent and the chain a call judges (module comment). */
function resolveSubject(
  chains: ChainBook,
  args: SubjectArgs,
): { agentPk: string; chain: DelegationCertificate[] | undefined } {
  if (args.delegation_chain !== undefined) {
    const parsed = parseChainArgument(args.delegation_chain);
    if (!parsed.ok) throw new GovernanceToolError('invalid_request', `delegation_chain: ${parsed.detail}`);
    const last = parsed.value[parsed.value.length - 1]?.agent_pk as string;
    // The subject of every answer (and of an evidence bundle) is this agent: it must be a usable key.
    const key = checkPublicKey(last);
    if (!key.ok) {
      throw new GovernanceToolError(
        'invalid_public_key',
        `delegation_chain delegates to agent ${last}, which is not a usable Ed25519 key: ${key.detail}`,
      );
    }
    if (args.agent_pk !== undefined && args.agent_pk !== last) {
      throw new GovernanceToolError(
        'invalid_request',
        `delegation_chain delegates to agent ${last}, not to agent_pk ${args.agent_pk}`,
      );
    }
    return { agentPk: last, chain: parsed.value };
  }
  const agentPk = args.agent_pk ?? chains.subjectPk;
  if (agentPk === null) {
    throw new GovernanceToolError(
      'delegation_required',
      'no delegation certificate is configured (IDN_DELEGATION_CERT): pass agent_pk and delegation_chain',
    );
  }
  return { agentPk, chain: chains.chainOf(agentPk) };
}

function requireChain(agentPk: string, chain: DelegationCertificate[] | undefined): DelegationCertificate[] {
  if (chain === undefined) {
    throw new GovernanceToolError(
      'delegation_required',
      `no delegation certificate is known for agent ${agentPk}: pass delegation_chain`,
    );
  }
  return chain;
}

function periodOf(args: { from?: string | undefined; to?: string | undefined }, nowMs: number) {
  const from = new Date(Date.parse(args.from ?? DEFAULT_REPORT_FROM)).toISOString();
  const to = new Date(args.to === undefined ? nowMs : Date.parse(args.to)).toISOString();
  if (Date.parse(from) > Date.parse(to)) {
    throw new GovernanceToolError('invalid_date', `from ${from} is after to ${to}`);
  }
  return { from, to };
}

export function createGovernanceTools(deps: GovernanceToolDeps): AnyGovernanceTool[] {
  const { chains, clock } = deps;
  const trust = deps.trustedPrincipals === undefined ? {} : { trustedPrincipals: deps.trustedPrincipals };

  const jurisdiction: GovernanceTool<typeof jurisdictionArgs> = {
    name: 'verify_jurisdiction',
    title: 'Verify an agent may act in a cell',
    description:
      "Checks an agent's delegation certificate (chain to the human principal): signatures, temporal bounds, " +
      'the H3 cell (inside an authorized cell by H3 containment) and the facet. Answers authorized, each check, ' +
      'agent_pk, principal_pk, valid_until, the errors and the jurisdiction of the cell (country, frameworks).',
    inputSchema: jurisdictionArgs,
    outputSchema: { authorized: z.boolean().describe('whether the agent may act in the cell with the facet') },
    async run(args) {
      const { agentPk, chain } = resolveSubject(chains, args);
      return verifyJurisdiction({
        chain: requireChain(agentPk, chain),
        h3Cell: args.h3_cell,
        facet: args.facet,
        nowMs: clock(),
        ...trust,
      });
    },
  };

  const delegation: GovernanceTool<typeof delegationArgs> = {
    name: 'check_delegation_chain',
    title: 'Check an agent may call a tool',
    description:
      "Verifies an agent's delegation chain up to its human principal (every signature, link and narrowing, " +
      'temporal bounds) and whether tool_name is allowed (in allowed_tools, by default the docs/protocol.md §4.3 whitelist, and ' +
      'not in denied_tools), and whether the tool policy (TOOL_POLICY_FILE) allows it in h3_cell or the certificate ' +
      'cells at the agent tier. Answers authorized, human_principal_pk, agent_pk, signature_valid, tool_allowed, ' +
      'allowed_tools, depth, cert_hash and tool_policy {allowed, cells, agent_tier, rule, jurisdiction, detail}.',
    inputSchema: delegationArgs,
    outputSchema: { authorized: z.boolean().describe('whether the chain verifies and allows the tool') },
    async run(args) {
      const { agentPk, chain } = resolveSubject(chains, args);
      const judged = requireChain(agentPk, chain);
      const epochs = await deps.store.epochs(agentPk);
      return checkDelegationChain({
        chain: judged,
        toolName: args.tool_name,
        nowMs: clock(),
        ...trust,
        policy: {
          toolPolicy: deps.toolPolicy ?? EMPTY_TOOL_POLICY,
          agentTier: epochs.at(-1)?.tier_at_close ?? 'provisioned',
          cells: args.h3_cell === undefined ? undefined : [args.h3_cell],
        },
      });
    },
  };

  const audit: GovernanceTool<typeof auditArgs> = {
    name: 'generate_audit_proof',
    title: 'Signed compliance evidence bundle of an agent',
    description:
      "Evidence of what an agent did in a period, signed by this server: the compliance report, the agent's audit " +
      'chain blocks, the epoch seals with a Merkle inclusion proof for every block, the delegation chain, trust ' +
      'score, violations and the regulatory basis (EU AI Act Art. 12, Art. 14). Check it offline with ' +
      '`geofabric audit verify bundle.json`.',
    inputSchema: auditArgs,
    outputSchema: {
      bundle: z
        .looseObject({ agent_pk: z.string().describe('the audited agent') })
        .describe(
          'the signed evidence bundle; the text block is this bundle alone, as `geofabric audit verify` reads it',
        ),
    },
    document: 'bundle',
    async run(args, signal) {
      const { agentPk, chain } = resolveSubject(chains, args);
      // Unlike the other tools, an agent without a known certificate still gets its chain's evidence.
      return generateAuditProof(
        {
          store: deps.store,
          compliance: deps.compliance,
          key: deps.key,
          clock,
          ...(deps.maxBundleBlocks === undefined ? {} : { maxBlocks: deps.maxBundleBlocks }),
        },
        { agentPk, period: periodOf(args, clock()), chain: chain ?? null, ...(signal ? { signal } : {}) },
      );
    },
  };

  return [jurisdiction, audit, delegation];
}

/** What a failed call may tell its caller; anything unexpected is reported as an internal error only. */
function failure(name: string, error: unknown, onError?: (error: unknown) => void): CallToolResult {
  if (error instanceof GovernanceToolError)
    return errorResult(error.code, error.message, `${name} failed (${error.code}): ${error.message}`);
  if (error instanceof ServiceError) {
    const detail = error.detail ?? '';
    return errorResult(error.code, detail, `${name} failed (${error.code}): ${detail}`);
  }
  onError?.(error);
  const detail = 'the tool failed with an internal error';
  return errorResult('internal_error', detail, `${name} failed (internal_error): ${detail}`);
}

/** Registers the tools on `server`: structured results (mcp/shared/structured.ts) with their JSON as text. */
export function registerGovernanceTools(
  server: McpServer,
  tools: readonly AnyGovernanceTool[],
  onError?: (error: unknown) => void,
): void {
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        // Strict: an argument the tool does not know is refused, not silently dropped.
        inputSchema: z.strictObject(tool.inputSchema),
        outputSchema: outputSchemaOf(tool.outputSchema),
      },
      // The SDK has validated the arguments against inputSchema (an error names the field).
      (async (args: Record<string, unknown>, extra: { signal?: AbortSignal }) => {
        try {
          const cell = typeof args.h3_cell === 'string' ? args.h3_cell : undefined;
          return okResult(await tool.run(args, extra.signal), cell, tool.document);
        } catch (error) {
          return failure(tool.name, error, onError);
        }
      }) as never,
    );
  }
}
