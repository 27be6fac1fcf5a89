/**
 * openEO secondary web services of type XYZ (docs/protocol.md §16.10): `GET /service_types`, `POST /services`,
 * `GET /services`, `GET/PATCH/DELETE /services/{service_id}`, `GET /services/{service_id}/logs`, and the tiles
 * the service's `url` names. A service is a process graph that yields one band (NDVI, a water mask, a band-math
 * index) and a colour map; each tile runs the graph over the tile's extent (COG windows of the scenes under it,
 * as `POST /result` does), is painted in the colour map as a 256 × 256 PNG, written as an
 * `imagery/openeo_tile` proof record, charged to the service's budget and cached.
 *
 * Only the owner (the API key that created it) manages a service. Tiles are public: map clients (MapLibre,
 * OpenLayers, QGIS, the Web Editor) cannot send a bearer token with a tile request, so the tile URL carries an
 * unguessable token instead (api/openeo/service-registry.ts); deleting the service revokes it.
 */
import { createHash, randomUUID } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import { z } from 'zod';
import type { ImageryActivities } from '../../activities/imagery/index.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { pass } from '../../core/check.js';
import { noneMatchFails } from '../../core/etag.js';
import { sha256Hex } from '../../core/hash.js';
import { dimsOfType, isCube, makeCube, shapeOf, type BandInfo, type Dimension } from '../../core/openeo/cube.js';
import { ServiceError } from '../../core/errors.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import { extentCells, extentRecordCell } from '../../core/openeo/extent.js';
import { checkProcessGraph, evaluateGraph, type ProcessGraph } from '../../core/openeo/graph.js';
import { rasterPlanes } from '../../core/openeo/output.js';
import { isSavedResult, type LoadRequest } from '../../core/openeo/processes.js';
import { sentinel2Band } from '../../core/openeo/sentinel2.js';
import {
  COLOR_MAPS,
  TILE_SIZE,
  XYZ_MAX_ZOOM,
  XYZ_MIN_ZOOM,
  intersectBoxes,
  paintTile,
  tileBox,
  type TileAddress,
} from '../../core/openeo/xyz.js';
import { imageCost } from '../../core/pricing.js';
import { serviceOrigin } from '../proxy-trust.js';
import type { RouteSpec } from '../route-spec.js';
import { BILLING, OPENEO_BASE, OPENEO_TAG, openEoRoute } from './discovery.js';
import { REGISTRY, SYNC_MAX_SAMPLES, resultCells } from './result.js';
import {
  LOG_LEVELS,
  createServiceRegistry,
  type LogLevel,
  type ServiceRegistry,
  type XyzConfiguration,
  type XyzService,
} from './service-registry.js';

/** The tile route's pattern: the token is the capability (docs/protocol.md §16.10). */
export const XYZ_TILE_ROUTE = `${OPENEO_BASE}/xyz/:token/:z/:x/:y`;
/** Values (x × y × t × bands) one tile may load: as a synchronous result. */
export const TILE_MAX_SAMPLES = SYNC_MAX_SAMPLES;
/** Rendered tiles kept in memory, all services together. */
const TILE_CACHE_BYTES = 64 * 1024 * 1024;
/**
 * Tiles rendered at once, all services together (each may hold 4 million values, 32 MB, and its COG reads), and
 * tiles waiting for a turn: a map client asks for a screenful at once and does not retry a refusal, so tiles wait;
 * beyond the queue, 503 InfrastructureBusy with retry-after.
 */
export const TILE_RENDERS_AT_ONCE = 4;
export const TILE_RENDER_QUEUE = 256;

