/**
 * Pixel computations of imagery operations kept by what they read (docs/security.md §9): the operation, the
 * cell and the scenes, each scene as the catalog described it (id, time, band URLs, baseline, shares). A
 * Sentinel-2 L2A scene's pixels do not change under one description, so the same operation on the same cell
 * and scenes gives the same answer from here without reading a COG again, whatever window found the scenes;
 * concurrent identical computations share one run. Only computations whose reads all succeeded are kept: a
 * failed read may pass next time. In memory, per process, the least recently used dropped past `maxEntries`.
 */
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';

/** Results are small (statistics and the record's read list): a few KiB each. */
export const DEFAULT_COMPUTATION_CACHE_ENTRIES = 512;

export interface ComputationCache {
  /**
   * The computation of `inputs`: the cached one, the run under way, or `compute`'s, kept when it says `keep`.
   * `inputs` must name everything the computation reads.
   */
  run<T>(inputs: unknown, compute: () => Promise<{ value: T; keep: boolean }>): Promise<T>;
  /** Computations held. */
  size(): number;
}

export function createComputationCache(maxEntries = DEFAULT_COMPUTATION_CACHE_ENTRIES): ComputationCache {
  if (!Number.isInteger(maxEntries) || maxEntries < 1) throw new RangeError('maxEntries must be a positive integer');
  const kept = new Map<string, unknown>();
  const running = new Map<string, Promise<unknown>>();

  const keep = (key: string, value: unknown) => {
    kept.delete(key);
    kept.set(key, value);
    if (kept.size > maxEntries) kept.delete(kept.keys().next().value!);
  };

  return {
    run<T>(inputs: unknown, compute: () => Promise<{ value: T; keep: boolean }>): Promise<T> {
      const key = sha256Hex(canonicalJson(inputs));
      if (kept.has(key)) {
        const value = kept.get(key) as T;
        keep(key, value); // most recently used
        return Promise.resolve(value);
      }
      let pending = running.get(key) as Promise<T> | undefined;
      if (pending === undefined) {
        pending = compute()
          .then((outcome) => {
            if (outcome.keep) keep(key, outcome.value);
            return outcome.value;
          })
          .finally(() => running.delete(key));
        running.set(key, pending);
      }
      return pending;
    },
    size: () => kept.size,
  };
}
