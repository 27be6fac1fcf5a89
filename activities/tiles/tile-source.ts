/**
 * Where a tile's bytes come from: the cache when the entry was validated in this epoch (a HIT, answered
 * synchronously: no await, no hashing, no conversion), else the upstream.
 *
 * Refresh (docs/protocol.md §2.4 "tiles refresh when the epoch advances and source data changed"; decided here):
 * one entry per (cell, style, zoom, format) remembers the epoch it was last validated in and the
 * upstream's ETag / Last-Modified. The first request of a newer epoch asks the upstream conditionally:
 * 304 (or, from an upstream without validators, the same bytes again) → the entry is re-stamped with the
 * new epoch and served as a HIT, since the source did not change; new bytes → the entry is replaced and
 * served as a MISS. A failed revalidation is the client's 502/504 like a failed miss: the service does not
 * vouch, in a record of this epoch, for bytes it could not confirm in this epoch. The old entry stays, so
 * the next attempt is still conditional.
 *
 * Coalescing: concurrent misses or revalidations of one key share one upstream request. The request that
 * started it is the MISS (it caused the upstream work); the ones that joined are HITs. Failures are never
 * cached: the next request asks the upstream again.
 */
import type { Logger } from 'pino';
import { ServiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/hash.js';
import { cellTile } from '../../core/tile-coords.js';
import { TILE_CONTENT_TYPES, type TileFormat } from '../../core/tile-request.js';
import type { TileStyle } from '../../core/tile-styles.js';
import type { TileConfig } from './index.js';
import { createTileCache, type CachedTile } from './tile-cache.js';
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
  tile: CachedTile;
  /** True when the upstream sent new bytes (a MISS for the request that started the load). */
  fetched: boolean;
}

export interface TileSource {
  lookup(request: TileRequest, epoch: number): TileLookup | Promise<TileLookup>;
  size(): { entries: number; bytes: number };
}

export function createTileSource(deps: { config: TileConfig; logger?: Logger | undefined }): TileSource {
  const { config } = deps;
  const cache = createTileCache(config.cacheBytes);
  const hosts = new Map(
    Object.entries(config.templates).map(([style, t]) => [
      style,
      config.upstreamNames?.[style as TileStyle] ?? upstreamHost(t),
    ]),
  );

  const answer = (request: TileRequest, tile: CachedTile, cache: 'HIT' | 'MISS'): TileLookup => ({
    tile,
    cache,
    upstreamHost: hosts.get(request.style) ?? 'unknown',
  });

  function lookup(request: TileRequest, epoch: number): TileLookup | Promise<TileLookup> {
    const key = `${request.cell}|${request.style}|${request.zoom}|${request.format}`;
    const entry = cache.get(key);
    if (entry && entry.validatedEpoch >= epoch) return answer(request, entry, 'HIT');
    const { promise, joined } = cache.coalesce(key, () => load(key, request, epoch, entry));
    return promise.then(({ tile, fetched }) => answer(request, tile, fetched && !joined ? 'MISS' : 'HIT'));
  }

  async function load(
    key: string,
    request: TileRequest,
    epoch: number,
    stale: CachedTile | undefined,
  ): Promise<Loaded> {
    const { x, y } = stale ?? cellTile(request.cell, request.zoom);
    const url = tileUrl(config.templates[request.style], request.zoom, x, y);
    let result: Awaited<ReturnType<typeof fetchUpstreamTile>>;
    try {
      result = await fetchUpstreamTile(url, {
        userAgent: config.userAgent,
        timeoutMs: config.timeoutMs,
        ...(stale ? { validators: stale.validators } : {}),
      });
    } catch (error) {
      deps.logger?.warn(
        { style: request.style, host: hosts.get(request.style), error: (error as Error).message },
        'tile upstream failed',
      );
      throw error;
    }

    const keep = (base: CachedTile, validators: Validators): Loaded => {
      const tile: CachedTile = {
        ...base,
        validators: { ...base.validators, ...validators },
        validatedEpoch: Math.max(base.validatedEpoch, epoch),
      };
      cache.set(key, tile);
      return { tile, fetched: false };
    };
    if (result.status === 'not_modified') {
      if (!stale) throw new ServiceError('upstream_unavailable', 'the tile upstream answered 304 to a plain request');
      return keep(stale, result.validators);
    }
    const sourceSha256 = sha256Hex(result.bytes);
    if (stale && stale.sourceSha256 === sourceSha256) return keep(stale, result.validators);

    const upstreamFormat = detectFormat(result.bytes);
    if (!upstreamFormat) {
      throw new ServiceError('upstream_unavailable', 'the tile upstream sent bytes that are not a PNG, JPEG or WebP');
    }
    const converted = upstreamFormat !== request.format;
    // Whole images only: a tile cut short or corrupt would otherwise be cached and served.
    if (!converted) await verifyTile(result.bytes);
    const bytes = converted ? await convertTile(result.bytes, request.format) : result.bytes;
    const sha256 = converted ? sha256Hex(bytes) : sourceSha256;
    const tile: CachedTile = {
      bytes,
      format: request.format,
      contentType: TILE_CONTENT_TYPES[request.format],
      sha256,
      etag: `"${sha256}"`,
      upstreamFormat,
      sourceSha256,
      validators: result.validators,
      validatedEpoch: epoch,
      x,
      y,
    };
    cache.set(key, tile);
    return { tile, fetched: true };
  }

  return { lookup, size: () => cache.size() };
}
