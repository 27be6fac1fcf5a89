import type { InferenceResult } from '../../activities/inference/index.js';

/** The OpenAI-shaped parts of a chat answer, whole or streamed, and Geofabric's `svc` object. */

/** The `svc` object of an answer (see the route's comment). */
export function svcObject(result: InferenceResult, withLocations: boolean) {
  const p = result.payload;
  return {
    job_id: p.job_id,
    worker_pk: p.worker_pk,
    provider: p.provider,
    model: p.model,
    requested_model: p.requested_model,
    h3_cell: p.h3_cell,
    proof_record_id: result.recordId,
    epoch: p.epoch,
    cost: p.cost,
    cold_start: p.cold_start,
    latency_ms: p.latency_ms,
    fallback_reason: p.fallback_reason,
    usage_estimated: p.usage_estimated,
    tool_calls: p.tool_calls,
    ...(withLocations ? { locations: result.locations ?? [] } : {}),
  };
}

export const usageObject = (result: InferenceResult) => ({
  prompt_tokens: result.payload.tokens_in,
  completion_tokens: result.payload.tokens_out,
  total_tokens: result.payload.tokens_in + result.payload.tokens_out,
});

export function completionBody(result: InferenceResult, created: number, withLocations: boolean) {
  return {
    id: `chatcmpl-${result.payload.job_id}`,
    object: 'chat.completion',
    created,
    model: result.payload.model,
    choices: [{ index: 0, message: result.message, logprobs: null, finish_reason: result.finishReason }],
    usage: usageObject(result),
    svc: svcObject(result, withLocations),
  };
}
