import { MongoBulkWriteError, type Db } from 'mongodb';
import type { BlobStore } from '../blob-store.js';

interface BlobDoc {
  _id: string;
  text: string;
}

const DUPLICATE_KEY = 11000;

/** MongoDB adapter of store/blob-store.ts: one document per blob in `job_blobs`, `_id` its SHA-256 hex. */
export async function createMongoBlobStore(db: Db): Promise<BlobStore> {
  const blobs = db.collection<BlobDoc>('job_blobs');
  return {
    async put(texts) {
      if (texts.size === 0) return;
      try {
        await blobs.insertMany(
          [...texts].map(([_id, text]) => ({ _id, text })),
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
      }
    },
    async get(ids) {
      const docs = await blobs.find({ _id: { $in: [...new Set(ids)] } }).toArray();
      return new Map(docs.map((doc) => [doc._id, doc.text]));
    },
    async close() {},
  };
}
