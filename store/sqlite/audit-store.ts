import type { AgentEpoch, HumanApproval, StoredBreadcrumb, Violation } from '../../core/breadcrumb-types.js';
import { ServiceError } from '../../core/errors.js';
import {
  agentEpochSchema,
  AUDIT_BLOCK_RECORD_VERSION,
  blockQuery,
  boundMs,
  chainRefusal,
  checkAgentPk,
  checkAuditInput,
  checkVerifiedMark,
  humanApprovalSchema,
  instantMs,
  parseStoredAuditJson,
  parseStoredBlock,
  periodMs,
  storedBreadcrumbSchema,
  violationSchema,
  type StoredBlockFields,
} from '../audit-record-schema.js';
import type { AuditStore, VerifiedMark } from '../audit-store.js';
import type { SqliteDatabase } from './open-database.js';

const BLOCK_COLUMNS = 'record_version, agent_pk, idx AS "index", timestamp, data_to_sign, signature, block_hash';

type BlockParams = [string, number, number, string, number, string, string, string];

const RANGE_COLUMNS = 'record_version, idx, timestamp, data_to_sign, signature, block_hash';
type RangeRow = [number, number, string, string, string, string];
const rangeRowFields = (agentPk: string, row: RangeRow): StoredBlockFields => ({
  record_version: row[0],
  agent_pk: agentPk,
  index: row[1],
  timestamp: row[2],
  data_to_sign: row[3],
  signature: row[4],
  block_hash: row[5],
});

/**
 * SQLite adapter of {@link AuditStore} (tables `audit_*`, store/sqlite/audit-store-schema.ts, migration 0007).
 * A block is appended in one BEGIN IMMEDIATE transaction that checks the chain and inserts, so across
 * processes sharing the file a chain never forks (the primary key refuses a second block at an index) and
 * never has a gap (block i needs block i - 1) or a timestamp going back. Epochs, violations and approvals
 * are one insert each, refused by their key when taken. Reads are one indexed statement each.
 */
