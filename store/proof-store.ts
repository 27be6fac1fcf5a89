/**
 * The proof store port (docs/protocol.md §1.8, §2.6): records addressed by (H3 cell, epoch, writer key), sealed
 * per (sealer key, epoch) into RFC 9162 trees whose levels are kept for O(log n) inclusion proofs.
 *
 * Adapters: `sqlite/proof-store.ts` (the embedded default and every worker's local store) and
 * `mongo/proof-store.ts` (the central store); `test/store/proof-store.contract.ts` is what both must do.
 * Like every store, an adapter never owns its database connection (see `types.ts`).
 *
 * Trust: a store keeps what it was given. Readers re-check what they read (`checkRecord`, `checkSeal`,
 * `verifyInclusion`); the store's own checks (unique ids, sealed epochs, record counts) keep it consistent,
 * they do not make its content trustworthy.
 */
import type { KeyPair } from '../core/identity.js';
import type { CollectionType, PayloadType, ProofRecord, Seal } from '../core/proof-types.js';
import type { EpochTree, PackedEpochLeaves } from '../core/seal.js';
import type { SealHead } from '../core/seal-log.js';

/** What a local writer asks to record; the store assigns `seq`, hashes and signs. */
export interface NewRecord {
  id: string;
  h3_cell: string;
  epoch: number;
  collection_type: CollectionType;
  payload_type: PayloadType;
  payload: unknown;
  written_at: string;
  /**
   * Writers whose record under this id stands for this entry (a reading another gateway of the deployment stored
   * first, docs/protocol.md §2.10): it is answered as stored instead of written again under a scoped id. Only
   * keys the caller trusts for this id; any other writer's record is never adopted.
   */
  sharedWith?: readonly string[];
}

export type IngestOutcome =
  | { id: string; status: 'inserted' | 'duplicate' }
  | { id: string; status: 'rejected'; error: 'record_conflict' | 'epoch_sealed'; detail: string };

export interface RecordQuery {
  /** Any resolution; matches records in cells it contains (H3 containment, never string equality). */
  cell?: string;
  /** Inclusive bounds. */
  epochStart?: number;
  epochEnd?: number;
  collection?: CollectionType;
  /** A positive integer; exactly this many records are returned while more match. */
  limit: number;
  /** `nextCursor` of the previous page; opaque to callers. */
  cursor?: string;
}

/** A record's place in its sealed tree: its seal, its leaf index and the audit path (leaf level first). */
export interface SealedPath {
  seal: Seal;
  leafIndex: number;
  path: Uint8Array[];
}

/** A complete subtree of a sealer's seal log (docs/protocol.md §15.4): leaves [index·2^level, (index+1)·2^level). */
export interface SealLogNode {
  level: number;
  index: number;
  hash: Uint8Array;
}

/** A seal leaf as `createSeal` needs it: no payloads, so a million-record epoch fits in memory. */
export type SealLeaf = Pick<ProofRecord, 'seq' | 'record_hash'>;

