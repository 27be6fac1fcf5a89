/**
 * A perception tool as the audit wrapper registers it: nothing reaches the MCP server except
 * through `mcp/perception/audit.ts`, which runs the pre-flight before `run` and writes the breadcrumb after.
 * A tool may declare an authorization mapping (`coaz`): tools/list publishes it in the tool's `_meta`
 * as `{ coaz: true, 'x-coaz-mapping': … }`, and the auditor evaluates and checks it before `run`.
 */
import type { z } from 'zod';
import type { CoazMapping } from '../../core/coaz-mapping.js';

export interface PerceptionToolContext {
  /**
   * The server's own agent: the one whose certificate the call runs under and whose chain records it ("own
   * agent" of the idn_* tools), also when the call runs on behalf of a token's agent.
   */
  agentPk: string;
  /** The bearer token's agent and token id, when the call runs on behalf of one (audit.ts). */
  onBehalfOf?: { agentPk: string; jti: string };
  /** ms since the Unix epoch (injected). */
  now: number;
  signal?: AbortSignal;
}

export interface PerceptionTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  /** zod raw shape (the MCP SDK's `inputSchema`): bad arguments become a tool error naming the field. */
  inputSchema: Shape;
  /**
   * The fields of a successful result (zod raw shape), declared in the tool's `outputSchema` beside `status`,
   * `code`/`detail` and `lat`/`lon` (mcp/shared/structured.ts).
   */
  outputSchema?: z.ZodRawShape;
  /** The delegation facet the call exercises (a certificate's `facets` must contain it). */
  facet: string;
  /** The H3 cell the call acts in, for the jurisdiction check and the breadcrumb (default: the server's cell). */
  cellOf?: (args: z.infer<z.ZodObject<Shape>>) => string | undefined;
  /** The tool's work; its return value is the JSON text of the MCP result. Throw ToolError for a clean tool error. */
  run(args: z.infer<z.ZodObject<Shape>>, context: PerceptionToolContext): Promise<unknown>;
  /** MCP `_meta` of the tool (e.g. `ui.resourceUri` for an MCP App). */
  meta?: Record<string, unknown>;
  /** CEL authorization mapping (core/coaz-mapping.ts), checked against the certificate before `run`. */
  coaz?: CoazMapping;
  /** Runs only for a bearer token of the server's own principal (audit.ts rollRefusal): idn_roll_epoch. */
  principalOnly?: boolean;
}

/** A failure the tool explains to the caller (an MCP result with `isError: true`), e.g. "not configured". */
export class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

/**
 * The authorization mapping of a tool acting in `params.h3_cell`: the subject is the bearer token's agent when
 * the call runs on behalf of one, else the server's own agent; the action is the tool; the resource is the
 * cell; the context adds the cell's regulations and country and the acting agent's trust tier, plus `extra`
 * entries (name → CEL expression).
 */
export function cellToolCoaz(extra: Record<string, string> = {}): CoazMapping {
  return {
    subject: 'claims != null ? claims.idn_agent_pk : context.agent_identity',
    action: 'tool',
    resource: 'params.h3_cell',
    context: {
      regulation: 'context.jurisdiction.regulation',
      country_code: 'context.jurisdiction.country_code',
      trust_tier: 'claims != null ? claims.idn_trust_tier : context.delegation.trust_tier',
      ...extra,
    },
  };
}
