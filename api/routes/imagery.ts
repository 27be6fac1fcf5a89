import type { Context } from 'koa';
import type { ImageryActivities, ImageryQuery } from '../../activities/imagery/index.js';
import type { ErrorCode } from '../../core/errors.js';
import { addressKey } from '../../core/rate-limiter.js';
import type { ImageryBound } from '../imagery-bound.js';
import { route, type GateState } from '../route-spec.js';
import { ndviResultSchema, processResponseSchema, scenesResultSchema } from '../schemas/geo-responses.js';
import { ndviQuery, processBody, scenesQuery, type ProcessInput } from '../schemas/imagery-requests.js';
import { ndviQueryDocs, processBodyDocs, scenesQueryDocs } from '../schemas/param-docs.js';

/**
 * Satellite imagery over HTTP (docs/protocol.md §4.1): public (docs/protocol.md §5.4: no key or signature for imagery), yet behind
 * all four gates like every route; a delegated caller needs the `image_process` facet. Gate 2 validates
 * the cell (`cell` query parameter, `h3_cell` body field) and resolves its jurisdiction. The runs that read
 * pixels (`ndvi`, `process`) are bounded per client (api/imagery-bound.ts) and their computations cached by the
 * scenes they read (activities/imagery/computation-cache.ts).
 */
const IMAGERY_QUERY_ERRORS = [
  'cell_required',
  'invalid_date',
  'upstream_unavailable',
  'upstream_timeout',
] as const satisfies readonly ErrorCode[];

/** Who a run is counted against: the verified requester when the request was signed, else the client address. */
const clientOf = (ctx: Context, gates: GateState): string =>
  gates.requester ? `pk:${gates.requester.pk}` : addressKey(ctx.ip);

const BOUND_ERRORS = ['rate_limit'] as const satisfies readonly ErrorCode[];

export const imageryRoutes = (imagery: ImageryActivities, bound: ImageryBound) => [
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
    docs: {
      summary: 'Search Sentinel-2 scenes over a cell',
      description:
        'A STAC search intersecting the cell boundary, newest first; recorded as an `imagery/scene_search` proof.',
      tags: ['Imagery'],
      query: scenesQueryDocs,
      responses: { 200: { description: 'The scenes', schema: scenesResultSchema } },
      errors: [...IMAGERY_QUERY_ERRORS, 'invalid_cloud', 'invalid_limit'],
    },
  }),
  route<ImageryQuery>({
    method: 'GET',
    path: '/v1/imagery/ndvi',
    auth: 'public',
    cors: { expose: [] },
    facets: ['image_process'],
    preflight: ({ query }) => ndviQuery(query),
    handler: async (ctx, query, gates) => {
      ctx.body = await bound.run(clientOf(ctx, gates), () => imagery.ndvi(query));
    },
    docs: {
      summary: 'NDVI of a cell',
      description:
        'From the least cloudy scene in the window: pixel NDVI when the band assets are readable, else the ' +
        'scene-metadata estimate (`method` says which). Recorded as an `imagery/ndvi` proof.',
      tags: ['Imagery'],
      query: ndviQueryDocs,
      responses: {
        200: { description: 'docs/protocol.md §2.5 NDVI result and how it was made', schema: ndviResultSchema },
      },
      errors: [...IMAGERY_QUERY_ERRORS, 'no_scenes', ...BOUND_ERRORS],
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
    handler: async (ctx, { operation, query }, gates) => {
      ctx.body = await bound.run(clientOf(ctx, gates), () => imagery.process(operation, query));
    },
    docs: {
      summary: 'Run an imagery operation on a cell',
      tags: ['Imagery'],
      body: processBodyDocs,
      responses: { 200: { description: 'The operation result and its proof record', schema: processResponseSchema } },
      errors: [
        'invalid_request',
        'invalid_operation',
        'invalid_date',
        'invalid_cloud',
        'invalid_limit',
        'no_scenes',
        'imagery_unavailable',
        'invalid_model',
        'upstream_unavailable',
        'upstream_timeout',
        ...BOUND_ERRORS,
      ],
    },
  }),
];
