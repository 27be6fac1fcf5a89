import { MongoBulkWriteError, type Db } from 'mongodb';
import {
  BLOB_RESTAMP_MS,
  blobPruneEveryMs,
  DEFAULT_BLOB_RETENTION_MS,
  type BlobRetention,
  type BlobStore,
} from '../blob-store.js';
import { ensureIndexes } from './ensure-indexes.js';

interface BlobDoc {
  _id: string;
  text: string;
  /** When it was last stored: blobs older than the retention window are pruned (absent only before the upgrade). */
  stored_at?: Date;
}

const DUPLICATE_KEY = 11000;

/**
 * MongoDB adapter of store/blob-store.ts: one document per blob in `job_blobs`, `_id` its SHA-256 hex. Blobs
 * last stored longer ago than the retention window are deleted by put, at most every blobPruneEveryMs, on the
 * `stored_at` index (no TTL index: FerretDB v1 has none, README.md beside this file).
 */
export async function createMongoBlobStore(db: Db, retention: BlobRetention = {}): Promise<BlobStore> {
  const blobs = db.collection<BlobDoc>('job_blobs');
  const retentionMs = retention.blobRetentionMs ?? DEFAULT_BLOB_RETENTION_MS;
  const clock = retention.clock ?? Date.now;
  const pruneEveryMs = blobPruneEveryMs(retentionMs);
  let prunedAt = -Infinity;
  await ensureIndexes(blobs, [{ key: { stored_at: 1 }, name: 'stored_at' }]);
  // Blobs from before stored_at was kept get one whole window from now: a job running across the upgrade keeps them.
  await blobs.updateMany({ stored_at: { $exists: false } }, { $set: { stored_at: new Date(clock()) } });
  return {
    async put(texts) {
      if (texts.size === 0) return;
      const nowMs = clock();
      if (nowMs - prunedAt >= pruneEveryMs) {
        prunedAt = nowMs;
        // Before the insert, so this put's blobs are stored after it; a failed prune is tried at the next interval.
        await blobs.deleteMany({ stored_at: { $lt: new Date(nowMs - retentionMs) } }).catch(() => undefined);
      }
      const storedAt = new Date(nowMs);
      try {
        await blobs.insertMany(
          [...texts].map(([_id, text]) => ({ _id, text, stored_at: storedAt })),
          { ordered: false },
        );
      } catch (error) {
        // Content addressed: a blob stored before (by another step, run or gateway) is the same blob.
        const duplicates =
          error instanceof MongoBulkWriteError &&
          (Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]).every(
            (e) => e.code === DUPLICATE_KEY,
          );
        if (!duplicates) throw error;
        // It stays for this job's run too: restamped, only when an hour old so a dedupe hit rarely writes.
        await blobs.updateMany(
          { _id: { $in: [...texts.keys()] }, stored_at: { $lt: new Date(nowMs - BLOB_RESTAMP_MS) } },
          { $set: { stored_at: storedAt } },
        );
      }
    },
    async get(ids) {
      const docs = await blobs.find({ _id: { $in: [...new Set(ids)] } }).toArray();
      return new Map(docs.map((doc) => [doc._id, doc.text]));
    },
    async close() {},
  };
}
