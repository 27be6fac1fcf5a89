import type { BlobStore } from '../blob-store.js';
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

export function createSqliteBlobStore(db: SqliteDatabase): BlobStore {
  const insert = db.prepare<[string, string]>('INSERT OR IGNORE INTO job_blobs (id, text) VALUES (?, ?)');
  const byId = db.prepare<[string], { text: string }>('SELECT text FROM job_blobs WHERE id = ?');
  const putAll = db.transaction((blobs: ReadonlyMap<string, string>) => {
    for (const [id, text] of blobs) insert.run(id, text);
  });
  return {
    async put(blobs) {
      if (blobs.size > 0) putAll(blobs);
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
