import { ServiceError } from '../../core/errors.js';
import type { KeyPair } from '../../core/identity.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import type { IngestOutcome, ProofStore, RecordQuery, SealLeaf, SealLogNode } from '../proof-store.js';
import { sealLogNodeKey, type SealHead } from '../../core/seal-log.js';
import { createMerkleTreeBuilder } from '../../core/merkle/tree-builder.js';
import type { EpochTree } from '../../core/seal.js';
import { createLeafPacker, createLeafStreamer } from '../epoch-leaf-packer.js';
import { prepareAppend, signFresh, type WriterTail } from '../record-append.js';
import { cellKey, cellKeyRange, checkRecordQuery, encodeRecordCursor } from '../record-query.js';
import {
  auditPathFromPages,
  auditPathNodes,
  checkSealLevels,
  checkSealOverTree,
  leafIndexInSeal,
  pageKey,
  SEAL_PAGE_NODES,
  sealTreePages,
} from '../seal-tree-pages.js';
import type { SqliteDatabase } from './open-database.js';

/** Plans before a write that found the writer's tail or seals changed since its read. */
const APPEND_ATTEMPTS = 8;
/** Held seals a prune batch looks at (an epoch it must keep is skipped and looked at again next time). */
const PRUNE_SCAN = 256;

class AppendRaced extends Error {}

interface JsonRow {
  json: string;
}

/** What one prune batch did: records deleted, epochs finished (records and tree pages gone), and whether more is due. */
export interface PruneBatch {
  records: number;
  epochs: number;
  more: boolean;
}

export interface SqliteProofStore extends ProofStore {
  markSealsHeld(seals: readonly Pick<Seal, 'sealer_pk' | 'epoch'>[]): Promise<void>;
  prunedEpochs(sealerPk: string): Promise<number[]>;
  /**
   * A worker's retention (docs/operations.md "Retention"): deletes at most `limit` records, oldest epoch first,
   * of epochs through `throughEpoch` whose seal the central store holds (`markSealsHeld`), then each such epoch's
   * tree pages once its records are gone. Kept: the seals and the seal log; an epoch with a record not yet
   * acknowledged (unsynced); the epoch of each writer's latest record, which the next append continues from.
   * `more`: the batch was full, or finished epochs and found more to look at; call again.
   */
  pruneHeldEpochs(throughEpoch: number, limit: number): Promise<PruneBatch>;
}

/**
 * SQLite adapter of {@link ProofStore} (tables of migration 0002). Every write is one transaction taken
 * with BEGIN IMMEDIATE, so a batch is all-or-nothing, seqs are assigned under the write lock (gapless also
 * across processes sharing the file) and a seal's record count is checked in the transaction that stores it.
 * Records are kept as their JSON beside the columns the queries need.
 */
