/**
 * The shapes of the proof layer (docs/protocol.md §1.8, §2.6): records addressed by (H3 cell, epoch, writer key),
 * sealed per (sealer key, epoch) into RFC 9162 Merkle trees chained seal to seal.
 */

import { IMAGE_OPERATIONS, type ImageOperation } from './imagery-operations.js';

/** docs/protocol.md §2.6 collections and the payload types each may carry. */
export const COLLECTION_PAYLOAD_TYPES = {
  inference: ['hive/inference'],
  tile: ['tile/vector', 'tile/raster'],
  compute_job: ['compute/job'],
  // The protocol names only `imagery/ndvi`; every image_process operation records under its own type.
  imagery: [
    ...IMAGE_OPERATIONS.map((operation) => `imagery/${operation}` as const),
    // An openEO result (docs/protocol.md §16.7): the file's hash, the scenes and byte ranges read, the graph's hash.
    'imagery/openeo_result',
    // A tile of an openEO XYZ service (docs/protocol.md §16.10): the PNG's hash, the scenes and byte ranges read.
    'imagery/openeo_tile',
  ] as readonly (`imagery/${ImageOperation}` | 'imagery/openeo_result' | 'imagery/openeo_tile')[],
  breadcrumb: ['gns/breadcrumb'],
  telemetry: ['iot/telemetry'],
} as const;
export type CollectionType = keyof typeof COLLECTION_PAYLOAD_TYPES;
export type PayloadType = (typeof COLLECTION_PAYLOAD_TYPES)[CollectionType][number];

export interface RecordAddress {
  h3_cell: string;
  epoch: number;
  /** The writer's Ed25519 public key (64 hex). */
  pk: string;
}

/** A record as its writer hashed it: everything but `record_hash` and `signature`. */
export interface UnsignedProofRecord {
  version: 1;
  /** Unique; derived by the writer from what it records (e.g. job id + step id) so retries do not duplicate. */
  id: string;
  address: RecordAddress;
  collection_type: CollectionType;
  payload_type: PayloadType;
  payload: unknown;
  /** The writer's gapless sequence number, 1, 2, 3 … assigned durably at write time. */
  seq: number;
  /** ISO 8601 UTC. */
  written_at: string;
}

export interface ProofRecord extends UnsignedProofRecord {
  /** SHA-256 hex of JCS(UnsignedProofRecord). */
  record_hash: string;
  /** Writer's Ed25519 signature (128 hex) over the UTF-8 of `record_hash`. */
  signature: string;
}

/** The seal of one sealer's epoch: its records, in seq order, are the leaves. */
export interface UnsignedSeal {
  version: 1;
  sealer_pk: string;
  epoch: number;
  record_count: number;
  /** Seq of the first and last record in the epoch; both null for an empty epoch. */
  first_seq: number | null;
  last_seq: number | null;
  /** RFC 9162 Merkle tree head of the record hashes (hex); SHA-256 of the empty string when empty. */
  merkle_root: string;
  /** The sealer's previous seal_hash; 64 zeros before its first seal. */
  prev_epoch_hash: string;
  sealed_at: string;
  /**
   * A custodial seal (docs/protocol.md §12): the central store's node key sealed the epoch of a worker gone for
   * good, `sealer_pk` (whose records and chain it covers). Absent on a writer's own seal. Covered by seal_hash.
   */
  custodian_pk?: string;
}

export interface Seal extends UnsignedSeal {
  /** SHA-256 hex of JCS(UnsignedSeal). */
  seal_hash: string;
  /** Ed25519 signature over the UTF-8 of `seal_hash`: by `custodian_pk` when set, else by `sealer_pk`. */
  signature: string;
}

/** RFC 9162 inclusion proof of one leaf. */
export interface InclusionProof {
  leaf_index: number;
  tree_size: number;
  /** Audit path, hex, leaf level first. */
  hashes: string[];
}

export const GENESIS_PREV_HASH = '0'.repeat(64);
