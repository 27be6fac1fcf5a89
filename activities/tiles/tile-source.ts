/**
 * Where a tile's bytes come from: the cache when its upstream tile was validated in this epoch (a HIT,
 * answered synchronously once the format was served before: no await, no hashing, no conversion), else the
 * upstream.
 *
 * One upstream fetch per (style, zoom, x, y) (tile-cache.ts): every cell inside that tile and every format
 * asked for is served from that one copy, converted once per format. What a client sees stays per request:
 * its cell in X-Svc-Cell and its record, its format's bytes, ETag and X-Svc-Proof.
 *
 * Refresh (docs/protocol.md §2.4 "tiles refresh when the epoch advances and source data changed"; decided here):
 * each upstream tile remembers the epoch it was last validated in and the upstream's ETag / Last-Modified. The
 * first request of a newer epoch asks the upstream conditionally: 304 (or, from an upstream without
 * validators, the same bytes again) → the entry is re-stamped with the new epoch, its converted formats kept,
 * and served as a HIT, since the source did not change; new bytes → the entry is replaced and served as a
 * MISS. A failed revalidation is the client's 502/504 like a failed miss: the service does not vouch, in a
 * record of this epoch, for bytes it could not confirm in this epoch. The old entry stays, so the next
 * attempt is still conditional.
 *
 * MISS means this request made the upstream send new bytes; everything else is a HIT: a request that joined
 * an upstream fetch in flight, another cell of a fetched tile, another format converted from it.
 * Coalescing: concurrent misses or revalidations of one upstream tile share one upstream request, and
 * concurrent requests for one new format share one conversion. Failures are never cached: the next request
 * asks the upstream again. An upstream 404 is 404 `tile_not_found` (tile-upstream.ts).
 */
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { ServiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/hash.js';
import { cellTile, type TileXY } from '../../core/tile-coords.js';
import { TILE_CONTENT_TYPES, type TileFormat } from '../../core/tile-request.js';
import type { TileStyle } from '../../core/tile-styles.js';
import type { TileConfig } from './index.js';
import { createTileCache, type CachedTile, type UpstreamTile } from './tile-cache.js';
import { convertTile, detectFormat, verifyTile } from './tile-format.js';
import { fetchUpstreamTile, tileUrl, upstreamHost, type Validators } from './tile-upstream.js';

export interface TileRequest {
  cell: string;
  zoom: number;
  style: TileStyle;
  format: TileFormat;
}

export interface TileLookup {
  tile: CachedTile;
  cache: 'HIT' | 'MISS';
  /** Host of the style's upstream (no path or query): what records name as the source. */
  upstreamHost: string;
}

interface Loaded {
  entry: UpstreamTile;
  /** True when the upstream sent new bytes (a MISS for the request that started the load). */
  fetched: boolean;
}

export interface TileSource {
  lookup(request: TileRequest, epoch: number): TileLookup | Promise<TileLookup>;
  /** A hit `lookup` would answer at once; undefined where it would fetch, revalidate or convert. */
  peek(request: TileRequest, epoch: number): TileLookup | undefined;
  size(): { entries: number; bytes: number };
}

/** (cell, zoom) → tile memo entries: a few dozen bytes each, so the hit path skips the H3 arithmetic. */
const PLACES = 65_536;

export function createTileSource(deps: { config: TileConfig; logger?: Logger | undefined }): TileSource {
  const { config } = deps;
  const cache = createTileCache(config.cacheBytes);
  const places = new LRUCache<string, TileXY>({ max: PLACES });
  const hosts = new Map(
    Object.entries(config.templates).map(([style, t]) => [
      style,
      config.upstreamNames?.[style as TileStyle] ?? upstreamHost(t),
    ]),
  );

  // Hosts whose last fetch failed: an offline `npm start` would otherwise log a warning per tile the dashboard
  // asks for. The first failure of a run says what to do; the rest are debug lines until the host answers again.
  const failing = new Set<string>();
  function upstreamFailed(style: TileStyle, error: Error): void {
    const host = hosts.get(style) ?? 'unknown';
    const fields = { style, host, error: error.message };
    if (failing.has(host)) {
      deps.logger?.debug(fields, 'tile upstream failed');
      return;
    }
    failing.add(host);
    deps.logger?.warn(
      fields,
      `tile upstream ${host} failed: map tiles need the internet (or TILE_URL_* pointing at a tile ` +
        'server you can reach), or start with DEMO=true for synthetic tiles; further failures of this host are ' +
        'logged at debug level until it answers again',
    );
  }
  function upstreamAnswered(style: TileStyle): void {
    const host = hosts.get(style) ?? 'unknown';
    if (failing.delete(host)) deps.logger?.info({ style, host }, `tile upstream ${host} answers again`);
  }

  const answer = (request: TileRequest, tile: CachedTile, cache: 'HIT' | 'MISS'): TileLookup => ({
    tile,
    cache,
    upstreamHost: hosts.get(request.style) ?? 'unknown',
  });

  function tileOf(cell: string, zoom: number): TileXY {
    const key = `${cell}|${zoom}`;
    let xy = places.get(key);
    if (!xy) places.set(key, (xy = cellTile(cell, zoom)));
    return xy;
  }

  const keyOf = (request: TileRequest, { x, y }: TileXY) => `${request.style}|${request.zoom}|${x}|${y}`;

  /** The hit `entry` answers at once: valid this epoch and already in the format asked for; else undefined. */
  function hitIn(entry: UpstreamTile | undefined, request: TileRequest, epoch: number): TileLookup | undefined {
    const served = entry && entry.validatedEpoch >= epoch ? entry.variants[request.format] : undefined;
    return served && answer(request, served, 'HIT');
  }

  /** The cached tile in the format asked for, valid this epoch; undefined where `lookup` would have to wait. */
  function peek(request: TileRequest, epoch: number): TileLookup | undefined {
    return hitIn(cache.get(keyOf(request, tileOf(request.cell, request.zoom))), request, epoch);
  }

  function lookup(request: TileRequest, epoch: number): TileLookup | Promise<TileLookup> {
    const xy = tileOf(request.cell, request.zoom);
    const key = keyOf(request, xy);
    const entry = cache.get(key);
    const hit = hitIn(entry, request, epoch);
    if (hit) return hit;
    if (entry && entry.validatedEpoch >= epoch) {
      return variant(key, entry, request.format).then((tile) => answer(request, tile, 'HIT'));
    }
    const { promise, joined } = cache.coalesce(key, () => load(key, request, xy.x, xy.y, epoch, entry));
    return promise.then(async ({ entry: loaded, fetched }) =>
      answer(request, await variant(key, loaded, request.format), fetched && !joined ? 'MISS' : 'HIT'),
    );
  }

  /** The upstream tile in `format`: converted once (coalesced), then kept beside the upstream copy. */
  function variant(key: string, entry: UpstreamTile, format: TileFormat): Promise<CachedTile> {
    const kept = entry.variants[format];
    if (kept) return Promise.resolve(kept);
    return cache.coalesce(`${key}|${entry.sourceSha256}|${format}`, async () => {
      const converted = entry.format !== format;
      const bytes = converted ? await convertTile(entry.bytes, format) : entry.bytes;
      const sha256 = converted ? sha256Hex(bytes) : entry.sourceSha256;
      const tile: CachedTile = {
        bytes,
        format,
        contentType: TILE_CONTENT_TYPES[format],
        sha256,
        etag: `"${sha256}"`,
        x: entry.x,
        y: entry.y,
      };
      // Kept only while the cache still holds these source bytes (a refresh may have replaced them meanwhile).
      const current = cache.peek(key);
      if (current && current.sourceSha256 === entry.sourceSha256) {
        cache.set(key, { ...current, variants: { ...current.variants, [format]: tile } });
      }
      return tile;
    }).promise;
  }

  async function load(
    key: string,
    request: TileRequest,
    x: number,
    y: number,
    epoch: number,
    stale: UpstreamTile | undefined,
  ): Promise<Loaded> {
    const url = tileUrl(config.templates[request.style], request.zoom, x, y);
    let result: Awaited<ReturnType<typeof fetchUpstreamTile>>;
    try {
      result = await fetchUpstreamTile(url, {
        userAgent: config.userAgent,
        timeoutMs: config.timeoutMs,
        ...(stale ? { validators: stale.validators } : {}),
      });
    } catch (error) {
      upstreamFailed(request.style, error as Error);
      throw error;
    }
    upstreamAnswered(request.style);

    const keep = (base: UpstreamTile, validators: Validators): Loaded => {
      const entry: UpstreamTile = {
        ...base,
        validators: { ...base.validators, ...validators },
        validatedEpoch: Math.max(base.validatedEpoch, epoch),
      };
      cache.set(key, entry);
      return { entry, fetched: false };
    };
    if (result.status === 'not_modified') {
      if (!stale) throw new ServiceError('upstream_unavailable', 'the tile upstream answered 304 to a plain request');
      return keep(stale, result.validators);
    }
    const sourceSha256 = sha256Hex(result.bytes);
    if (stale && stale.sourceSha256 === sourceSha256) return keep(stale, result.validators);

    const format = detectFormat(result.bytes);
    if (!format) {
      throw new ServiceError('upstream_unavailable', 'the tile upstream sent bytes that are not a PNG, JPEG or WebP');
    }
    // Whole images only: a tile cut short or corrupt would otherwise be cached and served (or converted).
    await verifyTile(result.bytes);
    const entry: UpstreamTile = {
      bytes: result.bytes,
      format,
      sourceSha256,
      validators: result.validators,
      validatedEpoch: epoch,
      x,
      y,
      variants: {},
    };
    cache.set(key, entry);
    return { entry, fetched: true };
  }

  return { lookup, peek, size: () => cache.size() };
}