export function createSqliteProofStore(db: SqliteDatabase): SqliteProofStore {
  const insertRecord = db.prepare<[string, string, number, number, string, bigint, string, string, string]>(`
    INSERT INTO proof_records (id, pk, seq, epoch, h3_cell, cell_key, collection_type, record_hash, json)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
  `);
  const recordById = db.prepare<[string], JsonRow>('SELECT json FROM proof_records WHERE id = ?');
  const hashById = db.prepare<[string], { record_hash: string }>('SELECT record_hash FROM proof_records WHERE id = ?');
  const idBySeq = db.prepare<[string, number], { id: string }>('SELECT id FROM proof_records WHERE pk = ? AND seq = ?');
  const writerTail = db.prepare<[string], WriterTail>(
    'SELECT seq, epoch FROM proof_records WHERE pk = ? ORDER BY seq DESC LIMIT 1',
  );
  const firstEpoch = db.prepare<[string], { epoch: number }>(
    'SELECT epoch FROM proof_records WHERE pk = ? ORDER BY seq LIMIT 1',
  );
  const nextWriter = db.prepare<[string], { pk: string }>(
    'SELECT pk FROM proof_records WHERE pk > ? ORDER BY pk LIMIT 1',
  );
  const epochRecords = db.prepare<[number, string], JsonRow>(
    'SELECT json FROM proof_records WHERE epoch = ? AND pk = ? ORDER BY seq',
  );
  // Two single-column reads in one snapshot: for a million leaves, plucked values cost about half of row
  // objects (measured 1.7 s against 3.0 s).
  const epochSeqs = db
    .prepare<[number, string], number>('SELECT seq FROM proof_records WHERE epoch = ? AND pk = ? ORDER BY seq')
    .pluck();
  const epochHashes = db
    .prepare<[number, string], string>('SELECT record_hash FROM proof_records WHERE epoch = ? AND pk = ? ORDER BY seq')
    .pluck();
  // Chunks by seq: one .all() per 8,192 rows costs less than a step per row through iterate().
  const epochLeafRows = db
    .prepare<[number, string, number], [number, string]>(
      'SELECT seq, record_hash FROM proof_records WHERE epoch = ? AND pk = ? AND seq > ? ORDER BY seq LIMIT 8192',
    )
    .raw();
  const epochCount = db.prepare<[number, string], { n: number; first: number | null; last: number | null }>(
    'SELECT COUNT(*) AS n, MIN(seq) AS first, MAX(seq) AS last FROM proof_records WHERE epoch = ? AND pk = ?',
  );
  const unsyncedRecords = db.prepare<[number], JsonRow>(
    'SELECT json FROM proof_records WHERE synced = 0 ORDER BY pk, seq LIMIT ?',
  );
  const markRecord = db.prepare<[string]>('UPDATE proof_records SET synced = 1 WHERE id = ? AND synced = 0');

  const insertSeal = db.prepare<[string, number, string, string]>(
    'INSERT INTO proof_seals (sealer_pk, epoch, seal_hash, json) VALUES (?, ?, ?, ?)',
  );
  const insertNodes = db.prepare<[string, number, number, number, Buffer]>(
    'INSERT INTO proof_seal_nodes (sealer_pk, epoch, level, page, nodes) VALUES (?, ?, ?, ?, ?)',
  );
  const sealOf = db.prepare<[string, number], JsonRow>(
    'SELECT json FROM proof_seals WHERE sealer_pk = ? AND epoch = ?',
  );
  const latestSeal = db.prepare<[string], JsonRow>(
    'SELECT json FROM proof_seals WHERE sealer_pk = ? ORDER BY epoch DESC LIMIT 1',
  );
  const latestSealEpoch = db.prepare<[string], { epoch: number }>(
    'SELECT epoch FROM proof_seals WHERE sealer_pk = ? ORDER BY epoch DESC LIMIT 1',
  );
  const sealsOf = db.prepare<[string], JsonRow>('SELECT json FROM proof_seals WHERE sealer_pk = ? ORDER BY epoch');
  const sealers = db.prepare<[], { sealer_pk: string }>('SELECT DISTINCT sealer_pk FROM proof_seals');
  const sealNode = db.prepare<[string, number, number, number], { nodes: Uint8Array }>(
    'SELECT nodes FROM proof_seal_nodes WHERE sealer_pk = ? AND epoch = ? AND level = ? AND page = ?',
  );
  // The seal log (docs/protocol.md §15.4): complete subtrees per (sealer, level, index), heads per (sealer, signer, size).
  const logState = db.prepare<[string], { first_epoch: number; size: number | null }>(
    'SELECT MIN(first_epoch) AS first_epoch, MAX(idx) + 1 AS size FROM proof_seal_log WHERE sealer_pk = ? AND level = 0',
  );
  const logNode = db.prepare<[string, number, number], { hash: Buffer }>(
    'SELECT hash FROM proof_seal_log WHERE sealer_pk = ? AND level = ? AND idx = ?',
  );
  const insertLogNode = db.prepare<[string, number, number, number, Buffer]>(
    'INSERT OR IGNORE INTO proof_seal_log (sealer_pk, level, idx, first_epoch, hash) VALUES (?, ?, ?, ?, ?)',
  );
  const insertHead = db.prepare<[string, string, number, string]>(
    'INSERT OR IGNORE INTO proof_seal_heads (sealer_pk, signer_pk, tree_size, json) VALUES (?, ?, ?, ?)',
  );
  const latestHead = db.prepare<[string, string], JsonRow>(
    'SELECT json FROM proof_seal_heads WHERE sealer_pk = ? AND signer_pk = ? ORDER BY tree_size DESC LIMIT 1',
  );
  const headOfSize = db.prepare<[string, string, number], JsonRow>(
    'SELECT json FROM proof_seal_heads WHERE sealer_pk = ? AND signer_pk = ? AND tree_size = ?',
  );
  const appendLog = db.transaction(
    (sealerPk: string, firstEpoch: number, nodes: readonly SealLogNode[], head: SealHead | null) => {
      for (const n of nodes) insertLogNode.run(sealerPk, n.level, n.index, firstEpoch, Buffer.from(n.hash));
      if (head !== null) insertHead.run(sealerPk, head.signer_pk, head.tree_size, JSON.stringify(head));
    },
  );
  const unsyncedSeals = db.prepare<[number], JsonRow>(
    'SELECT json FROM proof_seals WHERE synced = 0 ORDER BY sealer_pk, epoch LIMIT ?',
  );
  const markSeal = db.prepare<[string, number]>(
    'UPDATE proof_seals SET synced = 1 WHERE sealer_pk = ? AND epoch = ? AND synced = 0',
  );

  const markHeld = db.prepare<[string, number]>(
    'UPDATE proof_seals SET held = 1 WHERE sealer_pk = ? AND epoch = ? AND held = 0',
  );
  const prunable = db.prepare<[number, number], { sealer_pk: string; epoch: number }>(
    'SELECT sealer_pk, epoch FROM proof_seals WHERE held = 1 AND pruned < 2 AND epoch <= ? ORDER BY epoch LIMIT ?',
  );
  // On the unsynced index: only the writer's unacknowledged records are read, not every record of the epoch.
  const unsyncedInEpoch = db.prepare<[string, number], { seq: number }>(
    'SELECT seq FROM proof_records INDEXED BY proof_records_unsynced WHERE pk = ? AND synced = 0 AND epoch = ? LIMIT 1',
  );
  const setPruned = db.prepare<[number, string, number]>(
    'UPDATE proof_seals SET pruned = ? WHERE sealer_pk = ? AND epoch = ?',
  );
  const deleteEpochRecords = db.prepare<[number, string, number]>(
    'DELETE FROM proof_records WHERE rowid IN (SELECT rowid FROM proof_records WHERE epoch = ? AND pk = ? LIMIT ?)',
  );
  const deleteEpochPages = db.prepare<[string, number]>(
    'DELETE FROM proof_seal_nodes WHERE sealer_pk = ? AND epoch = ?',
  );
  const prunedOf = db
    .prepare<[string], number>('SELECT epoch FROM proof_seals WHERE sealer_pk = ? AND pruned > 0 ORDER BY epoch')
    .pluck();

  const parse = <T>(row: JsonRow | undefined): T | null => (row === undefined ? null : (JSON.parse(row.json) as T));

  /**
   * insertRecord's values of a record hashed but not yet signed, its JSON without the closing brace: the
   * signature is the record's last key ({ ...hashed, signature }), so the stored text is the same bytes.
   */
  const prepareRow = (hashed: Omit<ProofRecord, 'signature'>): PreparedRow => {
    const { address } = hashed;
    const json = JSON.stringify(hashed);
    return [
      hashed.id,
      address.pk,
      hashed.seq,
      address.epoch,
      address.h3_cell,
      cellKey(address.h3_cell),
      hashed.collection_type,
      hashed.record_hash,
      json.slice(0, -1),
    ];
  };

  const insert = (record: ProofRecord): boolean => {
    const { address } = record;
    const result = insertRecord.run(
      record.id,
      address.pk,
      record.seq,
      address.epoch,
      address.h3_cell,
      cellKey(address.h3_cell),
      record.collection_type,
      record.record_hash,
      JSON.stringify(record),
    );
    return result.changes === 1;
  };

  // An append reads in one transaction, signs with the event loop free (worker threads), then writes in a
  // BEGIN IMMEDIATE transaction that first checks nothing it read has changed; if something has (another
  // process appended or sealed meanwhile), it plans again. Appends through this store take turns.
  const readAppend = db.transaction((signer: KeyPair, entries: readonly NewRecordLike[]) => {
    const pk = signer.publicKey;
    const tail = writerTail.get(pk) ?? null;
    const sealEpoch = latestSealEpoch.get(pk)?.epoch ?? null;
    const prepared = prepareAppend(
      signer,
      entries,
      (id) => parse<ProofRecord>(recordById.get(id)) ?? undefined,
      tail,
      sealEpoch,
    );
    return { prepared, tailSeq: tail?.seq ?? 0, sealEpoch };
  });

  const writeAppend = db.transaction(
    (
      pk: string,
      tailSeq: number,
      sealEpoch: number | null,
      fresh: readonly ProofRecord[],
      rows: PreparedRow[],
    ): boolean => {
      if ((writerTail.get(pk)?.seq ?? 0) !== tailSeq || (latestSealEpoch.get(pk)?.epoch ?? null) !== sealEpoch) {
        return false;
      }
      for (let i = 0; i < fresh.length; i++) {
        const record = fresh[i] as ProofRecord;
        const row = rows[i];
        // Prepared while the workers signed: only the signature is added here (the record's last key).
        const inserted =
          row !== undefined && row[0] === record.id
            ? insertRecord.run(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                row[5],
                row[6],
                row[7],
                `${row[8]},"signature":"${record.signature}"}`,
              ).changes === 1
            : insert(record);
        // An id taken since the read (by another writer): undo the batch and plan again.
        if (!inserted) throw new AppendRaced();
      }
      return true;
    },
  );

  let appending: Promise<unknown> = Promise.resolve();
  const appendInTurn = <T>(run: () => Promise<T>): Promise<T> => {
    const result = appending.then(run, run);
    appending = result.catch(() => undefined);
    return result;
  };

  const append = async (signer: KeyPair, entries: readonly NewRecordLike[]): Promise<ProofRecord[]> => {
    for (let attempt = 1; ; attempt++) {
      const { prepared, tailSeq, sealEpoch } = readAppend(signer, entries);
      if (prepared.fresh.length === 0) return prepared.finish([]).records;
      let rows: PreparedRow[] = [];
      const signed = await signFresh(signer, prepared.fresh, undefined, (hashed) => (rows = hashed.map(prepareRow)));
      try {
        if (writeAppend.immediate(signer.publicKey, tailSeq, sealEpoch, signed, rows)) {
          return prepared.finish(signed).records;
        }
      } catch (error) {
        if (!(error instanceof AppendRaced)) throw error;
      }
      if (attempt >= APPEND_ATTEMPTS) {
        throw new Error(`writer ${signer.publicKey}: other appends kept taking the next seq; retry later`);
      }
    }
  };

  const ingest = db.transaction((records: readonly ProofRecord[]): IngestOutcome[] => {
    const sealed = new Map<string, boolean>();
    return records.map((record): IngestOutcome => {
      const { id } = record;
      const stored = hashById.get(id);
      if (stored !== undefined) {
        return stored.record_hash === record.record_hash
          ? { id, status: 'duplicate' }
          : { id, status: 'rejected', error: 'record_conflict', detail: `record ${id} is stored with another hash` };
      }
      const { pk, epoch } = record.address;
      const key = `${pk}:${epoch}`;
      let isSealed = sealed.get(key);
      if (isSealed === undefined) sealed.set(key, (isSealed = sealOf.get(pk, epoch) !== undefined));
      if (isSealed) {
        return { id, status: 'rejected', error: 'epoch_sealed', detail: `epoch ${epoch} of writer ${pk} is sealed` };
      }
      if (insert(record)) return { id, status: 'inserted' };
      const holder = idBySeq.get(pk, record.seq)?.id ?? 'another record';
      return {
        id,
        status: 'rejected',
        error: 'record_conflict',
        detail: `seq ${record.seq} of writer ${pk} is already taken by ${holder}`,
      };
    });
  });

  /** Refuses a seal whose records (`count`, first..last seq) are not exactly what the store holds of its epoch. */
  const checkEpochHolds = (seal: Seal, count: number): void => {
    const held = epochCount.get(seal.epoch, seal.sealer_pk) ?? { n: 0, first: null, last: null };
    if (held.n !== count || held.first !== seal.first_seq || held.last !== seal.last_seq) {
      throw new ServiceError(
        'seal_mismatch',
        `epoch ${seal.epoch}: the store holds ${held.n} records (seqs ${held.first ?? '-'}..${held.last ?? '-'}), ` +
          `the seal covers ${seal.record_count} (${seal.first_seq ?? '-'}..${seal.last_seq ?? '-'})`,
      );
    }
  };

  /** An epoch's leaves of one writer in seq order, a page of rows at a time (called inside a read transaction). */
  const forEachLeaf = (pk: string, epoch: number, to: { add(seq: number, recordHashHex: string): void }): void => {
    for (let after = 0, rows = epochLeafRows.all(epoch, pk, after); rows.length > 0;) {
      for (const [seq, hash] of rows) to.add(seq, hash);
      after = (rows[rows.length - 1] as [number, string])[0];
      rows = epochLeafRows.all(epoch, pk, after);
    }
  };

  const storeSeal = db.transaction((seal: Seal, levels: readonly Uint8Array[]): 'inserted' | 'duplicate' => {
    const existing = parse<Seal>(sealOf.get(seal.sealer_pk, seal.epoch));
    if (existing !== null) {
      if (existing.seal_hash === seal.seal_hash) return 'duplicate';
      throw new ServiceError('seal_mismatch', `a different seal of epoch ${seal.epoch} is already stored`);
    }
    // In the same transaction as the insert: no record can slip into the epoch between check and seal.
    checkEpochHolds(seal, seal.record_count);
    insertSeal.run(seal.sealer_pk, seal.epoch, seal.seal_hash, JSON.stringify(seal));
    for (const { level, page, nodes } of sealTreePages(levels)) {
      insertNodes.run(
        seal.sealer_pk,
        seal.epoch,
        level,
        page,
        Buffer.from(nodes.buffer, nodes.byteOffset, nodes.byteLength),
      );
    }
    return 'inserted';
  });

  const readLeaves = db.transaction((pk: string, epoch: number): SealLeaf[] => {
    const seqs = epochSeqs.all(epoch, pk);
    const hashes = epochHashes.all(epoch, pk);
    return seqs.map((seq, i) => ({ seq, record_hash: hashes[i] as string }));
  });

  // One read transaction: the count that sizes the buffer and the rows come from the same snapshot.
  const packLeaves = db.transaction((pk: string, epoch: number) => {
    const packer = createLeafPacker(epochCount.get(epoch, pk)?.n ?? 0);
    forEachLeaf(pk, epoch, packer);
    return packer.finish();
  });

  // A seal in two transactions. The first reads the epoch in one snapshot without the write lock: its leaves
  // stream in seq order into a tree builder whose pages go to a connection-private staging table (the temp
  // database, on disk), so memory stays O(log n) (a few hundred KiB at 10M records) and writers in other
  // processes are not held up while the epoch is read and hashed. The second, BEGIN IMMEDIATE, checks the
  // epoch still holds exactly the records the tree was built over (as putSeal does) and moves the pages in.
  db.exec(`
    CREATE TEMP TABLE IF NOT EXISTS seal_pages_staging (
      level INTEGER NOT NULL, page INTEGER NOT NULL, nodes BLOB NOT NULL, PRIMARY KEY (level, page)
    )
  `);
  const stagePage = db.prepare<[number, number, Buffer]>(
    'INSERT INTO temp.seal_pages_staging (level, page, nodes) VALUES (?, ?, ?)',
  );
  const clearStaged = db.prepare('DELETE FROM temp.seal_pages_staging');
  const moveStaged = db.prepare<[string, number]>(
    'INSERT INTO proof_seal_nodes (sealer_pk, epoch, level, page, nodes) SELECT ?, ?, level, page, nodes FROM temp.seal_pages_staging',
  );

  const buildTree = db.transaction((pk: string, epoch: number): Seal | EpochTree => {
    const stored = parse<Seal>(sealOf.get(pk, epoch));
    if (stored !== null) return stored;
    clearStaged.run();
    const leaves = createLeafStreamer(
      createMerkleTreeBuilder(SEAL_PAGE_NODES, (level, page, nodes) => {
        stagePage.run(level, page, Buffer.from(nodes.buffer, nodes.byteOffset, nodes.byteLength));
      }),
    );
    forEachLeaf(pk, epoch, leaves);
    return leaves.finish();
  });

  const storeBuiltSeal = db.transaction(
    (seal: Seal, tree: EpochTree): { seal: Seal; status: 'inserted' | 'exists' } => {
      const stored = parse<Seal>(sealOf.get(seal.sealer_pk, seal.epoch));
      if (stored !== null) return { seal: stored, status: 'exists' };
      checkEpochHolds(seal, tree.count);
      insertSeal.run(seal.sealer_pk, seal.epoch, seal.seal_hash, JSON.stringify(seal));
      moveStaged.run(seal.sealer_pk, seal.epoch);
      clearStaged.run();
      return { seal, status: 'inserted' };
    },
  );

  const sealStreaming = (pk: string, epoch: number, sign: (tree: EpochTree) => Seal) => {
    try {
      const built = buildTree(pk, epoch);
      if ('seal_hash' in built) return { seal: built, status: 'exists' as const };
      const seal = sign(built);
      checkSealOverTree(seal, pk, epoch, built);
      return storeBuiltSeal.immediate(seal, built);
    } catch (error) {
      clearStaged.run();
      throw error;
    }
  };

  const markRecords = db.transaction((ids: readonly string[]) => {
    for (const id of ids) markRecord.run(id);
  });
  const markSeals = db.transaction((seals: readonly Pick<Seal, 'sealer_pk' | 'epoch'>[]) => {
    for (const seal of seals) markSeal.run(seal.sealer_pk, seal.epoch);
  });
  const markSealsHeld = db.transaction((seals: readonly Pick<Seal, 'sealer_pk' | 'epoch'>[]) => {
    for (const seal of seals) markHeld.run(seal.sealer_pk, seal.epoch);
  });

  // One write transaction per batch, so the write lock is held for a bounded delete. An epoch is marked pruned
  // before its first record goes (the audit then checks what is left against the seal's tree, which goes last).
  const pruneBatch = db.transaction((throughEpoch: number, limit: number): PruneBatch => {
    const done: PruneBatch = { records: 0, epochs: 0, more: false };
    const tails = new Map<string, number | null>();
    const candidates = prunable.all(throughEpoch, PRUNE_SCAN);
    for (const { sealer_pk: pk, epoch } of candidates) {
      if (done.records >= limit) return { ...done, more: true };
      let tailEpoch = tails.get(pk);
      if (tailEpoch === undefined) tails.set(pk, (tailEpoch = writerTail.get(pk)?.epoch ?? null));
      // The writer's latest record stays: the next append takes its seq and epoch from it (record-append.ts).
      if (tailEpoch === epoch) continue;
      // A record the central store has not acknowledged stays, and its epoch whole, until the sync pushed it.
      if (unsyncedInEpoch.get(pk, epoch) !== undefined) continue;
      setPruned.run(1, pk, epoch);
      const room = limit - done.records;
      const deleted = deleteEpochRecords.run(epoch, pk, room).changes;
      done.records += deleted;
      if (deleted === room) return { ...done, more: true };
      deleteEpochPages.run(pk, epoch);
      setPruned.run(2, pk, epoch);
      done.epochs += 1;
    }
    return { ...done, more: candidates.length === PRUNE_SCAN && done.epochs > 0 };
  });

  // One statement per filter combination, prepared on first use.
  const queries = new Map<string, ReturnType<typeof db.prepare>>();
  const queryStatement = (cell: boolean, collection: boolean) => {
    const key = `${cell}:${collection}`;
    let statement = queries.get(key);
    if (statement === undefined) {
      // Row-value comparison seeks the order index straight to the cursor; cell and collection filters are
      // evaluated on index entries, so only matching rows are read from the table.
      statement = db.prepare(`
        SELECT json, epoch, pk, seq FROM proof_records
        WHERE (epoch, pk, seq) > (@epoch, @pk, @seq) AND epoch <= @epochEnd
          ${cell ? 'AND cell_key BETWEEN @lo AND @hi' : ''}
          ${collection ? 'AND collection_type = @collection' : ''}
        ORDER BY epoch, pk, seq LIMIT @limit
      `);
      queries.set(key, statement);
    }
    return statement;
  };

  return {
    async appendRecords(signer, entries) {
      if (entries.length === 0) return [];
      return appendInTurn(() => append(signer, entries));
    },

    async ingestRecords(records) {
      if (records.length === 0) return [];
      return ingest.immediate(records);
    },

    async getRecord(id) {
      return parse<ProofRecord>(recordById.get(id));
    },

    async queryRecords(query: RecordQuery) {
      const { after } = checkRecordQuery(query);
      const range = query.cell === undefined ? null : cellKeyRange(query.cell);
      const start = query.epochStart ?? 0;
      // Before every key of epochStart: no pk is '' and no seq is below 1.
      const from = after !== null && after.epoch >= start ? after : { epoch: start, pk: '', seq: 0 };
      const rows = queryStatement(range !== null, query.collection !== undefined).all({
        epoch: from.epoch,
        pk: from.pk,
        seq: from.seq,
        epochEnd: query.epochEnd ?? Number.MAX_SAFE_INTEGER,
        ...(range === null ? {} : range),
        ...(query.collection === undefined ? {} : { collection: query.collection }),
        limit: query.limit + 1,
      }) as (JsonRow & { epoch: number; pk: string; seq: number })[];
      const page = rows.slice(0, query.limit);
      const last = page[page.length - 1];
      return {
        records: page.map((row) => JSON.parse(row.json) as ProofRecord),
        nextCursor: rows.length > query.limit && last !== undefined ? encodeRecordCursor(last) : null,
      };
    },

    async recordsOfEpoch(pk, epoch) {
      return epochRecords.all(epoch, pk).map((row) => JSON.parse(row.json) as ProofRecord);
    },

    async epochLeaves(pk, epoch) {
      return readLeaves(pk, epoch);
    },

    async epochLeafHashes(pk, epoch) {
      return packLeaves(pk, epoch);
    },

    async firstRecordEpoch(pk) {
      return firstEpoch.get(pk)?.epoch ?? null;
    },

    async putSeal(seal, levels) {
      checkSealLevels(seal, levels);
      return storeSeal.immediate(seal, levels);
    },

    async sealEpoch(pk, epoch, sign) {
      return sealStreaming(pk, epoch, sign);
    },

    async getSeal(sealerPk, epoch) {
      return parse<Seal>(sealOf.get(sealerPk, epoch));
    },

    async latestSeal(sealerPk) {
      return parse<Seal>(latestSeal.get(sealerPk));
    },

    async sealsOf(sealerPk) {
      return sealsOf.all(sealerPk).map((row) => JSON.parse(row.json) as Seal);
    },

    async writers() {
      // A loose index scan: one seek per writer instead of a pass over every record.
      const pks = new Set<string>();
      for (let row = nextWriter.get(''); row !== undefined; row = nextWriter.get(row.pk)) pks.add(row.pk);
      for (const row of sealers.all()) pks.add(row.sealer_pk);
      return [...pks].sort();
    },

    async sealedPath(record) {
      const seal = parse<Seal>(sealOf.get(record.address.pk, record.address.epoch));
      if (seal === null) return null;
      const leafIndex = leafIndexInSeal(seal, record);
      const nodes = auditPathNodes(seal.record_count, leafIndex);
      const pages = new Map<string, Uint8Array>();
      for (const { level, page } of nodes) {
        const row = sealNode.get(seal.sealer_pk, seal.epoch, level, page);
        if (row !== undefined) pages.set(pageKey(level, page), row.nodes);
      }
      return { seal, leafIndex, path: auditPathFromPages(nodes, pages) };
    },

    async unsyncedRecords(limit) {
      return unsyncedRecords.all(limit).map((row) => JSON.parse(row.json) as ProofRecord);
    },

    async markRecordsSynced(ids) {
      if (ids.length > 0) markRecords.immediate(ids);
    },

    async unsyncedSeals(limit) {
      return unsyncedSeals.all(limit).map((row) => JSON.parse(row.json) as Seal);
    },

    async markSealsSynced(seals) {
      if (seals.length > 0) markSeals.immediate(seals);
    },

    async markSealsHeld(seals) {
      if (seals.length > 0) markSealsHeld.immediate(seals);
    },

    async prunedEpochs(sealerPk) {
      return prunedOf.all(sealerPk);
    },

    async pruneHeldEpochs(throughEpoch, limit) {
      if (!Number.isSafeInteger(limit) || limit < 1) throw new TypeError(`limit must be a positive integer: ${limit}`);
      return pruneBatch.immediate(throughEpoch, limit);
    },

    async sealLogState(sealerPk) {
      const row = logState.get(sealerPk);
      return row === undefined || row.size === null ? null : { firstEpoch: row.first_epoch, size: row.size };
    },

    async sealLogNodes(sealerPk, keys) {
      const found = new Map<string, Uint8Array>();
      for (const { level, index } of keys) {
        const row = logNode.get(sealerPk, level, index);
        if (row !== undefined) found.set(sealLogNodeKey(level, index), new Uint8Array(row.hash));
      }
      return found;
    },

    async appendSealLog(sealerPk, firstEpoch, nodes, head) {
      appendLog.immediate(sealerPk, firstEpoch, nodes, head);
    },

    async sealHead(sealerPk, signerPk, treeSize) {
      const row =
        treeSize === undefined ? latestHead.get(sealerPk, signerPk) : headOfSize.get(sealerPk, signerPk, treeSize);
      return row === undefined ? null : (JSON.parse(row.json) as SealHead);
    },

    async close() {
      // The statements are released with the database, which belongs to the caller.
    },
  };
}

type NewRecordLike = Parameters<ProofStore['appendRecords']>[1][number];
type PreparedRow = [string, string, number, number, string, bigint, string, string, string];
