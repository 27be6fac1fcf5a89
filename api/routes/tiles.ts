import type { Context } from 'koa';
import type { TileActivities, TileLookup, TileRequest } from '../../activities/tiles/index.js';
import { TILE_WORKER } from '../../activities/tiles/tile-record.js';
import { fail, pass, type Check } from '../../core/check.js';
import { noneMatchFails } from '../../core/etag.js';
import { checkCell } from '../../core/h3-cell.js';
import { gridTiles, MAX_GRID_RINGS } from '../../core/tile-grid.js';
import { checkHours } from '../../core/query-params.js';
import { checkRings, checkStyle, checkTileFile, checkZoom } from '../../core/tile-request.js';
import type { TileStyle } from '../../core/tile-styles.js';
import { serviceOrigin } from '../proxy-trust.js';
import { route } from '../route-spec.js';
import { tileGridSchema, tileStatsSchema } from '../schemas/geo-responses.js';
import { gridParams, hoursQuery, ringsQuery, tileParams } from '../schemas/param-docs.js';

/**
 * The tile endpoints (docs/protocol.md §4.1, §2.4): public, no key (docs/protocol.md §5.4), all four gates as every route. Gate 2
 * checks the cell: the path params are named `h3_cell` / `cell` for that. Routes do not collide: a tile
 * is 3 segments after /v1/tiles, a grid 4 (under `grid/`), stats 1.
 *
 * Browsers load tiles cross-origin, so every tile answer, errors included, allows any origin and exposes
 * the X-Svc-* headers (docs/protocol.md §2.4).
 */
const TILE_HEADERS = [
  'X-Svc-Worker',
  'X-Svc-Cell',
  'X-Svc-Epoch',
  'X-Svc-Proof',
  'X-Svc-Cache',
  'X-Svc-Cost',
  'X-Svc-Record',
  'ETag',
] as const;
const cors = { expose: TILE_HEADERS };
const TILE_RESPONSE_HEADERS = {
  'X-Svc-Worker': 'Worker key, or `tile-proxy`',
  'X-Svc-Cell': 'H3 cell of the computation',
  'X-Svc-Epoch': 'Proof-store epoch number',
  'X-Svc-Proof': 'SHA-256 of the tile bytes',
  'X-Svc-Cache': '`HIT` or `MISS`',
  'X-Svc-Cost': 'Credits: 0.00001 on a hit, 0.0001 on a miss',
  'X-Svc-Record': 'The proof record listing this serve',
  ETag: 'The quoted proof hash',
  'Cache-Control': '`public, max-age=3600`',
};
const facets = ['tile_render'];

/** The tile route's pattern (its metrics label); its cache hits are answered before Koa (api/tile-hits.ts). */
export const TILE_ROUTE = '/v1/tiles/:h3_cell/:zoom/:file';

interface GridInput {
  cell: string;
  zoom: number;
  style: TileStyle;
  rings: number;
}

