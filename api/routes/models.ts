import { pass } from '../../core/check.js';
import { BACKBONE_MODEL, WORKER_MODELS } from '../../core/models.js';
import { route } from '../route-spec.js';

/**
 * `GET /v1/models` in the OpenAI list format (an OpenAI-compatible endpoint, so API-key auth, SPEC 5.3).
 * Lists the registry's models and the backbone model; whether a worker serving each is online is the
 * swarm's business (`/svc/models`).
 */
export const modelRoutes = () => [
  route({
    method: 'GET',
    path: '/v1/models',
    auth: 'api_key',
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.body = {
        object: 'list',
        data: [...WORKER_MODELS, BACKBONE_MODEL].map((id) => ({
          id,
          object: 'model',
          created: 0,
          owned_by: id === BACKBONE_MODEL ? 'backbone' : 'geofabric-swarm',
        })),
      };
    },
  }),
];
