/**
 * `inference` steps (docs/protocol.md §1.2, §2.2): a model on a swarm worker's runtime or on the backbone, with
 * the tool loop. Its dependencies' outputs reach the model as system messages.
 */
import { z } from 'zod';
import { fail, pass } from '../check.js';
import { modelCost } from '../model-registry.js';
import { isKnownModel } from '../models.js';
import { DEFAULT_MAX_TOKENS, estimateTokens, PRICES } from '../pricing.js';
import { inferenceRun } from './run/inference.js';
import { defineStepType } from './spec.js';

export { MAX_CONTEXT_CHARS, type InferenceStepInput } from './run/inference.js';

const message = z.strictObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().max(100_000),
});

/** The tokens of a run and what each costs on the model that served it (core/model-registry.ts). */
export interface TokensUsed {
  tokens: number;
  price_per_token: number;
}

export const inference = defineStepType({
  type: 'inference',
  fields: {
    model: z.string().min(1).optional(),
    messages: z.array(message).max(256).optional(),
    max_tokens: z.int().min(1).max(32_768).optional(),
    // The job's required tools (docs/protocol.md §2.7): only inference steps call tools.
    tools: z.array(z.string().min(1).max(64)).max(16).optional(),
  },
  check: (step) =>
    step.model !== undefined && !isKnownModel(step.model)
      ? fail('invalid_model', `step "${step.id}": model "${step.model}" is not available`)
      : null,
  minHardwareTier: 1,
  requiredTools: (step) => step.tools ?? [],
  ...inferenceRun,
  // Whether a worker or the free backbone serves is unknown until dispatch: the worker rate, for every token
  // the messages may take plus `max_tokens`.
  worstCase: (step) =>
    pass({
      tokens: estimateTokens(step.messages ?? []) + (step.max_tokens ?? DEFAULT_MAX_TOKENS),
      price_per_token: PRICES.inferenceWorkerPerToken,
    }),
  price: ({ tokens, price_per_token }: TokensUsed) => modelCost({ price_per_token }, tokens),
  records: { collection: 'inference', payloadTypes: ['hive/inference'] },
  output: z
    .looseObject({
      text: z.string(),
      locations: z.array(z.looseObject({ name: z.string() })),
      model: z.string(),
      provider: z.enum(['worker', 'backbone']),
      tokens_in: z.int(),
      tokens_out: z.int(),
      latency_ms: z.int(),
      proof_job_id: z.string(),
    })
    .describe('inference output'),
  docs: {
    runs:
      "a model on a swarm worker's local runtime, or the backbone (an OpenAI-compatible endpoint, model " +
      '`llama-3.3-70b-versatile`) when no eligible worker is online',
    state: 'available',
  },
});
