import { pass } from '../../core/check.js';
import { route } from '../route-spec.js';
import { healthResponseSchema } from '../schemas/service-responses.js';
import { SERVICE_VERSION } from '../version.js';

/** Liveness for load balancers and `npm start` smoke checks. */
export const healthRoutes = () => [
  route({
    method: 'GET',
    path: '/health',
    auth: 'public',
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.body = { status: 'ok', service: 'geofabric-gateway', version: SERVICE_VERSION };
    },
    docs: {
      summary: 'Liveness',
      tags: ['Service'],
      responses: { 200: { description: 'The gateway is up', schema: healthResponseSchema } },
    },
  }),
];