export function createSqliteAuditStore(db: SqliteDatabase): AuditStore {
  const insertBlock = db.prepare<BlockParams>(`
    INSERT INTO audit_blocks (agent_pk, idx, record_version, timestamp, ts_ms, data_to_sign, signature, block_hash)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  `);
  const blockAt = db.prepare<[string, number], { ts_ms: number }>(
    'SELECT ts_ms FROM audit_blocks WHERE agent_pk = ? AND idx = ?',
  );
  const tip = db.prepare<[string], StoredBlockFields>(
    `SELECT ${BLOCK_COLUMNS} FROM audit_blocks WHERE agent_pk = ? ORDER BY idx DESC LIMIT 1`,
  );
  // Timestamps never go back along a chain, so (ts_ms, idx) order is index order: time-bounded ranges walk the
  // time index, the others the primary key, and neither sorts.
  // Range reads return arrays without agent_pk (the query's own): a report reads 100,000 rows, and named
  // columns and a repeated 64-char key cost more than the checks.
  const byIndex = db
    .prepare<[string, number, number, number], RangeRow>(
      `SELECT ${RANGE_COLUMNS} FROM audit_blocks WHERE agent_pk = ? AND idx BETWEEN ? AND ? ORDER BY idx LIMIT ?`,
    )
    .raw(true);
  const byTime = db
    .prepare<[string, number, number, number, number, number], RangeRow>(
      `SELECT ${RANGE_COLUMNS} FROM audit_blocks
       WHERE agent_pk = ? AND ts_ms BETWEEN ? AND ? AND idx BETWEEN ? AND ? ORDER BY ts_ms, idx LIMIT ?`,
    )
    .raw(true);
  const before = db.prepare<[string, number], StoredBlockFields>(`
    SELECT ${BLOCK_COLUMNS} FROM audit_blocks
    WHERE agent_pk = ? AND ts_ms < ?
    ORDER BY ts_ms DESC, idx DESC LIMIT 1
  `);
  const agents = db.prepare<[], { agent_pk: string }>('SELECT DISTINCT agent_pk FROM audit_blocks ORDER BY agent_pk');

  const insertEpoch = db.prepare<[string, number, string]>(
    'INSERT INTO audit_epochs (agent_pk, epoch_index, json) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const epochs = db.prepare<[string], { json: string }>(
    'SELECT json FROM audit_epochs WHERE agent_pk = ? ORDER BY epoch_index',
  );
  const insertViolation = db.prepare<[string, string, string, number, string]>(
    'INSERT INTO audit_violations (id, agent_pk, at, at_ms, json) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
  );
  const violations = db.prepare<[string, number, number], { json: string }>(
    'SELECT json FROM audit_violations WHERE agent_pk = ? AND at_ms BETWEEN ? AND ? ORDER BY at_ms, id',
  );
  const insertApproval = db.prepare<[string, number, string, number, string]>(`
    INSERT INTO audit_approvals (agent_pk, block_index, approved_at, approved_at_ms, json) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT DO NOTHING
  `);
  const approvals = db.prepare<[string, number, number], { json: string }>(`
    SELECT json FROM audit_approvals WHERE agent_pk = ? AND approved_at_ms BETWEEN ? AND ?
    ORDER BY approved_at_ms, block_index
  `);

  const verifiedThrough = db.prepare<[string], VerifiedMark>(
    'SELECT idx AS "index", block_hash, verifier_pk, signature FROM audit_verified WHERE agent_pk = ?',
  );
  const markVerified = db.prepare<[string, number, string, string, string]>(`
    INSERT INTO audit_verified (agent_pk, idx, block_hash, verifier_pk, signature) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (agent_pk) DO UPDATE SET
      idx = excluded.idx, block_hash = excluded.block_hash, verifier_pk = excluded.verifier_pk,
      signature = excluded.signature
    WHERE excluded.idx > audit_verified.idx
  `);

  const append = db.transaction((block: StoredBreadcrumb, tsMs: number): void => {
    const taken = blockAt.get(block.agent_pk, block.index) !== undefined;
    const previousMs = block.index === 0 ? null : blockAt.get(block.agent_pk, block.index - 1)?.ts_ms;
    const refusal = chainRefusal(block, tsMs, taken, previousMs);
    if (refusal) throw refusal;
    insertBlock.run(
      block.agent_pk,
      block.index,
      AUDIT_BLOCK_RECORD_VERSION,
      block.timestamp,
      tsMs,
      block.data_to_sign,
      block.signature,
      block.block_hash,
    );
  });

  const blockOf = (row: StoredBlockFields | undefined): StoredBreadcrumb | null => (row ? parseStoredBlock(row) : null);

  return {
    async appendBlock(input) {
      const block = checkAuditInput(storedBreadcrumbSchema, input, 'appendBlock', 'block');
      append.immediate(block, instantMs(block.timestamp));
    },
    async tip(agentPk) {
      return blockOf(tip.get(checkAgentPk(agentPk, 'tip')));
    },
    async blocks(agentPk, range, limit) {
      checkAgentPk(agentPk, 'blocks');
      const q = blockQuery(range, limit);
      if (q.limit === 0 || q.fromIndex > q.toIndex || q.fromMs > q.toMs) return [];
      const rows = q.timed
        ? byTime.all(agentPk, q.fromMs, q.toMs, q.fromIndex, q.toIndex, q.limit)
        : byIndex.all(agentPk, q.fromIndex, q.toIndex, q.limit);
      return rows.map((row) => parseStoredBlock(rangeRowFields(agentPk, row)));
    },
    async blockBefore(agentPk, time) {
      checkAgentPk(agentPk, 'blockBefore');
      return blockOf(before.get(agentPk, boundMs(time, 'lowest', 'blockBefore')));
    },
    async agents() {
      return agents.all().map((row) => row.agent_pk);
    },

    async verifiedThrough(agentPk) {
      const row = verifiedThrough.get(checkAgentPk(agentPk, 'verifiedThrough'));
      return row === undefined ? null : { ...row };
    },
    async markVerified(agentPk, mark) {
      checkAgentPk(agentPk, 'markVerified');
      checkVerifiedMark(mark);
      markVerified.run(agentPk, mark.index, mark.block_hash, mark.verifier_pk, mark.signature);
    },

    async appendEpoch(input) {
      const epoch = checkAuditInput(agentEpochSchema, input, 'appendEpoch', 'epoch');
      if (insertEpoch.run(epoch.agent_pk, epoch.epoch_index, JSON.stringify(epoch)).changes === 0) {
        throw new ServiceError('record_conflict', `epoch ${epoch.epoch_index} of agent ${epoch.agent_pk} exists`);
      }
    },
    async epochs(agentPk) {
      checkAgentPk(agentPk, 'epochs');
      return epochs.all(agentPk).map((row) => parseStoredAuditJson<AgentEpoch>(agentEpochSchema, row.json, 'epoch'));
    },

    async addViolation(input) {
      const v = checkAuditInput(violationSchema, input, 'addViolation', 'violation');
      if (insertViolation.run(v.id, v.agent_pk, v.at, instantMs(v.at), JSON.stringify(v)).changes === 0) {
        throw new ServiceError('record_conflict', `violation ${v.id} exists`);
      }
    },
    async violations(agentPk, from, to) {
      checkAgentPk(agentPk, 'violations');
      const { fromMs, toMs } = periodMs(from, to, 'violations');
      return violations
        .all(agentPk, fromMs, toMs)
        .map((row) => parseStoredAuditJson<Violation>(violationSchema, row.json, 'violation'));
    },

    async addApproval(input) {
      const a = checkAuditInput(humanApprovalSchema, input, 'addApproval', 'approval');
      const json = JSON.stringify(a);
      if (insertApproval.run(a.agent_pk, a.block_index, a.approved_at, instantMs(a.approved_at), json).changes === 0) {
        throw new ServiceError('record_conflict', `block ${a.block_index} of agent ${a.agent_pk} is already approved`);
      }
    },
    async approvals(agentPk, from, to) {
      checkAgentPk(agentPk, 'approvals');
      const { fromMs, toMs } = periodMs(from, to, 'approvals');
      return approvals
        .all(agentPk, fromMs, toMs)
        .map((row) => parseStoredAuditJson<HumanApproval>(humanApprovalSchema, row.json, 'approval'));
    },

    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}
