/**
 * `POST /v1/chat/completions` bodies (docs/protocol.md §4.1): the OpenAI chat completions request, text only, n = 1.
 * Unknown OpenAI fields are ignored rather than refused, as clients send many (logprobs, metadata …).
 *
 * Geofabric extensions: `h3_cell` (the job cell, like the x-svc-h3-cell header) and
 * `svc: { locations?: boolean, tools?: string[] }`: `locations` asks for the places the answer names
 * (docs/protocol.md §2.3, returned in `svc.locations`), `tools` names registry tools the model may call (the same as
 * listing them in `tools` as function tools named by their registry id).
 */
import { z } from 'zod';

const MAX_TEXT = 200_000;
const text = z.string().max(MAX_TEXT);
const textPart = z.object({ type: z.literal('text'), text });
/** Text parts are joined: the registry's models read text only. */
const content = z
  .union([text, z.array(textPart, 'only text content parts are supported').min(1).max(64)])
  .transform((c) => (typeof c === 'string' ? c : c.map((p) => p.text).join('\n')));
const name = z.string().max(64).optional();

const toolCall = z.object({
  id: z.string().max(128),
  type: z.literal('function'),
  function: z.object({ name: z.string().max(64), arguments: z.string().max(MAX_TEXT) }),
});

const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content, name }),
  z.object({ role: z.literal('developer'), content, name }),
  z.object({ role: z.literal('user'), content, name }),
  z.object({
    role: z.literal('assistant'),
    content: content.nullable().optional(),
    tool_calls: z.array(toolCall).max(64).optional(),
    name,
  }),
  z.object({ role: z.literal('tool'), content, tool_call_id: z.string().max(128) }),
]);

const functionTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'function names are 1-64 characters of A-Z a-z 0-9 _ -'),
    description: z.string().max(4096).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullable().optional(),
  }),
});

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: z.string().max(64) }) }),
]);

const responseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().max(64),
      description: z.string().max(4096).optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

const optional = <T extends z.ZodType>(schema: T) => schema.nullable().optional();
const tokens = z.int().min(1).max(131_072);

export const chatRequestSchema = z.object({
  model: z.string().min(1).max(128).optional(),
  messages: z.array(message).min(1).max(512),
  stream: optional(z.boolean()),
  stream_options: optional(z.object({ include_usage: z.boolean().optional() })),
  max_tokens: optional(tokens),
  max_completion_tokens: optional(tokens),
  temperature: optional(z.number().min(0).max(2)),
  top_p: optional(z.number().min(0).max(1)),
  n: optional(z.literal(1, 'only n = 1 is supported')),
  stop: optional(z.union([z.string().max(256), z.array(z.string().max(256)).max(4)])),
  seed: optional(z.int()),
  presence_penalty: optional(z.number().min(-2).max(2)),
  frequency_penalty: optional(z.number().min(-2).max(2)),
  tools: z.array(functionTool).max(64).optional(),
  tool_choice: toolChoice.optional(),
  response_format: responseFormat.optional(),
  user: z.string().max(256).optional(),
  h3_cell: z.string().optional(),
  svc: z
    .object({
      locations: z.boolean().optional(),
      tools: z.array(z.string().min(1).max(64)).max(16).optional(),
    })
    .optional(),
});
export type ChatRequest = z.output<typeof chatRequestSchema>;
