/**
 * openEO discovery (docs/protocol.md §16.1): the well-known document at the gateway's root, the capabilities of
 * the API under OPENEO_BASE, conformance, file formats, the collection, the processes, UDF runtimes and service
 * types. Public, readable from any origin, and behind the gates like every route. The endpoints the capabilities
 * list are exactly the openEO routes that are built; the API's other endpoints answer FeatureUnsupported.
 */
import type { Logger } from 'pino';
import type { Context } from 'koa';
import { pass } from '../../core/check.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import {
  COLLECTION_ID,
  DEFAULT_EXTENT,
  collectionDescription,
  collectionSummary,
} from '../../core/openeo/sentinel2.js';
import { serviceOrigin } from '../proxy-trust.js';
import { route, type RouteSpec } from '../route-spec.js';
import { SERVICE_VERSION } from '../version.js';
import { PROCESS_DEFINITIONS } from './process-definitions.js';
import {
  capabilitiesSchema,
  collectionSchema,
  collectionsSchema,
  conformanceSchema,
  emptyObjectSchema,
  fileFormatsSchema,
  processesSchema,
  wellKnownSchema,
} from './schemas.js';

/** The openEO API's base path on the gateway. */
export const OPENEO_BASE = '/openeo/1.2';
export const WELL_KNOWN = '/.well-known/openeo';
export const OPENEO_TAG = 'openEO';

export const CONFORMANCE = [
  'https://api.openeo.org/1.2.0',
  'https://api.stacspec.org/v1.0.0/core',
  'https://api.stacspec.org/v1.0.0/collections',
  'http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/core',
  'http://www.opengis.net/spec/ogcapi-common-2/1.0/conf/collections',
];

/** What a pixel budget and a credit mean here, for `billing` and the guide. */
export const BILLING = {
  currency: 'credits',
  default_plan: 'pay-as-you-go',
  plans: [
    {
      name: 'pay-as-you-go',
      description:
        'Each result costs the imagery price of the values it loaded (docs/protocol.md §8.3), stated in its ' +
        'OpenEO-Costs header and its proof record. A request may cap it with `budget`.',
      paid: true,
    },
  ],
};

/** The openEO routes' common settings: their error shape, openEO's tag, and the imagery facet at gate 3. */
export const openEoRoute = <Input>(spec: Omit<RouteSpec<Input>, 'errorStyle'>): RouteSpec<unknown> =>
  route<Input>({ ...spec, errorStyle: 'openeo', facets: spec.facets ?? ['image_process'] });

const noInput = () => pass(undefined);

const link = (ctx: Context, path: string, rel: string, type: string, title: string) => ({
  href: `${serviceOrigin(ctx)}${path}`,
  rel,
  type,
  title,
});

export interface DiscoveryDeps {
  /** The catalog's own collection document (its extent), or a rejection when the catalog cannot be reached. */
  catalogCollection: () => Promise<unknown>;
  /** The openEO routes that are built, for the capabilities' `endpoints`; read when first asked. */
  endpoints: () => readonly RouteSpec<unknown>[];
  clock: () => number;
  logger?: Logger | undefined;
}

/** The collection's extent from the catalog, kept an hour; the default extent when the catalog cannot say. */
function catalogExtent(deps: DiscoveryDeps): () => Promise<typeof DEFAULT_EXTENT> {
  let cached: { at: number; extent: typeof DEFAULT_EXTENT } | undefined;
  return async () => {
    const now = deps.clock();
    if (cached && now - cached.at < 3_600_000) return cached.extent;
    let extent = DEFAULT_EXTENT;
    try {
      const doc = (await deps.catalogCollection()) as { extent?: { spatial?: unknown; temporal?: unknown } } | null;
      const bbox = (doc?.extent?.spatial as { bbox?: unknown } | undefined)?.bbox;
      const interval = (doc?.extent?.temporal as { interval?: unknown } | undefined)?.interval;
      const okBox =
        Array.isArray(bbox) && Array.isArray(bbox[0]) && bbox[0].length === 4 && bbox[0].every(Number.isFinite);
      const okInterval =
        Array.isArray(interval) &&
        Array.isArray(interval[0]) &&
        interval[0].length === 2 &&
        interval[0].every((v: unknown) => v === null || (typeof v === 'string' && Number.isFinite(Date.parse(v))));
      if (okBox && okInterval) {
        extent = {
          spatial: { bbox: [bbox[0] as number[]] },
          temporal: { interval: [interval[0] as (string | null)[]] },
        };
      }
    } catch (error) {
      deps.logger?.info({ err: error }, 'openEO: the catalog collection is not readable; the default extent is served');
    }
    cached = { at: now, extent };
    return extent;
  };
}

/** Koa's `/collections/:collection_id` as openEO's `/collections/{collection_id}`, relative to the base. */
const openEoPath = (path: string) => path.slice(OPENEO_BASE.length).replace(/:([A-Za-z_]\w*)/g, '{$1}') || '/';

