import { createHash } from 'node:crypto';
import { pass } from '../../core/check.js';
import { noneMatchFails } from '../../core/etag.js';
import { buildOpenApiDocument } from '../openapi-document.js';
import { route, type RouteSpec } from '../route-spec.js';
import { openApiDocumentSchema } from '../schemas/service-responses.js';
import { SERVICE_VERSION } from '../version.js';

export interface OpenApiRouteDeps {
  /** Every route of the gateway, this one included; read when the document is first asked for. */
  routes: () => readonly RouteSpec<unknown>[];
  /** PUBLIC_URL: the document's server; relative without it. */
  publicUrl?: string | undefined;
}

/** Browsers and tools may keep it briefly; the ETag makes revalidation cheap. */
const MAX_AGE_S = 300;

/**
 * `GET /openapi.json`: the API reference, generated once from the routes' docs (the document
 * is deterministic, so its ETag holds for the process). Public and readable from any origin, like the other
 * public reads; the dashboard renders it under `/dashboard/assets/reference/index.html`.
 */
export const openApiRoutes = (deps: OpenApiRouteDeps) => {
  let cached: { text: string; etag: string } | undefined;
  const document = () => {
    if (!cached) {
      const text = JSON.stringify(
        buildOpenApiDocument(deps.routes(), { version: SERVICE_VERSION, publicUrl: deps.publicUrl }),
      );
      cached = { text, etag: `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"` };
    }
    return cached;
  };
  return [
    route<undefined>({
      method: 'GET',
      path: '/openapi.json',
      auth: 'public',
      cors: { expose: ['ETag'] },
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        const { text, etag } = document();
        ctx.set({ 'cache-control': `public, max-age=${MAX_AGE_S}`, etag });
        if (noneMatchFails(ctx.get('if-none-match') || undefined, etag)) {
          ctx.status = 304;
          return;
        }
        ctx.type = 'application/json';
        ctx.body = text;
      },
      docs: {
        summary: 'This API reference (OpenAPI 3.1)',
        description:
          'Generated from the routes and the zod schemas their pre-flights parse with. Rendered for people under ' +
          '`/dashboard/assets/reference/index.html`.',
        tags: ['Service'],
        responses: {
          200: {
            description: 'The OpenAPI 3.1 document',
            schema: openApiDocumentSchema,
            headers: { ETag: 'Changes only with the gateway version or its routes', 'Cache-Control': 'public' },
          },
          304: { description: 'Not modified (If-None-Match)', contentTypes: [] },
        },
      },
    }),
  ];
};