export const tileRoutes = (tiles: TileActivities) => [
  route<GridInput>({
    method: 'GET',
    path: '/v1/tiles/grid/:cell/:zoom/:style',
    auth: 'public',
    cors,
    facets,
    preflight: ({ params, query }) =>
      all({
        cell: checkCell(params.cell, 'path cell'),
        zoom: checkZoom(params.zoom),
        style: checkStyle(params.style),
        rings: checkRings(query.rings, MAX_GRID_RINGS),
      }),
    handler: async (ctx, { cell, zoom, style, rings }) => {
      // JSON array of tile URLs, one per distinct tile; each names a cell whose tile is that tile.
      const base = serviceOrigin(ctx);
      ctx.body = gridTiles(cell, rings, zoom).map((t) => `${base}/v1/tiles/${t.cell}/${zoom}/${style}.png`);
    },
    docs: {
      summary: 'Tile URLs covering a cell and its rings',
      tags: ['Tiles'],
      params: gridParams,
      query: ringsQuery,
      responses: { 200: { description: 'Tile URLs, one per distinct tile', schema: tileGridSchema } },
      errors: ['invalid_zoom', 'invalid_style', 'invalid_rings'],
    },
  }),
  route<number>({
    method: 'GET',
    path: '/v1/tiles/stats',
    auth: 'public',
    cors,
    // Reading counters renders nothing: no delegation facet is exercised.
    facets: [],
    preflight: ({ query }) => checkHours(query.hours),
    handler: async (ctx, hours) => {
      ctx.body = tiles.stats(hours);
    },
    docs: {
      summary: 'Hourly tile serving statistics',
      description: "This process's counters since `since`, every hour listed, oldest first.",
      tags: ['Tiles'],
      query: hoursQuery,
      responses: { 200: { description: 'Statistics per hour and style', schema: tileStatsSchema } },
      errors: ['invalid_hours'],
    },
  }),
  route<TileRequest>({
    method: 'GET',
    path: TILE_ROUTE,
    auth: 'public',
    cors,
    facets,
    // The hot path: the three checks in field order (the first failure wins), no intermediate objects.
    preflight: ({ params }) => {
      const cell = checkCell(params.h3_cell, 'path h3_cell');
      if (!cell.ok) return cell;
      const zoom = checkZoom(params.zoom);
      if (!zoom.ok) return zoom;
      const file = checkTileFile(params.file);
      if (!file.ok) return file;
      return pass({ cell: cell.value, zoom: zoom.value, style: file.value.style, format: file.value.format });
    },
    handler: async (ctx, request) => {
      const looked = tiles.lookupTile(request);
      // A hit is not a promise: the hit path runs without a single await.
      const found = looked instanceof Promise ? await looked : looked;
      sendTile(ctx, request, found, tiles);
    },
    docs: {
      summary: 'Map tile of an H3 cell',
      description:
        'The slippy-map tile holding the cell centroid, always in the format asked for; every serve is listed in a ' +
        '`tile/raster` proof record. Headers are exposed through CORS, errors included (docs/protocol.md §2.4).',
      tags: ['Tiles'],
      params: tileParams,
      responses: {
        200: {
          description: 'The tile image',
          contentTypes: ['image/png', 'image/jpeg', 'image/webp'],
          headers: TILE_RESPONSE_HEADERS,
        },
        304: {
          description: 'Not modified (If-None-Match names the tile)',
          contentTypes: [],
          headers: TILE_RESPONSE_HEADERS,
        },
      },
      errors: [
        'invalid_zoom',
        'invalid_style',
        'invalid_format',
        'tile_not_found',
        'upstream_unavailable',
        'upstream_timeout',
      ],
    },
  }),
];

/** A served tile: its status, its headers as [name, value, …] and, for a 200, the bytes. */
export interface TileAnswer {
  status: 200 | 304;
  headers: string[];
  bytes: Buffer | undefined;
}

/**
 * 200 with the bytes, or 304 when the client's If-None-Match already names them; both are serves, listed in the
 * tile's proof record. Every header value is text made once (the tile's ETag and hash with the cache entry, the
 * cost per outcome, the epoch once an hour). Koa's route and the tile-hit path (api/tile-hits.ts) send the same.
 */
export function tileAnswer(
  request: TileRequest,
  found: TileLookup,
  tiles: TileActivities,
  ifNoneMatch: string | undefined,
  requestId: string,
): TileAnswer {
  const { tile } = found;
  const notModified = ifNoneMatch !== undefined && noneMatchFails(ifNoneMatch, tile.etag);
  const receipt = tiles.recordServe(request, found, notModified ? 304 : 200, requestId);
  const headers = [
    'cache-control',
    'public, max-age=3600',
    'etag',
    tile.etag,
    'x-svc-worker',
    TILE_WORKER,
    'x-svc-cell',
    request.cell,
    'x-svc-epoch',
    receipt.epochText,
    'x-svc-proof',
    tile.sha256,
    'x-svc-cache',
    found.cache,
    'x-svc-cost',
    receipt.costText,
    'x-svc-record',
    receipt.recordId,
  ];
  if (notModified) return { status: 304, headers, bytes: undefined };
  // The full media type with the body, so Koa neither guesses one from the mime table nor looks it up.
  headers.push('content-type', tile.contentType, 'x-content-type-options', 'nosniff');
  return { status: 200, headers, bytes: tile.bytes };
}

/** The answer through Koa: headers set straight on the response (not sent yet in a synchronous handler). */
function sendTile(ctx: Context, request: TileRequest, found: TileLookup, tiles: TileActivities): void {
  const answer = tileAnswer(request, found, tiles, ctx.req.headers['if-none-match'], ctx.state.requestId as string);
  const { headers } = answer;
  for (let i = 0; i < headers.length; i += 2) ctx.res.setHeader(headers[i]!, headers[i + 1]!);
  ctx.status = answer.status;
  if (answer.bytes) ctx.body = answer.bytes;
}

/** Runs every check and returns the first failure in field order, else all values. */
function all<T extends Record<string, Check<unknown>>>(
  checks: T,
): Check<{ [K in keyof T]: T[K] extends Check<infer V> ? V : never }> {
  const values: Record<string, unknown> = {};
  for (const [name, check] of Object.entries(checks)) {
    if (!check.ok) return fail(check.error, check.detail);
    values[name] = check.value;
  }
  return pass(values as { [K in keyof T]: T[K] extends Check<infer V> ? V : never });
}
