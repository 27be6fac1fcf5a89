/**
 * How both proof-store adapters stream an epoch's records into the packed leaf level a seal is built over
 * (ProofStore.epochLeafHashes): one 32-byte slot per record and no object per record, so a million-record
 * epoch costs its 32 MB of leaves while it is read. Seqs must follow each other without a gap or a repeat,
 * as a seal asserts first_seq..last_seq (the same refusal as createSeal's). createLeafStreamer feeds a tree
 * builder instead, for a seal in O(log n) memory.
 */
import { HASH_BYTES, writeLeafHashFromHex } from '../core/merkle/tree.js';
import type { MerkleTreeBuilder } from '../core/merkle/tree-builder.js';
import type { EpochTree, PackedEpochLeaves } from '../core/seal.js';

export interface LeafPacker {
  add(seq: number, recordHashHex: string): void;
  finish(): PackedEpochLeaves;
}

/** An epoch's seqs as they are read: each must follow the one before (any seq may come first). */
class SeqRun {
  firstSeq: number | null = null;
  private lastSeq: number | null = null;

  next(seq: number): void {
    const last = this.lastSeq;
    if (last !== null && seq !== last + 1) {
      throw new TypeError(seq === last ? `two records share seq ${seq}` : `seqs ${last + 1}..${seq - 1} are missing`);
    }
    this.firstSeq ??= seq;
    this.lastSeq = seq;
  }
}

/** `expected` sizes the buffer (a count read first); more records than that grow it. */
export function createLeafPacker(expected = 0): LeafPacker {
  let buffer = new Uint8Array(Math.max(expected, 16) * HASH_BYTES);
  let count = 0;
  const seqs = new SeqRun();
  return {
    add(seq, recordHashHex) {
      seqs.next(seq);
      if ((count + 1) * HASH_BYTES > buffer.length) {
        const grown = new Uint8Array(buffer.length * 2);
        grown.set(buffer);
        buffer = grown;
      }
      writeLeafHashFromHex(recordHashHex, buffer, count * HASH_BYTES);
      count++;
    },
    finish() {
      const leaves = count * HASH_BYTES === buffer.length ? buffer : buffer.slice(0, count * HASH_BYTES);
      return { firstSeq: seqs.firstSeq, leaves };
    },
  };
}

export interface LeafStreamer {
  add(seq: number, recordHashHex: string): void;
  /** The tree's facts for signing; the builder has handed out every page by then. */
  finish(): EpochTree;
}

/**
 * The streaming counterpart of createLeafPacker (ProofStore.sealEpoch): the same seq checks, each leaf fed to
 * a tree builder that hands out its pages as they fill, so nothing here grows with the epoch.
 */
export function createLeafStreamer(builder: MerkleTreeBuilder): LeafStreamer {
  const seqs = new SeqRun();
  return {
    add(seq, recordHashHex) {
      seqs.next(seq);
      builder.addRecordHashHex(recordHashHex);
    },
    finish() {
      const count = builder.count;
      return { count, firstSeq: seqs.firstSeq, root: builder.finish() };
    },
  };
}
