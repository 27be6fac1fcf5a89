import { z } from 'zod';
import type { Swarm } from '../../activities/inference/index.js';
import { fail, pass } from '../../core/check.js';
import type { ModelInfo } from '../../core/model-registry.js';
import { route } from '../route-spec.js';
import { modelListSchema, modelObjectSchema } from '../schemas/swarm-responses.js';

/**
 * `GET /v1/models` and `GET /v1/models/{id}` in OpenAI's format (OpenAI-compatible endpoints: API-key auth,
 * docs/protocol.md §5.3, and OpenAI's error shape). They list the models a request can be answered with now:
 * every enabled model when a backbone is configured (worker models fall back to it), else the models this
 * node's own worker serves; the backbone model only with a backbone. Each has the registry's facts beside
 * OpenAI's four fields (clients ignore fields they do not know). Which swarm workers are online is the
 * marketplace's business (`GET /svc/models`).
 */
export const modelRoutes = (swarm: Swarm) => {
  const object = (m: ModelInfo) => ({
    id: m.id,
    object: 'model' as const,
    created: 0,
    owned_by: m.provider === 'backbone' ? ('backbone' as const) : ('geofabric-swarm' as const),
    family: m.family,
    parameters: m.parameters,
    context_length: m.context_length,
    min_hardware_tier: m.min_hardware_tier,
    price_per_token: m.price_per_token,
    default: m.id === swarm.models.defaultModel,
  });
  return [
    route<undefined>({
      method: 'GET',
      path: '/v1/models',
      auth: 'api_key',
      errorStyle: 'openai',
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        ctx.body = { object: 'list', data: swarm.servable().map(object) };
      },
      docs: {
        summary: 'Models (OpenAI list format)',
        description:
          'The models a request can be answered with now (the backbone model only when a backbone is configured), ' +
          "with the registry's facts.",
        tags: ['Chat'],
        responses: { 200: { description: 'The models', schema: modelListSchema } },
      },
    }),
    route<ModelInfo>({
      method: 'GET',
      path: '/v1/models/:model',
      auth: 'api_key',
      errorStyle: 'openai',
      preflight: ({ params }) => {
        const model = swarm.servable().find((m) => m.id === params.model);
        return model
          ? pass(model)
          : fail('invalid_model', `The model \`${params.model ?? ''}\` does not exist or cannot answer here`, 'model');
      },
      handler: async (ctx, model) => {
        ctx.body = object(model);
      },
      docs: {
        summary: 'One model (OpenAI model object)',
        description: 'A model a request can be answered with now; any other id is 404 (`model_not_found`).',
        tags: ['Chat'],
        params: z.object({ model: z.string().describe('model id, e.g. tinyllama') }),
        responses: { 200: { description: 'The model', schema: modelObjectSchema } },
        errors: ['invalid_model'],
      },
    }),
  ];
};
