import { MongoServerError, type Collection, type Db } from 'mongodb';
import { ServiceError } from '../../core/errors.js';
import { applyOutcome, INITIAL_TRUST, type JobOutcome, type TrustState } from '../../core/worker-trust.js';
import {
  DEFAULT_OUTCOME_RETENTION_MS,
  outcomePruneEveryMs,
  staleDeclaration,
  type OutcomeRetention,
  type WorkerRecord,
  type WorkerRegistration,
  type WorkerRegistry,
} from '../worker-registry.js';
import { ensureIndexes } from './ensure-indexes.js';

/**
 * A worker's declaration (`workers`), written by registrations only. Liveness and trust live in their own
 * collections, each written by one kind of operation: FerretDB writes a whole document back on update, so a
 * heartbeat sharing this document could put back the declaration a concurrent re-registration replaced.
 */
interface WorkerDoc extends WorkerRegistration {
  /** The document layout's version, for a future migration to tell old documents from new ones. */
  record_version: number;
  registered_at: string;
  /** When the stored declaration was signed (absent on documents written before it was kept: any is newer). */
  declared_at_ms?: number;
}

/** A worker's liveness (`worker_liveness`): registration creates it, heartbeats move it. */
interface LivenessDoc {
  pk: string;
  heartbeat_seq: number;
  last_seen_ms: number;
  /** Set by a leave, cleared by the next registration or heartbeat (absent on older documents: not left). */
  left_at_ms?: number | null;
}

/** One accepted heartbeat: the unique (pk, seq) index lets each seq be accepted once, on every engine. */
interface HeartbeatClaim {
  pk: string;
  seq: number;
  expires_at: Date;
}

/**
 * A job outcome already counted for a worker (`worker_outcomes`): `_id` is `${pk}:${job_id}` (a pk is 64 hex, so
 * the pair is unambiguous), inserted before the count, so each (worker, job) counts once on every engine.
 */
interface OutcomeClaim {
  _id: string;
  pk: string;
  job_id: string;
  outcome: JobOutcome;
  /** When it was counted: claims older than the retention window are pruned (absent only before the upgrade). */
  recorded_at?: Date;
}

/** Revision `rev` of a worker's trust state; the highest revision is the current one. */
interface TrustDoc extends TrustState {
  pk: string;
  rev: number;
}

export interface MongoWorkerRegistryOptions extends OutcomeRetention {
  /** Trust revisions tried per outcome before giving up; each failed one means another outcome landed first. */
  maxAttempts?: number;
}

const DUPLICATE_KEY = 11000;
/**
 * How long an accepted seq stays claimed. Old seqs are refused by `heartbeat_seq` itself; the claim matters
 * while that lags, which only a lost `$max` under concurrent heartbeats of one worker on FerretDB causes, and
 * the worker's next heartbeat repairs.
 */
const CLAIM_RETENTION_MS = 3_600_000;
/**
 * Trust revisions kept below a new one. They are never read as the state; they keep the slots of recent
 * revisions taken, so a concurrent writer cannot reuse one (see advanceTrust). Reads cost this many per worker.
 */
const TRUST_REVISIONS_KEPT = 16;
const NO_ID = { projection: { _id: 0 } } as const;

/**
 * MongoDB adapter of {@link WorkerRegistry} for MongoDB and FerretDB v1 alike (README.md beside this file).
 * FerretDB applies update operators as an unlocked read-modify-write, so no decision here rests on an update:
 *  - heartbeat: the stored `heartbeat_seq` refuses old seqs; a claim insert on unique (pk, seq) makes each seq
 *    win once, so of two concurrent heartbeats with one seq exactly one succeeds. (A conditional
 *    `updateOne({ pk, heartbeat_seq: { $lt: seq } })` does not: on FerretDB v1.24.2, 10 concurrent ones with
 *    one seq had several winners in 16 of 20 rounds.) The stored seq and `last_seen_ms` then move by `$max`
 *    (a lost update on FerretDB only leaves them lower; the claim still refuses that seq).
 *  - recordOutcome: first a claim of (pk, job id) in `worker_outcomes` (unique `_id`); a call that finds it taken
 *    returns the worker unchanged, so a job's outcome counts once however often it is recorded. The claim's
 *    winner then counts it: the trust state is a log of revisions on unique (pk, rev). An outcome reads the
 *    newest revision, applies the ladder and inserts rev + 1; a concurrent outcome that took rev + 1 first
 *    makes it re-read and retry, so every claimed outcome is counted exactly once. Without transactions, a
 *    process that dies (or a write that fails) between the claim and the revision loses that outcome; none
 *    ever counts twice.
 *  - register: an insert on unique pk creates the worker; otherwise `$set` replaces the declaration (two
 *    concurrent re-registrations of one worker: the last write wins, both being the worker's own).
 * Three collections make up a worker, one writer kind each (WorkerDoc says why); get and list read all three.
 * `worker_outcomes` and `worker_heartbeats` only hold claims.
 */
