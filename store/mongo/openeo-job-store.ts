import { Binary, MongoServerError, type Db } from 'mongodb';
import { DEFAULT_JOB_RETENTION_MS, jobPruneEveryMs } from '../job-store.js';
import {
  PRUNABLE_OPENEO_STATUSES,
  type OpenEoJob,
  type OpenEoJobRetention,
  type OpenEoJobStatus,
  type OpenEoJobStore,
} from '../openeo-job-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/** A job as JSON text (a process graph may hold keys MongoDB refuses, such as `$`-prefixed ones). */
interface JobDoc {
  _id: string;
  owner: string;
  created_at: string;
  version: number;
  json: string;
  /** The record's `status` and `updated`, for the retention prune (absent only before the upgrade). */
  status?: OpenEoJobStatus;
  updated_at?: string;
}

interface AssetDoc {
  _id: string;
  job_id: string;
  bytes: Binary;
}

const DUPLICATE_KEY = 11000;
/** Jobs deleted per prune at most: each may hold result files of up to 16 MB. */
const PRUNE_BATCH = 16;

/**
 * MongoDB adapter of store/openeo-job-store.ts: `openeo_jobs` (one document per job, compare-and-set on `version`)
 * and `openeo_job_assets` (one per result file, within MongoDB's 16 MB document bound). Jobs past the retention
 * window are deleted with their files by create, at most every jobPruneEveryMs and a bounded batch at a time, on
 * the `updated_at` index (no TTL index: FerretDB v1 has none, README.md beside this file).
 */
export async function createMongoOpenEoJobStore(db: Db, retention: OpenEoJobRetention = {}): Promise<OpenEoJobStore> {
  const jobs = db.collection<JobDoc>('openeo_jobs');
  const assets = db.collection<AssetDoc>('openeo_job_assets');
  await ensureIndexes(jobs, [{ key: { owner: 1, created_at: -1 }, name: 'openeo_jobs_owner' }]);
  await ensureIndexes(assets, [{ key: { job_id: 1 }, name: 'openeo_job_assets_job' }]);
  await ensureIndexes(jobs, [{ key: { updated_at: 1 }, name: 'openeo_jobs_updated' }]);
  const parse = (doc: JobDoc) => JSON.parse(doc.json) as OpenEoJob;
  // Jobs from before these fields were kept: copied from their record once (no pipeline updates on FerretDB v1).
  for (const doc of await jobs.find({ updated_at: { $exists: false } }).toArray()) {
    const job = parse(doc);
    await jobs.updateOne(
      { _id: doc._id, version: doc.version },
      { $set: { status: job.status, updated_at: job.updated } },
    );
  }
  const retentionMs = retention.jobRetentionMs ?? DEFAULT_JOB_RETENTION_MS;
  const pruneEveryMs = jobPruneEveryMs(retentionMs);
  let prunedAt = -Infinity;
  /** Deletes a batch of expired jobs, files first (a prune cut short leaves a job, never files nobody reaches). */
  async function pruneBatch(nowMs: number): Promise<boolean> {
    const expired = {
      updated_at: { $lt: new Date(nowMs - retentionMs).toISOString() },
      status: { $in: [...PRUNABLE_OPENEO_STATUSES] },
    };
    const ids = (
      await jobs
        .find(expired, { projection: { _id: 1 } })
        .limit(PRUNE_BATCH)
        .toArray()
    ).map((d) => d._id);
    if (ids.length === 0) return false;
    await assets.deleteMany({ job_id: { $in: ids } });
    await jobs.deleteMany({ _id: { $in: ids }, ...expired });
    return ids.length === PRUNE_BATCH;
  }
  const assetId = (jobId: string, name: string) => `${jobId}/${name}`;
  return {
    async create(job) {
      const nowMs = Date.parse(job.created);
      if (nowMs - prunedAt >= pruneEveryMs) {
        prunedAt = nowMs;
        // A full batch lets the next create go on with the backlog; a failed prune is tried at the next interval.
        if (await pruneBatch(nowMs).catch(() => false)) prunedAt = -Infinity;
      }
      try {
        await jobs.insertOne({
          _id: job.id,
          owner: job.owner,
          created_at: job.created,
          version: 1,
          json: JSON.stringify({ ...job, version: 1 }),
          status: job.status,
          updated_at: job.updated,
        });
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) {
          throw new RangeError(`openEO job ${job.id} exists`, { cause: error });
        }
        throw error;
      }
    },
    async get(id) {
      const doc = await jobs.findOne({ _id: id });
      return doc ? parse(doc) : null;
    },
    async list(owner, limit) {
      if (!Number.isInteger(limit)) throw new RangeError('limit must be an integer');
      const docs = await jobs
        .find({ owner })
        .sort({ created_at: -1, _id: -1 })
        .limit(Math.min(100, Math.max(1, limit)))
        .toArray();
      return docs.map(parse);
    },
    async save(job) {
      const next = { ...job, version: job.version + 1 };
      const done = await jobs.updateOne(
        { _id: job.id, version: job.version },
        { $set: { version: next.version, json: JSON.stringify(next), status: next.status, updated_at: next.updated } },
      );
      return done.modifiedCount === 1 ? next : null;
    },
    async delete(id) {
      await jobs.deleteOne({ _id: id });
      await assets.deleteMany({ job_id: id });
    },
    async putAsset(jobId, name, bytes) {
      const _id = assetId(jobId, name);
      await assets.replaceOne({ _id }, { job_id: jobId, bytes: new Binary(bytes) }, { upsert: true });
    },
    async getAsset(jobId, name) {
      const doc = await assets.findOne({ _id: assetId(jobId, name) });
      return doc ? new Uint8Array(doc.bytes.buffer) : null;
    },
    async close() {},
  };
}
