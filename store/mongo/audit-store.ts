import { MongoServerError, type Collection, type Db, type Filter, type Sort } from 'mongodb';
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
import type { AuditStore } from '../audit-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/**
 * A block (`audit_blocks`): the exact signed text and the fields queries need. `_id` is `${agent_pk}:${index}`
 * (a pk is 64 hex, so the pair is unambiguous): point reads by `_id` are the ones FerretDB v1 pushes down to
 * its backend. Unique on `_id` and on (agent_pk, index).
 */
interface BlockDoc extends StoredBlockFields {
  _id: string;
  /** The timestamp's instant in ms: ISO strings of different precisions or offsets do not compare as text. */
  ts_ms: number;
}

/**
 * The highest block index known of an agent (`audit_tips`, `_id` = agent_pk), moved by `$max` after each
 * append. Only a hint: it never exceeds the real tip (it is written after the block), and `tip` reads the
 * blocks above it, so a lost update (FerretDB) costs a longer read, never a wrong answer.
 */
interface TipHint {
  _id: string;
  index: number;
}

/** An epoch (`audit_epochs`), its record as JSON text; unique (agent_pk, epoch_index). */
interface EpochDoc {
  agent_pk: string;
  epoch_index: number;
  json: string;
}

/** The verified-through mark of an agent (`audit_verified`, `_id` = agent_pk; store/audit-store.ts). */
interface VerifiedDoc {
  _id: string;
  index: number;
  block_hash: string;
  verifier_pk: string;
  signature: string;
}

/** A violation (`audit_violations`), `_id` = its id. */
interface ViolationDoc {
  _id: string;
  agent_pk: string;
  at_ms: number;
  json: string;
}

/** An approval (`audit_approvals`); unique (agent_pk, block_index). */
interface ApprovalDoc {
  agent_pk: string;
  block_index: number;
  approved_at_ms: number;
  json: string;
}

const DUPLICATE_KEY = 11000;
const NO_ID = { projection: { _id: 0 } } as const;
const BLOCK_FIELDS = { _id: 0, ts_ms: 0 } as const;
/** How far behind the tip the hint may lag before `tip` moves it (each lagging read costs ~2 log2(lag) probes). */
const TIP_HINT_SLACK = 16;

/**
 * MongoDB adapter of {@link AuditStore} for MongoDB and FerretDB v1 alike (README.md beside this file). No
 * transaction and no conditional update decides anything:
 *  - appendBlock reads the predecessor, refuses a gap or a timestamp going back (record_conflict), then inserts
 *    against the unique `_id` (agent_pk:index). A predecessor never changes once stored, so only the index
 *    claim races, and the insert settles it: of concurrent appends of one index exactly one succeeds and the
 *    others get record_conflict. A chain therefore never forks and has no gaps, and its timestamps never go
 *    back, so (ts_ms, index) order is index order.
 *  - tip reads the hint in `audit_tips`, then the blocks at the hint and just above it: three point reads
 *    instead of a sort over the chain; a lagging hint costs a few more.
 *  - Epochs, violations and approvals are one insert each against their unique key.
 * Ranges are one find each, sorted by an index that matches the filter.
 *
 * Cost on FerretDB v1 (SQLite backend, v1.24.2): it uses no index for reads, so every query scans the
 * collection; `_id` equality is at least filtered inside SQLite (~8x cheaper than any other filter, measured).
 * Appends and tips are point reads by `_id` for that reason; ranges, blockBefore and agents scan (about 20 s
 * for a range of a 100,000-block collection there). MongoDB serves all of them from the indexes below.
 */
