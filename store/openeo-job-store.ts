/**
 * The openEO batch job store port (docs/protocol.md §16.11): one document per job, owned by the API key that
 * created it, and the result files of its runs. Adapters: `sqlite/openeo-job-store.ts` (tables `openeo_jobs`,
 * `openeo_job_assets`), `mongo/openeo-job-store.ts` (collections of the same names). Every change is a
 * compare-and-set on the document's `version`, so a cancel and a run finishing at once cannot both win.
 */

/** openEO's batch job states (openEO API 1.2.0, `status`). */
export type OpenEoJobStatus = 'created' | 'queued' | 'running' | 'canceled' | 'finished' | 'error';

export interface OpenEoJobLog {
  id: string;
  level: 'error' | 'warning' | 'info' | 'debug';
  message: string;
  time: string;
  code?: string;
}

/** One result file of a finished run: its proof record and what the record states of it. */
export interface OpenEoJobAsset {
  name: string;
  record_id: string;
  sha256: string;
  bytes: number;
  format: string;
  media_type: string;
  cost: number;
  epoch: number;
  h3_cell: string;
}

export interface OpenEoJob {
  id: string;
  /** The API key id of the creator: only it sees the job. */
  owner: string;
  /** The body of `POST /jobs` as sent (with `requester_pk` and `signature` when it was signed). */
  request: Record<string, unknown>;
  /** Who created the job: the key, and the body's signature when it carried one (api/openeo/signed.ts). */
  authenticated_by: { api_key_id: string; requester_pk?: string; request_signature?: string };
  process_graph_sha256: string;
  title: string | null;
  description: string | null;
  plan: string | null;
  budget: number | null;
  status: OpenEoJobStatus;
  created: string;
  updated: string;
  /** Starts so far; record ids and the workflow id carry it, so a restart never collides with an earlier run. */
  run: number;
  /** The job cell (gate 2's) where the results' records are addressed. */
  h3_cell: string;
  /** The first extent of the graph, [west, south, east, north] in WGS 84: the results Item's footprint. */
  bbox: number[] | null;
  costs: number | null;
  assets: OpenEoJobAsset[];
  logs: OpenEoJobLog[];
  /** Compare-and-set counter: 1 when created, +1 each save. */
  version: number;
}

/**
 * How long a finished (or never started, or canceled) openEO job is kept after its last change. A queued or
 * running job is never pruned; one its owner left alone for the window is deleted with its result files by the
 * store (docs/operations.md "Retention"). Now is the new job's `created`: the clock that stamps jobs judges them.
 */
export interface OpenEoJobRetention {
  /** Jobs not queued or running, last updated longer ago than this, are pruned (ms). Default DEFAULT_JOB_RETENTION_MS. */
  jobRetentionMs?: number;
}

/** The statuses a job is pruned in: every one but those of a run under way. */
export const PRUNABLE_OPENEO_STATUSES: readonly OpenEoJobStatus[] = ['created', 'finished', 'error', 'canceled'];

export interface OpenEoJobStore {
  /**
   * Stores a new job (version 1). An id already stored is a caller bug: RangeError. At most hourly, first deletes
   * a bounded batch of jobs past the retention window (OpenEoJobRetention).
   */
  create(job: OpenEoJob): Promise<void>;
  /** The job; null for an unknown id, a deleted one, or one pruned after the retention window. */
  get(id: string): Promise<OpenEoJob | null>;
  /** The owner's jobs, newest first, at most `limit` (1..100). */
  list(owner: string, limit: number): Promise<OpenEoJob[]>;
  /**
   * Replaces the job if its stored version is still `job.version`; stores it as version + 1 and returns it.
   * null when another save came first (or the job was deleted): re-read and decide again.
   */
  save(job: OpenEoJob): Promise<OpenEoJob | null>;
  /** Removes the job and its files. */
  delete(id: string): Promise<void>;
  putAsset(jobId: string, name: string, bytes: Uint8Array): Promise<void>;
  getAsset(jobId: string, name: string): Promise<Uint8Array | null>;
  close(): Promise<void>;
}
