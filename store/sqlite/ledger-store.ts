import { ServiceError } from '../../core/errors.js';
import type { EpochAnchor, LedgerEntry, LedgerSettlement } from '../../core/ledger-types.js';
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
import { boundMs } from '../audit-record-schema.js';
import type { SqliteDatabase } from './open-database.js';

interface JsonRow {
  json: string;
}

type EntryParams = [string, string, string, number, string | null, number | null, number, string, string];

const EARNING_FILTER = `kind IN (${EARNING_KINDS.map((k) => `'${k}'`).join(', ')}) AND amount_units > 0`;

/**
 * SQLite adapter of {@link LedgerStore} (tables `ledger_*`, store/sqlite/ledger-store-schema.ts, migration
 * 0008-ledger). A post is one BEGIN IMMEDIATE transaction that reads the batch's ids and inserts the missing
 * entries, so across processes sharing the file a batch lands whole or not at all, and of concurrent posts of
 * one batch exactly one stores it. Settlement and anchor records are appended in a transaction that takes the
 * next seq and moves the head row, so the head is always the highest record. Sums and groupings run in SQL over
 * the indexes (account and time; job; earnings by time).
 */
export function createSqliteLedgerStore(db: SqliteDatabase): LedgerStore {
  const entryById = db.prepare<[string], JsonRow>('SELECT json FROM ledger_entries WHERE id = ?');
  const insertEntry = db.prepare<EntryParams>(`
    INSERT INTO ledger_entries (id, account_pk, kind, amount_units, job_id, hardware_tier, created_ms, day, json)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
  `);
  const balanceOf = db.prepare<[string, number], { units: number }>(
    'SELECT COALESCE(SUM(amount_units), 0) AS units FROM ledger_entries WHERE account_pk = ? AND created_ms >= ?',
  );
  const accountEntries = db.prepare<[string, number, number, number], JsonRow>(`
    SELECT json FROM ledger_entries
    WHERE account_pk = ? AND created_ms BETWEEN ? AND ?
    ORDER BY created_ms, seq LIMIT ?
  `);
  const jobEntries = db.prepare<[string], JsonRow>(
    'SELECT json FROM ledger_entries WHERE job_id = ? ORDER BY created_ms, seq',
  );
  const earnings = db.prepare<[number, number], EarningsRow>(`
    SELECT day, hardware_tier, SUM(amount_units) AS units, COUNT(*) AS entries FROM ledger_entries
    WHERE ${EARNING_FILTER} AND created_ms BETWEEN ? AND ?
    GROUP BY day, hardware_tier
  `);
  const accountEarnings = db.prepare<[string, number, number], EarningsRow>(`
    SELECT day, hardware_tier, SUM(amount_units) AS units, COUNT(*) AS entries FROM ledger_entries
    WHERE account_pk = ? AND created_ms BETWEEN ? AND ? AND ${EARNING_FILTER}
    GROUP BY day, hardware_tier
  `);
  const unsettled = db.prepare<[string], JsonRow>(`
    SELECT e.json FROM ledger_entries e
    WHERE e.account_pk = ? AND e.amount_units > 0 AND NOT EXISTS (
      SELECT 1 FROM ledger_settlement_entries se
      JOIN ledger_settlement_heads h ON h.id = se.settlement_id AND h.seq = se.seq
      WHERE se.entry_id = e.id AND h.status = 'submitted'
    )
    ORDER BY e.created_ms, e.seq
  `);

  const settlementHead = db.prepare<[string], { seq: number; json: string }>(`
    SELECT s.seq, s.json FROM ledger_settlement_heads h
    JOIN ledger_settlements s ON s.id = h.id AND s.seq = h.seq
    WHERE h.id = ?
  `);
  const insertSettlement = db.prepare<[string, number, string, number, string]>(
    'INSERT INTO ledger_settlements (id, seq, status, at_ms, json) VALUES (?, ?, ?, ?, ?)',
  );
  const insertSettled = db.prepare<[string, string, number]>(
    'INSERT OR IGNORE INTO ledger_settlement_entries (entry_id, settlement_id, seq) VALUES (?, ?, ?)',
  );
  const moveSettlementHead = db.prepare<[string, number, string, number]>(`
    INSERT INTO ledger_settlement_heads (id, seq, status, at_ms) VALUES (?, ?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, status = excluded.status, at_ms = excluded.at_ms
  `);
  const openSettlements = db.prepare<[number], JsonRow>(`
    SELECT s.json FROM ledger_settlement_heads h
    JOIN ledger_settlements s ON s.id = h.id AND s.seq = h.seq
    WHERE h.status IN ('pending', 'failed')
    ORDER BY h.at_ms, h.id LIMIT ?
  `);

  const anchorHead = db.prepare<[string, number], { seq: number; json: string }>(`
    SELECT a.seq, a.json FROM ledger_anchor_heads h
    JOIN ledger_anchors a ON a.sealer_pk = h.sealer_pk AND a.epoch = h.epoch AND a.seq = h.seq
    WHERE h.sealer_pk = ? AND h.epoch = ?
  `);
  const insertAnchor = db.prepare<[string, number, number, string, number, string]>(
    'INSERT INTO ledger_anchors (sealer_pk, epoch, seq, status, at_ms, json) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const moveAnchorHead = db.prepare<[string, number, number, string, number]>(`
    INSERT INTO ledger_anchor_heads (sealer_pk, epoch, seq, status, at_ms) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (sealer_pk, epoch) DO UPDATE SET seq = excluded.seq, status = excluded.status, at_ms = excluded.at_ms
  `);
  const openAnchors = db.prepare<[number], JsonRow>(`
    SELECT a.json FROM ledger_anchor_heads h
    JOIN ledger_anchors a ON a.sealer_pk = h.sealer_pk AND a.epoch = h.epoch AND a.seq = h.seq
    WHERE h.status IN ('pending', 'failed')
    ORDER BY h.at_ms, h.sealer_pk, h.epoch LIMIT ?
  `);

  const toEntry = (row: JsonRow): LedgerEntry => parseStoredLedgerJson(ledgerEntrySchema, row.json, 'ledger entry');
  const toSettlement = (json: string): LedgerSettlement =>
    parseStoredLedgerJson(ledgerSettlementSchema, json, 'settlement');
  const toAnchor = (json: string): EpochAnchor => parseStoredLedgerJson(epochAnchorSchema, json, 'anchor');

  const post = db.transaction((batch: LedgerEntry[]): string[] => {
    const fresh: LedgerEntry[] = [];
    for (const entry of batch) {
      const stored = entryById.get(entry.id);
      if (stored === undefined) fresh.push(entry);
      else if (!sameRecord(toEntry(stored), entry)) {
        // Thrown inside the transaction: it rolls back, so nothing of the batch is stored.
        throw new ServiceError('record_conflict', `ledger entry ${entry.id} exists with other contents`);
      }
    }
    for (const entry of fresh) {
      const { created_ms, day } = entryTime(entry);
      insertEntry.run(
        entry.id,
        entry.account_pk,
        entry.kind,
        entry.amount_units,
        entry.job_id,
        entry.hardware_tier,
        created_ms,
        day,
        JSON.stringify(entry),
      );
    }
    return fresh.map((e) => e.id);
  });

  const appendSettlement = db.transaction((settlement: LedgerSettlement): void => {
    const head = settlementHead.get(settlement.id);
    if (head !== undefined && sameRecord(toSettlement(head.json), settlement)) return; // a retried append
    const seq = (head?.seq ?? 0) + 1;
    const atMs = recordMs(settlement);
    insertSettlement.run(settlement.id, seq, settlement.status, atMs, JSON.stringify(settlement));
    for (const entryId of settlement.entry_ids) insertSettled.run(entryId, settlement.id, seq);
    moveSettlementHead.run(settlement.id, seq, settlement.status, atMs);
  });

  const appendAnchor = db.transaction((anchor: EpochAnchor): void => {
    const head = anchorHead.get(anchor.sealer_pk, anchor.epoch);
    if (head !== undefined && sameRecord(toAnchor(head.json), anchor)) return;
    const seq = (head?.seq ?? 0) + 1;
    const atMs = recordMs(anchor);
    insertAnchor.run(anchor.sealer_pk, anchor.epoch, seq, anchor.status, atMs, JSON.stringify(anchor));
    moveAnchorHead.run(anchor.sealer_pk, anchor.epoch, seq, anchor.status, atMs);
  });

  return {
    async post(entries) {
      const batch = checkLedgerBatch(entries);
      return batch.length === 0 ? [] : post.immediate(batch);
    },
    async balance(accountPk, sinceIso) {
      return balanceOf.get(checkAccountPk(accountPk, 'balance'), sinceMs(sinceIso))?.units ?? 0;
    },
    async entries(accountPk, range) {
      const pk = checkAccountPk(accountPk, 'entries');
      const { fromMs, toMs, limit } = ledgerRange(range, 'entries', DEFAULT_ENTRIES_LIMIT);
      return accountEntries.all(pk, fromMs, toMs, limit).map(toEntry);
    },
    async jobEntries(jobId) {
      return jobEntries.all(checkLedgerId(jobId, 'jobEntries')).map(toEntry);
    },
    async earningsByDay(range) {
      const fromMs = boundMs(range.fromIso, 'lowest', 'earningsByDay');
      const toMs = boundMs(range.toIso, 'highest', 'earningsByDay');
      const rows =
        range.accountPk === undefined
          ? earnings.all(fromMs, toMs)
          : accountEarnings.all(checkAccountPk(range.accountPk, 'earningsByDay'), fromMs, toMs);
      return rows
        .map((r) => ({ day: r.day, hardware_tier: r.hardware_tier, units: r.units, entries: r.entries }))
        .sort(byDayAndTier);
    },
    async unsettled(accountPk) {
      return unsettled.all(checkAccountPk(accountPk, 'unsettled')).map(toEntry);
    },
    async recordSettlement(input) {
      appendSettlement.immediate(checkLedgerInput(ledgerSettlementSchema, input, 'recordSettlement', 'settlement'));
    },
    async settlement(id) {
      const head = settlementHead.get(checkLedgerId(id, 'settlement'));
      return head === undefined ? null : toSettlement(head.json);
    },
    async openSettlements(limit) {
      return openSettlements
        .all(checkLimit(limit, 'openSettlements', DEFAULT_OPEN_LIMIT))
        .map((r) => toSettlement(r.json));
    },
    async recordAnchor(input) {
      appendAnchor.immediate(checkLedgerInput(epochAnchorSchema, input, 'recordAnchor', 'anchor'));
    },
    async anchor(sealerPk, epoch) {
      const pk = checkAccountPk(sealerPk, 'anchor');
      if (!Number.isSafeInteger(epoch) || epoch < 0) throw new RangeError(`anchor: invalid epoch: ${epoch}`);
      const head = anchorHead.get(pk, epoch);
      return head === undefined ? null : toAnchor(head.json);
    },
    async openAnchors(limit) {
      return openAnchors.all(checkLimit(limit, 'openAnchors', DEFAULT_OPEN_LIMIT)).map((r) => toAnchor(r.json));
    },
    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}