export async function createMongoAuditStore(db: Db): Promise<AuditStore> {
  const blocks = db.collection<BlockDoc>('audit_blocks');
  const tips = db.collection<TipHint>('audit_tips');
  const epochs = db.collection<EpochDoc>('audit_epochs');
  const violations = db.collection<ViolationDoc>('audit_violations');
  const approvals = db.collection<ApprovalDoc>('audit_approvals');
  const verified = db.collection<VerifiedDoc>('audit_verified');
  await ensureIndexes(blocks, [
    { key: { agent_pk: 1, index: 1 }, name: 'agent_index_unique', unique: true },
    { key: { agent_pk: 1, ts_ms: 1, index: 1 }, name: 'agent_time' },
  ]);
  await ensureIndexes(epochs, [{ key: { agent_pk: 1, epoch_index: 1 }, name: 'agent_epoch_unique', unique: true }]);
  await ensureIndexes(violations, [{ key: { agent_pk: 1, at_ms: 1, _id: 1 }, name: 'agent_at' }]);
  await ensureIndexes(approvals, [
    { key: { agent_pk: 1, block_index: 1 }, name: 'agent_block_unique', unique: true },
    { key: { agent_pk: 1, approved_at_ms: 1, block_index: 1 }, name: 'agent_approved_at' },
  ]);

  async function findBlocks(filter: Filter<BlockDoc>, sort: Sort, limit: number): Promise<StoredBreadcrumb[]> {
    let cursor = blocks.find(filter, { projection: BLOCK_FIELDS }).sort(sort);
    if (limit < Number.MAX_SAFE_INTEGER) cursor = cursor.limit(limit); // limit(0) would mean "no limit"
    const docs = (await cursor.toArray()) as StoredBlockFields[];
    return docs.map(parseStoredBlock);
  }

  async function blockAt(agentPk: string, index: number): Promise<StoredBreadcrumb | null> {
    const doc = await blocks.findOne({ _id: blockId(agentPk, index) }, { projection: BLOCK_FIELDS });
    return doc === null ? null : parseStoredBlock(doc as StoredBlockFields);
  }

  async function hasBlock(agentPk: string, index: number): Promise<boolean> {
    return (await blocks.findOne({ _id: blockId(agentPk, index) }, { projection: { _id: 1 } })) !== null;
  }

  /** Moves the hint up; a lost race or a failed write only leaves it lower, which `tip` tolerates. */
  async function raiseTipHint(agentPk: string, index: number): Promise<void> {
    try {
      await tips.updateOne({ _id: agentPk }, { $max: { index } }, { upsert: true });
    } catch (error) {
      // Two first writes upserted at once: the other created the hint, so move it instead.
      if (isDuplicateKey(error)) await tips.updateOne({ _id: agentPk }, { $max: { index } }).catch(() => undefined);
    }
  }

  return {
    async appendBlock(input) {
      const block = checkAuditInput(storedBreadcrumbSchema, input, 'appendBlock', 'block');
      const tsMs = instantMs(block.timestamp);
      // A taken index is left to the insert: its unique key is the only check that cannot race.
      const previous =
        block.index === 0
          ? null
          : ((
              await blocks.findOne(
                { _id: blockId(block.agent_pk, block.index - 1) },
                { projection: { _id: 0, ts_ms: 1 } },
              )
            )?.ts_ms ?? undefined);
      const refusal = chainRefusal(block, tsMs, false, previous);
      if (refusal) throw refusal;
      const doc: BlockDoc = {
        _id: blockId(block.agent_pk, block.index),
        record_version: AUDIT_BLOCK_RECORD_VERSION,
        ...block,
        ts_ms: tsMs,
      };
      if (!(await insertClaimed(blocks, doc))) throw chainRefusal(block, tsMs, true, null) as ServiceError;
      await raiseTipHint(block.agent_pk, block.index);
    },
    async tip(agentPk) {
      checkAgentPk(agentPk, 'tip');
      const hint = (await tips.findOne({ _id: agentPk }))?.index ?? 0;
      const [atHint, aboveHint] = await Promise.all([blockAt(agentPk, hint), hasBlock(agentPk, hint + 1)]);
      if (atHint === null) {
        // A chain has no gaps: without block 0 the agent has none.
        if (hint === 0) return null;
        // Blocks are never deleted and the hint never passes the tip: only a hint written by something else
        // gets here. Look the chain up without it.
        const top = await blocks
          .find({ agent_pk: agentPk }, { projection: { _id: 0, index: 1 } })
          .sort({ index: -1 })
          .limit(1)
          .toArray();
        return top[0] === undefined ? null : blockAt(agentPk, top[0].index);
      }
      if (!aboveHint) return atHint;
      // The hint lags (a lost update on FerretDB, a writer that died before moving it): a chain has no gaps, so
      // find the last index by doubling steps, then halving them; every probe is a point read.
      let low = hint + 1; // exists
      let step = 1;
      while (await hasBlock(agentPk, low + step)) {
        low += step;
        step *= 2;
      }
      let high = low + step; // missing
      while (high - low > 1) {
        const mid = Math.floor((low + high) / 2);
        if (await hasBlock(agentPk, mid)) low = mid;
        else high = mid;
      }
      if (low - hint > TIP_HINT_SLACK) await raiseTipHint(agentPk, low);
      return blockAt(agentPk, low);
    },
    async blocks(agentPk, range, limit) {
      checkAgentPk(agentPk, 'blocks');
      const q = blockQuery(range, limit);
      if (q.limit === 0 || q.fromIndex > q.toIndex || q.fromMs > q.toMs) return [];
      const filter: Filter<BlockDoc> = { agent_pk: agentPk, index: { $gte: q.fromIndex, $lte: q.toIndex } };
      if (!q.timed) return findBlocks(filter, { index: 1 }, q.limit);
      // Time order is index order along a chain, and this sort matches the `agent_time` index.
      filter.ts_ms = { $gte: q.fromMs, $lte: q.toMs };
      return findBlocks(filter, { ts_ms: 1, index: 1 }, q.limit);
    },
    async blockBefore(agentPk, time) {
      checkAgentPk(agentPk, 'blockBefore');
      const filter = { agent_pk: agentPk, ts_ms: { $lt: boundMs(time, 'lowest', 'blockBefore') } };
      const [block] = await findBlocks(filter, { ts_ms: -1, index: -1 }, 1);
      return block ?? null;
    },
    async agents() {
      const pks = await blocks.distinct('agent_pk');
      return pks.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    },

    async verifiedThrough(agentPk) {
      const doc = await verified.findOne({ _id: checkAgentPk(agentPk, 'verifiedThrough') });
      return doc === null
        ? null
        : { index: doc.index, block_hash: doc.block_hash, verifier_pk: doc.verifier_pk, signature: doc.signature };
    },
    async markVerified(agentPk, mark) {
      checkAgentPk(agentPk, 'markVerified');
      checkVerifiedMark(mark);
      try {
        // Only upward: the filter misses a mark at or above this one, and the upsert then hits its _id.
        await verified.updateOne(
          { _id: agentPk, index: { $lt: mark.index } },
          {
            $set: {
              index: mark.index,
              block_hash: mark.block_hash,
              verifier_pk: mark.verifier_pk,
              signature: mark.signature,
            },
          },
          { upsert: true },
        );
      } catch (error) {
        if (!(error instanceof MongoServerError && error.code === 11000)) throw error;
      }
    },

    async appendEpoch(input) {
      const epoch = checkAuditInput(agentEpochSchema, input, 'appendEpoch', 'epoch');
      const doc = { agent_pk: epoch.agent_pk, epoch_index: epoch.epoch_index, json: JSON.stringify(epoch) };
      if (!(await insertClaimed(epochs, doc))) {
        throw new ServiceError('record_conflict', `epoch ${epoch.epoch_index} of agent ${epoch.agent_pk} exists`);
      }
    },
    async epochs(agentPk) {
      checkAgentPk(agentPk, 'epochs');
      const docs = await epochs.find({ agent_pk: agentPk }, NO_ID).sort({ epoch_index: 1 }).toArray();
      return docs.map((doc) => parseStoredAuditJson<AgentEpoch>(agentEpochSchema, doc.json, 'epoch'));
    },

    async addViolation(input) {
      const v = checkAuditInput(violationSchema, input, 'addViolation', 'violation');
      const doc = { _id: v.id, agent_pk: v.agent_pk, at_ms: instantMs(v.at), json: JSON.stringify(v) };
      if (!(await insertClaimed(violations, doc)))
        throw new ServiceError('record_conflict', `violation ${v.id} exists`);
    },
    async violations(agentPk, from, to) {
      checkAgentPk(agentPk, 'violations');
      const { fromMs, toMs } = periodMs(from, to, 'violations');
      if (fromMs > toMs) return [];
      const docs = await violations
        .find({ agent_pk: agentPk, at_ms: { $gte: fromMs, $lte: toMs } })
        .sort({ at_ms: 1, _id: 1 })
        .toArray();
      return docs.map((doc) => parseStoredAuditJson<Violation>(violationSchema, doc.json, 'violation'));
    },

    async addApproval(input) {
      const a = checkAuditInput(humanApprovalSchema, input, 'addApproval', 'approval');
      const doc = {
        agent_pk: a.agent_pk,
        block_index: a.block_index,
        approved_at_ms: instantMs(a.approved_at),
        json: JSON.stringify(a),
      };
      if (!(await insertClaimed(approvals, doc))) {
        throw new ServiceError('record_conflict', `block ${a.block_index} of agent ${a.agent_pk} is already approved`);
      }
    },
    async approvals(agentPk, from, to) {
      checkAgentPk(agentPk, 'approvals');
      const { fromMs, toMs } = periodMs(from, to, 'approvals');
      if (fromMs > toMs) return [];
      const docs = await approvals
        .find({ agent_pk: agentPk, approved_at_ms: { $gte: fromMs, $lte: toMs } }, NO_ID)
        .sort({ approved_at_ms: 1, block_index: 1 })
        .toArray();
      return docs.map((doc) => parseStoredAuditJson<HumanApproval>(humanApprovalSchema, doc.json, 'approval'));
    },

    async close() {
      // Nothing of its own: the connection belongs to the caller.
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

const blockId = (agentPk: string, index: number): string => `${agentPk}:${index}`;

const isDuplicateKey = (error: unknown): boolean => error instanceof MongoServerError && error.code === DUPLICATE_KEY;
