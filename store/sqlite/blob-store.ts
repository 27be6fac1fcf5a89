import {
  BLOB_RESTAMP_MS,
  blobPruneEveryMs,
  DEFAULT_BLOB_RETENTION_MS,
  type BlobRetention,
  type BlobStore,
} from '../blob-store.js';
import type { SqliteMigration } from './migrations.js';
import type { SqliteDatabase } from './open-database.js';

/** Large step outputs by SHA-256 (store/blob-store.ts); never edit once released, append a migration. */
export const JOB_BLOBS_MIGRATION: SqliteMigration = {
  id: '0012-job-blobs',
  sql: `
    CREATE TABLE job_blobs (
      id   TEXT NOT NULL PRIMARY KEY,
      text TEXT NOT NULL
    ) WITHOUT ROWID;
  `,
};

/**
 * Blobs last stored longer ago than the retention window are deleted by put itself, at most every
 * blobPruneEveryMs and in bounded batches (a blob may be 8 MiB: a batch frees at most a few hundred MiB).
 */
export function createSqliteBlobStore(db: SqliteDatabase, retention: BlobRetention = {}): BlobStore {
  const retentionMs = retention.blobRetentionMs ?? DEFAULT_BLOB_RETENTION_MS;
  const clock = retention.clock ?? Date.now;
  const pruneEveryMs = blobPruneEveryMs(retentionMs);
  // A stored blob keeps its text; its stamp moves only when an hour old, so a dedupe hit rarely rewrites the row.
  const insert = db.prepare<[string, string, number, number]>(`
    INSERT INTO job_blobs (id, text, stored_at_ms) VALUES (?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET stored_at_ms = excluded.stored_at_ms WHERE stored_at_ms < ?
  `);
  const byId = db.prepare<[string], { text: string }>('SELECT text FROM job_blobs WHERE id = ?');
  const PRUNE_BATCH = 64;
  const pruneBlobs = db.prepare<[number, number]>(`
    DELETE FROM job_blobs WHERE id IN (SELECT id FROM job_blobs WHERE stored_at_ms < ? LIMIT ?)
  `);
  let prunedAt = -Infinity;
  const putAll = db.transaction((blobs: ReadonlyMap<string, string>, nowMs: number) => {
    for (const [id, text] of blobs) insert.run(id, text, nowMs, nowMs - BLOB_RESTAMP_MS);
  });
  return {
    async put(blobs) {
      if (blobs.size === 0) return;
      const nowMs = clock();
      // Before the insert: a blob stored again now is never pruned by this put's own sweep.
      if (nowMs - prunedAt >= pruneEveryMs) {
        // A full batch leaves prunedAt as it was, so the next put goes on with the backlog.
        if (pruneBlobs.run(nowMs - retentionMs, PRUNE_BATCH).changes < PRUNE_BATCH) prunedAt = nowMs;
      }
      putAll(blobs, nowMs);
    },
    async get(ids) {
      const found = new Map<string, string>();
      for (const id of new Set(ids)) {
        const row = byId.get(id);
        if (row) found.set(id, row.text);
      }
      return found;
    },
    async close() {},
  };
}
