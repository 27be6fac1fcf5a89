/**
 * Compute jobs as they are stored and answered (docs/protocol.md §2.3, §3). A job is claimed `running` before
 * any step is dispatched and ends `complete` or `failed`; a finished job never changes again. docs/protocol.md §3 shows
 * only the step status `complete`; Geofabric adds `failed` (the step that stopped the job) and `skipped`
 * (steps never started because an earlier step failed or the budget ran out).
 */
import type { StepType } from './job-plan.js';

export type JobStatus = 'running' | 'complete' | 'failed';
export type StepStatus = 'complete' | 'failed' | 'skipped';

/** docs/protocol.md §2.3 step result, plus who ran it, what it cost and its proof record. */
export interface StepResult {
  id: string;
  type: StepType;
  status: StepStatus;
  output: Record<string, unknown>;
  latency_ms: number;
  /** Worker key, the backbone marker, or the gateway's node key (steps it serves itself). */
  worker_pk: string | null;
  cost: number;
  /** The step's proof record (null when the step did not complete). */
  record_id: string | null;
  /** The relay worker that routed the step to its worker (docs/protocol.md §1.4), when one did. */
  relay_pk?: string;
  /** For a failed or skipped step: the error code and why. */
  error?: { code: string; detail: string };
}

export interface Settlement {
  /** Ledger transaction id; null until settlement on a ledger is built. */
  stellar_tx: string | null;
  total_credits: number;
  /** Step id → credits charged. */
  breakdown: Record<string, number>;
  /** The job's Merkle proof (docs/protocol.md §8), charged once a step completed: total = sum(breakdown) + proof_credits. */
  proof_credits: number;
  /**
   * Relay pk → its fee: RELAY_FEE_SHARE of the steps it routed, a share of those steps' cost (paid out of the
   * worker's earning, not charged on top). Present only when a relay routed a step.
   */
  relay_fees?: Record<string, number>;
}

/** docs/protocol.md §2.3, plus `status` and, for a failed job, `error`. */
export interface ComputeResponse {
  job_id: string;
  status: JobStatus;
  worker_pk: string | null;
  h3_cell: string;
  epoch: number;
  steps: StepResult[];
  settlement: Settlement;
  proof: { job_hash: string; verify_url: string; record_id: string } | null;
  error?: { code: string; detail: string; step_id: string | null };
}

/**
 * The request exactly as the requester signed it (signature included) and the delegation chain gate 3 took
 * from `x-svc-delegation-cert` (root first; null without one): what a job receipt hands a verifier
 * (docs/protocol.md §15).
 */
export interface SignedRequest {
  body: Record<string, unknown>;
  delegation_chain: unknown[] | null;
}

/** What the job store keeps (versioned like every persisted record). */
export interface JobRecord {
  version: 1;
  job_id: string;
  status: JobStatus;
  requester_pk: string;
  h3_cell: string;
  epoch: number;
  step_types: StepType[];
  /** SHA-256 hex of JCS of the signed request body (the same request always maps to the same job). */
  request_hash: string;
  created_at: string;
  updated_at: string;
  /** The answer once finished; null while running. */
  response: ComputeResponse | null;
  /** The signed request; absent on jobs stored before receipts existed. */
  request?: SignedRequest;
}
