import type { ImageryActivities, ImageryQuery } from '../../activities/imagery/index.js';
import { route } from '../route-spec.js';
import { ndviQuery, processBody, scenesQuery, type ProcessInput } from '../schemas/imagery-requests.js';

/**
 * Satellite imagery over HTTP (SPEC 4.1): public (SPEC 5.4: no key or signature for imagery), yet behind
 * all four gates like every route; a delegated caller needs the `image_process` facet. Gate 2 validates
 * the cell (`cell` query parameter, `h3_cell` body field) and resolves its jurisdiction.
 */
export const imageryRoutes = (imagery: ImageryActivities) => [
  route<ImageryQuery>({
    method: 'GET',
    path: '/v1/imagery/scenes',
    auth: 'public',
    cors: { expose: [] },
    facets: ['image_process'],
    preflight: ({ query }) => scenesQuery(query),
    handler: async (ctx, query) => {
      ctx.body = await imagery.searchScenes(query);
    },
  }),
  route<ImageryQuery>({
    method: 'GET',
    path: '/v1/imagery/ndvi',
    auth: 'public',
    cors: { expose: [] },
    facets: ['image_process'],
    preflight: ({ query }) => ndviQuery(query),
    handler: async (ctx, query) => {
      ctx.body = await imagery.ndvi(query);
    },
  }),
  route<ProcessInput>({
    method: 'POST',
    path: '/v1/imagery/process',
    auth: 'public',
    cors: { expose: [] },
    jsonBody: true,
    facets: ['image_process'],
    preflight: ({ body }) => processBody(body),
    handler: async (ctx, { operation, query }) => {
      ctx.body = await imagery.process(operation, query);
    },
  }),
];
