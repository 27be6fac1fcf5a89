/**
 * The tools a request can cause to run, collected in one place for every entry point, so gate 3 (delegation) and
 * gate 5 (the tool policy, docs/security.md "The fifth gate") judge the same set wherever a request comes in:
 *
 * - `body`: a gateway request body, whatever its route. Compute steps' `tools` (`steps[].tools`); a chat
 *   completion's `svc.tools` and the names of its OpenAI function tools (`tools[].function.name`), the client's
 *   own tools included: a name that differs from a registry id only in case, width or spacing is judged as that
 *   id. A new route that can run a tool names its field here.
 * - `mcp`: the MCP tool a `tools/call` names.
 * - `taken`: the tools a step or completion carries when a worker takes it up.
 *
 * Read defensively: the body has not been schema-checked when gates 2, 3 and 5 collect it.
 */

/**
 * A tool name as the gates compare it: Unicode NFKC (fullwidth and compatibility forms fold to ASCII), without
 * default-ignorable code points (zero-width spaces, joiners), dashes as `-`, trimmed, lower case.
 */
export function normalizeToolName(name: string): string {
  return name
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .replace(/\p{Dash_Punctuation}/gu, '-')
    .trim()
    .toLowerCase();
}

export type ToolSource =
  | { kind: 'body'; body: unknown }
  | { kind: 'mcp'; tool: string }
  | { kind: 'taken'; tools: readonly string[] | undefined };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The tools a request can cause to run: normalised, each once, in the order first named. */
export function toolScope(source: ToolSource): string[] {
  const tools = new Set<string>();
  const add = (name: unknown): void => {
    if (typeof name !== 'string') return;
    const normal = normalizeToolName(name);
    if (normal !== '') tools.add(normal);
  };
  switch (source.kind) {
    case 'mcp':
      add(source.tool);
      break;
    case 'taken':
      for (const tool of source.tools ?? []) add(tool);
      break;
    case 'body': {
      const body = isRecord(source.body) ? source.body : {};
      // Compute (docs/protocol.md §2.2): each step's required tools.
      if (Array.isArray(body.steps)) {
        for (const step of body.steps) if (isRecord(step) && Array.isArray(step.tools)) step.tools.forEach(add);
      }
      // Chat (docs/protocol.md §4.1): registry tools by id, and OpenAI function tools by name.
      if (isRecord(body.svc) && Array.isArray(body.svc.tools)) body.svc.tools.forEach(add);
      if (Array.isArray(body.tools)) {
        for (const tool of body.tools) if (isRecord(tool) && isRecord(tool.function)) add(tool.function.name);
      }
      break;
    }
  }
  return [...tools];
}
