import { MongoServerError, type Collection, type Db } from 'mongodb';
import { ServiceError } from '../../core/errors.js';
import type { JobRecord, JobStatus } from '../../core/job-record.js';
import { checkJobInput, JOB_RECORD_VERSION, parseStoredJob, recentLimit } from '../job-record-schema.js';
import { DEFAULT_JOB_RETENTION_MS, jobPruneEveryMs, type JobRetention, type JobStore } from '../job-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/** The columns every stored revision of a job carries: the record's JSON and the fields queries need. */
interface JobFields {
  status: JobStatus;
  /** Never changes for a job; `recent` filters on it (documents written before it have none). */
  requester_pk: string;
  created_at: string;
  updated_at: string;
  /**
   * The JobRecord as JSON text, not as a document: step outputs carry arbitrary keys (`$`-prefixed or dotted
   * keys are refused or mean paths on some engines), and text comes back exactly as it was written.
   */
  json: string;
}

/**
 * A job (`compute_jobs`): inserted by the claim (revision 0), then moved forward as a hint to revision `rev`.
 * Readers never trust the hint alone: a later revision in `compute_job_revisions` wins over it.
 */
interface JobDoc extends JobFields {
  _id: string;
  /** The document layout's version, for a future migration to tell old documents from new ones. */
  record_version: number;
  rev: number;
}

/** Revision `rev` (1, 2, …) of a job: each retry or finish inserts the next one; unique (job_id, rev). */
interface RevisionDoc extends JobFields {
  job_id: string;
  rev: number;
}

interface Current {
  rev: number;
  job: JobRecord;
}

export interface MongoJobStoreOptions extends JobRetention {
  /** Revisions tried per transition before giving up; each failed one means another transition landed first. */
  maxAttempts?: number;
}

const DUPLICATE_KEY = 11000;
/** Jobs deleted per prune at most (a job document carries its whole answer). */
const PRUNE_BATCH = 1_000;
const NO_ID = { projection: { _id: 0 } } as const;

/**
 * MongoDB adapter of {@link JobStore} for MongoDB and FerretDB v1 alike (README.md beside this file). Every
 * decision rests on an insert against a unique index, never on a conditional update: FerretDB v1 applies
 * `updateOne` / `findOneAndUpdate` as an unlocked read-modify-write, and 10 concurrent
 * `findOneAndUpdate({ _id, status: 'failed' }, …)` had several winners in 19 of 20 rounds on v1.24.2.
 *  - claim: insert `{ _id: job_id }`; of concurrent claims exactly one succeeds, the others read the job.
 *  - retry and finish: a job's history is a chain of revisions on unique (job_id, rev). A transition reads
 *    the current revision r, checks its status (`failed` for retry, `running` for finish) and inserts r + 1.
 *    Of concurrent transitions from r exactly one inserts; a loser re-reads and sees the winner's revision,
 *    which its own transition no longer applies to, so it returns that record unchanged.
 *  - After a transition the job document is moved to the new revision (`$set` filtered on a lower `rev`):
 *    a hint that lets `recent` sort and page on one collection. A lost or late hint (possible on FerretDB only,
 *    under concurrent transitions of one job) costs nothing: every read adds the revisions above the hint.
 * Revisions are a few per job (one per retry or finish). A job last written longer ago than the retention
 * window is deleted with its revisions by claim, at most every jobPruneEveryMs, a bounded batch at a time, on
 * the `updated_at` index (no TTL index: FerretDB v1 has none, README.md beside this file).
 */
