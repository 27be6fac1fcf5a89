/**
 * The blob store port: large step outputs kept out of workflow payloads (core/output-blobs.ts), content
 * addressed by the SHA-256 hex of their text, so storing one twice is storing it once. Adapters:
 * `sqlite/blob-store.ts` (table `job_blobs`), `mongo/blob-store.ts` (collection `job_blobs`); the contract is
 * `test/store/blob-store.contract.ts`.
 */
export interface BlobStore {
  /**
   * Stores each text under its id (the caller's SHA-256 of it); an id already stored keeps its text and is
   * stamped afresh (within BLOB_RESTAMP_MS), so a blob another job stored long ago stays for this job's run too.
   */
  put(blobs: ReadonlyMap<string, string>): Promise<void>;
  /** The stored texts of `ids` that exist (a blob not stored within the retention window is gone). */
  get(ids: readonly string[]): Promise<Map<string, string>>;
  close(): Promise<void>;
}

/**
 * How long a blob is kept after it was last stored, and the clock. A blob is read only while its job runs: the
 * step that follows reads its inputs, and the job's finish resolves every reference into the stored job, which
 * is whole from then on (activities/compute/output-store.ts). So the window is the longest run plus a margin
 * (docs/operations.md "Retention").
 */
export interface BlobRetention {
  /** Blobs last stored longer ago than this are pruned (ms). Default DEFAULT_BLOB_RETENTION_MS. */
  blobRetentionMs?: number;
  /** Now, in ms since the epoch (tests move it). Default Date.now. */
  clock?: () => number;
}

/** 8 days: the longest job run (JOB_RUN_TIMEOUT_SECONDS at most 7 days) plus a day. */
export const DEFAULT_BLOB_RETENTION_MS = 8 * 86_400_000;

/** A blob stored again is restamped only when its stamp is older than this: a dedupe hit rarely rewrites a row. */
export const BLOB_RESTAMP_MS = 3_600_000;

/** How often a store prunes its blobs: the window's tenth, at most hourly. */
export const blobPruneEveryMs = (retentionMs: number): number => Math.min(3_600_000, Math.ceil(retentionMs / 10));

/** The job step whose output a blob is: a worker names it when it uploads one (docs/protocol.md §11.4). */
export interface BlobOwner {
  job_id: string;
  step_id: string;
}

/**
 * Where a step activity keeps its large output fields: the gateway's store itself (which needs no owner), or,
 * on a swarm worker, the gateway over HTTP, which takes a blob only for the step named.
 */
export interface StepBlobSink {
  put(blobs: ReadonlyMap<string, string>, step: BlobOwner): Promise<void>;
}
