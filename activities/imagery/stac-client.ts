import { cellToBoundary } from 'h3-js';
import { ServiceError } from '../../core/errors.js';
import { readBoundedBody } from '../bounded-body.js';
import { safeFetch, sameOriginOnly, UpstreamRefused } from '../safe-fetch.js';
import { stacInterval, type DateWindow } from './date-window.js';
import { byNewest, stacSearchResponseSchema, toScene, type Scene } from './stac-item.js';

/**
 * A search answer is at most 100 items (the route's `limit`) of ~10 KB each; anything this large is not an answer
 * to our query and must not fill memory.
 */
export const MAX_STAC_RESPONSE_BYTES = 16 * 1024 * 1024;

export interface StacClientConfig {
  /** STAC API root without a trailing slash. */
  stacUrl: string;
  collection: string;
  timeoutMs: number;
  userAgent: string;
}

export interface SceneSearch {
  cell: string;
  /** Search this GeoJSON geometry instead of the cell's boundary (openEO extents). */
  intersects?: { type: 'Polygon'; coordinates: number[][][] };
  window: DateWindow;
  /** Maximum `eo:cloud_cover`; undefined → no cloud filter. */
  cloud?: number;
  limit: number;
  /** `newest`: datetime desc (scene search); `clearest`: cloud cover asc, then datetime desc (NDVI). */
  order: 'newest' | 'clearest';
}

export interface StacClient {
  /** The POST /search body for a query (exposed so the proof record can state what was asked). */
  searchBody(query: SceneSearch): Record<string, unknown>;
  /** Scenes intersecting the cell, newest first. Upstream failures are ServiceErrors (502 / 504). */
  search(query: SceneSearch): Promise<Scene[]>;
  /** The catalog's document of the collection (`GET /collections/{id}`), parsed as JSON; failures as search's. */
  collection(): Promise<unknown>;
}

/** The cell as a GeoJSON polygon: [lng, lat] vertices, ring closed (h3-js's GeoJSON form). */
export function cellPolygon(cell: string): { type: 'Polygon'; coordinates: number[][][] } {
  return { type: 'Polygon', coordinates: [cellToBoundary(cell, true)] };
}

/**
 * A STAC API item-search client (POST /search with the query and sort extensions, which Earth Search
 * supports). Each search is one request bounded by `timeoutMs`, body included, and by MAX_STAC_RESPONSE_BYTES.
 */
export function createStacClient(config: StacClientConfig): StacClient {
  const searchBody = (query: SceneSearch): Record<string, unknown> => ({
    collections: [config.collection],
    intersects: query.intersects ?? cellPolygon(query.cell),
    datetime: stacInterval(query.window),
    ...(query.cloud === undefined ? {} : { query: { 'eo:cloud_cover': { lte: query.cloud } } }),
    sortby:
      query.order === 'newest'
        ? [{ field: 'properties.datetime', direction: 'desc' }]
        : [
            { field: 'properties.eo:cloud_cover', direction: 'asc' },
            { field: 'properties.datetime', direction: 'desc' },
          ],
    limit: query.limit,
  });

  const post = (body: Record<string, unknown>) => fetchJson('POST', '/search', body);

  async function fetchJson(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<unknown> {
    const url = `${config.stacUrl}${path}`;
    const signal = AbortSignal.timeout(config.timeoutMs);
    try {
      // A redirect stays on the catalog's origin (activities/safe-fetch.ts).
      const res = await safeFetch(
        url,
        {
          method,
          headers: {
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            accept: 'application/geo+json, application/json',
            'user-agent': config.userAgent,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal,
        },
        sameOriginOnly(url),
      );
      if (!res.ok) {
        // A 4xx means the catalog refused a query we built: still the catalog's side of the contract.
        await res.body?.cancel();
        throw new ServiceError('upstream_unavailable', `STAC catalog answered HTTP ${res.status} to ${method} ${path}`);
      }
      const bytes = await readBoundedBody(
        res,
        MAX_STAC_RESPONSE_BYTES,
        () => new ServiceError('upstream_unavailable', `STAC catalog sent more than ${MAX_STAC_RESPONSE_BYTES} bytes`),
        signal,
      );
      const text = new TextDecoder().decode(bytes);
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new ServiceError('upstream_unavailable', 'malformed STAC response: the body is not JSON');
      }
    } catch (error) {
      throw upstreamError(error, config.timeoutMs);
    }
  }

  return {
    searchBody,
    collection: () => fetchJson('GET', `/collections/${encodeURIComponent(config.collection)}`),
    async search(query) {
      const parsed = stacSearchResponseSchema.safeParse(await post(searchBody(query)));
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const where = issue?.path.map(String).join('.') || 'body';
        throw new ServiceError('upstream_unavailable', `malformed STAC response: ${where}: ${issue?.message}`);
      }
      const scenes: Scene[] = [];
      for (const item of parsed.data.features) {
        const scene = toScene(item);
        if (typeof scene === 'string')
          throw new ServiceError('upstream_unavailable', `malformed STAC response: ${scene}`);
        scenes.push(scene);
      }
      // The catalog sorted already; sort again so callers never depend on a catalog honouring `sortby`.
      return scenes.sort(byNewest).slice(0, query.limit);
    },
  };
}

/** Timeouts → 504 upstream_timeout; refused connections, resets, DNS failures → 502 upstream_unavailable. */
function upstreamError(error: unknown, timeoutMs: number): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof UpstreamRefused) {
    return new ServiceError('upstream_unavailable', 'STAC catalog redirected off its origin (not followed)');
  }
  const name = (error as { name?: unknown }).name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new ServiceError('upstream_timeout', `STAC catalog did not answer within ${timeoutMs} ms`);
  }
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  return new ServiceError(
    'upstream_unavailable',
    `STAC catalog unreachable${typeof cause === 'string' ? ` (${cause})` : ''}`,
  );
}
