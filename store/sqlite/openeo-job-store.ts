import { DEFAULT_JOB_RETENTION_MS, jobPruneEveryMs } from '../job-store.js';
import {
  PRUNABLE_OPENEO_STATUSES,
  type OpenEoJob,
  type OpenEoJobRetention,
  type OpenEoJobStore,
} from '../openeo-job-store.js';
import type { SqliteMigration } from './migrations.js';
import type { SqliteDatabase } from './open-database.js';

/** openEO batch jobs and their result files (store/openeo-job-store.ts); never edit once released. */
export const OPENEO_JOBS_MIGRATION: SqliteMigration = {
  id: '0015-openeo-jobs',
  sql: `
    CREATE TABLE openeo_jobs (
      id         TEXT    NOT NULL PRIMARY KEY,
      owner      TEXT    NOT NULL,
      created_at TEXT    NOT NULL,
      version    INTEGER NOT NULL,
      json       TEXT    NOT NULL
    ) WITHOUT ROWID;
    CREATE INDEX openeo_jobs_owner ON openeo_jobs (owner, created_at);
    CREATE TABLE openeo_job_assets (
      job_id TEXT NOT NULL,
      name   TEXT NOT NULL,
      bytes  BLOB NOT NULL,
      PRIMARY KEY (job_id, name)
    ) WITHOUT ROWID;
  `,
};

/**
 * Jobs past the retention window are deleted with their files by create, at most every jobPruneEveryMs and a
 * bounded batch at a time (result files may be large), on the `openeo_jobs_updated` index (migration 0017).
 */
export function createSqliteOpenEoJobStore(db: SqliteDatabase, retention: OpenEoJobRetention = {}): OpenEoJobStore {
  const retentionMs = retention.jobRetentionMs ?? DEFAULT_JOB_RETENTION_MS;
  const pruneEveryMs = jobPruneEveryMs(retentionMs);
  const PRUNE_BATCH = 16;
  const statuses = PRUNABLE_OPENEO_STATUSES.map((s) => `'${s}'`).join(', ');
  const expired = db.prepare<[string, number], { id: string }>(
    `SELECT id FROM openeo_jobs WHERE json_extract(json, '$.updated') < ?
     AND json_extract(json, '$.status') IN (${statuses}) LIMIT ?`,
  );
  let prunedAt = -Infinity;
  const insert = db.prepare<[string, string, string, string]>(
    'INSERT INTO openeo_jobs (id, owner, created_at, version, json) VALUES (?, ?, ?, 1, ?)',
  );
  const byId = db.prepare<[string], { json: string }>('SELECT json FROM openeo_jobs WHERE id = ?');
  const byOwner = db.prepare<[string, number], { json: string }>(
    'SELECT json FROM openeo_jobs WHERE owner = ? ORDER BY created_at DESC, id DESC LIMIT ?',
  );
  const update = db.prepare<[number, string, string, number]>(
    'UPDATE openeo_jobs SET version = ?, json = ? WHERE id = ? AND version = ?',
  );
  const remove = db.prepare<[string]>('DELETE FROM openeo_jobs WHERE id = ?');
  const removeAssets = db.prepare<[string]>('DELETE FROM openeo_job_assets WHERE job_id = ?');
  const putAsset = db.prepare<[string, string, Buffer]>(
    'INSERT OR REPLACE INTO openeo_job_assets (job_id, name, bytes) VALUES (?, ?, ?)',
  );
  const asset = db.prepare<[string, string], { bytes: Buffer }>(
    'SELECT bytes FROM openeo_job_assets WHERE job_id = ? AND name = ?',
  );
  const parse = (json: string) => JSON.parse(json) as OpenEoJob;
  const removeJob = db.transaction((id: string) => {
    remove.run(id);
    removeAssets.run(id);
  });
  const pruneExpired = db.transaction((nowMs: number) => {
    if (!(nowMs - prunedAt >= pruneEveryMs)) return;
    const ids = expired.all(new Date(nowMs - retentionMs).toISOString(), PRUNE_BATCH).map((r) => r.id);
    for (const id of ids) removeJob(id);
    // A full batch leaves prunedAt as it was, so the next create goes on with the backlog.
    if (ids.length < PRUNE_BATCH) prunedAt = nowMs;
  });
  return {
    async create(job) {
      pruneExpired(Date.parse(job.created));
      if (byId.get(job.id)) throw new RangeError(`openEO job ${job.id} exists`);
      insert.run(job.id, job.owner, job.created, JSON.stringify({ ...job, version: 1 }));
    },
    async get(id) {
      const row = byId.get(id);
      return row ? parse(row.json) : null;
    },
    async list(owner, limit) {
      if (!Number.isInteger(limit)) throw new RangeError('limit must be an integer');
      return byOwner.all(owner, Math.min(100, Math.max(1, limit))).map((r) => parse(r.json));
    },
    async save(job) {
      const next = { ...job, version: job.version + 1 };
      return update.run(next.version, JSON.stringify(next), job.id, job.version).changes === 1 ? next : null;
    },
    async delete(id) {
      removeJob(id);
    },
    async putAsset(jobId, name, bytes) {
      putAsset.run(jobId, name, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    },
    async getAsset(jobId, name) {
      const row = asset.get(jobId, name);
      return row ? new Uint8Array(row.bytes) : null;
    },
    async close() {},
  };
}
