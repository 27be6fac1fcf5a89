/**
 * Answer bodies of the gateway's small service routes, for the API reference (`/openapi.json`): the error body
 * every route shares, `/health`, the tool registry. Written from the handlers; tests parse real answers with
 * them, so they stay true.
 */
import { z } from 'zod';
import { WORKER_TIERS } from '../../core/tiers.js';
import { TOOL_IDS } from '../../core/tool-registry.js';

/** docs/protocol.md §10: every error is `{ error, detail? }`; some routes add fields (`job_id`, `accepted` …). */
export const errorResponseSchema = z
  .looseObject({
    error: z.string().describe('The error code (docs/protocol.md §7 and core/errors.ts)'),
    detail: z.string().optional().describe('What went wrong, for people'),
  })
  .describe('Error body. Some routes add fields beside `error` and `detail`, each documented with the route.');

/** The error body of the OpenAI-compatible routes, in OpenAI's shape (core/openai-errors.ts). */
export const openAiErrorResponseSchema = z
  .object({
    error: z.object({
      message: z.string().describe('What went wrong, for people'),
      type: z.string().describe('invalid_request_error, requests, insufficient_quota or server_error'),
      param: z.string().nullable().describe('The request field at fault, when one is'),
      code: z.string().nullable().describe("OpenAI's code where it has one (model_not_found …), else ours"),
    }),
  })
  .describe('Error body of the OpenAI-compatible routes (OpenAI shape).');

export const healthResponseSchema = z.object({
  status: z.literal('ok'),
  service: z.literal('geofabric-gateway'),
  version: z.string(),
});

export const serviceIndexSchema = z.object({
  service: z.literal('geofabric-gateway'),
  version: z.string(),
  links: z
    .array(z.object({ rel: z.string(), href: z.string(), title: z.string() }))
    .describe('Where to go from here: the dashboard, the API reference, liveness'),
});

export const toolSchema = z.object({
  object: z.literal('tool'),
  id: z.enum(TOOL_IDS),
  name: z.string(),
  description: z.string(),
  input_schema: z.record(z.string(), z.unknown()).describe('JSON Schema of the arguments (the OpenAI `parameters`)'),
  min_trust_tier: z.enum(WORKER_TIERS),
  executor: z.boolean().describe('Whether Geofabric runs the tool; false: registered only (docs/protocol.md §2.7)'),
});

export const toolListSchema = z.object({ object: z.literal('list'), data: z.array(toolSchema) });

/** The reference itself, loosely: it is described by the OpenAPI 3.1 specification, not here. */
export const openApiDocumentSchema = z
  .looseObject({ openapi: z.literal('3.1.0'), info: z.looseObject({}), paths: z.looseObject({}) })
  .describe('An OpenAPI 3.1 document');
