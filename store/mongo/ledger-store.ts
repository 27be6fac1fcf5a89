import { MongoBulkWriteError, MongoServerError, type Collection, type Db, type Filter } from 'mongodb';
import { ServiceError } from '../../core/errors.js';
import type { EpochAnchor, LedgerEntry, LedgerSettlement } from '../../core/ledger-types.js';
import { boundMs } from '../audit-record-schema.js';
import {
  byDayAndTier,
  checkAccountPk,
  checkLedgerBatch,
  checkLedgerId,
  checkLedgerInput,
  checkLimit,
  DEFAULT_ENTRIES_LIMIT,
  DEFAULT_OPEN_LIMIT,
  EARNING_KINDS,
  entryTime,
  epochAnchorSchema,
  ledgerEntrySchema,
  ledgerRange,
  ledgerSettlementSchema,
  parseStoredLedgerJson,
  recordMs,
  sameRecord,
  sinceMs,
  type EarningsRow,
} from '../ledger-record-schema.js';
import type { LedgerStore } from '../ledger-store.js';
import { ensureIndexes } from './ensure-indexes.js';

/** An entry (`ledger_entries`, `_id` = entry id): its JSON text and the fields queries need. Never updated. */
interface EntryDoc {
  _id: string;
  account_pk: string;
  kind: string;
  amount_units: number;
  job_id: string | null;
  hardware_tier: number | null;
  created_ms: number;
  /** UTC YYYY-MM-DD of created_ms (earningsByDay groups on it: FerretDB v1 has no date operators). */
  day: string;
  /** Position in its post: entries of one post (one created_at) keep the order they were given. */
  pos: number;
  json: string;
}

/**
 * A settlement record (`ledger_settlements`), unique (id, seq); the highest seq is current. `superseded` is a
 * hint set on older records after a newer one lands (a lost update, possible on FerretDB, costs a read).
 */
interface SettlementDoc {
  id: string;
  seq: number;
  status: LedgerSettlement['status'];
  at_ms: number;
  entry_ids: string[];
  superseded: boolean;
  json: string;
}

/** An anchor record (`ledger_anchors`), unique (sealer_pk, epoch, seq); like settlements. */
interface AnchorDoc {
  sealer_pk: string;
  epoch: number;
  seq: number;
  status: EpochAnchor['status'];
  at_ms: number;
  superseded: boolean;
  json: string;
}

export interface MongoLedgerStoreOptions {
  /** Seqs tried per record append before giving up; each failed one means a concurrent append landed first. */
  maxAttempts?: number;
}

const DUPLICATE_KEY = 11000;
const OPEN = ['pending', 'failed'] as const;
/** Documents per insertMany and ids per `$in`: well under the 16 MiB message limit. */
const CHUNK = 500;

/**
 * MongoDB adapter of {@link LedgerStore} for MongoDB and FerretDB v1 alike (README.md beside this file): every
 * write is an insert against a unique key, never an update that decides anything.
 *  - post reads the batch's ids first and refuses the whole batch (record_conflict, nothing written) when one
 *    holds different contents; then inserts the missing entries (`_id` = entry id, `ordered: false`). Of
 *    concurrent posts of one batch, each entry is inserted by exactly one; a duplicate is read back and compared.
 *    Without transactions, a post that dies half-way leaves part of its batch: posting the batch again (entries
 *    are deterministic) completes it. A different entry racing in under the same id after the first read is
 *    still refused, but the rest of that batch stays stored.
 *  - Sums (`balance`, `earningsByDay`) are `$match` + `$group` with one `$sum` each, which FerretDB v1 runs;
 *    earningsByDay's sums and counts are two reads, so a post landing between them may show in one only.
 *  - Settlements and anchors append records with the next seq against unique (id, seq); the highest is current.
 */
