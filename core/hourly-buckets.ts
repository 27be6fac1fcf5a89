/**
 * Per-process hourly statistics (tile serving, inference): one bucket per proof epoch, kept for
 * MAX_STATS_HOURS, reported as the last `hours` epochs oldest first with every hour present. Time is passed
 * in. Bucket start times assume epochs start on UTC hours, which `parseEpochGenesis` enforces.
 */
import { EPOCH_MS } from './epoch.js';
import { MAX_STATS_HOURS } from './query-params.js';

export interface HourlyBuckets<B> {
  /** The bucket of `epoch`, created on first use; buckets older than the kept window are dropped then. */
  at(epoch: number): B;
  /** The last `hours` epochs up to `currentEpoch`, each with its start and its bucket (undefined: nothing counted). */
  window(hours: number, currentEpoch: number, nowMs: number): { epoch: number; start: string; bucket: B | undefined }[];
}

export function createHourlyBuckets<B>(empty: () => B): HourlyBuckets<B> {
  const buckets = new Map<number, B>();
  return {
    at(epoch) {
      let bucket = buckets.get(epoch);
      if (bucket === undefined) {
        buckets.set(epoch, (bucket = empty()));
        for (const old of buckets.keys()) if (old <= epoch - MAX_STATS_HOURS) buckets.delete(old);
      }
      return bucket;
    },
    window(hours, currentEpoch, nowMs) {
      const currentStart = Math.floor(nowMs / EPOCH_MS) * EPOCH_MS;
      const out = [];
      for (let epoch = Math.max(0, currentEpoch - hours + 1); epoch <= currentEpoch; epoch++) {
        const start = new Date(currentStart - (currentEpoch - epoch) * EPOCH_MS).toISOString();
        out.push({ epoch, start, bucket: buckets.get(epoch) });
      }
      return out;
    },
  };
}