export async function createMongoWorkerRegistry(
  db: Db,
  options: MongoWorkerRegistryOptions = {},
): Promise<WorkerRegistry> {
  const maxAttempts = options.maxAttempts ?? 1000;
  const workers = db.collection<WorkerDoc>('workers');
  const liveness = db.collection<LivenessDoc>('worker_liveness');
  const claims = db.collection<HeartbeatClaim>('worker_heartbeats');
  const trust = db.collection<TrustDoc>('worker_trust');
  const outcomes = db.collection<OutcomeClaim>('worker_outcomes');
  await ensureIndexes(workers, [{ key: { pk: 1 }, name: 'pk_unique', unique: true }]);
  await ensureIndexes(liveness, [{ key: { pk: 1 }, name: 'pk_unique', unique: true }]);
  await ensureIndexes(claims, [
    { key: { pk: 1, seq: 1 }, name: 'pk_seq_unique', unique: true },
    { key: { pk: 1, expires_at: 1 }, name: 'pk_expires_at' },
  ]);
  await ensureIndexes(trust, [{ key: { pk: 1, rev: 1 }, name: 'pk_rev_unique', unique: true }]);
  // `worker_outcomes` is read and claimed by `_id`; `recorded_at` is indexed for the prune only (no TTL index:
  // FerretDB v1 has none, README.md beside this file).
  await ensureIndexes(outcomes, [{ key: { recorded_at: 1 }, name: 'recorded_at' }]);
  const retentionMs = options.outcomeRetentionMs ?? DEFAULT_OUTCOME_RETENTION_MS;
  const clock = options.clock ?? Date.now;
  const pruneEveryMs = outcomePruneEveryMs(retentionMs);
  let outcomesPrunedAt = -Infinity;
  // Claims from before recorded_at was kept get one whole window from now, never less than they were promised.
  await outcomes.updateMany({ recorded_at: { $exists: false } }, { $set: { recorded_at: new Date(clock()) } });

  let pruning: Promise<void> = Promise.resolve();

  async function latestTrust(pk: string): Promise<{ rev: number; state: TrustState }> {
    const revisions = await trust.find({ pk }, NO_ID).toArray();
    const newest = revisions.reduce<TrustDoc | null>((a, b) => (a === null || b.rev > a.rev ? b : a), null);
    return newest === null ? { rev: 0, state: INITIAL_TRUST } : { rev: newest.rev, state: stateOf(newest) };
  }

  async function get(pk: string): Promise<WorkerRecord | null> {
    const [doc, live, t] = await Promise.all([
      workers.findOne({ pk }, NO_ID),
      liveness.findOne({ pk }, NO_ID),
      latestTrust(pk),
    ]);
    return doc === null ? null : toRecord(doc, live, t.state);
  }

  async function advanceTrust(pk: string, outcome: JobOutcome): Promise<void> {
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const { rev, state } = await latestTrust(pk);
      const next = { pk, rev: rev + 1, ...applyOutcome(state, outcome) };
      if (!(await insertClaimed(trust, next))) continue;
      // Pruning frees the slots more than TRUST_REVISIONS_KEPT below a new revision, so a writer whose read
      // predates that can insert a freed slot below the newest (never read as the state: its outcome would be
      // lost). The revision that freed the slot lies more than TRUST_REVISIONS_KEPT above it: undo and retry.
      // (Revisions stacked that high on a fresh one between these two calls would look the same; that takes
      // more concurrent outcomes of one worker than its jobs produce.)
      if (await trust.findOne({ pk, rev: { $gt: next.rev + TRUST_REVISIONS_KEPT } }, { projection: { _id: 1 } })) {
        await trust.deleteOne({ pk, rev: next.rev });
        continue;
      }
      await trust.deleteMany({ pk, rev: { $lt: next.rev - TRUST_REVISIONS_KEPT } });
      return;
    }
    throw new Error(`trust of worker ${pk}: no free revision after ${maxAttempts} attempts (contention)`);
  }

  /** `$max` keeps both fields monotonic on MongoDB; on FerretDB a lost update only leaves them lower. */
  async function markSeen(pk: string, seq: number, nowMs: number): Promise<void> {
    const update = { $max: { heartbeat_seq: seq, last_seen_ms: nowMs }, $set: { left_at_ms: null } };
    try {
      await liveness.updateOne({ pk }, update, { upsert: true });
    } catch (error) {
      // Two first writes upserted at once; the other one created the document, so move it instead.
      if (!isDuplicateKey(error)) throw error;
      await liveness.updateOne({ pk }, update);
    }
  }

  /** A heartbeat's or leave's seq, claimed once (see above); throws what the caller is told otherwise. */
  async function claimSeq(pk: string, seq: number, nowMs: number, what: string): Promise<void> {
    if (!Number.isSafeInteger(seq) || seq < 1) {
      throw new RangeError(`heartbeat seq must be a positive integer: ${seq}`);
    }
    const [known, live] = await Promise.all([
      workers.findOne({ pk }, { projection: { _id: 1 } }),
      liveness.findOne({ pk }, NO_ID),
    ]);
    if (known === null) throw new ServiceError('worker_not_found', `no worker registered with pk ${pk}`);
    const stored = live?.heartbeat_seq ?? 0;
    const replay = new ServiceError(
      'stale_request',
      `${what} seq ${seq} does not exceed the last accepted seq ${stored} (a replay?)`,
    );
    if (seq <= stored) throw replay;
    const claimed = await insertClaimed(claims, { pk, seq, expires_at: new Date(nowMs + CLAIM_RETENTION_MS) });
    if (!claimed) throw replay;
  }

  return {
    async register(r, nowMs) {
      const declaration = { ...declarationOf(r), declared_at_ms: r.declared_at_ms ?? nowMs };
      const created = await insertClaimed<WorkerDoc>(workers, {
        ...declaration,
        record_version: 1,
        registered_at: new Date(nowMs).toISOString(),
      });
      if (!created) {
        // One conditional update: of a registration and an older replay racing, the older never lands.
        const replaced = await workers.updateOne(
          {
            pk: r.pk,
            $or: [{ declared_at_ms: { $exists: false } }, { declared_at_ms: { $lte: declaration.declared_at_ms } }],
          },
          { $set: declaration },
        );
        if (replaced.matchedCount === 0) throw staleDeclaration(r.pk);
      }
      await markSeen(r.pk, 0, nowMs);
      const record = await get(r.pk);
      if (record === null) throw new Error(`worker ${r.pk} vanished while registering`);
      return record;
    },
    async heartbeat(pk, seq, nowMs) {
      await claimSeq(pk, seq, nowMs, 'heartbeat');
      await markSeen(pk, seq, nowMs);
      // Off the caller's path; close() waits for it. A failed prune is retried at the next heartbeat.
      pruning = pruning
        .then(() => claims.deleteMany({ pk, expires_at: { $lt: new Date(nowMs) } }))
        .then(() => undefined)
        .catch(() => undefined);
      const record = await get(pk);
      if (record === null) throw new Error(`worker ${pk} vanished during its heartbeat`);
      return record;
    },
    async leave(pk, seq, nowMs) {
      await claimSeq(pk, seq, nowMs, 'leave');
      await liveness.updateOne({ pk }, { $max: { heartbeat_seq: seq }, $set: { left_at_ms: nowMs } });
      const record = await get(pk);
      if (record === null) throw new Error(`worker ${pk} vanished while leaving`);
      return record;
    },
    get,
    async list() {
      const [docs, lives, revisions] = await Promise.all([
        workers.find({}, NO_ID).toArray(),
        liveness.find({}, NO_ID).toArray(),
        trust.find({}, NO_ID).toArray(),
      ]);
      const live = new Map(lives.map((l) => [l.pk, l]));
      const newest = new Map<string, TrustDoc>();
      for (const r of revisions) if ((newest.get(r.pk)?.rev ?? 0) < r.rev) newest.set(r.pk, r);
      return docs
        .map((doc) => toRecord(doc, live.get(doc.pk) ?? null, stateOf(newest.get(doc.pk) ?? INITIAL_TRUST)))
        .sort((a, b) => (a.pk < b.pk ? -1 : a.pk > b.pk ? 1 : 0));
    },
    async recordOutcome(pk, outcome, jobId) {
      if (typeof jobId !== 'string' || jobId.length === 0) {
        throw new RangeError('recordOutcome: a job id is required');
      }
      if ((await workers.findOne({ pk }, { projection: { _id: 1 } })) === null) return null;
      const nowMs = clock();
      if (nowMs - outcomesPrunedAt >= pruneEveryMs) {
        outcomesPrunedAt = nowMs;
        // Once an interval, on an indexed range: cheap enough to await, so a claim never races its own prune. A
        // failed prune is tried again at the next interval; the outcome is counted either way.
        await outcomes.deleteMany({ recorded_at: { $lt: new Date(nowMs - retentionMs) } }).catch(() => undefined);
      }
      const claimed = await insertClaimed(outcomes, {
        _id: `${pk}:${jobId}`,
        pk,
        job_id: jobId,
        outcome,
        recorded_at: new Date(nowMs),
      });
      if (claimed) await advanceTrust(pk, outcome);
      return get(pk);
    },
    async close() {
      await pruning;
    },
  };
}