export async function createMongoLedgerStore(db: Db, options: MongoLedgerStoreOptions = {}): Promise<LedgerStore> {
  const maxAttempts = options.maxAttempts ?? 100;
  const entries = db.collection<EntryDoc>('ledger_entries');
  const settlements = db.collection<SettlementDoc>('ledger_settlements');
  const anchors = db.collection<AnchorDoc>('ledger_anchors');
  await ensureIndexes(entries, [
    { key: { account_pk: 1, created_ms: 1, pos: 1, _id: 1 }, name: 'account_time' },
    { key: { job_id: 1, created_ms: 1, pos: 1 }, name: 'job' },
    { key: { kind: 1, created_ms: 1 }, name: 'kind_time' },
  ]);
  await ensureIndexes(settlements, [
    { key: { id: 1, seq: 1 }, name: 'id_seq_unique', unique: true },
    { key: { entry_ids: 1 }, name: 'entry_ids' },
    { key: { status: 1, superseded: 1, at_ms: 1 }, name: 'open' },
  ]);
  await ensureIndexes(anchors, [
    { key: { sealer_pk: 1, epoch: 1, seq: 1 }, name: 'sealer_epoch_seq_unique', unique: true },
    { key: { status: 1, superseded: 1, at_ms: 1 }, name: 'open' },
  ]);

  const toEntry = (doc: { json: string }): LedgerEntry =>
    parseStoredLedgerJson(ledgerEntrySchema, doc.json, 'ledger entry');
  const toSettlement = (doc: { json: string }): LedgerSettlement =>
    parseStoredLedgerJson(ledgerSettlementSchema, doc.json, 'settlement');
  const toAnchor = (doc: { json: string }): EpochAnchor => parseStoredLedgerJson(epochAnchorSchema, doc.json, 'anchor');

  async function storedEntries(ids: readonly string[]): Promise<Map<string, LedgerEntry>> {
    const found = new Map<string, LedgerEntry>();
    for (let from = 0; from < ids.length; from += CHUNK) {
      const docs = await entries.find({ _id: { $in: ids.slice(from, from + CHUNK) } }).toArray();
      for (const doc of docs) found.set(doc._id, toEntry(doc));
    }
    return found;
  }

  function refuseConflicts(batch: readonly LedgerEntry[], stored: Map<string, LedgerEntry>): void {
    for (const entry of batch) {
      const existing = stored.get(entry.id);
      if (existing !== undefined && !sameRecord(existing, entry)) {
        throw new ServiceError('record_conflict', `ledger entry ${entry.id} exists with other contents`);
      }
    }
  }

  /** The newest of the given records per key (highest seq). */
  function newest<T extends { seq: number }>(docs: readonly T[], key: (doc: T) => string): Map<string, T> {
    const best = new Map<string, T>();
    for (const doc of docs) {
      const k = key(doc);
      if ((best.get(k)?.seq ?? 0) < doc.seq) best.set(k, doc);
    }
    return best;
  }

  /**
   * Appends `doc` with the seq after the current record of `filter` (unless the current one is the same record,
   * a retry), then marks the older records superseded (a hint).
   */
  async function append<T extends SettlementDoc | AnchorDoc>(
    collection: Collection<T>,
    filter: Filter<T>,
    doc: Omit<T, 'seq' | 'superseded'>,
    same: (stored: T) => boolean,
    what: string,
  ): Promise<void> {
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      const [head] = await collection.find(filter).sort({ seq: -1 }).limit(1).toArray();
      if (head !== undefined && same(head as T)) return;
      const seq = ((head as T | undefined)?.seq ?? 0) + 1;
      try {
        await collection.insertOne({ ...doc, seq, superseded: false } as unknown as Parameters<
          Collection<T>['insertOne']
        >[0]);
      } catch (error) {
        if (error instanceof MongoServerError && error.code === DUPLICATE_KEY) continue;
        throw error;
      }
      await collection.updateMany(
        { ...filter, seq: { $lt: seq } } as Filter<T>,
        {
          $set: { superseded: true },
        } as never,
      );
      return;
    }
    throw new Error(`${what}: no free seq after ${maxAttempts} attempts (contention)`);
  }

  return {
    async post(input) {
      const batch = checkLedgerBatch(input);
      if (batch.length === 0) return [];
      const stored = await storedEntries(batch.map((e) => e.id));
      refuseConflicts(batch, stored);
      const fresh = batch.flatMap((entry, pos) => (stored.has(entry.id) ? [] : [{ entry, pos }]));
      const duplicates = new Set<string>();
      for (let from = 0; from < fresh.length; from += CHUNK) {
        const chunk = fresh.slice(from, from + CHUNK);
        const docs: EntryDoc[] = chunk.map(({ entry, pos }) => ({
          _id: entry.id,
          account_pk: entry.account_pk,
          kind: entry.kind,
          amount_units: entry.amount_units,
          job_id: entry.job_id,
          hardware_tier: entry.hardware_tier,
          ...entryTime(entry),
          pos,
          json: JSON.stringify(entry),
        }));
        try {
          await entries.insertMany(docs, { ordered: false });
        } catch (error) {
          for (const index of duplicateIndexes(error, docs.length)) duplicates.add(docs[index]!._id);
        }
      }
      if (duplicates.size > 0) {
        // A concurrent post stored these first: the same entries are done, different ones are a conflict.
        refuseConflicts(
          batch.filter((e) => duplicates.has(e.id)),
          await storedEntries([...duplicates]),
        );
      }
      return fresh.flatMap(({ entry }) => (duplicates.has(entry.id) ? [] : [entry.id]));
    },

    async balance(accountPk, sinceIso) {
      const pk = checkAccountPk(accountPk, 'balance');
      const [sum] = await entries
        .aggregate<{ units: number }>([
          { $match: { account_pk: pk, created_ms: { $gte: sinceMs(sinceIso) } } },
          { $group: { _id: null, units: { $sum: '$amount_units' } } },
        ])
        .toArray();
      return Number(sum?.units ?? 0);
    },

    async entries(accountPk, range) {
      const pk = checkAccountPk(accountPk, 'entries');
      const { fromMs, toMs, limit } = ledgerRange(range, 'entries', DEFAULT_ENTRIES_LIMIT);
      if (limit === 0) return []; // limit(0) would mean "no limit"
      const docs = await entries
        .find({ account_pk: pk, created_ms: { $gte: fromMs, $lte: toMs } })
        .sort({ created_ms: 1, pos: 1, _id: 1 })
        .limit(limit)
        .toArray();
      return docs.map(toEntry);
    },

    async jobEntries(jobId) {
      const docs = await entries
        .find({ job_id: checkLedgerId(jobId, 'jobEntries') })
        .sort({ created_ms: 1, pos: 1, _id: 1 })
        .toArray();
      return docs.map(toEntry);
    },

    async earningsByDay(range) {
      const fromMs = boundMs(range.fromIso, 'lowest', 'earningsByDay');
      const toMs = boundMs(range.toIso, 'highest', 'earningsByDay');
      const match: Filter<EntryDoc> = {
        kind: { $in: [...EARNING_KINDS] },
        amount_units: { $gt: 0 },
        created_ms: { $gte: fromMs, $lte: toMs },
      };
      if (range.accountPk !== undefined) match.account_pk = checkAccountPk(range.accountPk, 'earningsByDay');
      // One accumulator per $group: FerretDB v1.24.2 computes only the first and answers 0 for the others
      // (checked), so the sums and the counts are two aggregations, joined here by their group key.
      const group = async (value: string | number) =>
        entries
          .aggregate<{ _id: { day: string; tier: number | null }; v: number }>([
            { $match: match },
            { $group: { _id: { day: '$day', tier: '$hardware_tier' }, v: { $sum: value } } },
          ])
          .toArray();
      const key = (g: { _id: { day: string; tier: number | null } }) => `${g._id.day} ${g._id.tier ?? ''}`;
      const counts = new Map((await group(1)).map((g) => [key(g), Number(g.v)]));
      return (await group('$amount_units'))
        .map((g): EarningsRow => ({
          day: g._id.day,
          hardware_tier: g._id.tier ?? null,
          units: Number(g.v),
          entries: counts.get(key(g)) ?? 0,
        }))
        .sort(byDayAndTier);
    },

    async unsettled(accountPk) {
      const pk = checkAccountPk(accountPk, 'unsettled');
      const docs = await entries
        .find({ account_pk: pk, amount_units: { $gt: 0 } })
        .sort({ created_ms: 1, pos: 1, _id: 1 })
        .toArray();
      const ids = docs.map((d) => d._id);
      // Settlements that ever listed one of these entries, then each one's current record.
      const settlementIds = new Set<string>();
      for (let from = 0; from < ids.length; from += CHUNK) {
        const listing = await settlements
          .find({ entry_ids: { $in: ids.slice(from, from + CHUNK) } }, { projection: { id: 1 } })
          .toArray();
        for (const s of listing) settlementIds.add(s.id);
      }
      const covered = new Set<string>();
      const all = [...settlementIds];
      for (let from = 0; from < all.length; from += CHUNK) {
        const records = await settlements.find({ id: { $in: all.slice(from, from + CHUNK) } }).toArray();
        for (const current of newest(records, (r) => r.id).values()) {
          if (current.status === 'submitted') for (const id of current.entry_ids) covered.add(id);
        }
      }
      return docs.filter((d) => !covered.has(d._id)).map(toEntry);
    },

    async recordSettlement(input) {
      const settlement = checkLedgerInput(ledgerSettlementSchema, input, 'recordSettlement', 'settlement');
      await append(
        settlements,
        { id: settlement.id },
        {
          id: settlement.id,
          status: settlement.status,
          at_ms: recordMs(settlement),
          entry_ids: settlement.entry_ids,
          json: JSON.stringify(settlement),
        },
        (stored) => sameRecord(toSettlement(stored), settlement),
        `settlement ${settlement.id}`,
      );
    },

    async settlement(id) {
      const [head] = await settlements
        .find({ id: checkLedgerId(id, 'settlement') })
        .sort({ seq: -1 })
        .limit(1)
        .toArray();
      return head === undefined ? null : toSettlement(head);
    },

    async openSettlements(limit) {
      const max = checkLimit(limit, 'openSettlements', DEFAULT_OPEN_LIMIT);
      const candidates = await settlements
        .find({ status: { $in: [...OPEN] }, superseded: { $ne: true } }, { projection: { id: 1 } })
        .toArray();
      const ids = [...new Set(candidates.map((c) => c.id))];
      const open: SettlementDoc[] = [];
      for (let from = 0; from < ids.length; from += CHUNK) {
        const records = await settlements.find({ id: { $in: ids.slice(from, from + CHUNK) } }).toArray();
        for (const current of newest(records, (r) => r.id).values()) {
          if (current.status !== 'submitted') open.push(current);
        }
      }
      open.sort((a, b) => a.at_ms - b.at_ms || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return open.slice(0, max).map(toSettlement);
    },

    async recordAnchor(input) {
      const anchor = checkLedgerInput(epochAnchorSchema, input, 'recordAnchor', 'anchor');
      await append(
        anchors,
        { sealer_pk: anchor.sealer_pk, epoch: anchor.epoch },
        {
          sealer_pk: anchor.sealer_pk,
          epoch: anchor.epoch,
          status: anchor.status,
          at_ms: recordMs(anchor),
          json: JSON.stringify(anchor),
        },
        (stored) => sameRecord(toAnchor(stored), anchor),
        `anchor ${anchor.sealer_pk}#${anchor.epoch}`,
      );
    },

    async anchor(sealerPk, epoch) {
      const pk = checkAccountPk(sealerPk, 'anchor');
      if (!Number.isSafeInteger(epoch) || epoch < 0) throw new RangeError(`anchor: invalid epoch: ${epoch}`);
      const [head] = await anchors.find({ sealer_pk: pk, epoch }).sort({ seq: -1 }).limit(1).toArray();
      return head === undefined ? null : toAnchor(head);
    },

    async openAnchors(limit) {
      const max = checkLimit(limit, 'openAnchors', DEFAULT_OPEN_LIMIT);
      const candidates = await anchors
        .find({ status: { $in: [...OPEN] }, superseded: { $ne: true } }, { projection: { sealer_pk: 1, epoch: 1 } })
        .toArray();
      const keys = new Map(
        candidates.map((c) => [`${c.sealer_pk}:${c.epoch}`, { sealer_pk: c.sealer_pk, epoch: c.epoch }]),
      );
      const open: AnchorDoc[] = [];
      const all = [...keys.values()];
      for (let from = 0; from < all.length; from += CHUNK) {
        const records = await anchors.find({ $or: all.slice(from, from + CHUNK) }).toArray();
        for (const current of newest(records, (r) => `${r.sealer_pk}:${r.epoch}`).values()) {
          if (current.status !== 'submitted') open.push(current);
        }
      }
      open.sort(
        (a, b) =>
          a.at_ms - b.at_ms || (a.sealer_pk < b.sealer_pk ? -1 : a.sealer_pk > b.sealer_pk ? 1 : a.epoch - b.epoch),
      );
      return open.slice(0, max).map(toAnchor);
    },

    async close() {
      // The collections belong to the caller's client; nothing runs in the background.
    },
  };
}

/** The batch indexes an insertMany of `size` documents refused as duplicates; any other failure is rethrown. */
function duplicateIndexes(error: unknown, size: number): number[] {
  if (error instanceof MongoBulkWriteError) {
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (writeErrors.length > 0 && writeErrors.every((e) => e.code === DUPLICATE_KEY)) {
      return writeErrors.map((e) => e.index).filter((i) => i >= 0 && i < size);
    }
  }
  // A one-document batch may fail as a plain server error.
  if (error instanceof MongoServerError && error.code === DUPLICATE_KEY && size === 1) return [0];
  throw error;
}
