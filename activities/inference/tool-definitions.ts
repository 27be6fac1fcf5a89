/**
 * Registry tools (core/tool-registry.ts) as the model sees them: OpenAI function tools named by tool id.
 * A chat request names them in `tools` (a function tool whose name is a registry id) or `svc.tools`; the
 * gateway then runs the model's calls to them (tool-loop.ts) and they constrain which workers may answer.
 */
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import { ServiceError } from '../../core/errors.js';
import { isToolId, openAiToolDefinition, toolById } from '../../core/tool-registry.js';

export { toolMinTiers } from '../../core/tool-registry.js';

export const isRegistryTool = (name: string): boolean => isToolId(name);

/** The registry's definitions of `ids` (deduplicated); an unknown id is a bad request. */
export function toolDefinitions(ids: readonly string[]): ChatCompletionFunctionTool[] {
  return [...new Set(ids)].map((id) => {
    const tool = toolById(id);
    if (!tool) throw new ServiceError('invalid_request', `no registered tool "${id}" (see GET /v1/tools)`);
    return openAiToolDefinition(tool);
  });
}
