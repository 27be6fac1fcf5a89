import type { Swarm } from '../../activities/inference/index.js';
import { pass } from '../../core/check.js';
import { route } from '../route-spec.js';
import { modelListSchema } from '../schemas/swarm-responses.js';

/**
 * `GET /v1/models` in the OpenAI list format (an OpenAI-compatible endpoint, so API-key auth, docs/protocol.md §5.3):
 * the deployment's enabled registry models (`MODELS`) and the backbone model, each with the registry's
 * facts beside OpenAI's four fields (clients ignore fields they do not know). Whether a worker serving each
 * is online is the marketplace's business (`GET /svc/models`).
 */
export const modelRoutes = (swarm: Swarm) => [
  route<undefined>({
    method: 'GET',
    path: '/v1/models',
    auth: 'api_key',
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.body = {
        object: 'list',
        data: swarm.models.models.map((m) => ({
          id: m.id,
          object: 'model',
          created: 0,
          owned_by: m.provider === 'backbone' ? 'backbone' : 'geofabric-swarm',
          family: m.family,
          parameters: m.parameters,
          context_length: m.context_length,
          min_hardware_tier: m.min_hardware_tier,
          price_per_token: m.price_per_token,
          default: m.id === swarm.models.defaultModel,
        })),
      };
    },
    docs: {
      summary: 'Models (OpenAI list format)',
      description: "The deployment's enabled registry models and the backbone model, with the registry's facts.",
      tags: ['Chat'],
      responses: { 200: { description: 'The models', schema: modelListSchema } },
    },
  }),
];
