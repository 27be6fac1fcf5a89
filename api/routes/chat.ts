import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import type { ChatJob, Swarm } from '../../activities/inference/index.js';
import { newJobId } from '../../activities/inference/index.js';
import { InferenceAborted } from '../../activities/inference/runtime-client.js';
import { isRegistryTool } from '../../activities/inference/tool-definitions.js';
import { fail, pass, type Check } from '../../core/check.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import type { ModelInfo } from '../../core/model-registry.js';
import { reserveChatMessage, type ChatCharge } from '../chat-quota.js';
import { route, type GateState } from '../route-spec.js';
import { chatRequestSchema, type ChatRequest } from '../schemas/chat-request.js';
import { chatCompletionSchema } from '../schemas/swarm-responses.js';
import { zodCheck } from '../schemas/zod-check.js';
import { completionBody } from './chat-response.js';
import { streamChat } from './chat-stream.js';

/**
 * `POST /v1/chat/completions` (docs/protocol.md §4.1, §5.3): OpenAI-compatible, with an API key (`Authorization: Bearer`),
 * streaming as SSE when `stream: true`. The same routes are the public `{app_url}/v1` base: APP_URL is this
 * gateway (or a proxy in front of it) and needs nothing else.
 *
 * Every answer carries `usage` and an `svc` object: job_id, worker_pk, provider, model, h3_cell,
 * proof_record_id, epoch, cost, cold_start, latency_ms, fallback_reason (why the backbone answered for a
 * worker model), usage_estimated, tool_calls, and `locations` when `svc.locations` asked for them.
 *
 * Order of refusals: 401 unauthorized (gate), 400 invalid_request / invalid_model (pre-flight), 403
 * tool_not_permitted (gate 5 over `svc.tools` and the function tools' names; again when the worker takes it), 429
 * quota_exceeded (free tier, counted per answered request: one that fails after it, 503 no_workers included,
 * gives its message back), 503 no_workers, 502 runtime_unavailable / backbone_unavailable, 504 upstream_timeout.
 * Errors are written in OpenAI's shape (`errorStyle: 'openai'`, core/openai-errors.ts).
 */
export interface ChatInput {
  request: ChatRequest;
  model: ModelInfo;
  clientTools: ChatCompletionFunctionTool[];
  serverTools: ChatCompletionFunctionTool[];
}

/** The route's path; whole completions on it are answered before Koa (api/chat-lane.ts). */
export const CHAT_ROUTE = '/v1/chat/completions';

export const chatRoutes = (swarm: Swarm) => [
  route<ChatInput>({
    method: 'POST',
    path: CHAT_ROUTE,
    auth: 'api_key',
    errorStyle: 'openai',
    jsonBody: true,
    defaultCell: DEFAULT_JOB_CELL,
    facets: ['inference'],
    preflight: ({ body }) => checkChat(swarm, body),
    handler: async (ctx, input, gates) => {
      const { apiKey } = gates;
      const charge = apiKey ? await reserveChatMessage(swarm.quota, apiKey, swarm.freeMessagesPerDay) : undefined;
      const job = chatJob(input, gates);
      const aborted = new AbortController();
      ctx.res.once('close', () => {
        if (!ctx.res.writableFinished) aborted.abort();
      });
      const withLocations = input.request.svc?.locations === true;
      const includeUsage = input.request.stream_options?.include_usage === true;
      try {
        if (input.request.stream) {
          const answered = await streamChat(ctx, swarm, job, aborted.signal, { withLocations, includeUsage });
          if (!answered) await refund(charge);
          return;
        }
        const result = await swarm.chat(job, aborted.signal);
        // Serialised here, its type set as Koa would set it: Koa would look the type up again on every answer.
        ctx.set('content-type', JSON_TYPE);
        ctx.body = JSON.stringify(completionBody(result, Math.floor(swarm.now() / 1000), withLocations));
      } catch (error) {
        // Not answered: the message is not counted against the free tier.
        await refund(charge);
        if (!(error instanceof InferenceAborted)) throw error;
        // The client went away and the upstream call was stopped: there is nobody to answer.
        ctx.respond = false;
        ctx.res.destroy();
      }
    },
    docs: {
      summary: 'Chat completion (OpenAI-compatible)',
      description:
        'The OpenAI chat completions request, text only, n = 1; `stream: true` answers server-sent events ending in ' +
        '`data: [DONE]`. Geofabric adds `h3_cell` (the job cell) and `svc: {locations?, tools?}`; every answer has ' +
        '`usage` and an `svc` object (worker, provider, proof record, epoch, cost). Free keys have a daily quota.',
      tags: ['Chat'],
      body: chatRequestSchema,
      responses: {
        200: {
          description: 'The completion, or its SSE stream when `stream: true`',
          schema: chatCompletionSchema,
          contentTypes: ['application/json', 'text/event-stream'],
        },
      },
      errors: [
        'invalid_request',
        'invalid_model',
        'tool_not_permitted',
        'quota_exceeded',
        'runtime_unavailable',
        'backbone_unavailable',
        'no_workers',
        'upstream_timeout',
      ],
    },
  }),
];

