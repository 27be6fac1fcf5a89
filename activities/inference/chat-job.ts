/**
 * One inference as the swarm runs it, whoever asked (a chat completion or a compound-job step): the model
 * asked for, the conversation, sampling, tools and where it runs. Built by the HTTP layer from an OpenAI
 * request (api/schemas/chat-request.ts) or by `runInference` from a step.
 */
import type {
  ChatCompletionFunctionTool,
  ChatCompletionMessageParam,
  ChatCompletionToolChoiceOption,
} from 'openai/resources/chat/completions';
import type { ModelInfo } from '../../core/model-registry.js';
import type { WorkerTier } from '../../core/tiers.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { withLocationsInstruction } from './locations.js';
import type { CompletionParams } from './runtime-client.js';

export interface Sampling {
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  stop?: string | string[];
  seed?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
}

export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; schema?: Record<string, unknown>; strict?: boolean | null } };

export interface ChatJob {
  jobId: string;
  /** Compound-job step; null for a chat completion. */
  stepId: string | null;
  model: ModelInfo;
  messages: ChatCompletionMessageParam[];
  sampling: Sampling;
  /** Function tools the client runs itself (passed through, OpenAI semantics). */
  clientTools: ChatCompletionFunctionTool[];
  /** Registry tools the gateway runs (server-side tool calling); they constrain worker choice. */
  serverTools: ChatCompletionFunctionTool[];
  toolChoice?: ChatCompletionToolChoiceOption;
  responseFormat?: ResponseFormat;
  /** Ask the model for `{text, locations}` JSON (docs/protocol.md §2.3 locations). */
  wantLocations: boolean;
  /** Job cell (gate 2): the record's address; nearer workers are preferred. */
  cell: string;
  jurisdiction: string | null;
  minTier: WorkerTier | null;
  apiKeyId: string | null;
}

/** The upstream request for `wireModel`: the JSON instruction and format when locations are wanted. */
export function upstreamParams(job: ChatJob, wireModel: string): CompletionParams {
  const tools = [...job.clientTools, ...job.serverTools];
  const format = job.wantLocations ? { type: 'json_object' as const } : job.responseFormat;
  return {
    model: wireModel,
    messages: job.wantLocations ? withLocationsInstruction(forRuntimes(job.messages)) : forRuntimes(job.messages),
    ...job.sampling,
    ...(tools.length > 0 ? { tools } : {}),
    ...(job.toolChoice !== undefined && tools.length > 0 ? { tool_choice: job.toolChoice } : {}),
    ...(format ? { response_format: format as CompletionParams['response_format'] } : {}),
  };
}

/** `developer` is OpenAI's newer name for `system`; the small models' chat templates know only `system`. */
const forRuntimes = (messages: ChatCompletionMessageParam[]): ChatCompletionMessageParam[] =>
  messages.map((m) => (m.role === 'developer' ? { role: 'system', content: m.content } : m));

/**
 * The record's two request hashes: `prompt`, SHA-256 of JCS of the conversation as the client sent it; `job`,
 * SHA-256 of JCS of the normalized request (what was asked, independent of who answered):
 * `{job_id, step_id, model, messages, sampling, tools (names, sorted), response_format, want_locations, h3_cell}`.
 * The conversation, most of both texts, is canonicalised once: the request's JCS is written out with its keys
 * in JCS order (UTF-16 code units) and the conversation's text in place.
 */
export function requestHashes(job: ChatJob): { prompt: string; job: string } {
  const messages = canonicalJson(job.messages);
  const tools = [...job.clientTools, ...job.serverTools].map((t) => t.function.name).sort();
  const request =
    `{"h3_cell":${canonicalJson(job.cell)},"job_id":${canonicalJson(job.jobId)},"messages":${messages}` +
    `,"model":${canonicalJson(job.model.id)},"response_format":${canonicalJson(job.responseFormat ?? null)}` +
    `,"sampling":${canonicalJson(job.sampling)},"step_id":${canonicalJson(job.stepId)}` +
    `,"tools":${canonicalJson(tools)},"want_locations":${canonicalJson(job.wantLocations)}}`;
  return { prompt: sha256Hex(messages), job: sha256Hex(request) };
}
