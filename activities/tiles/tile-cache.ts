/**
 * The in-memory tile cache: least-recently-used entries within a byte budget, and one in-flight load per
 * key so that concurrent misses (or revalidations) of one tile cost one upstream request.
 *
 * Per process and lost on restart by design: docs/protocol.md §2.4 serves hits "from memory", and a tile is cheap to
 * fetch again. Entries hold the bytes already in the client's format, hashed once when stored, so a hit
 * neither converts nor hashes.
 */
import { LRUCache } from 'lru-cache';
import type { TileFormat } from '../../core/tile-request.js';
import type { Validators } from './tile-upstream.js';

/** Bookkeeping per entry (key, object, validators) counted against the budget besides the bytes. */
export const ENTRY_OVERHEAD_BYTES = 512;

export interface CachedTile {
  /** In `format`, exactly as sent to clients. */
  bytes: Buffer;
  format: TileFormat;
  contentType: string;
  /** SHA-256 hex of `bytes`: X-Svc-Proof, the record's sha256, and (quoted) the ETag. */
  sha256: string;
  etag: string;
  /** Format the upstream sent (differs from `format` when converted). */
  upstreamFormat: TileFormat;
  /** SHA-256 of the upstream's bytes: detects an unchanged source when it sends no validators. */
  sourceSha256: string;
  validators: Validators;
  /** The latest epoch in which the upstream confirmed these bytes; older → revalidate before serving. */
  validatedEpoch: number;
  /** The slippy tile the entry's cell maps to at its zoom. */
  x: number;
  y: number;
}

export interface TileCache {
  get(key: string): CachedTile | undefined;
  set(key: string, tile: CachedTile): void;
  /**
   * Runs `load` unless a load of `key` is already in flight, in which case its promise is shared.
   * `joined` tells the caller which case it was (the one that started the load did the upstream work).
   */
  coalesce<T>(key: string, load: () => Promise<T>): { promise: Promise<T>; joined: boolean };
  /** Entries and bytes held, for stats and tests. */
  size(): { entries: number; bytes: number };
}

export function createTileCache(maxBytes: number): TileCache {
  const lru = new LRUCache<string, CachedTile>({
    maxSize: maxBytes,
    sizeCalculation: (tile) => tile.bytes.length + ENTRY_OVERHEAD_BYTES,
  });
  const inflight = new Map<string, Promise<unknown>>();

  return {
    get: (key) => lru.get(key),
    set: (key, tile) => {
      // A tile larger than the whole budget is served but not kept (lru-cache would refuse it anyway).
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
