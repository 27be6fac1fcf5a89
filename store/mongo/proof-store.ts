import { randomUUID } from 'node:crypto';
import { Binary, MongoBulkWriteError, MongoServerError, type Db, type Filter } from 'mongodb';
import { ServiceError } from '../../core/errors.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import type { KeyPair } from '../../core/identity.js';
import type { IngestOutcome, NewRecord, ProofStore, RecordQuery, SealLeaf } from '../proof-store.js';
import { createMerkleTreeBuilder } from '../../core/merkle/tree-builder.js';
import type { EpochTree } from '../../core/seal.js';
import { createLeafPacker, createLeafStreamer } from '../epoch-leaf-packer.js';
import { prepareAppend, signFresh, writerScopedId, type WriterTail } from '../record-append.js';
import { cellAncestors, checkRecordQuery, encodeRecordCursor } from '../record-query.js';
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
import { ensureIndexes } from './ensure-indexes.js';
import { bytesToHex, hexToBytes } from '../../core/hex.js';
import { sealLogNodeKey, type SealHead } from '../../core/seal-log.js';

/** A record: its JSON as written (payload keys may be anything JSON allows) plus the fields queries use. */
export interface RecordDoc {
  id: string;
  address: { h3_cell: string; epoch: number; pk: string };
  seq: number;
  collection_type: string;
  record_hash: string;
  /** The record's cell and all its ancestors: containment is equality on a multikey index. */
  cells: string[];
  synced: boolean;
  json: string;
}

interface SealDoc {
  sealer_pk: string;
  epoch: number;
  seal_hash: string;
  synced: boolean;
  json: string;
}

/** A page of a seal's tree, keyed by the seal's hash too: a removed seal's pages never mix with its successor. */
interface SealNodeDoc {
  sealer_pk: string;
  epoch: number;
  seal_hash: string;
  level: number;
  page: number;
  nodes: Binary;
}

/** A record as the `records` collection holds it (exported for bench/mongo-seal.ts, which fills an epoch directly). */
export const recordDocument = (record: ProofRecord): RecordDoc => ({
  id: record.id,
  address: { h3_cell: record.address.h3_cell, epoch: record.address.epoch, pk: record.address.pk },
  seq: record.seq,
  collection_type: record.collection_type,
  record_hash: record.record_hash,
  cells: cellAncestors(record.address.h3_cell),
  synced: false,
  json: JSON.stringify(record),
});

const DUPLICATE_KEY = 11000;
/** Documents per insertMany: well under the 16 MiB message limit with 8 KiB tree pages or large payloads. */
const INSERT_CHUNK = 500;

/**
 * MongoDB adapter of {@link ProofStore} for MongoDB and FerretDB v1 alike (README.md beside this file): no
 * transactions, so atomicity comes from unique indexes, and every check a transaction would make is made
 * again after the write, undoing the write when a concurrent one won:
 *  - ingest: inserts with `ordered: false` against unique `id` and (pk, seq), classifying each duplicate key;
 *    afterwards a record that landed in an epoch sealed meanwhile is removed again (epoch_sealed).
 *  - putSeal: inserts the seal against unique (sealer_pk, epoch), then re-counts the epoch's records and
 *    removes its seal when they differ (seal_mismatch).
 *  - appendRecords: seqs come from this process (one queue per signer; the tail is read once and then kept),
 *    which is correct for a single writer process per key — a worker's own key — and not across processes.
 *    A batch that fails half-way is deleted again before the error is thrown.
 * Sorting on FerretDB v1 happens in memory (no sort pushdown): queries and sync lists are correct there, and
 * fast only on MongoDB, whose indexes serve them.
 */
