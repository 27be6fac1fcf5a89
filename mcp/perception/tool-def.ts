/**
 * A perception tool as the audit wrapper registers it (issue 8): nothing reaches the MCP server except
 * through `mcp/perception/audit.ts`, which runs the pre-flight before `run` and writes the breadcrumb after.
 */
import type { z } from 'zod';

export interface PerceptionToolContext {
  /** The agent the call runs for (the server's own, or the bearer token's). */
  agentPk: string;
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
  /** The delegation facet the call exercises (a certificate's `facets` must contain it). */
  facet: string;
  /** The H3 cell the call acts in, for the jurisdiction check and the breadcrumb (default: the server's cell). */
  cellOf?: (args: z.infer<z.ZodObject<Shape>>) => string | undefined;
  /** The tool's work; its return value is the JSON text of the MCP result. Throw ToolError for a clean tool error. */
  run(args: z.infer<z.ZodObject<Shape>>, context: PerceptionToolContext): Promise<unknown>;
  /** MCP `_meta` of the tool (e.g. `ui.resourceUri` for an MCP App). */
  meta?: Record<string, unknown>;
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
