/**
 * Server-side tool calling: the model may call registry tools (web-search …) while answering. Each
 * round the model's `tool_calls` run through the tool executor and their results go back as `tool`
 * messages; after `maxRounds` rounds the model must answer (`tool_choice: none`). Bounded, so a model that
 * keeps calling tools cannot hold a worker or spend without end.
 *
 * Tools the gateway does not run (a client's own function tools) stay the client's, as in OpenAI's API: a
 * round whose calls name any of them ends the loop and goes back to the client as `tool_calls`.
 */
import type {
  ChatCompletion,
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
import type { ToolExecutor, ToolResult } from '../tools/execute-tool.js';
import type { CompletionParams, RuntimeClient } from './runtime-client.js';

/** What the loop needs of the tool executor. */
export type ToolRunner = Pick<ToolExecutor, 'execute'>;

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface LoopOutcome {
  completion: ChatCompletion;
  /** Summed over all rounds; null when a round did not report usage. */
  usage: Usage | null;
  toolCalls: number;
}

/** Longest tool result handed back to the model (characters): small models have small contexts. */
export const MAX_TOOL_OUTPUT = 8_000;

export interface LoopInput {
  client: RuntimeClient;
  params: CompletionParams;
  serverTools: ReadonlySet<string>;
  runner: ToolRunner | undefined;
  maxRounds: number;
  signal?: AbortSignal | undefined;
}

export async function runToolLoop(input: LoopInput): Promise<LoopOutcome> {
  const { client, serverTools, runner } = input;
  const messages: ChatCompletionMessageParam[] = [...input.params.messages];
  let usage: Usage | null = { prompt_tokens: 0, completion_tokens: 0 };
  let toolCalls = 0;
  for (let round = 0; ; round++) {
    const last = round >= input.maxRounds;
    const params: CompletionParams = { ...input.params, messages, ...(last ? { tool_choice: 'none' } : {}) };
    const completion = await client.complete(params, input.signal);
    usage = completion.usage && usage ? addUsage(usage, completion.usage) : null;
    const message = completion.choices[0]?.message;
    const calls = message?.tool_calls ?? [];
    const ours = calls.filter(
      (c): c is ChatCompletionMessageFunctionToolCall => c.type === 'function' && serverTools.has(c.function.name),
    );
    if (last && ours.length > 0 && ours.length === calls.length && message) {
      // Out of rounds and the model still asks for our tools: the client cannot run them, so they are
      // dropped and what text the model gave is the answer.
      const { tool_calls: _dropped, ...rest } = message;
      const choice = {
        ...completion.choices[0]!,
        message: { ...rest, content: rest.content ?? '' },
        finish_reason: 'stop' as const,
      };
      return { completion: { ...completion, choices: [choice] }, usage, toolCalls };
    }
    if (last || calls.length === 0 || ours.length < calls.length || !runner) {
      return { completion, usage, toolCalls };
    }
    messages.push({ role: 'assistant', content: message?.content ?? null, tool_calls: ours });
    for (const call of ours) {
      toolCalls++;
      messages.push({ role: 'tool', tool_call_id: call.id, content: await runCall(runner, call) });
    }
  }
}

const addUsage = (a: Usage, b: Usage): Usage => ({
  prompt_tokens: a.prompt_tokens + b.prompt_tokens,
  completion_tokens: a.completion_tokens + b.completion_tokens,
});

/** The tool message content: the output as JSON, or an error the model can read and recover from. */
async function runCall(runner: ToolRunner, call: ChatCompletionMessageFunctionToolCall): Promise<string> {
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments || '{}');
  } catch {
    return JSON.stringify({ error: 'the tool arguments are not valid JSON' });
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    return JSON.stringify({ error: 'the tool arguments must be a JSON object' });
  }
  let result: ToolResult;
  try {
    result = await runner.execute(call.function.name, args as Record<string, unknown>);
  } catch {
    result = { ok: false, error: 'the tool failed' };
  }
  const text = JSON.stringify(result.ok ? result.output : { error: result.error }) ?? 'null';
  return text.length > MAX_TOOL_OUTPUT ? `${text.slice(0, MAX_TOOL_OUTPUT)}…(truncated)` : text;
}