/** What Koa answers a JSON body with. */
export const JSON_TYPE = 'application/json; charset=utf-8';

/** A refund that fails (store out of reach) costs the caller one message; it must not hide the request's own error. */
export const refund = (charge: ChatCharge | undefined) => charge?.refund().catch(() => undefined);

function checkChat(swarm: Swarm, body: unknown): Check<ChatInput> {
  const parsed = zodCheck(chatRequestSchema, body);
  if (!parsed.ok) return parsed;
  const request = parsed.value;
  const model = swarm.models.check(request.model ?? swarm.models.defaultModel);
  if (!model.ok) return model;
  const clientTools: ChatCompletionFunctionTool[] = [];
  const serverIds = new Set<string>();
  for (const tool of request.tools ?? []) {
    if (isRegistryTool(tool.function.name)) serverIds.add(tool.function.name);
    else clientTools.push(tool as ChatCompletionFunctionTool);
  }
  for (const id of request.svc?.tools ?? []) {
    if (!isRegistryTool(id))
      return fail('invalid_request', `svc.tools: no registered tool "${id}" (see GET /v1/tools)`);
    serverIds.add(id);
  }
  return pass({ request, model: model.value, clientTools, serverTools: swarm.toolDefinitions([...serverIds]) });
}

export function chatJob(input: ChatInput, gates: GateState): ChatJob {
  const { request } = input;
  const place = gates.place;
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  const sampling: ChatJob['sampling'] = {};
  if (maxTokens != null) sampling.max_tokens = maxTokens;
  if (request.temperature != null) sampling.temperature = request.temperature;
  if (request.top_p != null) sampling.top_p = request.top_p;
  if (request.stop != null) sampling.stop = request.stop;
  if (request.seed != null) sampling.seed = request.seed;
  if (request.presence_penalty != null) sampling.presence_penalty = request.presence_penalty;
  if (request.frequency_penalty != null) sampling.frequency_penalty = request.frequency_penalty;
  const job: ChatJob = {
    jobId: newJobId(),
    stepId: null,
    model: input.model,
    messages: request.messages as ChatJob['messages'],
    sampling,
    clientTools: input.clientTools,
    serverTools: input.serverTools,
    wantLocations: request.svc?.locations === true,
    cell: place?.jobCell ?? DEFAULT_JOB_CELL,
    jurisdiction: place?.workerJurisdiction ?? null,
    minTier: place?.minWorkerTier ?? null,
    apiKeyId: gates.apiKey?.id ?? null,
  };
  if (request.tool_choice !== undefined) job.toolChoice = request.tool_choice;
  if (request.response_format !== undefined) job.responseFormat = request.response_format;
  return job;
}
