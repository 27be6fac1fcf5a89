/**
 * Who may push to the central proof store, and how much (docs/security.md §7): node keys
 * (this node's own and SYNC_NODE_KEYS) and registered workers; each pusher bounded per hour in items and bytes.
 */
import { ServiceError } from '../../core/errors.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';

export type WriterRole = 'node' | 'worker';

/** SYNC_MAX_RECORDS_PER_HOUR and SYNC_MAX_MB_PER_HOUR defaults: 10 items a second, 64 MiB an hour per pusher. */
export const DEFAULT_SYNC_BOUNDS: SyncBounds = { itemsPerHour: 36_000, bytesPerHour: 64 * 1024 * 1024 };
const HOUR_MS = 3_600_000;

export interface SyncBounds {
  itemsPerHour: number;
  bytesPerHour: number;
}

/** The role of `pk` at this store: a node key, a registered worker, or null (may not write). */
export function createWriterRoles(deps: { nodeKeys: readonly string[]; workers: Pick<WorkerRegistry, 'get'> }) {
  const nodes = new Set(deps.nodeKeys);
  return async (pk: string): Promise<WriterRole | null> => {
    if (nodes.has(pk)) return 'node';
    return (await deps.workers.get(pk)) !== null ? 'worker' : null;
  };
}

/**
 * Per-pusher hourly budget, in memory: each gateway process bounds what it takes (several processes behind one
 * central store each allow the bound). A push that does not fit is refused whole (429 quota_exceeded with
 * Retry-After), so a retry later sends the same batch again.
 */
export function createSyncQuota(bounds: SyncBounds, clock: () => number) {
  const used = new Map<string, { window: number; items: number; bytes: number }>();
  return {
    charge(pk: string, items: number, bytes: number): void {
      const now = clock();
      const window = Math.floor(now / HOUR_MS);
      let entry = used.get(pk);
      if (entry === undefined || entry.window !== window) {
        if (used.size > 10_000) for (const [key, e] of used) if (e.window !== window) used.delete(key);
        entry = { window, items: 0, bytes: 0 };
        used.set(pk, entry);
      }
      if (entry.items + items > bounds.itemsPerHour || entry.bytes + bytes > bounds.bytesPerHour) {
        const retryAfter = Math.max(1, Math.ceil(((window + 1) * HOUR_MS - now) / 1000));
        throw new ServiceError(
          'quota_exceeded',
          `this key pushed ${entry.items} items (${entry.bytes} bytes) this hour; the bound is ` +
            `${bounds.itemsPerHour} items and ${bounds.bytesPerHour} bytes an hour`,
          { 'retry-after': String(retryAfter) },
        );
      }
      entry.items += items;
      entry.bytes += bytes;
    },
  };
}
