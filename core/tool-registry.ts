import { z } from 'zod';
import type { WorkerTier } from './tiers.js';

/**
 * The tool registry (docs/protocol.md §2.7): five seeded tools a model may call during an inference step and a job may
 * require of its worker. Each has a `min_trust_tier`: a job needing the tool is only dispatched to workers
 * at or above it (core/worker-selection.ts). The gates rise with what the tool can do on the worker:
 *
 * - `web-search` seedling: reads public search results through a search API; no local side effects, so
 *   every worker (new workers start at seedling) may run it.
 * - `file-ops` explorer: reads and writes files in the job's sandbox on the worker's disk.
 * - `python-repl`, `code-execution` navigator: run arbitrary code supplied by the model on the worker.
 * - `browser-automation` trailblazer: drives a real browser on the open web (forms, logins, downloads),
 *   the most abuse-prone capability, so only long-trusted workers get it.
 *
 * Only `web-search` has an executor (activities/tools/); the others are registered only (docs/protocol.md §2.7), so a
 * call to them returns an error the model can read. Input schemas are written once, in zod, and published
 * as JSON Schema (`input_schema`, the OpenAI `parameters`); the executor validates with the same zod schema.
 */

export const TOOL_IDS = ['web-search', 'file-ops', 'python-repl', 'browser-automation', 'code-execution'] as const;
export type ToolId = (typeof TOOL_IDS)[number];

/** A JSON Schema object (draft 2020-12) describing a tool's arguments. */
export type JsonSchema = Record<string, unknown>;

export interface Tool {
  id: ToolId;
  name: string;
  description: string;
  input_schema: JsonSchema;
  min_trust_tier: WorkerTier;
  /** Whether Geofabric runs this tool; false: registered only (docs/protocol.md §2.7). */
  executor: boolean;
}

/** The OpenAI `tools` entry a chat request carries for a tool. */
export interface OpenAiToolDefinition {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

const timeoutSeconds = z
  .number()
  .int()
  .min(1)
  .max(60)
  .describe('Wall-clock limit for the run, in seconds (default 10)')
  .optional();

/** Argument schemas, strict: an unknown argument is a model mistake worth reporting back to it. */
export const TOOL_INPUT_SCHEMAS = {
  'web-search': z
    .object({
      query: z.string().trim().min(1).max(400).describe('What to search the web for'),
      count: z.number().int().min(1).max(10).describe('How many results to return (default 5)').optional(),
    })
    .strict(),
  'file-ops': z
    .object({
      operation: z.enum(['read', 'write', 'list', 'delete']).describe('What to do with the path'),
      path: z.string().min(1).max(1024).describe("A path relative to the job's sandbox directory"),
      content: z.string().max(1_000_000).describe('The text to write (operation "write" only)').optional(),
    })
    .strict(),
  'python-repl': z
    .object({
      code: z.string().min(1).max(100_000).describe('Python source to run; the session keeps state between calls'),
      timeout_seconds: timeoutSeconds,
    })
    .strict(),
  'browser-automation': z
    .object({
      url: z.url({ protocol: /^https?$/ }).describe('The page to open'),
      action: z.enum(['extract_text', 'screenshot', 'click', 'fill']).describe('What to do on the page'),
      selector: z.string().min(1).max(1000).describe('CSS selector of the element to act on').optional(),
      text: z.string().max(10_000).describe('The text to type (action "fill" only)').optional(),
    })
    .strict(),
  'code-execution': z
    .object({
      language: z.enum(['python', 'javascript', 'bash']).describe('Language of the code'),
      code: z.string().min(1).max(100_000).describe('Source to run once in a fresh sandbox'),
      timeout_seconds: timeoutSeconds,
    })
    .strict(),
} as const satisfies Record<ToolId, z.ZodType>;

export type ToolInput<Id extends ToolId> = z.output<(typeof TOOL_INPUT_SCHEMAS)[Id]>;

/** Results a `web-search` call returns when it names no `count`. */
export const WEB_SEARCH_DEFAULT_COUNT = 5;

/** JSON Schema of the arguments a caller sends (io: input), without the `$schema` marker OpenAI does not need. */
function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  const { $schema: _marker, ...rest } = z.toJSONSchema(schema, { io: 'input' });
  return rest;
}

const seed = (id: ToolId, name: string, description: string, min_trust_tier: WorkerTier, executor: boolean): Tool => ({
  id,
  name,
  description,
  input_schema: jsonSchemaOf(TOOL_INPUT_SCHEMAS[id]),
  min_trust_tier,
  executor,
});

export const TOOLS: readonly Tool[] = Object.freeze([
  seed(
    'web-search',
    'Web search',
    'Searches the web and returns the top results (title, URL, snippet). Use it for facts that may be recent or ' +
      'that you are unsure of.',
    'seedling',
    true,
  ),
  seed(
    'file-ops',
    'File operations',
    "Reads, writes, lists and deletes files in the job's sandbox directory on the worker.",
    'explorer',
    false,
  ),
  seed(
    'python-repl',
    'Python REPL',
    'Runs Python code in a session that keeps its state between calls and returns stdout, stderr and the value.',
    'navigator',
    false,
  ),
  seed(
    'browser-automation',
    'Browser automation',
    'Opens a web page in a headless browser and extracts its text, takes a screenshot, clicks or fills an element.',
    'trailblazer',
    false,
  ),
  seed(
    'code-execution',
    'Code execution',
    'Runs a program (Python, JavaScript or Bash) once in a fresh sandbox and returns its output and exit code.',
    'navigator',
    false,
  ),
]);

const byId = new Map<string, Tool>(TOOLS.map((tool) => [tool.id, tool]));

export const isToolId = (id: string): id is ToolId => byId.has(id);

/**
 * The first tool any step names that the registry does not have, with where it is (`steps[i].tools[j]`):
 * no worker can advertise it, so such a job is refused at entry instead of waiting for a worker.
 */
export function unknownStepTool(
  steps: readonly { id: string; tools?: readonly string[] | undefined }[],
): { step: string; tool: string; param: string } | null {
  for (const [i, step] of steps.entries()) {
    const j = (step.tools ?? []).findIndex((tool) => !isToolId(tool));
    if (j >= 0) return { step: step.id, tool: step.tools![j]!, param: `steps[${i}].tools[${j}]` };
  }
  return null;
}

/** The registered tool, or undefined for an unknown id. */
export const toolById = (id: string): Tool | undefined => byId.get(id);

/**
 * Each tool's `min_trust_tier`, for worker selection: every registered tool, or only the named ones
 * (unknown names are left out: they have no registry gate).
 */
export function toolMinTiers(ids?: readonly string[]): Record<string, WorkerTier> {
  const tools = ids === undefined ? TOOLS : ids.flatMap((id) => byId.get(id) ?? []);
  return Object.fromEntries(tools.map((tool) => [tool.id, tool.min_trust_tier]));
}

/** The tool as an OpenAI `tools` entry; tool ids already match OpenAI's `^[a-zA-Z0-9_-]{1,64}$` names. */
export function openAiToolDefinition(tool: Tool): OpenAiToolDefinition {
  return {
    type: 'function',
    function: { name: tool.id, description: tool.description, parameters: tool.input_schema },
  };
}
