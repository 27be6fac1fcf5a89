/**
 * The blob store port: large step outputs kept out of workflow payloads (core/output-blobs.ts), content
 * addressed by the SHA-256 hex of their text, so storing one twice is storing it once. Adapters:
 * `sqlite/blob-store.ts` (table `job_blobs`), `mongo/blob-store.ts` (collection `job_blobs`); the contract is
 * `test/store/blob-store.contract.ts`.
 */
export interface BlobStore {
  /** Stores each text under its id (the caller's SHA-256 of it); an id already stored is left as it is. */
  put(blobs: ReadonlyMap<string, string>): Promise<void>;
  /** The stored texts of `ids` that exist. */
  get(ids: readonly string[]): Promise<Map<string, string>>;
  close(): Promise<void>;
}

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
