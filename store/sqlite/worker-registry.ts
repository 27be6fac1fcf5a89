import { ServiceError } from '../../core/errors.js';
import type { WorkerTier } from '../../core/tiers.js';
import { applyOutcome, type TrustState } from '../../core/worker-trust.js';
import {
  DEFAULT_OUTCOME_RETENTION_MS,
  outcomePruneEveryMs,
  staleDeclaration,
  type HardwareTier,
  type OutcomeRetention,
  type WorkerRecord,
  type WorkerRegistration,
  type WorkerRegistry,
} from '../worker-registry.js';
import type { SqliteDatabase } from './open-database.js';

interface WorkerRow {
  pk: string;
  h3_cell: string;
  models: string;
  tools: string;
  hardware: string;
  hardware_tier: number;
  relay: number;
  version: string;
  trust_tier: string;
  jobs_completed: number;
  jobs_failed: number;
  outcome_streak: number;
  registered_at: string;
  last_seen_ms: number;
  heartbeat_seq: number;
  left_at_ms: number | null;
}

type DeclarationParams = [string, string, string, string, string, number, number, string, string, number, number];

/**
 * SQLite adapter of {@link WorkerRegistry} (tables `workers`, migration 0003, and `worker_outcomes`, 0006).
 * Each write is one statement or one BEGIN IMMEDIATE transaction, so it is atomic within a process and,
 * through SQLite's write lock, across processes sharing the file: a heartbeat's replay check and its update
 * are one conditional UPDATE; an outcome's (pk, job_id) claim and its counter update are one transaction.
 * Claims older than the retention window are deleted by recordOutcome itself, at most every
 * outcomePruneEveryMs and in bounded batches, so the table holds about one window of outcomes.
 */
