import { pass } from '../../core/check.js';
import { route } from '../route-spec.js';
import { healthResponseSchema, serviceIndexSchema } from '../schemas/service-responses.js';
import { SERVICE_VERSION } from '../version.js';

const INDEX_LINKS = [
  { rel: 'dashboard', href: '/dashboard', title: 'Operator dashboard' },
  { rel: 'service-desc', href: '/openapi.json', title: 'API reference (OpenAPI 3.1)' },
  { rel: 'service-doc', href: '/dashboard/assets/reference/index.html', title: 'API reference, rendered' },
  { rel: 'status', href: '/health', title: 'Liveness' },
];

/**
 * Liveness for load balancers and `npm start` smoke checks, and `GET /`: the URL `npm start` prints sends a browser
 * on to the dashboard and tells a JSON client where things are.
 */
export const healthRoutes = () => [
  route({
    method: 'GET',
    path: '/',
    auth: 'public',
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.vary('Accept');
      if (ctx.accepts('json', 'html') === 'html') {
        ctx.redirect('/dashboard');
        return;
      }
      ctx.body = { service: 'geofabric-gateway', version: SERVICE_VERSION, links: INDEX_LINKS };
    },
    docs: {
      summary: 'Service index',
      description:
        'A browser (Accept preferring text/html) is redirected to the dashboard; any other client gets links to ' +
        'the dashboard, the API reference and liveness.',
      tags: ['Service'],
      responses: {
        200: { description: 'Where things are', schema: serviceIndexSchema },
        302: { description: 'To /dashboard, for a browser', headers: { location: '/dashboard' } },
      },
    },
  }),
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