export interface ProofStore {
  /**
   * Local writer: for each entry assigns the signer's next gapless seq, hashes and signs (signRecord) and
   * inserts; a batch is one atomic write (SQLite: one transaction). Idempotent by id: an id the signer already
   * stored is returned as stored, consuming no seq. A record another writer holds is never returned: the entry
   * is written under `writerScopedId(signer, id)` (record-append.ts), which only the signer can compute, so the
   * returned record's id is the one to cite. An entry for an epoch the signer already sealed, or for an earlier
   * epoch than its latest seal (a seal chain never goes back, so it would never be sealed), throws
   * ServiceError('epoch_sealed'), writing nothing of the batch; an entry that does not make a valid record
   * throws ServiceError('invalid_record'), likewise.
   */
  appendRecords(signer: KeyPair, entries: readonly NewRecord[]): Promise<ProofRecord[]>;
  /**
   * Central ingest of records the caller already verified (checkRecord). Per record: inserted; duplicate
   * (same id and record_hash: a no-op, also once the epoch is sealed, so a retried push is harmless); rejected
   * record_conflict (same id with another hash, or the writer's seq already taken by another id); rejected
   * epoch_sealed (a seal exists for (address.pk, address.epoch)). Seq gaps are allowed here (records arrive in
   * batches); a seal later proves completeness. Ingested records count as unsynced like appended ones.
   */
  ingestRecords(records: readonly ProofRecord[]): Promise<IngestOutcome[]>;
  getRecord(id: string): Promise<ProofRecord | null>;
  /**
   * `cell` matches by H3 containment; epoch range inclusive; stable order (epoch, pk, seq); opaque cursor;
   * `limit` honoured exactly. `nextCursor` is null once the last matching record has been returned.
   */
  queryRecords(query: RecordQuery): Promise<{ records: ProofRecord[]; nextCursor: string | null }>;
  /** The leaves of (pk, epoch)'s seal: that writer's records of that epoch in seq order. */
  recordsOfEpoch(pk: string, epoch: number): Promise<ProofRecord[]>;
  /** `recordsOfEpoch` without payloads, for sealing and auditing large epochs: seq and record_hash only. */
  epochLeaves(pk: string, epoch: number): Promise<SealLeaf[]>;
  /**
   * What sealing reads: the leaf hashes of pk's records of `epoch` in seq order, packed 32 bytes each
   * (store/epoch-leaf-packer.ts), with the first seq. Throws TypeError when the seqs have a gap or a repeat.
   */
  epochLeafHashes(pk: string, epoch: number): Promise<PackedEpochLeaves>;
  /** The lowest epoch among pk's records, null when it has none: where its first seal starts. */
  firstRecordEpoch(pk: string): Promise<number | null>;
  /**
   * Stores a seal with its tree levels (`merkleLevels` of its leaves), kept in pages so a proof reads one
   * small page per level. 'duplicate' when the identical seal (same seal_hash) is stored; a different seal for
   * the same (sealer_pk, epoch) throws ServiceError('seal_mismatch'), and so does a seal whose record_count is
   * not the number of records the store holds for (sealer_pk, epoch). Levels that are not a tree of
   * record_count leaves with the seal's merkle_root throw ServiceError('invalid_seal'). The caller checks the
   * seal itself (signature, root over `epochLeaves`, chain link) before putting it.
   */
  putSeal(seal: Seal, levels: readonly Uint8Array[]): Promise<'inserted' | 'duplicate'>;
  /**
   * What the sealer calls: builds the tree over pk's records of `epoch` in seq order, asks `sign` for the seal
   * of it and stores seal and tree, as putSeal would, in one step. When a seal of (pk, epoch) is stored
   * already, returns it ('exists') without building. The seqs must be gapless (TypeError, as
   * epochLeafHashes); a seal that is not over the built tree throws ServiceError('invalid_seal'); a record
   * that landed in the epoch while the tree was built throws ServiceError('seal_mismatch'), storing nothing
   * (retry). SQLite builds the tree from one read snapshot into a staging table (memory O(log n), no write
   * lock meanwhile) and stores it in a short write transaction (store/sqlite/proof-store.ts).
   */
  sealEpoch(
    pk: string,
    epoch: number,
    sign: (tree: EpochTree) => Seal,
  ): Promise<{ seal: Seal; status: 'inserted' | 'exists' }>;
  getSeal(sealerPk: string, epoch: number): Promise<Seal | null>;
  latestSeal(sealerPk: string): Promise<Seal | null>;
  /** By epoch ascending. */
  sealsOf(sealerPk: string): Promise<Seal[]>;
  /** Every pk with records or seals, ascending (for audit). */
  writers(): Promise<string[]>;
  /**
   * The record's seal and audit path read from stored levels; null when (pk, epoch) is not sealed.
   * leafIndex = the record's position in seq order within its epoch. The record is not looked up: a record
   * that is not in the tree gets a path that does not verify, so callers verify the path against the root.
   */
  sealedPath(record: ProofRecord): Promise<SealedPath | null>;
  /**
   * The seal log of `sealerPk` as far as it is kept (docs/protocol.md §15.4): its first epoch and its size, the
   * number of leaves whose nodes are all stored; null while none is.
   */
  sealLogState(sealerPk: string): Promise<{ firstEpoch: number; size: number } | null>;
  /** The stored nodes among `keys`, by core/seal-log.ts `sealLogNodeKey(level, index)`; absent keys are left out. */
  sealLogNodes(sealerPk: string, keys: readonly { level: number; index: number }[]): Promise<Map<string, Uint8Array>>;
  /**
   * Appends to the log: `nodes` (those its new leaves complete, core/seal-log.ts `sealLogAppend`) and then the
   * head over the new size. Idempotent: nodes and heads are deterministic, so a node or a head (sealer, signer,
   * size) already stored is kept and the call stores nothing twice. A leaf counts in sealLogState only once
   * the nodes it completes are stored.
   */
  appendSealLog(
    sealerPk: string,
    firstEpoch: number,
    nodes: readonly SealLogNode[],
    head: SealHead | null,
  ): Promise<void>;
  /** The stored head of the log of `sealerPk` signed by `signerPk`, of `treeSize` or else the largest. */
  sealHead(sealerPk: string, signerPk: string, treeSize?: number): Promise<SealHead | null>;
  /**
   * Sync bookkeeping of a local store: records and seals not yet acknowledged by the central store, oldest
   * first (records by (pk, seq); seals by (sealer, epoch)); mark only after acknowledgement. Push records
   * before seals: a central store refuses a seal whose records it does not hold yet.
   */
  unsyncedRecords(limit: number): Promise<ProofRecord[]>;
  markRecordsSynced(ids: readonly string[]): Promise<void>;
  unsyncedSeals(limit: number): Promise<Seal[]>;
  markSealsSynced(seals: readonly Pick<Seal, 'sealer_pk' | 'epoch'>[]): Promise<void>;
  /**
   * A local store that lets go of what the central store holds (a worker's: SQLite only, docs/operations.md
   * "Retention"): these seals the central store answered it holds (stored, or the same seal already there), and
   * with each every record of its epoch, which it verified against the seal. Absent: the store never prunes.
   */
  markSealsHeld?(seals: readonly Pick<Seal, 'sealer_pk' | 'epoch'>[]): Promise<void>;
  /**
   * The epochs of `sealerPk` whose records and tree pages this store has pruned or is pruning (records may be
   * left of the latter, each still under the seal), ascending; absent: none ever are. The audit checks what remains.
   */
  prunedEpochs?(sealerPk: string): Promise<number[]>;
  /** Releases what the store holds itself; the database connection stays open for its owner to close. */
  close(): Promise<void>;
}