export function createSqliteWorkerRegistry(db: SqliteDatabase, retention: OutcomeRetention = {}): WorkerRegistry {
  const retentionMs = retention.outcomeRetentionMs ?? DEFAULT_OUTCOME_RETENTION_MS;
  const clock = retention.clock ?? Date.now;
  const pruneEveryMs = outcomePruneEveryMs(retentionMs);
  // A re-registration replaces the declaration only: trust, counters, heartbeat_seq and registered_at stay.
  // An older declaration changes nothing and returns no row (a replay).
  const upsert = db.prepare<DeclarationParams, WorkerRow>(`
    INSERT INTO workers (pk, h3_cell, models, tools, hardware, hardware_tier, relay, version, registered_at, last_seen_ms,
                         declared_at_ms)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (pk) DO UPDATE SET
      h3_cell = excluded.h3_cell, models = excluded.models, tools = excluded.tools, hardware = excluded.hardware,
      hardware_tier = excluded.hardware_tier, relay = excluded.relay, version = excluded.version,
      last_seen_ms = MAX(last_seen_ms, excluded.last_seen_ms), declared_at_ms = excluded.declared_at_ms,
      left_at_ms = NULL
    WHERE excluded.declared_at_ms >= workers.declared_at_ms
    RETURNING *
  `);
  const beat = db.prepare<[number, number, string, number], WorkerRow>(`
    UPDATE workers SET heartbeat_seq = ?, last_seen_ms = MAX(last_seen_ms, ?), left_at_ms = NULL
    WHERE pk = ? AND heartbeat_seq < ?
    RETURNING *
  `);
  // A leave consumes its seq like a heartbeat (one conditional UPDATE: a replay changes nothing).
  const depart = db.prepare<[number, number, string, number], WorkerRow>(`
    UPDATE workers SET heartbeat_seq = ?, left_at_ms = ?
    WHERE pk = ? AND heartbeat_seq < ?
    RETURNING *
  `);
  const byPk = db.prepare<[string], WorkerRow>('SELECT * FROM workers WHERE pk = ?');
  const all = db.prepare<[], WorkerRow>('SELECT * FROM workers ORDER BY pk');
  const setTrust = db.prepare<[string, number, number, number, string], WorkerRow>(`
    UPDATE workers SET trust_tier = ?, jobs_completed = ?, jobs_failed = ?, outcome_streak = ?
    WHERE pk = ?
    RETURNING *
  `);

  const claimOutcome = db.prepare<[string, string, string, number]>(
    'INSERT INTO worker_outcomes (pk, job_id, outcome, recorded_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT (pk, job_id) DO NOTHING',
  );
  // A bounded batch per statement: a first prune over a large backlog never holds the write lock for long.
  const PRUNE_BATCH = 10_000;
  const pruneOutcomes = db.prepare<[number, number]>(`
    DELETE FROM worker_outcomes WHERE (pk, job_id) IN (
      SELECT pk, job_id FROM worker_outcomes WHERE recorded_at_ms < ? LIMIT ?
    )
  `);
  let prunedAt = -Infinity;
  const pruneExpired = (nowMs: number) => {
    if (nowMs - prunedAt < pruneEveryMs) return;
    // A full batch leaves prunedAt as it was, so the next outcome goes on with the backlog.
    if (pruneOutcomes.run(nowMs - retentionMs, PRUNE_BATCH).changes < PRUNE_BATCH) prunedAt = nowMs;
  };

  // The claim and the counter update commit together: an outcome is either claimed and counted, or neither.
  const count = (pk: string, kind: 'completed' | 'failed', jobId: string): WorkerRow | undefined => {
    const row = byPk.get(pk);
    if (!row) return undefined;
    const nowMs = clock();
    pruneExpired(nowMs);
    if (claimOutcome.run(pk, jobId, kind, nowMs).changes === 0) return row; // this job's outcome already counted
    const next = applyOutcome(trustOf(row), kind);
    return setTrust.get(next.trust_tier, next.jobs_completed, next.jobs_failed, next.streak, pk);
  };
  const outcome = db.transaction(count);
  // A batch of completions in one transaction (store/outcome-batch.ts): one commit, and no record made of each.
  const completions = db.transaction((batch: readonly { pk: string; jobId: string }[]) => {
    for (const { pk, jobId } of batch) count(pk, 'completed', jobId);
  });

  /** Why a sequenced update changed nothing: an unknown worker, or a seq that is not above the stored one. */
  const refusal = (pk: string, seq: number, what: string): ServiceError => {
    const stored = byPk.get(pk);
    if (!stored) return new ServiceError('worker_not_found', `no worker registered with pk ${pk}`);
    return new ServiceError(
      'stale_request',
      `${what} seq ${seq} does not exceed the last accepted seq ${stored.heartbeat_seq} (a replay?)`,
    );
  };

  return {
    async register(r: WorkerRegistration, nowMs: number) {
      const row = upsert.get(
        r.pk,
        r.h3_cell,
        JSON.stringify(r.models),
        JSON.stringify(r.tools),
        // Only the declared fields, so nothing else a caller's object carries is stored.
        JSON.stringify({
          platform: r.hardware.platform,
          gpu: r.hardware.gpu,
          vram_gb: r.hardware.vram_gb,
          ram_gb: r.hardware.ram_gb,
          cores: r.hardware.cores,
        }),
        r.hardware_tier,
        r.relay ? 1 : 0,
        r.version,
        new Date(nowMs).toISOString(),
        nowMs,
        r.declared_at_ms ?? nowMs,
      );
      if (!row) throw staleDeclaration(r.pk);
      return toRecord(row);
    },
    async heartbeat(pk, seq, nowMs) {
      assertSeq(seq);
      const row = beat.get(seq, nowMs, pk, seq);
      if (row) return toRecord(row);
      throw refusal(pk, seq, 'heartbeat');
    },
    async leave(pk, seq, nowMs) {
      assertSeq(seq);
      const row = depart.get(seq, nowMs, pk, seq);
      if (row) return toRecord(row);
      throw refusal(pk, seq, 'leave');
    },
    async get(pk) {
      const row = byPk.get(pk);
      return row ? toRecord(row) : null;
    },
    async list() {
      return all.all().map(toRecord);
    },
    async recordOutcome(pk, kind, jobId) {
      assertJobId(jobId);
      const row = outcome.immediate(pk, kind, jobId);
      return row ? toRecord(row) : null;
    },
    async recordCompletions(batch) {
      for (const { jobId } of batch) assertJobId(jobId);
      completions.immediate(batch);
    },
    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}

/** A heartbeat seq is a positive safe integer; anything else is a caller bug, not a replay. */
function assertSeq(seq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new RangeError(`heartbeat seq must be a positive integer: ${seq}`);
}

/** An outcome belongs to a job; without an id it could not be counted once. */
function assertJobId(jobId: string): void {
  if (typeof jobId !== 'string' || jobId.length === 0) throw new RangeError('recordOutcome: a job id is required');
}

const trustOf = (row: WorkerRow): TrustState => ({
  trust_tier: row.trust_tier as WorkerTier,
  jobs_completed: row.jobs_completed,
  jobs_failed: row.jobs_failed,
  streak: row.outcome_streak,
});

function toRecord(row: WorkerRow): WorkerRecord {
  return {
    pk: row.pk,
    h3_cell: row.h3_cell,
    models: JSON.parse(row.models) as string[],
    tools: JSON.parse(row.tools) as string[],
    hardware: JSON.parse(row.hardware) as WorkerRecord['hardware'],
    hardware_tier: row.hardware_tier as HardwareTier,
    relay: row.relay === 1,
    version: row.version,
    trust_tier: row.trust_tier as WorkerTier,
    jobs_completed: row.jobs_completed,
    jobs_failed: row.jobs_failed,
    registered_at: row.registered_at,
    last_seen_ms: row.last_seen_ms,
    heartbeat_seq: row.heartbeat_seq,
    left_at_ms: row.left_at_ms ?? null,
  };
}