/** Runs at most `slots` works at once, `queue` more waiting in order; beyond, InfrastructureBusy. */
export function renderSlots(slots: number, queue: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= slots) {
      if (waiting.length >= queue) {
        const busy = new OpenEoError('InfrastructureBusy', 'Too many tiles are being rendered: retry shortly.', 503);
        busy.headers['retry-after'] = '2';
        throw busy;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running++;
    }
    try {
      return await work();
    } finally {
      // The slot passes to the next waiting tile as is, or frees.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

const DEFAULT_CONFIGURATION: XyzConfiguration = { colormap: 'RdYlGn', range: [-1, 1] };

/** `GET /service_types`: XYZ, its configuration settings and the process parameter a graph may refer to. */
export const SERVICE_TYPES = {
  XYZ: {
    title: 'XYZ tiles',
    description:
      'Slippy-map tiles `{z}/{x}/{y}` (Web Mercator, 256 × 256 PNG) of a process graph that yields one band, ' +
      `painted in a colour map; no-data is transparent. Zoom ${XYZ_MIN_ZOOM}–${XYZ_MAX_ZOOM}. The tile URL is a ` +
      'capability: anyone holding it sees the layer, and the owner pays for its tiles. Each rendered tile is a ' +
      'signed proof record, named in its x-svc-record header.',
    configuration: {
      colormap: {
        type: 'string',
        enum: [...COLOR_MAPS],
        default: DEFAULT_CONFIGURATION.colormap,
        description:
          '`RdYlGn` (ColorBrewer, red low to green high: NDVI), `water` (two colours: land below the middle of ' +
          '`range`, water above: a 0/1 water mask), `greys` (black to white).',
      },
      range: {
        type: 'array',
        items: { type: 'number' },
        minItems: 2,
        maxItems: 2,
        default: DEFAULT_CONFIGURATION.range,
        description: 'The values at the two ends of the colour map [min, max]; values beyond are clamped.',
      },
    },
    process_parameters: [
      {
        name: 'spatial_extent',
        description:
          'The tile\'s extent in WGS 84. `load_collection` may take it (`{"from_parameter": "spatial_extent"}`); ' +
          'a fixed extent is cut to the tile, and a tile outside it is transparent.',
        schema: {
          type: 'object',
          subtype: 'bounding-box',
          required: ['west', 'south', 'east', 'north'],
          properties: {
            west: { type: 'number' },
            south: { type: 'number' },
            east: { type: 'number' },
            north: { type: 'number' },
          },
        },
      },
    ],
    links: [
      { href: 'https://wiki.openstreetmap.org/wiki/Slippy_map_tilenames', rel: 'about', title: 'XYZ tile names' },
    ],
  },
};

const processSchema = z.looseObject({
  process_graph: z.record(z.string(), z.unknown()).describe('The process graph (openEO API 1.2.0)'),
});
const budgetSchema = z.number().positive().nullable().optional().describe('The most the tiles may cost, in credits');

export const createServiceSchema = z.looseObject({
  title: z.string().max(200).nullable().optional(),
  description: z.string().max(10_000).nullable().optional(),
  process: processSchema,
  type: z.string().describe('`XYZ` (case-insensitive)'),
  enabled: z.boolean().optional(),
  configuration: z.record(z.string(), z.unknown()).nullable().optional(),
  plan: z.string().nullable().optional(),
  budget: budgetSchema,
  log_level: z.enum(LOG_LEVELS).optional(),
});

export const updateServiceSchema = z.looseObject({
  title: z.string().max(200).nullable().optional(),
  description: z.string().max(10_000).nullable().optional(),
  process: processSchema.optional(),
  enabled: z.boolean().optional(),
  configuration: z.record(z.string(), z.unknown()).nullable().optional(),
  plan: z.string().nullable().optional(),
  budget: budgetSchema,
  log_level: z.enum(LOG_LEVELS).optional(),
});

const serviceIdParams = z.object({ service_id: z.string() });
const link = z.looseObject({ href: z.string(), rel: z.string() });
const serviceSummarySchema = z.looseObject({
  id: z.string(),
  title: z.string().nullable(),
  description: z.string().nullable(),
  url: z.string().describe('The tile URL template, `{z}/{x}/{y}`: a capability, keep it as you keep a key'),
  type: z.literal('XYZ'),
  enabled: z.boolean(),
  created: z.string(),
  plan: z.string().nullable(),
  costs: z.number(),
  budget: z.number().nullable(),
});
const serviceSchema = serviceSummarySchema.extend({
  process: z.looseObject({}),
  configuration: z.looseObject({}),
  attributes: z.looseObject({}),
  log_level: z.string(),
});
const servicesSchema = z.object({ services: z.array(serviceSummarySchema), links: z.array(link) });
const logsSchema = z.object({
  level: z.string(),
  logs: z.array(z.object({ id: z.string(), level: z.string(), message: z.string(), time: z.string() })),
  links: z.array(link),
});
const serviceTypesSchema = z.record(z.string(), z.looseObject({ configuration: z.looseObject({}) }));

/** The configuration as sent, checked against SERVICE_TYPES.XYZ.configuration. */
export function parseConfiguration(value: unknown, base: XyzConfiguration = DEFAULT_CONFIGURATION): XyzConfiguration {
  if (value === undefined || value === null) return base;
  const config = value as Record<string, unknown>;
  for (const name of Object.keys(config)) {
    if (!(name in SERVICE_TYPES.XYZ.configuration)) {
      throw new OpenEoError('ServiceConfigUnsupported', `Service parameter '${name}' is not supported.`);
    }
  }
  const invalid = (name: string, reason: string) =>
    new OpenEoError(
      'ServiceConfigInvalid',
      `The value passed for the service parameter '${name}' is invalid: ${reason}`,
    );
  let { colormap, range } = base;
  if (config.colormap !== undefined) {
    const found = COLOR_MAPS.find((m) => m.toLowerCase() === String(config.colormap).toLowerCase());
    if (typeof config.colormap !== 'string' || found === undefined) {
      throw invalid('colormap', `expected one of ${COLOR_MAPS.join(', ')}`);
    }
    colormap = found;
  }
  if (config.range !== undefined) {
    const r = config.range;
    if (!Array.isArray(r) || r.length !== 2 || !r.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      throw invalid('range', 'expected [min, max], two finite numbers');
    }
    if (!(r[0] < r[1])) throw invalid('range', 'min must be below max');
    range = [r[0], r[1]];
  }
  return { colormap, range };
}

/** A small box the probe gives `spatial_extent` when the graph takes it as a parameter. */
const PROBE_EXTENT = { west: 12.49, south: 41.89, east: 12.5, north: 41.9 };

/**
 * What a graph yields, found without reading a pixel: it runs on a 2 × 2 cube with two dates and the bands
 * asked for. A layer needs a raster of x and y whose other dimensions hold one label each (t reduced, one band);
 * anything else is FormatUnsuitable, as a PNG result of two bands is. Process errors surface as they would later.
 */
export async function probeGraph(graph: ProcessGraph): Promise<void> {
  const loadCollection = async (request: LoadRequest) => {
    const bandInfo = new Map<string, BandInfo>(request.bands.map((name) => [name, sentinel2Band(name)!]));
    const dims: Dimension[] = [
      { name: 't', type: 'temporal', labels: ['2026-01-01T00:00:00Z', '2026-01-11T00:00:00Z'] },
      { name: 'bands', type: 'bands', labels: [...request.bands] },
      { name: 'y', type: 'spatial', axis: 'y', labels: [15, 5], step: -10, crs: 32633 },
      { name: 'x', type: 'spatial', axis: 'x', labels: [5, 15], step: 10, crs: 32633 },
    ];
    const data = new Float64Array(4 * 2 * request.bands.length).map((_, i) => 0.1 + (i % 7) * 0.05);
    return makeCube(dims, data, bandInfo);
  };
  const value = await evaluateGraph(graph, REGISTRY, { loadCollection }, { spatial_extent: PROBE_EXTENT });
  const data = isSavedResult(value) ? value.data : value;
  const unsuitable = (reason: string) =>
    new OpenEoError('FormatUnsuitable', `Data can't be transformed into the requested output format XYZ: ${reason}`);
  if (!isCube(data)) throw unsuitable('the graph does not yield a data cube');
  const [x] = dimsOfType(data, 'spatial', 'x');
  const [y] = dimsOfType(data, 'spatial', 'y');
  if (x === undefined || y === undefined) throw unsuitable('the result has no spatial dimensions x and y');
  const shape = shapeOf(data);
  const more = data.dims.filter((d, i) => i !== x && i !== y && shape[i]! > 1);
  if (more.length > 0) {
    throw unsuitable(
      `a layer shows one band, and the result has more than one label along ${more.map((d) => d.name).join(', ')} ` +
        '(reduce t with reduce_dimension, and keep one band: ndvi, a band-math index, a mask)',
    );
  }
}

/** A rendered tile, kept for every later request of it. */
interface RenderedTile {
  bytes: Buffer;
  sha256: string;
  etag: string;
  /** The proof record; null for a tile with nothing to show (outside the extent, no scene), which read nothing. */
  recordId: string | null;
  epoch: number | null;
  cell: string;
  cost: number;
}

interface CreateInput {
  parsed: z.infer<typeof createServiceSchema>;
  configuration: XyzConfiguration;
  graph: ProcessGraph;
  graphSha256: string;
}

interface TileInput {
  service: XyzService;
  tile: TileAddress;
}

/** Thrown by a load outside the tile: the tile is transparent. */
class EmptyTile extends Error {}

let emptyPng: Promise<Buffer> | undefined;
const transparentPng = () =>
  (emptyPng ??= sharp(Buffer.alloc(TILE_SIZE * TILE_SIZE * 4), {
    raw: { width: TILE_SIZE, height: TILE_SIZE, channels: 4 },
  })
    .png()
    .toBuffer());

const int = (text: string | undefined) => (text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : NaN);

/** The tile a path names (`{y}` may end in `.png`), or undefined. */
function tileOf(params: Record<string, string | undefined>): TileAddress | undefined {
  const z = int(params.z);
  const x = int(params.x);
  const y = int(params.y?.replace(/\.png$/i, ''));
  if (![z, x, y].every(Number.isInteger) || z > 30 || x >= 2 ** z || y >= 2 ** z) return undefined;
  return { z, x, y };
}

export interface ServiceDeps {
  imagery: () => ImageryActivities;
  clock: () => number;
}

/** The XYZ service routes; the tile route comes last, apart (it is no endpoint of the openEO API). */
export function serviceRoutes(deps: ServiceDeps): { api: RouteSpec<unknown>[]; tiles: RouteSpec<unknown>[] } {
  const registry: ServiceRegistry = createServiceRegistry();
  const cache = new LRUCache<string, RenderedTile>({
    maxSize: TILE_CACHE_BYTES,
    sizeCalculation: (t) => t.bytes.length + 512,
  });
  const inflight = new Map<string, Promise<RenderedTile>>();
  const slot = renderSlots(TILE_RENDERS_AT_ONCE, TILE_RENDER_QUEUE);

  const tileUrl = (origin: string, service: XyzService) => `${origin}${OPENEO_BASE}/xyz/${service.token}/{z}/{x}/{y}`;
  const summary = (origin: string, s: XyzService) => ({
    id: s.id,
    title: s.title,
    description: s.description,
    url: tileUrl(origin, s),
    type: 'XYZ' as const,
    enabled: s.enabled,
    created: s.created,
    plan: s.plan,
    costs: s.costs,
    budget: s.budget,
  });

  async function render(service: XyzService, tile: TileAddress, requestId: string | null): Promise<RenderedTile> {
    const imagery = deps.imagery();
    const started = deps.clock();
    const box = tileBox(tile);
    const cell = extentRecordCell(box);
    const session = imagery.cubes.session((samples) => {
      if (samples > TILE_MAX_SAMPLES) {
        throw new OpenEoError(
          'ProcessGraphComplexity',
          `The process is too complex for one tile: it would load ${samples.toLocaleString('en')} values ` +
            `(x × y × t × bands), above the ${TILE_MAX_SAMPLES.toLocaleString('en')} a tile may load. Zoom in, or ` +
            'narrow the interval or the bands of the service.',
        );
      }
      const cost = imageCost(samples / 1e6);
      if (service.budget !== null && service.costs + cost > service.budget) {
        throw new OpenEoError(
          'PaymentRequired',
          `The budget required to fulfil the request is not sufficient: the service has spent ${service.costs} of ` +
            `its budget of ${service.budget} credits, and this tile costs ${cost}. Raise it with PATCH /services/${service.id}.`,
        );
      }
    });
    const loadCollection = (request: LoadRequest) => {
      const cut = intersectBoxes(request.extent.box, box);
      if (cut === null) throw new EmptyTile();
      return session.load({ ...request, extent: { ...request.extent, box: cut } });
    };
    const spatialExtent = { west: box[0], south: box[1], east: box[2], north: box[3] };
    let value: unknown;
    try {
      value = await evaluateGraph(service.graph, REGISTRY, { loadCollection }, { spatial_extent: spatialExtent });
    } catch (error) {
      const nothing =
        error instanceof EmptyTile || (error instanceof OpenEoError && error.openEoCode === 'NoDataAvailable');
      if (!nothing) throw error;
      const bytes = await transparentPng();
      const sha256 = sha256Hex(bytes);
      return { bytes, sha256, etag: `"${sha256}"`, recordId: null, epoch: null, cell, cost: 0 };
    }
    const raster = rasterPlanes(isSavedResult(value) ? value.data : value, 'XYZ');
    if (raster.planes.length !== 1) {
      throw new OpenEoError(
        'FormatUnsuitable',
        `Data can't be transformed into the requested output format XYZ: ${raster.planes.length} bands`,
      );
    }
    const { colormap, range } = service.configuration;
    const rgba = paintTile(tile, { ...raster, plane: raster.planes[0]! }, colormap, range);
    const bytes = await sharp(rgba, { raw: { width: TILE_SIZE, height: TILE_SIZE, channels: 4 } })
      .png()
      .toBuffer();
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const megapixels = session.samples() / 1e6;
    const cost = imageCost(megapixels);
    const record = await imagery.proofs.write({
      id: `openeo-tile:${randomUUID()}`,
      h3_cell: cell,
      collection_type: 'imagery',
      payload_type: 'imagery/openeo_tile',
      payload: {
        version: 1,
        api: 'openEO API 1.2.0',
        service_id: service.id,
        service_type: 'XYZ',
        tile: { z: tile.z, x: tile.x, y: tile.y, bbox: box },
        process_graph_sha256: service.graphSha256,
        configuration: service.configuration,
        result: { sha256, bytes: bytes.length, format: 'PNG', media_type: 'image/png' },
        catalog: imagery.catalog,
        searches: session.searches(),
        scenes: session.scenes(),
        assets: session.reads(),
        samples: session.samples(),
        megapixels,
        cost,
        charged_to: { api_key_id: service.owner },
        request_id: requestId,
        processing_ms: Math.max(0, deps.clock() - started),
      },
    });
    service.costs += cost;
    registry.log(
      service,
      'info',
      `tile ${tile.z}/${tile.x}/${tile.y}: ${session.scenes().length} scene(s), ${cost} credits, record ${record.id}`,
      deps.clock(),
    );
    return { bytes, sha256, etag: `"${sha256}"`, recordId: record.id, epoch: record.address.epoch, cell, cost };
  }

  const ownerOf = (gates: { apiKey?: { id: string } }) => gates.apiKey!.id;
  const parseBody = <T>(schema: z.ZodType<T>, body: unknown): T => {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || 'body';
    if (issue?.path[0] === 'budget') throw new OpenEoError('BudgetInvalid', 'The specified budget is invalid.');
    if (issue?.path[0] === 'process') {
      throw new OpenEoError(
        'ProcessGraphMissing',
        `Invalid process specified. It doesn't contain a process graph (${where}: ${issue.message}).`,
      );
    }
    if (issue?.path[0] === 'type')
      throw new OpenEoError('ServiceConfigRequired', "Service parameter 'type' is required.");
    throw new OpenEoError(
      'ServiceConfigInvalid',
      `The value passed for the service parameter '${where}' is invalid: ${issue?.message}`,
    );
  };
  const graphOf = (process: { process_graph: Record<string, unknown> }) => ({
    graph: checkProcessGraph(process.process_graph, REGISTRY),
    graphSha256: sha256Hex(canonicalJson(process.process_graph)),
  });
  const managed = ['AuthenticationRequired', 'AuthenticationSchemeInvalid', 'TokenInvalid'];

  const api: RouteSpec<unknown>[] = [
    openEoRoute({
      method: 'GET',
      path: `${OPENEO_BASE}/service_types`,
      auth: 'public',
      cors: { expose: [] },
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        ctx.body = SERVICE_TYPES;
      },
      docs: {
        summary: 'openEO secondary web service types',
        description: 'XYZ: slippy-map tiles of a one-band result, its configuration and process parameters.',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The service types', schema: serviceTypesSchema } },
      },
    }),
    openEoRoute<CreateInput>({
      method: 'POST',
      path: `${OPENEO_BASE}/services`,
      auth: 'openeo',
      jsonBody: true,
      cells: resultCells,
      preflight: ({ body }) => {
        const parsed = parseBody(createServiceSchema, body);
        if (parsed.type.toLowerCase() !== 'xyz') {
          throw new OpenEoError('ServiceUnsupported', `Service type '${parsed.type}' is not supported.`);
        }
        const configuration = parseConfiguration(parsed.configuration);
        return pass({ parsed, configuration, ...graphOf(parsed.process) });
      },
      handler: async (ctx, input, gates) => {
        const { parsed, configuration, graph, graphSha256 } = input;
        await probeGraph(graph);
        const service = registry.create({
          owner: ownerOf(gates),
          title: parsed.title ?? null,
          description: parsed.description ?? null,
          process: parsed.process,
          graph,
          graphSha256,
          configuration,
          enabled: parsed.enabled ?? true,
          created: new Date(deps.clock()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
          plan: parsed.plan ?? BILLING.default_plan,
          budget: parsed.budget ?? null,
          logLevel: parsed.log_level ?? 'info',
        });
        ctx.status = 201;
        ctx.set({
          location: `${serviceOrigin(ctx)}${OPENEO_BASE}/services/${service.id}`,
          'openeo-identifier': service.id,
        });
      },
      docs: {
        summary: 'openEO: publish an XYZ map layer of a process graph',
        description:
          'Type `XYZ`; the graph must yield one band (reduce t, keep one band). The service is checked on a ' +
          'synthetic cube before it is created; its tiles run the graph over each tile. 201 with `Location` and ' +
          '`OpenEO-Identifier`; the tile URL is the `url` of `GET /services/{service_id}`.',
        tags: [OPENEO_TAG],
        body: createServiceSchema,
        responses: {
          201: {
            description: 'Created',
            contentTypes: [],
            headers: { Location: 'The service’s metadata URL', 'OpenEO-Identifier': 'The service id' },
          },
        },
        openEoErrors: [
          ...managed,
          'ServiceUnsupported',
          'ServiceConfigUnsupported',
          'ServiceConfigInvalid',
          'ServiceConfigRequired',
          'ProcessGraphMissing',
          'ProcessGraphInvalid',
          'ProcessUnsupported',
          'ProcessParameterRequired',
          'ProcessParameterUnsupported',
          'ProcessParameterInvalid',
          'CollectionNotFound',
          'FormatUnsuitable',
          'BudgetInvalid',
          'PermissionsInsufficient',
        ],
      },
    }),
    openEoRoute({
      method: 'GET',
      path: `${OPENEO_BASE}/services`,
      auth: 'openeo',
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx, _input, gates) => {
        const origin = serviceOrigin(ctx);
        ctx.body = { services: registry.list(ownerOf(gates)).map((s) => summary(origin, s)), links: [] };
      },
      docs: {
        summary: 'openEO: the caller’s XYZ services',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The services of the API key', schema: servicesSchema } },
        openEoErrors: managed,
      },
    }),
    openEoRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/services/:service_id`,
      auth: 'openeo',
      facets: [],
      preflight: ({ params }) => pass(params.service_id ?? ''),
      handler: async (ctx, id, gates) => {
        const s = registry.owned(id, ownerOf(gates));
        ctx.body = {
          ...summary(serviceOrigin(ctx), s),
          process: s.process,
          configuration: s.configuration,
          attributes: { minzoom: XYZ_MIN_ZOOM, maxzoom: XYZ_MAX_ZOOM, tile_size: TILE_SIZE, format: 'image/png' },
          log_level: s.logLevel,
        };
      },
      docs: {
        summary: 'openEO: an XYZ service',
        description: 'Its tile URL (`url`), process, configuration, zoom bounds (`attributes`), costs and budget.',
        tags: [OPENEO_TAG],
        params: serviceIdParams,
        responses: { 200: { description: 'The service', schema: serviceSchema } },
        openEoErrors: [...managed, 'ServiceNotFound'],
      },
    }),
    openEoRoute<string>({
      method: 'PATCH',
      path: `${OPENEO_BASE}/services/:service_id`,
      auth: 'openeo',
      jsonBody: true,
      cells: resultCells,
      preflight: ({ params }) => pass(params.service_id ?? ''),
      handler: async (ctx, id, gates) => {
        const s = registry.owned(id, ownerOf(gates));
        const patch = parseBody(updateServiceSchema, ctx.state.body);
        const configuration =
          patch.configuration === undefined ? s.configuration : parseConfiguration(patch.configuration);
        const graph = patch.process === undefined ? undefined : graphOf(patch.process);
        if (graph) await probeGraph(graph.graph);
        // Everything checked: apply at once.
        if (patch.title !== undefined) s.title = patch.title;
        if (patch.description !== undefined) s.description = patch.description;
        if (patch.enabled !== undefined) s.enabled = patch.enabled;
        if (patch.plan !== undefined) s.plan = patch.plan ?? BILLING.default_plan;
        if (patch.budget !== undefined) s.budget = patch.budget;
        if (patch.log_level !== undefined) s.logLevel = patch.log_level;
        if (graph || patch.configuration !== undefined) {
          if (graph) Object.assign(s, { process: patch.process, graph: graph.graph, graphSha256: graph.graphSha256 });
          s.configuration = configuration;
          s.revision++;
        }
        ctx.status = 204;
      },
      docs: {
        summary: 'openEO: change an XYZ service',
        description:
          'Title, description, process, configuration, enabled, budget, log level. A new process or configuration ' +
          'changes the tiles served from then on.',
        tags: [OPENEO_TAG],
        params: serviceIdParams,
        body: updateServiceSchema,
        responses: { 204: { description: 'Changed', contentTypes: [] } },
        openEoErrors: [
          ...managed,
          'ServiceNotFound',
          'ServiceConfigUnsupported',
          'ServiceConfigInvalid',
          'ProcessGraphMissing',
          'ProcessGraphInvalid',
          'ProcessUnsupported',
          'FormatUnsuitable',
          'BudgetInvalid',
        ],
      },
    }),
    openEoRoute<string>({
      method: 'DELETE',
      path: `${OPENEO_BASE}/services/:service_id`,
      auth: 'openeo',
      facets: [],
      preflight: ({ params }) => pass(params.service_id ?? ''),
      handler: async (ctx, id, gates) => {
        registry.remove(id, ownerOf(gates));
        ctx.status = 204;
      },
      docs: {
        summary: 'openEO: delete an XYZ service',
        description: 'Its tile URL stops answering at once.',
        tags: [OPENEO_TAG],
        params: serviceIdParams,
        responses: { 204: { description: 'Deleted', contentTypes: [] } },
        openEoErrors: [...managed, 'ServiceNotFound'],
      },
    }),
    openEoRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/services/:service_id/logs`,
      auth: 'openeo',
      facets: [],
      preflight: ({ params }) => pass(params.service_id ?? ''),
      handler: async (ctx, id, gates) => {
        const s = registry.owned(id, ownerOf(gates));
        const offset = typeof ctx.query.offset === 'string' ? Number(ctx.query.offset) : -1;
        const level = LOG_LEVELS.find((l) => l === ctx.query.level) ?? 'debug';
        const limit = Math.min(1000, Math.max(1, Number(ctx.query.limit) || 1000));
        const logs = s.logs
          .filter((e) => Number(e.id) > offset && LOG_LEVELS.indexOf(e.level) <= LOG_LEVELS.indexOf(level as LogLevel))
          .slice(0, limit);
        ctx.body = { level, logs, links: [] };
      },
      docs: {
        summary: 'openEO: log of an XYZ service',
        description: 'One entry per rendered tile (scenes, cost, proof record) and per refused tile; `offset` pages.',
        tags: [OPENEO_TAG],
        params: serviceIdParams,
        responses: { 200: { description: 'The log entries', schema: logsSchema } },
        openEoErrors: [...managed, 'ServiceNotFound'],
      },
    }),
  ];

  const tiles: RouteSpec<unknown>[] = [
    openEoRoute<TileInput>({
      method: 'GET',
      path: XYZ_TILE_ROUTE,
      auth: 'public',
      // Gate 2 sees the tile's extent, as it sees a result's.
      cells: ({ params }) => {
        const tile = tileOf(params);
        return tile ? extentCells(tileBox(tile)) : [];
      },
      preflight: ({ params }) => {
        const tile = tileOf(params);
        if (tile === undefined) throw new OpenEoError('NotFound', 'Resource not found: a tile is {z}/{x}/{y}.');
        const service = registry.byToken(params.token ?? '');
        if (service === undefined) throw new OpenEoError('ServiceNotFound', 'Service does not exist.', 404);
        if (!service.enabled) throw new OpenEoError('ServiceNotFound', 'The service is disabled by its owner.', 404);
        if (tile.z < XYZ_MIN_ZOOM || tile.z > XYZ_MAX_ZOOM) {
          throw new OpenEoError(
            'TileZoomUnsupported',
            `This layer is served at zoom ${XYZ_MIN_ZOOM} to ${XYZ_MAX_ZOOM}; tile ${tile.z}/${tile.x}/${tile.y} is ` +
              'outside (a tile further out would read a region).',
          );
        }
        return pass({ service, tile });
      },
      handler: async (ctx, { service, tile }) => {
        const key = `${service.id}:${service.revision}:${tile.z}/${tile.x}/${tile.y}`;
        let found = cache.get(key);
        const hit = found !== undefined;
        if (found === undefined) {
          let pending = inflight.get(key);
          if (pending === undefined) {
            const requestId = (ctx.state.requestId as string | undefined) ?? null;
            pending = slot(() => render(service, tile, requestId)).finally(() => inflight.delete(key));
            inflight.set(key, pending);
          }
          try {
            found = await pending;
          } catch (error) {
            const message = error instanceof ServiceError ? (error.detail ?? error.code) : 'an internal error';
            registry.log(service, 'error', `tile ${tile.z}/${tile.x}/${tile.y} refused: ${message}`, deps.clock());
            throw error;
          }
          // Only what the current revision shows is kept (a PATCH during the render made it stale).
          if (key.startsWith(`${service.id}:${service.revision}:`)) cache.set(key, found);
        }
        ctx.set({
          'cache-control': 'public, max-age=300',
          etag: found.etag,
          'x-svc-cache': hit ? 'HIT' : 'MISS',
          'x-svc-proof': found.sha256,
          'x-svc-cell': found.cell,
          'x-svc-cost': String(hit ? 0 : found.cost),
          'openeo-costs': String(hit ? 0 : found.cost),
          ...(found.recordId === null ? {} : { 'x-svc-record': found.recordId, 'x-svc-epoch': String(found.epoch) }),
        });
        if (noneMatchFails(ctx.get('if-none-match') || undefined, found.etag)) {
          ctx.status = 304;
          return;
        }
        ctx.type = 'image/png';
        ctx.body = found.bytes;
      },
      docs: {
        summary: 'openEO XYZ service: a map tile',
        description:
          'A 256 × 256 PNG in the service’s colour map, no-data transparent; public, the token is the capability. ' +
          `Zoom ${XYZ_MIN_ZOOM}–${XYZ_MAX_ZOOM}. A rendered tile is an \`imagery/openeo_tile\` proof record ` +
          '(x-svc-record) charged to the service’s budget; later requests are served from the cache at no cost. A ' +
          'tile outside the graph’s extent, or without a scene, is transparent and has no record.',
        tags: [OPENEO_TAG],
        params: z.object({ token: z.string(), z: z.string(), x: z.string(), y: z.string() }),
        responses: {
          200: {
            description: 'The tile',
            contentTypes: ['image/png'],
            headers: {
              'x-svc-record': 'The tile’s proof record (absent for a tile with nothing to show)',
              'x-svc-proof': 'SHA-256 of the PNG',
              'x-svc-cache': '`HIT` or `MISS`',
              'x-svc-cost': 'Credits charged to the service for this request',
              'OpenEO-Costs': 'The same',
            },
          },
          304: { description: 'Not modified (If-None-Match names the tile)', contentTypes: [] },
        },
        errors: ['upstream_unavailable', 'upstream_timeout'],
        openEoErrors: [
          'NotFound',
          'ServiceNotFound',
          'TileZoomUnsupported',
          'ProcessGraphComplexity',
          'PaymentRequired',
        ],
      },
    }),
  ];
  return { api, tiles };
}
