import { ServiceError } from '../../core/errors.js';
import { describeZodIssue } from '../../core/zod-issue.js';
import { TOOL_INPUT_SCHEMAS, toolById, WEB_SEARCH_DEFAULT_COUNT, type ToolInput } from '../../core/tool-registry.js';
import type { WebSearch } from './web-search.js';

/**
 * Runs a registry tool a model called during an inference step (the tool loop in activities/inference).
 * Results are values, not exceptions: a failure is a message the model reads and may recover from (other
 * arguments, another tool, an answer without it). Only programming errors throw.
 */
export type ToolResult = { ok: true; output: unknown } | { ok: false; error: string };

export interface ToolExecutor {
  /** `args` is untrusted model output: it is validated against the tool's input schema first. */
  execute(toolId: string, args: unknown): Promise<ToolResult>;
}

export function createToolExecutor(deps: { webSearch: WebSearch }): ToolExecutor {
  async function webSearch({ query, count }: ToolInput<'web-search'>): Promise<ToolResult> {
    try {
      const found = await deps.webSearch.search(query, count ?? WEB_SEARCH_DEFAULT_COUNT);
      return { ok: true, output: { provider: found.provider, query, results: found.results } };
    } catch (error) {
      if (error instanceof ServiceError)
        return { ok: false, error: `web search failed: ${error.detail ?? error.code}` };
      throw error;
    }
  }

  return {
    async execute(toolId, args) {
      const tool = toolById(toolId);
      if (!tool) return { ok: false, error: `unknown tool ${JSON.stringify(toolId)}` };
      if (!tool.executor)
        return { ok: false, error: `tool ${tool.id} has no executor (registered only, docs/protocol.md §2.7)` };
      const parsed = TOOL_INPUT_SCHEMAS[tool.id].safeParse(args);
      if (!parsed.success) {
        return { ok: false, error: `invalid arguments for ${tool.id}: ${describeZodIssue(parsed.error, 'arguments')}` };
      }
      switch (tool.id) {
        case 'web-search':
          return webSearch(parsed.data as ToolInput<'web-search'>);
        default:
          // A tool flagged `executor: true` without a case here is a registry bug, not a model mistake.
          throw new Error(`tool ${tool.id} is flagged as executable but has no executor`);
      }
    },
  };
}
