import { Binary, MongoServerError, type Db } from 'mongodb';
import type { OpenEoJob, OpenEoJobStore } from '../openeo-job-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/** A job as JSON text (a process graph may hold keys MongoDB refuses, such as `$`-prefixed ones). */
interface JobDoc {
  _id: string;
  owner: string;
  created_at: string;
  version: number;
  json: string;
}

interface AssetDoc {
  _id: string;
  job_id: string;
  bytes: Binary;
}

const DUPLICATE_KEY = 11000;

/**
 * MongoDB adapter of store/openeo-job-store.ts: `openeo_jobs` (one document per job, compare-and-set on `version`)
 * and `openeo_job_assets` (one per result file, within MongoDB's 16 MB document bound).
 */
export async function createMongoOpenEoJobStore(db: Db): Promise<OpenEoJobStore> {
  const jobs = db.collection<JobDoc>('openeo_jobs');
  const assets = db.collection<AssetDoc>('openeo_job_assets');
  await ensureIndexes(jobs, [{ key: { owner: 1, created_at: -1 }, name: 'openeo_jobs_owner' }]);
  await ensureIndexes(assets, [{ key: { job_id: 1 }, name: 'openeo_job_assets_job' }]);
  const parse = (doc: JobDoc) => JSON.parse(doc.json) as OpenEoJob;
  const assetId = (jobId: string, name: string) => `${jobId}/${name}`;
  return {
    async create(job) {
      try {
        await jobs.insertOne({
          _id: job.id,
          owner: job.owner,
          created_at: job.created,
          version: 1,
          json: JSON.stringify({ ...job, version: 1 }),
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
        { $set: { version: next.version, json: JSON.stringify(next) } },
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