export async function createMongoProofStore(db: Db): Promise<ProofStore> {
  const records = db.collection<RecordDoc>('records');
  const seals = db.collection<SealDoc>('seals');
  const nodes = db.collection<SealNodeDoc>('seal_nodes');
  await ensureIndexes(records, [
    { key: { id: 1 }, name: 'id_unique', unique: true },
    { key: { 'address.pk': 1, seq: 1 }, name: 'writer_seq_unique', unique: true },
    { key: { 'address.pk': 1, 'address.epoch': 1, seq: 1 }, name: 'writer_epoch_seq' },
    { key: { 'address.epoch': 1, 'address.pk': 1, seq: 1 }, name: 'query_order' },
    { key: { 'address.h3_cell': 1, 'address.epoch': 1 }, name: 'cell_epoch' },
    { key: { cells: 1, 'address.epoch': 1 }, name: 'cells_epoch' },
    { key: { collection_type: 1, 'address.epoch': 1 }, name: 'collection_epoch' },
    { key: { synced: 1, 'address.pk': 1, seq: 1 }, name: 'unsynced' },
  ]);
  await ensureIndexes(seals, [
    { key: { sealer_pk: 1, epoch: 1 }, name: 'sealer_epoch_unique', unique: true },
    { key: { synced: 1, sealer_pk: 1, epoch: 1 }, name: 'unsynced' },
  ]);
  await ensureIndexes(nodes, [
    { key: { sealer_pk: 1, epoch: 1, seal_hash: 1, level: 1, page: 1 }, name: 'page_unique', unique: true },
  ]);

  // The seal log (docs/protocol.md §15.4): complete subtrees per (sealer, level, index), heads per (sealer, signer, size).
  const logNodes = db.collection<{ sealer_pk: string; level: number; idx: number; first_epoch: number; hash: string }>(
    'seal_log',
  );
  const heads = db.collection<{ sealer_pk: string; signer_pk: string; tree_size: number; json: string }>('seal_heads');
  await ensureIndexes(logNodes, [{ key: { sealer_pk: 1, level: 1, idx: 1 }, name: 'node_unique', unique: true }]);
  await ensureIndexes(heads, [
    { key: { sealer_pk: 1, signer_pk: 1, tree_size: 1 }, name: 'head_unique', unique: true },
  ]);

  const parse = <T>(doc: { json: string } | null): T | null => (doc === null ? null : (JSON.parse(doc.json) as T));
  const json = { projection: { _id: 0, json: 1 } } as const;

  /** Inserts, tolerating only duplicate keys; returns the input indexes that hit one. */
  async function insertAll(docs: readonly RecordDoc[]): Promise<Set<number>> {
    const duplicates = new Set<number>();
    for (let from = 0; from < docs.length; from += INSERT_CHUNK) {
      const chunk = docs.slice(from, from + INSERT_CHUNK);
      try {
        await records.insertMany(chunk, { ordered: false });
      } catch (error) {
        for (const index of duplicateIndexes(error, chunk.length)) duplicates.add(from + index);
      }
    }
    return duplicates;
  }

  const sealed = async (pk: string, epoch: number) =>
    seals.findOne({ sealer_pk: pk, epoch }, { projection: { _id: 0, json: 1 } }).then((doc) => parse<Seal>(doc));

  const countEpoch = (pk: string, epoch: number) =>
    records.countDocuments({ 'address.pk': pk, 'address.epoch': epoch });

  // appendRecords: one queue and one cached tail per signer.
  const queues = new Map<string, Promise<unknown>>();
  const tails = new Map<string, WriterTail | null>();
  const serialize = <T>(pk: string, task: () => Promise<T>): Promise<T> => {
    const run = (queues.get(pk) ?? Promise.resolve()).then(task, task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    queues.set(pk, settled);
    void settled.then(() => {
      if (queues.get(pk) === settled) queues.delete(pk);
    });
    return run;
  };
  const readTail = async (pk: string): Promise<WriterTail | null> => {
    if (tails.has(pk)) return tails.get(pk) ?? null;
    const last = await records
      .find({ 'address.pk': pk }, { projection: { _id: 0, seq: 1, 'address.epoch': 1 } })
      .sort({ seq: -1 })
      .limit(1)
      .next();
    const tail = last === null ? null : { seq: last.seq, epoch: last.address.epoch };
    tails.set(pk, tail);
    return tail;
  };

  /** Removes records this call inserted (matched by id and hash, so nobody else's record goes). */
  const undo = async (inserted: readonly ProofRecord[]) => {
    for (const record of inserted) await records.deleteOne({ id: record.id, record_hash: record.record_hash });
  };

  /** One attempt of appendRecords under the signer's queue; WriterRaceError: another process took ids or seqs. */
  async function appendOnce(signer: KeyPair, entries: readonly NewRecord[]): Promise<ProofRecord[]> {
    const pk = signer.publicKey;
    const given = entries.map((entry) => entry?.id).filter((id) => typeof id === 'string');
    // The scoped ids too: an id another writer holds is written under its scoped id (planAppend).
    const wanted = [...new Set([...given, ...given.map((id) => writerScopedId(signer, id))])];
    const stored = new Map<string, ProofRecord>();
    for await (const doc of records.find({ id: { $in: wanted } }, json)) {
      const record = JSON.parse(doc.json) as ProofRecord;
      stored.set(record.id, record);
    }
    const latest = await seals
      .find({ sealer_pk: pk }, { projection: { _id: 0, epoch: 1 } })
      .sort({ epoch: -1 })
      .limit(1)
      .next();
    const prepared = prepareAppend(signer, entries, (id) => stored.get(id), await readTail(pk), latest?.epoch ?? null);
    if (prepared.fresh.length === 0) return prepared.finish([]).records;
    // Signed on the Ed25519 pool (worker threads) for large batches; this signer's queue waits meanwhile.
    const plan = prepared.finish(await signFresh(signer, prepared.fresh));

    tails.delete(pk); // re-read after any failure below
    const duplicates = await insertAll(plan.fresh.map(recordDocument)).catch(async (error: unknown) => {
      await undo(plan.fresh);
      throw error;
    });
    if (duplicates.size > 0) {
      await undo(plan.fresh.filter((_, i) => !duplicates.has(i)));
      throw new WriterRaceError(
        `another process writes as ${pk}: ids or seqs of this batch were taken; nothing written`,
      );
    }
    // The sealer may have sealed an epoch between the check above and the insert.
    for (const epoch of new Set(plan.fresh.map((record) => record.address.epoch))) {
      if ((await sealed(pk, epoch)) !== null) {
        await undo(plan.fresh);
        throw new ServiceError('epoch_sealed', `epoch ${epoch} of writer ${pk} was sealed during the append`);
      }
    }
    const last = plan.fresh[plan.fresh.length - 1] as ProofRecord;
    tails.set(pk, { seq: last.seq, epoch: last.address.epoch });
    return plan.records;
  }

  const store: ProofStore = {
    appendRecords(signer, entries) {
      if (entries.length === 0) return Promise.resolve([]);
      const pk = signer.publicKey;
      // Another process writing as the same signer (WEB_CONCURRENCY, docs/operations.md) can take the planned
      // seqs first: the batch was undone, so plan it again from the fresh tail, after a short random pause.
      return serialize(pk, async () => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await appendOnce(signer, entries);
          } catch (error) {
            if (!(error instanceof WriterRaceError) || attempt >= RACE_RETRIES) throw error;
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * attempt));
          }
        }
      });
    },

    async ingestRecords(batch) {
      const outcomes = new Array<IngestOutcome>(batch.length);
      const conflict = (id: string, detail: string): IngestOutcome => ({
        id,
        status: 'rejected',
        error: 'record_conflict',
        detail,
      });
      const classifyById = (record: ProofRecord, storedHash: string): IngestOutcome =>
        storedHash === record.record_hash
          ? { id: record.id, status: 'duplicate' }
          : conflict(record.id, `record ${record.id} is stored with another hash`);

      const storedHashes = new Map<string, string>();
      const ids = [...new Set(batch.map((record) => record.id))];
      for await (const doc of records.find({ id: { $in: ids } }, { projection: { _id: 0, id: 1, record_hash: 1 } })) {
        storedHashes.set(doc.id, doc.record_hash);
      }
      const sealedEpochs = new Map<string, boolean>();
      const candidates: { index: number; record: ProofRecord }[] = [];
      for (const [index, record] of batch.entries()) {
        const storedHash = storedHashes.get(record.id);
        if (storedHash !== undefined) {
          outcomes[index] = classifyById(record, storedHash);
          continue;
        }
        const { pk, epoch } = record.address;
        const key = `${pk}:${epoch}`;
        if (!sealedEpochs.has(key)) sealedEpochs.set(key, (await sealed(pk, epoch)) !== null);
        if (sealedEpochs.get(key) === true) {
          outcomes[index] = {
            id: record.id,
            status: 'rejected',
            error: 'epoch_sealed',
            detail: `epoch ${epoch} of writer ${pk} is sealed`,
          };
          continue;
        }
        // The same id twice in a batch: the first one is inserted, the rest compare against it.
        storedHashes.set(record.id, record.record_hash);
        candidates.push({ index, record });
      }

      const duplicates = await insertAll(candidates.map(({ record }) => recordDocument(record)));
      const inserted: { index: number; record: ProofRecord }[] = [];
      for (const [i, { index, record }] of candidates.entries()) {
        if (!duplicates.has(i)) {
          inserted.push({ index, record });
          outcomes[index] = { id: record.id, status: 'inserted' };
          continue;
        }
        // Lost a race for the id, or the writer's seq is taken by another id.
        const byId = await records.findOne({ id: record.id }, { projection: { _id: 0, record_hash: 1 } });
        if (byId !== null) {
          outcomes[index] = classifyById(record, byId.record_hash);
          continue;
        }
        const bySeq = await records.findOne(
          { 'address.pk': record.address.pk, seq: record.seq },
          { projection: { _id: 0, id: 1 } },
        );
        outcomes[index] = conflict(
          record.id,
          `seq ${record.seq} of writer ${record.address.pk} is already taken by ${bySeq?.id ?? 'another record'}`,
        );
      }

      // A seal stored between the check and the insert: a record it does not cover must not stay.
      const groups = new Map<string, { index: number; record: ProofRecord }[]>();
      for (const item of inserted) {
        const key = `${item.record.address.pk}:${item.record.address.epoch}`;
        groups.set(key, [...(groups.get(key) ?? []), item]);
      }
      for (const group of groups.values()) {
        const { pk, epoch } = (group[0] as { record: ProofRecord }).record.address;
        const seal = await sealed(pk, epoch);
        if (seal === null) continue;
        const overfull = (await countEpoch(pk, epoch)) > seal.record_count;
        for (const { index, record } of group) {
          const outside = seal.first_seq === null || record.seq < seal.first_seq || record.seq > (seal.last_seq ?? 0);
          if (!outside && !overfull) continue;
          await undo([record]);
          outcomes[index] = {
            id: record.id,
            status: 'rejected',
            error: 'epoch_sealed',
            detail: `epoch ${epoch} of writer ${pk} was sealed during the ingest`,
          };
        }
      }
      return outcomes;
    },

    async getRecord(id) {
      return parse<ProofRecord>(await records.findOne({ id }, json));
    },

    async queryRecords(query: RecordQuery) {
      const { after } = checkRecordQuery(query);
      const filter: Filter<RecordDoc> = {};
      const epoch: { $gte?: number; $lte?: number } = {};
      if (query.epochStart !== undefined) epoch.$gte = query.epochStart;
      if (query.epochEnd !== undefined) epoch.$lte = query.epochEnd;
      if (Object.keys(epoch).length > 0) filter['address.epoch'] = epoch;
      if (query.cell !== undefined) filter.cells = query.cell;
      if (query.collection !== undefined) filter.collection_type = query.collection;
      if (after !== null) {
        filter.$or = [
          { 'address.epoch': { $gt: after.epoch } },
          { 'address.epoch': after.epoch, 'address.pk': { $gt: after.pk } },
          { 'address.epoch': after.epoch, 'address.pk': after.pk, seq: { $gt: after.seq } },
        ];
      }
      const docs = await records
        .find(filter, { projection: { _id: 0, json: 1 } })
        .sort({ 'address.epoch': 1, 'address.pk': 1, seq: 1 })
        .limit(query.limit + 1)
        .toArray();
      const page = docs.slice(0, query.limit).map((doc) => JSON.parse(doc.json) as ProofRecord);
      const last = page[page.length - 1];
      return {
        records: page,
        nextCursor:
          docs.length > query.limit && last !== undefined
            ? encodeRecordCursor({ epoch: last.address.epoch, pk: last.address.pk, seq: last.seq })
            : null,
      };
    },

    async recordsOfEpoch(pk, epoch) {
      const docs = await records.find({ 'address.pk': pk, 'address.epoch': epoch }, json).sort({ seq: 1 }).toArray();
      return docs.map((doc) => JSON.parse(doc.json) as ProofRecord);
    },

    async epochLeaves(pk, epoch) {
      const docs = await records
        .find({ 'address.pk': pk, 'address.epoch': epoch }, { projection: { _id: 0, seq: 1, record_hash: 1 } })
        .sort({ seq: 1 })
        .toArray();
      return docs.map((doc): SealLeaf => ({ seq: doc.seq, record_hash: doc.record_hash }));
    },

    async epochLeafHashes(pk, epoch) {
      const filter = { 'address.pk': pk, 'address.epoch': epoch };
      const packer = createLeafPacker(await records.countDocuments(filter));
      const cursor = records.find(filter, { projection: { _id: 0, seq: 1, record_hash: 1 } }).sort({ seq: 1 });
      for await (const doc of cursor) packer.add(doc.seq, doc.record_hash);
      return packer.finish();
    },

    async firstRecordEpoch(pk) {
      const first = await records
        .find({ 'address.pk': pk }, { projection: { _id: 0, 'address.epoch': 1 } })
        .sort({ seq: 1 })
        .limit(1)
        .next();
      return first?.address.epoch ?? null;
    },

    async putSeal(seal, levels) {
      checkSealLevels(seal, levels);
      const stored = await sealed(seal.sealer_pk, seal.epoch);
      const verdict = (existing: Seal): 'duplicate' => {
        if (existing.seal_hash === seal.seal_hash) return 'duplicate';
        throw new ServiceError('seal_mismatch', `a different seal of epoch ${seal.epoch} is already stored`);
      };
      if (stored !== null) return verdict(stored);
      const mismatch = (held: number) =>
        new ServiceError(
          'seal_mismatch',
          `epoch ${seal.epoch}: the store holds ${held} records, the seal covers ${seal.record_count}`,
        );
      const before = await countEpoch(seal.sealer_pk, seal.epoch);
      if (before !== seal.record_count) throw mismatch(before);

      // Pages first: a stored seal always has its tree. A retry finds its own pages already there.
      const key = { sealer_pk: seal.sealer_pk, epoch: seal.epoch, seal_hash: seal.seal_hash };
      const pages = [...sealTreePages(levels)].map(({ level, page, nodes: bytes }): SealNodeDoc => ({
        ...key,
        level,
        page,
        nodes: new Binary(bytes),
      }));
      for (let from = 0; from < pages.length; from += INSERT_CHUNK) {
        try {
          await nodes.insertMany(pages.slice(from, from + INSERT_CHUNK), { ordered: false });
        } catch (error) {
          duplicateIndexes(error, INSERT_CHUNK);
        }
      }
      try {
        await seals.insertOne({ ...key, synced: false, json: JSON.stringify(seal) });
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        const winner = await sealed(seal.sealer_pk, seal.epoch);
        if (winner === null) throw error;
        return verdict(winner);
      }
      // No transaction: a record may have landed since the count. Then this seal does not cover it.
      const after = await countEpoch(seal.sealer_pk, seal.epoch);
      if (after !== seal.record_count) {
        await seals.deleteOne(key);
        await nodes.deleteMany(key);
        throw mismatch(after);
      }
      return 'inserted';
    },

    // The tree streams into pages as the leaves are read (O(log n) memory, as the SQLite adapter): the pages go
    // in under a staging seal_hash nobody reads, then take the seal's hash once it is signed, then the seal goes
    // in with putSeal's checks. A sealer that dies half-way leaves staging pages no proof ever reads.
    async sealEpoch(pk, epoch, sign) {
      const stored = await sealed(pk, epoch);
      if (stored !== null) return { seal: stored, status: 'exists' as const };
      const staging = { sealer_pk: pk, epoch, seal_hash: `staging:${randomUUID()}` };
      const dropStaging = () => nodes.deleteMany(staging).catch(() => undefined);
      try {
        let batch: SealNodeDoc[] = [];
        const flush = async () => {
          if (batch.length === 0) return;
          const full = batch;
          batch = [];
          await nodes.insertMany(full, { ordered: false });
        };
        const leaves = createLeafStreamer(
          createMerkleTreeBuilder(SEAL_PAGE_NODES, (level, page, bytes) => {
            // `bytes` is reused by the builder: copied into the document.
            batch.push({ ...staging, level, page, nodes: new Binary(Buffer.from(bytes)) });
          }),
        );
        const cursor = records
          .find({ 'address.pk': pk, 'address.epoch': epoch }, { projection: { _id: 0, seq: 1, record_hash: 1 } })
          .sort({ seq: 1 });
        for await (const doc of cursor) {
          leaves.add(doc.seq, doc.record_hash);
          if (batch.length >= INSERT_CHUNK) await flush();
        }
        const tree: EpochTree = leaves.finish();
        await flush();
        const seal = sign(tree);
        checkSealOverTree(seal, pk, epoch, tree);
        const mismatch = (held: number) =>
          new ServiceError(
            'seal_mismatch',
            `epoch ${epoch}: the store holds ${held} records, the seal covers ${seal.record_count}`,
          );
        const before = await countEpoch(pk, epoch);
        if (before !== seal.record_count) throw mismatch(before);
        const key = { sealer_pk: pk, epoch, seal_hash: seal.seal_hash };
        const winner = await sealed(pk, epoch);
        if (winner !== null) {
          await dropStaging();
          return { seal: winner, status: 'exists' as const };
        }
        try {
          await nodes.updateMany(staging, { $set: { seal_hash: seal.seal_hash } });
        } catch (error) {
          // Another sealer stored the identical tree meanwhile (unique page keys): its seal is the answer.
          if (!isDuplicateKey(error)) throw error;
        }
        try {
          await seals.insertOne({ ...key, synced: false, json: JSON.stringify(seal) });
        } catch (error) {
          if (!isDuplicateKey(error)) throw error;
          const other = await sealed(pk, epoch);
          if (other === null) throw error;
          await dropStaging();
          return { seal: other, status: 'exists' as const };
        }
        // No transaction: a record may have landed since the count. Then this seal does not cover it.
        const after = await countEpoch(pk, epoch);
        if (after !== seal.record_count) {
          await seals.deleteOne(key);
          await nodes.deleteMany(key);
          throw mismatch(after);
        }
        return { seal, status: 'inserted' as const };
      } finally {
        await dropStaging();
      }
    },

    async getSeal(sealerPk, epoch) {
      return sealed(sealerPk, epoch);
    },

    async latestSeal(sealerPk) {
      const doc = await seals.find({ sealer_pk: sealerPk }, json).sort({ epoch: -1 }).limit(1).next();
      return parse<Seal>(doc);
    },

    async sealsOf(sealerPk) {
      const docs = await seals.find({ sealer_pk: sealerPk }, json).sort({ epoch: 1 }).toArray();
      return docs.map((doc) => JSON.parse(doc.json) as Seal);
    },

    async writers() {
      const pks = new Set<string>([
        ...((await records.distinct('address.pk')) as string[]),
        ...((await seals.distinct('sealer_pk')) as string[]),
      ]);
      return [...pks].sort();
    },

    async sealedPath(record) {
      const seal = await sealed(record.address.pk, record.address.epoch);
      if (seal === null) return null;
      const leafIndex = leafIndexInSeal(seal, record);
      const path = auditPathNodes(seal.record_count, leafIndex);
      const pages = new Map<string, Uint8Array>();
      if (path.length > 0) {
        const wanted = [
          ...new Map(path.map((n) => [pageKey(n.level, n.page), { level: n.level, page: n.page }])).values(),
        ];
        const docs = nodes.find(
          { sealer_pk: seal.sealer_pk, epoch: seal.epoch, seal_hash: seal.seal_hash, $or: wanted },
          { projection: { _id: 0, level: 1, page: 1, nodes: 1 } },
        );
        for await (const doc of docs) pages.set(pageKey(doc.level, doc.page), doc.nodes.buffer);
      }
      return { seal, leafIndex, path: auditPathFromPages(path, pages) };
    },

    async unsyncedRecords(limit) {
      const docs = await records.find({ synced: false }, json).sort({ 'address.pk': 1, seq: 1 }).limit(limit).toArray();
      return docs.map((doc) => JSON.parse(doc.json) as ProofRecord);
    },

    async markRecordsSynced(ids) {
      // Setting a constant is idempotent, so FerretDB's non-atomic updates cannot lose anything here.
      if (ids.length > 0) await records.updateMany({ id: { $in: [...ids] } }, { $set: { synced: true } });
    },

    async unsyncedSeals(limit) {
      const docs = await seals.find({ synced: false }, json).sort({ sealer_pk: 1, epoch: 1 }).limit(limit).toArray();
      return docs.map((doc) => JSON.parse(doc.json) as Seal);
    },

    async markSealsSynced(list) {
      if (list.length === 0) return;
      await seals.updateMany(
        { $or: list.map((seal) => ({ sealer_pk: seal.sealer_pk, epoch: seal.epoch })) },
        { $set: { synced: true } },
      );
    },

    async sealLogState(sealerPk) {
      const doc = await logNodes.find({ sealer_pk: sealerPk, level: 0 }).sort({ idx: -1 }).limit(1).next();
      return doc === null ? null : { firstEpoch: doc.first_epoch, size: doc.idx + 1 };
    },

    async sealLogNodes(sealerPk, keys) {
      const found = new Map<string, Uint8Array>();
      if (keys.length === 0) return found;
      const docs = await logNodes
        .find({ sealer_pk: sealerPk, $or: keys.map((k) => ({ level: k.level, idx: k.index })) })
        .toArray();
      for (const doc of docs) found.set(sealLogNodeKey(doc.level, doc.idx), hexToBytes(doc.hash));
      return found;
    },

    async appendSealLog(sealerPk, firstEpoch, nodes, head) {
      // No transaction: inner nodes first, then leaves in index order, so a leaf is only counted in sealLogState
      // once every node it completes is stored; a retry upserts the same values.
      const ordered = [...nodes.filter((n) => n.level > 0), ...nodes.filter((n) => n.level === 0)];
      if (ordered.length > 0) {
        await logNodes.bulkWrite(
          ordered.map((n) => ({
            updateOne: {
              filter: { sealer_pk: sealerPk, level: n.level, idx: n.index },
              update: { $setOnInsert: { first_epoch: firstEpoch, hash: bytesToHex(n.hash) } },
              upsert: true,
            },
          })),
          { ordered: true },
        );
      }
      if (head !== null) {
        await heads.updateOne(
          { sealer_pk: sealerPk, signer_pk: head.signer_pk, tree_size: head.tree_size },
          { $setOnInsert: { json: JSON.stringify(head) } },
          { upsert: true },
        );
      }
    },

    async sealHead(sealerPk, signerPk, treeSize) {
      const filter = {
        sealer_pk: sealerPk,
        signer_pk: signerPk,
        ...(treeSize === undefined ? {} : { tree_size: treeSize }),
      };
      const doc = await heads.find(filter, json).sort({ tree_size: -1 }).limit(1).next();
      return parse<SealHead>(doc);
    },

    async close() {
      // Let appends in flight finish; the client belongs to the caller.
      await Promise.all([...queues.values()]);
    },
  };
  return store;
}

/** The batch positions that failed on a duplicate key; any other write error is rethrown. */
function duplicateIndexes(error: unknown, size: number): number[] {
  if (error instanceof MongoBulkWriteError) {
    const writeErrors = Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors];
    if (writeErrors.length > 0 && writeErrors.every((e) => e.code === DUPLICATE_KEY)) {
      return writeErrors.map((e) => e.index).filter((i) => i >= 0 && i < size);
    }
  }
  if (isDuplicateKey(error) && size === 1) return [0];
  throw error;
}

function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === DUPLICATE_KEY;
}

/** How often one append is planned again after another process took its seqs (WEB_CONCURRENCY). */
const RACE_RETRIES = 20;

class WriterRaceError extends Error {}