export async function createMongoJobStore(db: Db, options: MongoJobStoreOptions = {}): Promise<JobStore> {
  const maxAttempts = options.maxAttempts ?? 100;
  const jobs = db.collection<JobDoc>('compute_jobs');
  const revisions = db.collection<RevisionDoc>('compute_job_revisions');
  await ensureIndexes(jobs, [
    { key: { created_at: -1, _id: -1 }, name: 'recent' },
    { key: { status: 1 }, name: 'status' },
    { key: { requester_pk: 1, created_at: -1, _id: -1 }, name: 'requester_recent' },
  ]);
  await ensureIndexes(jobs, [{ key: { updated_at: 1 }, name: 'updated_at' }]);
  await ensureIndexes(revisions, [{ key: { job_id: 1, rev: 1 }, name: 'job_rev_unique', unique: true }]);
  const retentionMs = options.jobRetentionMs ?? DEFAULT_JOB_RETENTION_MS;
  const pruneEveryMs = jobPruneEveryMs(retentionMs);
  let prunedAt = -Infinity;

  /**
   * Deletes one batch of jobs last written before the window, revisions first: a job document is the entry to
   * its revisions, so a prune cut short leaves a whole (expired) job, never revisions nobody can reach. A job
   * whose hint lags (FerretDB, concurrent transitions) but whose newest revision is inside the window is kept.
   * True when the batch was full (more may be waiting).
   */
  async function pruneBatch(nowMs: number): Promise<boolean> {
    const cutoff = new Date(nowMs - retentionMs).toISOString();
    const old = await jobs
      .find({ updated_at: { $lt: cutoff } }, { projection: { _id: 1 } })
      .limit(PRUNE_BATCH)
      .toArray();
    if (old.length === 0) return false;
    const ids = old.map((doc) => doc._id);
    const fresh = await revisions
      .find({ job_id: { $in: ids }, updated_at: { $gte: cutoff } }, { projection: { _id: 0, job_id: 1 } })
      .toArray();
    const kept = new Set(fresh.map((r) => r.job_id));
    const gone = ids.filter((id) => !kept.has(id));
    if (gone.length > 0) {
      await revisions.deleteMany({ job_id: { $in: gone } });
      await jobs.deleteMany({ _id: { $in: gone }, updated_at: { $lt: cutoff } });
    }
    return old.length === PRUNE_BATCH;
  }

  /** The newest of the hint and the revisions above it. */
  function newestOf(doc: JobDoc, later: readonly RevisionDoc[]): Current {
    let best: { rev: number; json: string } = doc;
    for (const r of later) if (r.rev > best.rev) best = r;
    return { rev: best.rev, job: parseStoredJob(best.json, doc._id) };
  }

  async function current(jobId: string): Promise<Current | null> {
    const doc = await jobs.findOne({ _id: jobId });
    if (doc === null) return null;
    const later = await revisions.find({ job_id: jobId, rev: { $gt: doc.rev } }, NO_ID).toArray();
    return newestOf(doc, later);
  }

  /**
   * Moves a job whose current status is `from` to `job`; `changed` says whether this call did. Null for an
   * unknown id.
   */
  async function transition(job: JobRecord, from: JobStatus): Promise<{ changed: boolean; job: JobRecord } | null> {
    const fields = fieldsOf(job);
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const now = await current(job.job_id);
      if (now === null) return null;
      if (now.job.status !== from) return { changed: false, job: now.job };
      const rev = now.rev + 1;
      if (!(await insertClaimed(revisions, { job_id: job.job_id, rev, ...fields }))) continue;
      await jobs.updateOne({ _id: job.job_id, rev: { $lt: rev } }, { $set: { rev, ...fields } });
      return { changed: true, job: parseStoredJob(fields.json, job.job_id) };
    }
    throw new Error(`job ${job.job_id}: no free revision after ${maxAttempts} attempts (contention)`);
  }

  return {
    async claim(input) {
      const job = checkJobInput(input, ['running'], 'claim');
      const nowMs = Date.parse(job.updated_at);
      if (nowMs - prunedAt >= pruneEveryMs) {
        prunedAt = nowMs;
        // Once an interval, on an indexed range: cheap enough to await. A full batch lets the next claim go on
        // with the backlog; a failed prune is tried again at the next interval, and the claim goes ahead.
        if (await pruneBatch(nowMs).catch(() => false)) prunedAt = -Infinity;
      }
      const fields = fieldsOf(job);
      if (await insertClaimed(jobs, { _id: job.job_id, record_version: JOB_RECORD_VERSION, rev: 0, ...fields })) {
        return { created: true, job: parseStoredJob(fields.json, job.job_id) };
      }
      const stored = await current(job.job_id);
      // Only a job untouched for a whole window is deleted, and no claim of it can come that late (its request
      // is stale), so a duplicate key leaves a document to read.
      if (stored === null) throw new Error(`job ${job.job_id} conflicted on insert but is not stored`);
      return { created: false, job: stored.job };
    },
    async retry(input) {
      const job = checkJobInput(input, ['running'], 'retry');
      const result = await transition(job, 'failed');
      return result === null ? null : { restarted: result.changed, job: result.job };
    },
    async finish(input) {
      const job = checkJobInput(input, ['complete', 'failed'], 'finish');
      const result = await transition(job, 'running');
      if (result === null) throw new ServiceError('job_not_found', `no job with id ${job.job_id}`);
      return result.job;
    },
    async get(jobId) {
      return (await current(jobId))?.job ?? null;
    },
    async recent(limit, filter) {
      const query: Record<string, unknown> =
        filter?.requesterPk === undefined ? {} : { requester_pk: filter.requesterPk };
      const before = filter?.before;
      if (before !== undefined) {
        // Keyset page: the `recent` indexes seek past the previous page's last job instead of skipping rows.
        query.$or = [
          { created_at: { $lt: before.createdAt } },
          { created_at: before.createdAt, _id: { $lt: before.jobId } },
        ];
      }
      const docs = await jobs.find(query).sort({ created_at: -1, _id: -1 }).limit(recentLimit(limit)).toArray();
      if (docs.length === 0) return [];
      const later = await revisions.find({ job_id: { $in: docs.map((d) => d._id) } }, NO_ID).toArray();
      const byJob = new Map<string, RevisionDoc[]>();
      for (const r of later) byJob.set(r.job_id, [...(byJob.get(r.job_id) ?? []), r]);
      // Sorted again by the records read: a lagging hint may still carry a retried job's former created_at.
      return docs.map((doc) => newestOf(doc, byJob.get(doc._id) ?? []).job).sort(newestFirst);
    },
    async close() {
      // The collections belong to the caller's client; nothing runs in the background.
    },
  };
}

const fieldsOf = (job: JobRecord): JobFields => ({
  status: job.status,
  requester_pk: job.requester_pk,
  created_at: job.created_at,
  updated_at: job.updated_at,
  json: JSON.stringify(job),
});

/** created_at, then job_id, descending (ISO 8601 UTC text sorts as time). */
const newestFirst = (a: JobRecord, b: JobRecord): number =>
  a.created_at !== b.created_at
    ? a.created_at < b.created_at
      ? 1
      : -1
    : a.job_id === b.job_id
      ? 0
      : a.job_id < b.job_id
        ? 1
        : -1;

/** Inserts `doc`; false when a unique index already holds its key (another caller claimed it). */
async function insertClaimed<T extends object>(collection: Collection<T>, doc: T): Promise<boolean> {
  try {
    // The driver adds `_id` to the object it inserts; a copy keeps the caller's value clean.
    await collection.insertOne({ ...doc } as Parameters<Collection<T>['insertOne']>[0]);
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) return false;
    throw error;
  }
}