export function discoveryRoutes(deps: DiscoveryDeps): RouteSpec<unknown>[] {
  const extent = catalogExtent(deps);
  const collectionLinks = (ctx: Context) => [
    link(ctx, `${OPENEO_BASE}/collections/${COLLECTION_ID}`, 'self', 'application/json', 'This collection'),
    link(ctx, `${OPENEO_BASE}/collections`, 'parent', 'application/json', 'The collections'),
    link(ctx, `${OPENEO_BASE}/`, 'root', 'application/json', 'The openEO API'),
  ];
  const cors = { expose: [] };
  /** A public GET of a discovery document: no body, no input, CORS without extra headers. */
  const publicGet = (spec: Pick<RouteSpec<undefined>, 'path' | 'handler' | 'docs'>) =>
    openEoRoute({ method: 'GET', auth: 'public', cors, facets: [], preflight: noInput, ...spec });
  return [
    publicGet({
      path: WELL_KNOWN,
      handler: async (ctx) => {
        ctx.body = {
          versions: [{ url: `${serviceOrigin(ctx)}${OPENEO_BASE}`, production: true, api_version: '1.2.0' }],
        };
      },
      docs: {
        summary: 'openEO versions (well-known document)',
        description: 'Where openEO clients find the API: `openeo.connect("<gateway URL>")` reads this.',
        tags: [OPENEO_TAG],
        operationId: 'getOpenEoWellKnown',
        responses: { 200: { description: 'The openEO API versions offered', schema: wellKnownSchema } },
      },
    }),
    // The base with and without its slash: clients join `/` to the URL the well-known document gives.
    ...[OPENEO_BASE, `${OPENEO_BASE}/`].map((path) =>
      openEoRoute({
        method: 'GET',
        path,
        auth: 'public',
        cors,
        facets: [],
        preflight: noInput,
        handler: async (ctx) => {
          const endpoints = new Map<string, Set<string>>();
          for (const spec of deps.endpoints()) {
            const path = openEoPath(spec.path);
            if (path === '/') continue;
            endpoints.set(path, (endpoints.get(path) ?? new Set()).add(spec.method));
          }
          ctx.body = {
            api_version: '1.2.0',
            backend_version: SERVICE_VERSION,
            stac_version: '1.0.0',
            type: 'Catalog',
            id: 'geofabric',
            title: 'Geofabric openEO',
            description:
              'openEO on Geofabric: Sentinel-2 L2A from the configured STAC catalog, processed synchronously or ' +
              'as batch jobs. ' +
              'Every result is a signed proof record (its SHA-256, the scenes, every byte range read and its hash, ' +
              'the process graph hash, the cost), sealed into the hourly Merkle epoch; its id comes in the ' +
              '`x-svc-record` header (a batch job’s results link theirs, and its receipt). Authenticate with an API ' +
              'key as the Basic password.',
            production: true,
            conformsTo: CONFORMANCE,
            endpoints: [...endpoints].map(([path, methods]) => ({ path, methods: [...methods].sort() })),
            billing: BILLING,
            links: [
              link(ctx, WELL_KNOWN, 'version-history', 'application/json', 'openEO versions'),
              link(ctx, `${OPENEO_BASE}/conformance`, 'conformance', 'application/json', 'Conformance classes'),
              link(ctx, `${OPENEO_BASE}/collections`, 'data', 'application/json', 'Collections'),
              link(
                ctx,
                '/openapi.json',
                'service-desc',
                'application/vnd.oai.openapi+json;version=3.1',
                'API reference',
              ),
            ],
          };
        },
        docs: {
          summary: 'openEO capabilities',
          description: 'API version 1.2.0, the endpoints built here, billing in credits.',
          tags: [OPENEO_TAG],
          operationId: path === OPENEO_BASE ? 'getOpenEoCapabilities' : 'getOpenEoCapabilitiesSlash',
          responses: { 200: { description: 'The capabilities', schema: capabilitiesSchema } },
        },
      }),
    ),
    publicGet({
      path: `${OPENEO_BASE}/conformance`,
      handler: async (ctx) => {
        ctx.body = { conformsTo: CONFORMANCE };
      },
      docs: {
        summary: 'openEO conformance classes',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The conformance classes', schema: conformanceSchema } },
      },
    }),
    publicGet({
      path: `${OPENEO_BASE}/file_formats`,
      handler: async (ctx) => {
        ctx.body = FILE_FORMATS;
      },
      docs: {
        summary: 'openEO output formats',
        description: 'GTiff (georeferenced, 32-bit float), PNG (8-bit) and JSON; no input formats.',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The file formats', schema: fileFormatsSchema } },
      },
    }),
    publicGet({
      path: `${OPENEO_BASE}/collections`,
      handler: async (ctx) => {
        ctx.body = {
          collections: [collectionSummary(await extent(), collectionLinks(ctx))],
          links: [link(ctx, `${OPENEO_BASE}/collections`, 'self', 'application/json', 'The collections')],
        };
      },
      docs: {
        summary: 'openEO collections',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'SENTINEL2_L2A', schema: collectionsSchema } },
      },
    }),
    openEoRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/collections/:collection_id`,
      auth: 'public',
      cors,
      facets: [],
      preflight: ({ params }) => {
        if (params.collection_id !== COLLECTION_ID) {
          throw new OpenEoError('CollectionNotFound', `Collection '${params.collection_id ?? ''}' does not exist.`);
        }
        return pass(COLLECTION_ID);
      },
      handler: async (ctx) => {
        ctx.body = collectionDescription(await extent(), collectionLinks(ctx));
      },
      docs: {
        summary: 'openEO collection',
        description:
          'STAC collection with `cube:dimensions` (x, y, t, bands) and `summaries.eo:bands` (names and common ' +
          "names); its extent is the configured catalog's.",
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The collection', schema: collectionSchema } },
        openEoErrors: ['CollectionNotFound'],
      },
    }),
    publicGet({
      path: `${OPENEO_BASE}/processes`,
      handler: async (ctx) => {
        ctx.body = {
          processes: PROCESS_DEFINITIONS,
          links: [link(ctx, `${OPENEO_BASE}/processes`, 'self', 'application/json', 'The processes')],
        };
      },
      docs: {
        summary: 'openEO processes',
        description: 'The official definitions of exactly the processes implemented.',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The processes', schema: processesSchema } },
      },
    }),
    // `service_types` is the XYZ services' (api/openeo/services.ts).
    ...[['udf_runtimes', 'openEO UDF runtimes (none)']].map(([name, summary]) =>
      publicGet({
        path: `${OPENEO_BASE}/${name}`,
        handler: async (ctx) => {
          ctx.body = {};
        },
        docs: {
          summary: summary!,
          tags: [OPENEO_TAG],
          responses: { 200: { description: 'None offered', schema: emptyObjectSchema } },
        },
      }),
    ),
  ];
}

/** Output formats (docs/protocol.md §16.6). */
const FILE_FORMATS = {
  input: {},
  output: {
    GTiff: {
      title: 'GeoTIFF',
      description:
        'A georeferenced GeoTIFF (the cube’s UTM grid), 32-bit float, no-data NaN. Holds x, y and at most one other ' +
        'dimension (bands or t), one GeoTIFF band per label.',
      gis_data_types: ['raster'],
      parameters: {},
      links: [{ href: 'https://gdal.org/drivers/raster/gtiff.html', rel: 'about', title: 'GDAL on GeoTIFF' }],
    },
    PNG: {
      title: 'PNG',
      description:
        'An 8-bit image: one band as grey, three as RGB, plus an alpha channel that hides no-data. Values are ' +
        'clamped to 0–255 (scale them first, e.g. with linear_scale_range).',
      gis_data_types: ['raster'],
      parameters: {},
    },
    JSON: {
      title: 'JSON',
      description:
        'The cube as the openEO process examples write data cubes: `dimensions` (type, labels), `order` and ' +
        'nested `data`, no-data as null; vector cubes (aggregate_spatial) carry their geometries.',
      gis_data_types: ['raster', 'vector'],
      parameters: {},
    },
  },
};

/** The endpoints of openEO API 1.2.0 that are not built here: each answers FeatureUnsupported (501). */
export const UNBUILT: readonly (readonly [RouteSpec<unknown>['method'], string])[] = [
  ['GET', '/credentials/oidc'],
  ['POST', '/validation'],
  ['GET', '/process_graphs'],
  ['GET', '/process_graphs/:process_graph_id'],
  ['PUT', '/process_graphs/:process_graph_id'],
  ['DELETE', '/process_graphs/:process_graph_id'],
  ['GET', '/files'],
  ['GET', '/files/:path'],
  ['PUT', '/files/:path'],
  ['DELETE', '/files/:path'],
];

export function unbuiltRoutes(): RouteSpec<unknown>[] {
  return UNBUILT.map(([method, path]) =>
    openEoRoute({
      method,
      path: `${OPENEO_BASE}${path}`,
      auth: 'public',
      facets: [],
      preflight: () => {
        throw new OpenEoError('FeatureUnsupported', `${method} ${openEoPath(OPENEO_BASE + path)} is not built here.`);
      },
      handler: async () => undefined,
      docs: {
        summary: `openEO ${method} ${openEoPath(OPENEO_BASE + path)} (not built)`,
        description: 'Not built in this version: answers FeatureUnsupported (501).',
        tags: [OPENEO_TAG],
        responses: {},
        openEoErrors: ['FeatureUnsupported'],
      },
    }),
  );
}
