/**
 * The in-memory tile cache: one entry per upstream tile (style, zoom, x, y), least-recently-used within a
 * byte budget, and one in-flight load per key so that concurrent misses (or revalidations) of one tile cost
 * one upstream request.
 *
 * Keyed by the upstream tile, not by the cell a client asked for: every cell inside one XYZ tile, in every
 * format, is served from one upstream fetch (tile servers' usage policies, OpenStreetMap's among them, ask
 * clients not to fetch a tile again). The formats clients asked for are kept beside the upstream bytes as
 * variants, converted once, so a hit neither converts nor hashes.
 *
 * Per process and lost on restart by design: docs/protocol.md §2.4 serves hits "from memory", and a tile is
 * cheap to fetch again.
 */
import { LRUCache } from 'lru-cache';
import type { TileFormat } from '../../core/tile-request.js';
import type { Validators } from './tile-upstream.js';

/** Bookkeeping per entry (key, objects, validators) counted against the budget besides the bytes. */
export const ENTRY_OVERHEAD_BYTES = 512;

/** A tile in one format, exactly as sent to clients. */
export interface CachedTile {
  bytes: Buffer;
  format: TileFormat;
  contentType: string;
  /** SHA-256 hex of `bytes`: X-Svc-Proof, the record's sha256, and (quoted) the ETag. */
  sha256: string;
  etag: string;
  /** The slippy tile it is. */
  x: number;
  y: number;
}

/** One upstream tile as the upstream sent it (decoded once: whole), and the formats served from it. */
export interface UpstreamTile {
  bytes: Buffer;
  format: TileFormat;
  /** SHA-256 of the upstream's bytes: detects an unchanged source when it sends no validators. */
  sourceSha256: string;
  validators: Validators;
  /** The latest epoch in which the upstream confirmed these bytes; older → revalidate before serving. */
  validatedEpoch: number;
  x: number;
  y: number;
  /** Served copies by format; the upstream's own format shares `bytes`. */
  variants: Partial<Record<TileFormat, CachedTile>>;
}

export interface TileCache {
  get(key: string): UpstreamTile | undefined;
  /** The entry without touching its recency. */
  peek(key: string): UpstreamTile | undefined;
  set(key: string, tile: UpstreamTile): void;
  /**
   * Runs `load` unless a load of `key` is already in flight, in which case its promise is shared.
   * `joined` tells the caller which case it was (the one that started the load did the upstream work).
   */
  coalesce<T>(key: string, load: () => Promise<T>): { promise: Promise<T>; joined: boolean };
  /** Entries (upstream tiles) and bytes held, for stats and tests. */
  size(): { entries: number; bytes: number };
}

/** Bytes an entry holds: the upstream copy plus every variant that is not that same buffer. */
export function entryBytes(tile: UpstreamTile): number {
  let bytes = tile.bytes.length + ENTRY_OVERHEAD_BYTES;
  for (const variant of Object.values(tile.variants)) if (variant.bytes !== tile.bytes) bytes += variant.bytes.length;
  return bytes;
}

export function createTileCache(maxBytes: number): TileCache {
  const lru = new LRUCache<string, UpstreamTile>({ maxSize: maxBytes, sizeCalculation: entryBytes });
  const inflight = new Map<string, Promise<unknown>>();

  return {
    get: (key) => lru.get(key),
    peek: (key) => lru.peek(key),
    set: (key, tile) => {
      // A tile larger than the whole budget is served but not kept (lru-cache refuses it).
      lru.set(key, tile);
    },
    coalesce<T>(key: string, load: () => Promise<T>) {
      const pending = inflight.get(key) as Promise<T> | undefined;
      if (pending) return { promise: pending, joined: true };
      const promise = load().finally(() => inflight.delete(key));
      inflight.set(key, promise);
      return { promise, joined: false };
    },
    size: () => ({ entries: lru.size, bytes: lru.calculatedSize }),
  };
}