/** Inserts `doc`; false when a unique index already holds its key (another caller claimed it). */
async function insertClaimed<T extends object>(collection: Collection<T>, doc: T): Promise<boolean> {
  try {
    // The driver adds `_id` to the object it inserts; a copy keeps the caller's value clean.
    await collection.insertOne({ ...doc } as Parameters<Collection<T>['insertOne']>[0]);
    return true;
  } catch (error) {
    if (isDuplicateKey(error)) return false;
    throw error;
  }
}

const isDuplicateKey = (error: unknown): boolean => error instanceof MongoServerError && error.code === DUPLICATE_KEY;

/** Only the declared fields, so nothing else a caller's object carries is stored. */
const declarationOf = (r: WorkerRegistration): WorkerRegistration => ({
  pk: r.pk,
  h3_cell: r.h3_cell,
  models: [...r.models],
  tools: [...r.tools],
  hardware: {
    platform: r.hardware.platform,
    gpu: r.hardware.gpu,
    vram_gb: r.hardware.vram_gb,
    ram_gb: r.hardware.ram_gb,
    cores: r.hardware.cores,
  },
  hardware_tier: r.hardware_tier,
  relay: r.relay,
  version: r.version,
});

const stateOf = (s: TrustState): TrustState => ({
  trust_tier: s.trust_tier,
  jobs_completed: s.jobs_completed,
  jobs_failed: s.jobs_failed,
  streak: s.streak,
});

/** A worker whose registration stopped before its liveness was written counts as seen when it registered. */
function toRecord(doc: WorkerDoc, live: LivenessDoc | null, t: TrustState): WorkerRecord {
  return {
    ...declarationOf(doc),
    trust_tier: t.trust_tier,
    jobs_completed: t.jobs_completed,
    jobs_failed: t.jobs_failed,
    registered_at: doc.registered_at,
    last_seen_ms: live?.last_seen_ms ?? Date.parse(doc.registered_at),
    heartbeat_seq: live?.heartbeat_seq ?? 0,
    left_at_ms: live?.left_at_ms ?? null,
  };
}
