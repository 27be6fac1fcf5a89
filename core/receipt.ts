/**
 * Job receipts (docs/protocol.md §15): one document per job that anyone checks offline. Pure: no I/O, no
 * clock. The gateway builds it (activities/proof/job-receipt.ts); `verifyReceipt` re-derives every link:
 * request signature → job id → the `compute/job` record's request and job hash → each step's output and record
 * → each record's inclusion in its signed seal → that seal's place in its sealer's log, under a signed head (version
 * 2, core/seal-log.ts) or in the chain from the sealer's first seal (version 1) → the anchor's root.
 */
import { z } from 'zod';
import type { AnchorView } from './anchor-view.js';
import { canonicalJson, CanonicalJsonError } from './canonical-json.js';
import { linkTimeIssue, parseDelegationChain, verifyDelegationChainStructure } from './delegation-cert.js';
import { requestSigningMessage } from './gates/signature.js';
import { isHex } from './hex.js';
import { checkPublicKey, verifySignature } from './identity.js';
import { jobIdFromSignature, outputHash, requestHash } from './job-hash.js';
import type { ComputeResponse, SignedRequest } from './job-record.js';
import { verifyProofBundle } from './proof-bundle.js';
import { checkRecord } from './proof-record.js';
import type { InclusionProof, ProofRecord, Seal } from './proof-types.js';
import { checkSeal, checkSealChain } from './seal.js';
import {
  checkSealHead,
  sealConsistencyProof,
  sealInclusionIssue,
  sealInclusionProof,
  sealLeafHash,
  sealLogLeaves,
  type SealLogNodes,
  type SealLogSource,
  signSealHead,
  verifySealConsistency,
  type SealHead,
} from './seal-log.js';
import { bytesToHex, hexToBytes } from './hex.js';
import { sha256Hex } from './hash.js';
import { cellCover, isCell } from './h3-cell.js';
import { fuseReadings, type FusionReading } from './sensor-fusion.js';
import { provenReadingOf, trustedWritersOf } from './telemetry.js';

/** The version a node builds (docs/protocol.md §15.4); version 1 (full seal chains) still verifies. */
export const RECEIPT_VERSION = 2;
export const RECEIPT_VERSIONS: readonly number[] = [1, 2];

/** One record of the job, with what proves it: its seal, its audit path and its epoch's anchor. */
export interface ReceiptRecord {
  /**
   * `job`: the `compute/job` record the answer names; `step`: a step's record; `input`: a signed reading a
   * `sensor_fusion` step fused (its `step_id`), one per id of the step's `record_ids` (docs/protocol.md §2.10).
   */
  role: 'job' | 'step' | 'input';
  step_id: string | null;
  record_id: string;
  /** Null while the record has not reached this store (a worker's record not synced yet). */
  record: ProofRecord | null;
  /** Null while the record's epoch is not sealed. */
  seal: Seal | null;
  proof: InclusionProof | null;
  anchor: AnchorView | null;
  /** Version 2: the inclusion of `seal` in its sealer's head in `seal_heads`; null while there is no seal. */
  seal_proof?: InclusionProof | null;
}

/** Version 2, one per sealer of a record: a signed head of its seal log, and the anchored head it extends. */
export interface SealHeadEntry {
  head: SealHead;
  /** The head ending at the latest anchored seal of this sealer among the records, with a consistency proof. */
  anchored: { head: SealHead; consistency: string[] } | null;
}

export interface JobReceipt {
  receipt_version: 1 | 2;
  /** `complete`: every record is there and sealed; `pending`: fetch it again later. */
  status: 'complete' | 'pending';
  job_id: string;
  /** Why the receipt is pending; empty when complete. */
  pending: string[];
  request: SignedRequest;
  /** The job's answer as stored (docs/protocol.md §2.3); null while the job runs. */
  job: ComputeResponse | null;
  records: ReceiptRecord[];
  /** Version 1, per sealer of a record: its seals from its first up to the latest epoch a record needs, by epoch. */
  seal_chains?: { sealer_pk: string; seals: Seal[] }[];
  /** Version 2, per sealer of a record: a signed head of its seal log (docs/protocol.md §15.4). */
  seal_heads?: SealHeadEntry[];
}

/**
 * Version 2's `seal_heads`, and each entry's `seal_proof` set (docs/protocol.md §15.4), from each sealer's seals as a
 * store holds them, signed with `secretKey` (the node's): per sealer of a record, the head over its log from its
 * first seal up to its first gap, and, when a record of it is anchored, the head ending at the latest anchored epoch
 * with the consistency proof between them. An entry whose seal is not the log's seal of its epoch gets a null proof
 * (and fails verification): the caller reports it pending.
 */
export function sealHeadsFor(
  records: ReceiptRecord[],
  logs: ReadonlyMap<string, readonly Seal[] | StoredSealLog>,
  secretKey: string,
): SealHeadEntry[] {
  const heads: SealHeadEntry[] = [];
  const sealers = [...new Set(records.flatMap((r) => (r.seal === null ? [] : [r.seal.sealer_pk])))].sort();
  for (const record of records) record.seal_proof = null;
  for (const sealer of sealers) {
    const log = logOf(logs.get(sealer) ?? []);
    if (log === null) continue;
    const { firstEpoch, leaves, size } = log;
    const head = log.head ?? signSealHead(secretKey, { sealerPk: sealer, firstEpoch, leaves, size });
    let latestAnchor = -1;
    for (const record of records) {
      if (record.seal?.sealer_pk !== sealer) continue;
      const index = record.seal.epoch - firstEpoch;
      if (index < 0 || index >= size) continue;
      if (bytesToHex(sealLeafHash(record.seal.seal_hash)) !== bytesToHex(leafAt(leaves, index))) continue;
      record.seal_proof = sealInclusionProof(leaves, index, size);
      if (record.anchor !== null) latestAnchor = Math.max(latestAnchor, record.anchor.epoch);
    }
    const anchoredSize = latestAnchor - firstEpoch + 1;
    heads.push({
      head,
      anchored:
        anchoredSize >= 1 && anchoredSize <= size
          ? {
              head: signSealHead(secretKey, { sealerPk: sealer, firstEpoch, leaves, size }, anchoredSize),
              consistency: sealConsistencyProof(leaves, anchoredSize, size),
            }
          : null,
    });
  }
  return heads;
}

/**
 * A sealer's log as a store keeps it (docs/protocol.md §15.4): its first epoch, its size, the stored nodes a
 * receipt's proofs read, and the stored head of that size when there is one.
 */
export interface StoredSealLog {
  firstEpoch: number;
  size: number;
  nodes: SealLogNodes;
  head?: SealHead | undefined;
}

function logOf(
  log: readonly Seal[] | StoredSealLog,
): { firstEpoch: number; size: number; leaves: SealLogSource; head?: SealHead | undefined } | null {
  if (!Array.isArray(log)) {
    const stored = log as StoredSealLog;
    return stored.size < 1 ? null : { ...stored, leaves: stored.nodes };
  }
  const sorted = [...(log as readonly Seal[])].sort((a, b) => a.epoch - b.epoch);
  const seals: Seal[] = [];
  for (const seal of sorted) if (seal.epoch === (sorted[0] as Seal).epoch + seals.length) seals.push(seal);
  if (seals.length === 0) return null;
  const { firstEpoch, leaves } = sealLogLeaves(seals);
  return { firstEpoch, size: leaves.length, leaves };
}

const leafAt = (src: SealLogSource, index: number): Uint8Array =>
  Array.isArray(src) ? (src[index] as Uint8Array) : (src as SealLogNodes).node(0, index);

export type ReceiptCheckName =
  | 'receipt_format'
  | 'request_signature'
  | 'delegation_chain'
  | 'job_id'
  | 'job_record'
  | 'job_hash'
  | 'step_outputs'
  | 'job_answer'
  | 'step_records'
  | 'fusion_inputs'
  | 'inclusion'
  | 'seal_chain'
  | 'anchor'
  | 'sealer'
  | 'sealed';

/** Every check, in the order verifyReceipt runs them (a verdict lists them all). */
export const RECEIPT_CHECKS: readonly ReceiptCheckName[] = [
  'receipt_format',
  'request_signature',
  'delegation_chain',
  'job_id',
  'job_record',
  'job_hash',
  'step_outputs',
  'job_answer',
  'step_records',
  'fusion_inputs',
  'inclusion',
  'seal_chain',
  'anchor',
  'sealer',
  'sealed',
];

export interface ReceiptCheck {
  name: ReceiptCheckName;
  ok: boolean;
  detail: string;
}

export interface ReceiptVerdict {
  ok: boolean;
  checks: ReceiptCheck[];
  /** The first check that failed. */
  failedCheck?: ReceiptCheckName;
}

export interface VerifyReceiptOptions {
  /** The node's key: it must have written the `compute/job` record and sealed its epoch. */
  sealerPk?: string;
  /** Accept a pending receipt: what is there must verify, what is missing is not a failure. */
  allowPending?: boolean;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A check's outcome; `pending` marks something missing that a later fetch may bring. */
interface Outcome {
  ok: boolean;
  detail: string;
}
const ok = (detail: string): Outcome => ({ ok: true, detail });
const bad = (detail: string): Outcome => ({ ok: false, detail });

/** job_hash recomputed from the `compute/job` payload's steps (docs/protocol.md §10.4). */
function jobHashOfPayload(requestHashHex: string, steps: readonly Obj[]): string {
  const outputs = steps.map((s) => ({ id: s.id, status: s.status, output_hash: s.output_hash ?? null }));
  return sha256Hex(canonicalJson({ request_hash: requestHashHex, outputs }));
}

/**
 * Checks a receipt with nothing but its own content (and, optionally, the node key to pin). Every check runs and
 * is reported; `failedCheck` names the first that failed. Malformed input fails `receipt_format`, never throws.
 */
export function verifyReceipt(value: unknown, options: VerifyReceiptOptions = {}): ReceiptVerdict {
  const checks: ReceiptCheck[] = [];
  const add = (name: ReceiptCheckName, outcome: Outcome | (() => Outcome)) =>
    checks.push({ name, ...guarded(outcome) });
  const format = receiptFormat(value);
  add('receipt_format', format);
  if (!format.ok) return verdict(checks);
  const receipt = value as JobReceipt;
  const allowPending = options.allowPending === true;
  const body = receipt.request.body;
  const jobEntry = receipt.records.find((r) => r.role === 'job');
  const payload = isObj(jobEntry?.record?.payload) ? (jobEntry.record.payload as Obj) : null;

  add('request_signature', () => requestSignature(body));
  add('delegation_chain', () =>
    delegationChain(receipt.request.delegation_chain, body.requester_pk, jobTime(body, jobEntry)),
  );
  add('job_id', () => jobIdCheck(receipt, body));
  add('job_record', () => jobRecordCheck(receipt, jobEntry));
  add('job_hash', () => jobHashCheck(receipt, body, payload));
  add('step_outputs', () => stepOutputs(receipt, body, payload));
  add('job_answer', () => jobAnswer(receipt, jobEntry, payload));
  add('step_records', () => stepRecords(receipt, payload, allowPending));
  add('fusion_inputs', () => fusionInputs(receipt, jobEntry, allowPending));
  add('inclusion', () => inclusion(receipt, jobEntry, options.sealerPk));
  add('seal_chain', () =>
    receipt.receipt_version === 1 ? sealChains(receipt) : sealLogs(receipt, jobEntry, options.sealerPk),
  );
  add('anchor', () => anchors(receipt, jobEntry, options.sealerPk));
  add('sealer', () => sealerCheck(jobEntry, options.sealerPk));
  add('sealed', () => sealed(receipt, allowPending));
  return verdict(checks);
}

/** A check that trips over a malformed part (a step that is not an object …) fails; it never throws. */
function guarded(outcome: Outcome | (() => Outcome)): Outcome {
  if (typeof outcome !== 'function') return outcome;
  try {
    return outcome();
  } catch (error) {
    return bad(`malformed receipt: ${(error as Error).message}`);
  }
}

function verdict(checks: ReceiptCheck[]): ReceiptVerdict {
  const failed = checks.find((c) => !c.ok);
  return failed ? { ok: false, checks, failedCheck: failed.name } : { ok: true, checks };
}

/** The fields of a `records` entry that hold an object, or null until there is one (docs/protocol.md §15.1). */
const ENTRY_OBJECTS = ['record', 'seal', 'proof', 'anchor'] as const;

function receiptFormat(value: unknown): Outcome {
  if (!isObj(value)) return bad('a receipt is a JSON object');
  const version = value.receipt_version;
  if (version !== 1 && version !== 2) return bad(`receipt_version ${JSON.stringify(version)} is not 1 or 2`);
  if (value.status !== 'complete' && value.status !== 'pending') return bad('status must be complete or pending');
  if (typeof value.job_id !== 'string') return bad('job_id must be a string');
  if (!Array.isArray(value.pending) || !value.pending.every((p) => typeof p === 'string')) {
    return bad('pending must be an array of strings');
  }
  const request = value.request;
  if (!isObj(request) || !isObj(request.body)) return bad('request.body must be an object');
  if (request.delegation_chain !== null && !Array.isArray(request.delegation_chain)) {
    return bad('request.delegation_chain must be an array or null');
  }
  if (value.job !== null && (!isObj(value.job) || !Array.isArray(value.job.steps) || !value.job.steps.every(isObj))) {
    return bad('job must be the job answer (with steps, each an object) or null');
  }
  if (!Array.isArray(value.records)) return bad('records must be an array');
  for (const [i, r] of value.records.entries()) {
    if (!isObj(r) || !['job', 'step', 'input'].includes(r.role as string) || typeof r.record_id !== 'string') {
      return bad(`records[${i}] needs role (job, step or input) and record_id`);
    }
    // Every field present (docs/protocol.md §15.1): an absent `seal` is not a null one, and no verifier may guess.
    if (r.step_id !== null && typeof r.step_id !== 'string')
      return bad(`records[${i}].step_id must be a string or null`);
    const field = (version === 2 ? [...ENTRY_OBJECTS, 'seal_proof'] : ENTRY_OBJECTS).find(
      (k) => r[k] !== null && !isObj(r[k]),
    );
    if (field !== undefined) return bad(`records[${i}].${field} must be an object or null`);
  }
  if (value.records.filter((r) => (r as Obj).role === 'job').length > 1) return bad('more than one job record');
  if (version === 1) {
    if (!Array.isArray(value.seal_chains)) return bad('seal_chains must be an array');
    for (const [i, c] of value.seal_chains.entries()) {
      if (!isObj(c) || typeof c.sealer_pk !== 'string' || !Array.isArray(c.seals)) {
        return bad(`seal_chains[${i}] needs sealer_pk and seals`);
      }
    }
  } else {
    if ('seal_chains' in value) return bad('a version 2 receipt has seal_heads, not seal_chains');
    if (!Array.isArray(value.seal_heads)) return bad('seal_heads must be an array');
    for (const [i, h] of value.seal_heads.entries()) {
      const anchored = isObj(h) ? h.anchored : undefined;
      if (!isObj(h) || !isObj(h.head) || (anchored !== null && !isObj(anchored))) {
        return bad(`seal_heads[${i}] needs head (an object) and anchored (an object or null)`);
      }
      if (isObj(anchored) && (!isObj(anchored.head) || !Array.isArray(anchored.consistency))) {
        return bad(`seal_heads[${i}].anchored needs head and consistency`);
      }
    }
  }
  return ok(`receipt version ${version}, ${value.records.length} records`);
}

function requestSignature(body: Obj): Outcome {
  const key = checkPublicKey(body.requester_pk);
  if (!key.ok) return bad(`requester_pk: ${key.detail}`);
  if (!isHex(body.signature, 64)) return bad('signature must be 128 lowercase hex');
  let message: string;
  try {
    message = requestSigningMessage(body);
  } catch (error) {
    if (error instanceof CanonicalJsonError) return bad(error.message);
    throw error;
  }
  return verifySignature(key.value, message, body.signature)
    ? ok(`signed by requester ${key.value}`)
    : bad('the signature does not match the canonical request');
}

/**
 * Tolerance around the job's time when judging a certificate's window: the gate accepts a `created_at` up to
 * 5 minutes from its clock (docs/protocol.md §10.3), so a chain valid when the gate checked it is valid here.
 */
export const JOB_TIME_SKEW_MS = 5 * 60_000;

/**
 * The job's time (docs/protocol.md §15.2): the request's signed `created_at` when it has one, else the
 * `written_at` of the node-signed `compute/job` record; null while neither is known (a pending receipt).
 */
export function jobTime(body: Obj, entry: ReceiptRecord | undefined): { at: number; source: string } | null {
  const created = timestampMs(body.created_at);
  if (Number.isFinite(created)) return { at: created, source: `the request's created_at ${String(body.created_at)}` };
  const written = entry?.record?.written_at;
  const writtenMs = timestampMs(written);
  if (Number.isFinite(writtenMs)) return { at: writtenMs, source: `the job record's written_at ${String(written)}` };
  return null;
}

const TIMESTAMP = z.iso.datetime({ offset: true });

/**
 * The milliseconds of an RFC 3339 timestamp with a zone (a certificate's form, docs/protocol.md §10.5), else NaN.
 * Date.parse alone also reads other forms, some in the verifier's local time zone: a receipt's verdict must not
 * depend on where it is checked, and every verifier must read a time the same way.
 */
export function timestampMs(value: unknown): number {
  return typeof value === 'string' && TIMESTAMP.safeParse(value).success ? Date.parse(value) : NaN;
}

function delegationChain(
  chain: unknown[] | null,
  requesterPk: unknown,
  time: { at: number; source: string } | null,
): Outcome {
  if (chain === null) return ok('no delegation: the requester acts as its own principal');
  const parsed = parseDelegationChain(chain);
  if (!parsed.ok) return bad(parsed.detail);
  const grant = verifyDelegationChainStructure(parsed.value);
  if (!grant.ok) return bad(grant.detail);
  if (grant.value.agent_pk !== requesterPk) {
    return bad(`the chain ends at ${grant.value.agent_pk}, not the requester ${String(requesterPk)}`);
  }
  const links = `${grant.value.chain_depth} link(s) from human ${grant.value.human_principal_pk} to the requester`;
  if (time === null) return ok(`${links}; pending: the job's time is not known yet`);
  for (const [i, link] of parsed.value.entries()) {
    const issue = linkTimeIssue(link, i, time.at, JOB_TIME_SKEW_MS);
    if (issue !== undefined) return bad(`${issue}, not valid at the job's time (${time.source})`);
  }
  return ok(`${links}, valid at the job's time (${time.source})`);
}

function jobIdCheck(receipt: JobReceipt, body: Obj): Outcome {
  if (!isHex(body.signature, 64)) return bad('the request has no signature to derive the job id from');
  const derived = jobIdFromSignature(body.signature);
  if (receipt.job_id !== derived) return bad(`job_id ${receipt.job_id} is not ${derived}, the signature's`);
  if (receipt.job !== null && receipt.job.job_id !== derived) return bad(`the answer is of job ${receipt.job.job_id}`);
  return ok(derived);
}

function jobRecordCheck(receipt: JobReceipt, entry: ReceiptRecord | undefined): Outcome {
  if (receipt.job === null)
    return receipt.status === 'pending' ? ok('pending: the job is still running') : bad('no job answer');
  const named = receipt.job.proof?.record_id;
  if (named === undefined) return bad('the answer names no compute/job record');
  if (entry === undefined) return bad(`no job record in the receipt (the answer names ${named})`);
  if (entry.record_id !== named) return bad(`the job record is ${entry.record_id}, the answer names ${named}`);
  if (entry.step_id !== null) return bad("the job record's entry names a step (its step_id must be null)");
  if (entry.record === null) return ok(`pending: record ${named} is not in the store yet`);
  const checked = checkRecord(entry.record);
  if (!checked.ok) return bad(`record ${named}: ${checked.detail}`);
  if (checked.value.id !== named) return bad(`the record is ${checked.value.id}, not ${named}`);
  if (checked.value.payload_type !== 'compute/job') return bad(`record ${named} is ${checked.value.payload_type}`);
  const payload = checked.value.payload as Obj;
  if (payload.job_id !== receipt.job_id) return bad(`record ${named} is of job ${String(payload.job_id)}`);
  const nodeKeys = nodeKeysOf(payload, checked.value.address.pk);
  if (nodeKeys.issue !== undefined) return bad(`record ${named}: ${nodeKeys.issue}`);
  return ok(`${named} written by ${checked.value.address.pk}`);
}

function jobHashCheck(receipt: JobReceipt, body: Obj, payload: Obj | null): Outcome {
  if (receipt.job === null || payload === null) return ok('pending: no job record yet');
  let request: string;
  try {
    request = requestHash(body);
  } catch (error) {
    if (error instanceof CanonicalJsonError) return bad(error.message);
    throw error;
  }
  if (payload.request_hash !== request) return bad(`the record's request_hash is not the request's ${request}`);
  if (payload.requester_pk !== body.requester_pk) return bad("the record's requester_pk is not the request's");
  if (!Array.isArray(payload.steps) || !payload.steps.every(isObj)) return bad('the record lists no steps');
  const recomputed = jobHashOfPayload(request, payload.steps as Obj[]);
  if (payload.job_hash !== recomputed) return bad(`the record's job_hash is not the recomputed ${recomputed}`);
  if (receipt.job.proof?.job_hash !== recomputed)
    return bad(`the answer's job_hash is not the recomputed ${recomputed}`);
  return ok(recomputed);
}

function stepOutputs(receipt: JobReceipt, body: Obj, payload: Obj | null): Outcome {
  if (receipt.job === null || payload === null || !Array.isArray(payload.steps))
    return ok('pending: no job record yet');
  const requested = Array.isArray(body.steps) ? body.steps.map((s) => (isObj(s) ? s.id : undefined)) : [];
  const recorded = payload.steps as Obj[];
  const answered = receipt.job.steps;
  if (recorded.length !== requested.length || answered.length !== requested.length) {
    return bad(`${requested.length} steps requested, ${recorded.length} recorded, ${answered.length} answered`);
  }
  for (const [i, step] of answered.entries()) {
    const record = recorded[i] as Obj;
    if (step.id !== requested[i] || record.id !== requested[i]) {
      return bad(
        `step ${i} is ${String(record.id)} in the record, ${step.id} in the answer, ${String(requested[i])} requested`,
      );
    }
    if (step.status !== record.status)
      return bad(`step ${step.id}: status ${step.status}, recorded ${String(record.status)}`);
    if (step.record_id !== record.record_id)
      return bad(`step ${step.id}: the answer and the record name other records`);
    const hash = step.status === 'complete' ? outputHash(step.output) : null;
    if (hash !== record.output_hash)
      return bad(`step ${step.id}: the output does not hash to the recorded output_hash`);
  }
  return ok(`${answered.length} step outputs match their recorded hashes`);
}

/** The fields a job answer and its steps may carry (docs/protocol.md §2.3): any other is bound by nothing. */
const ANSWER_FIELDS = ['job_id', 'status', 'worker_pk', 'h3_cell', 'epoch', 'steps', 'settlement', 'proof', 'error'];
const STEP_FIELDS = [
  'id',
  'type',
  'status',
  'output',
  'latency_ms',
  'worker_pk',
  'cost',
  'record_id',
  'relay_pk',
  'error',
];
const PROOF_FIELDS = ['job_hash', 'verify_url', 'record_id'];

/** Same JSON value, an absent field reading as null (the answer omits `error` and `relay_pk` when there is none). */
const sameValue = (shown: unknown, recorded: unknown): boolean =>
  canonicalJson(shown ?? null) === canonicalJson(recorded ?? null);

/**
 * Every field of the answer a receipt shows is bound by the signed `compute/job` record (docs/protocol.md §15.2):
 * what `step_outputs` and `job_hash` do not compare (the job's status, cell, epoch, worker, settlement, error and
 * proof link; each step's type, worker, relay, cost, latency and error) equals the record's, and no other field is
 * there. A version-1 record holds no epoch, relay or step error: those are reported unbound, not failed.
 */
function jobAnswer(receipt: JobReceipt, entry: ReceiptRecord | undefined, payload: Obj | null): Outcome {
  if (receipt.job === null || payload === null || entry?.record == null || !Array.isArray(payload.steps)) {
    return ok('pending: no job record yet');
  }
  const job = receipt.job as unknown as Obj;
  const version = payload.version;
  if (version !== 1 && version !== 2) return bad(`compute/job payload version ${String(version)} is not 1 or 2`);
  const extra = (value: Obj, allowed: readonly string[]) => Object.keys(value).find((k) => !allowed.includes(k));
  const unknownField = extra(job, ANSWER_FIELDS);
  if (unknownField !== undefined) return bad(`the answer's field ${unknownField} is bound by nothing`);
  if (!isObj(job.proof)) return bad('the answer has no proof');
  const proofField = extra(job.proof, PROOF_FIELDS);
  if (proofField !== undefined) return bad(`the answer's proof.${proofField} is bound by nothing`);
  const link = `/store/proof/${encodeURIComponent(entry.record_id)}`;
  if (typeof job.proof.verify_url !== 'string' || !job.proof.verify_url.endsWith(link)) {
    return bad(`proof.verify_url does not name ${link}`);
  }
  const recorded = payload.steps as Obj[];
  const lastDone = [...recorded].reverse().find((s) => s.status === 'complete');
  const fields: [string, unknown, unknown][] = [
    ['status', job.status, payload.status],
    ['h3_cell', job.h3_cell, version === 2 ? payload.h3_cell : entry.record.address.h3_cell],
    ['worker_pk', job.worker_pk, version === 2 ? payload.worker_pk : (lastDone?.worker_pk ?? null)],
    ['settlement', job.settlement, payload.settlement],
    ['error', job.error, payload.error],
  ];
  if (version === 2) fields.push(['epoch', job.epoch, payload.epoch]);
  const steps = job.steps as unknown[];
  for (const [i, value] of steps.entries()) {
    if (!isObj(value)) return bad(`steps[${i}] is not an object`);
    const stepField = extra(value, STEP_FIELDS);
    if (stepField !== undefined) return bad(`steps[${i}].${stepField} is bound by nothing`);
    const record = recorded[i];
    if (!isObj(record)) return bad(`the record lists no step ${i}`);
    for (const key of ['type', 'worker_pk', 'cost', 'latency_ms']) {
      fields.push([`steps[${i}].${key}`, value[key], record[key]]);
    }
    if (version === 2) {
      fields.push([`steps[${i}].relay_pk`, value.relay_pk, record.relay_pk]);
      fields.push([`steps[${i}].error`, value.error, record.error]);
    }
  }
  for (const [name, shown, bound] of fields) {
    if (!sameValue(shown, bound)) return bad(`${name} is not the signed record's`);
  }
  return version === 2
    ? ok(`every field of the answer is the signed record's`)
    : ok("the answer is the signed record's; a version-1 record binds no epoch, relay or step error");
}

function stepRecords(receipt: JobReceipt, payload: Obj | null, allowPending: boolean): Outcome {
  if (payload === null || !Array.isArray(payload.steps)) return ok('pending: no job record yet');
  const named = (payload.steps as Obj[]).filter((s) => typeof s.record_id === 'string');
  const entries = receipt.records.filter((r) => r.role === 'step');
  if (entries.length !== named.length)
    return bad(`the job names ${named.length} step records, the receipt holds ${entries.length}`);
  let missing = 0;
  for (const step of named) {
    const entry = entries.find((e) => e.step_id === step.id);
    if (entry === undefined) return bad(`no record for step ${String(step.id)}`);
    if (entry.record_id !== step.record_id)
      return bad(`step ${String(step.id)}: ${entry.record_id} is not the named ${String(step.record_id)}`);
    if (entry.record === null) {
      missing++;
      continue;
    }
    const checked = checkRecord(entry.record);
    if (!checked.ok) return bad(`step ${String(step.id)} record: ${checked.detail}`);
    if (checked.value.id !== step.record_id) return bad(`step ${String(step.id)}: the record is ${checked.value.id}`);
  }
  if (missing > 0 && !allowPending && receipt.status !== 'pending') {
    return bad(`${missing} step record(s) missing from a receipt marked complete`);
  }
  return ok(`${named.length - missing} step record(s) verified${missing > 0 ? `, ${missing} pending` : ''}`);
}

/**
 * Each complete `sensor_fusion` step's inputs (docs/protocol.md §2.10): the receipt holds every record its output
 * names, in order, each once; each is a reading that counts as evidence (core/telemetry.ts provenReadingOf: signed
 * by its device, written by one of the output's `trusted_writers`, or without them by the node that wrote the
 * job's `compute/job` record, plausible) of the step's quantity,
 * in its cells and window, no two of one device, quantity and instant; and the fusion recomputed from them gives
 * the output's numbers and Merkle root. (Inclusion in sealed epochs is the `inclusion` check's, as for every
 * record.) It cannot prove that no other reading existed.
 */
function fusionInputs(receipt: JobReceipt, jobEntry: ReceiptRecord | undefined, allowPending: boolean): Outcome {
  const fusions = (receipt.job?.steps ?? []).filter((s) => s.type === 'sensor_fusion' && s.status === 'complete');
  const named = new Set(fusions.map((s) => s.id));
  const stray = receipt.records.find((r) => r.role === 'input' && !named.has(r.step_id ?? ''));
  if (stray) return bad(`input ${stray.record_id} belongs to no complete sensor_fusion step`);
  const writer = isObj(jobEntry?.record?.address) ? jobEntry.record.address.pk : undefined;
  let verified = 0;
  let missing = 0;
  for (const step of fusions) {
    const out = step.output as Obj;
    const ids = out.record_ids;
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === 'string')) return bad(`step ${step.id}: no record_ids`);
    if (new Set(ids).size !== ids.length) return bad(`step ${step.id}: an input is named twice`);
    const entries = receipt.records.filter((r) => r.role === 'input' && r.step_id === step.id);
    if (canonicalJson(entries.map((e) => e.record_id)) !== canonicalJson(ids)) {
      return bad(`step ${step.id}: the receipt's inputs are not the ${ids.length} records the output names`);
    }
    // The writers the fusion trusted, as its output names them (bound by the job record: the job-record writer's
    // statement, docs/protocol.md §2.10); an output without them (older) trusts the job-record writer alone.
    const trusted = trustedWritersOf(out);
    if (trusted.issue !== undefined) return bad(`step ${step.id}: ${trusted.issue}`);
    const window = out.window as Obj;
    const from = timestampMs(window?.from);
    const to = timestampMs(window?.to);
    const cells: unknown[] = Array.isArray(out.cells) ? out.cells : [];
    if (!cells.every(isCell)) return bad(`step ${step.id}: cells must be H3 cells`);
    const inCells = cellCover(cells as string[]);
    const readings: FusionReading[] = [];
    const instants = new Set<string>();
    for (const entry of entries) {
      if (entry.record === null) {
        missing++;
        continue;
      }
      const checked = checkRecord(entry.record);
      if (!checked.ok) return bad(`input ${entry.record_id}: ${checked.detail}`);
      // Pending until the job record is there: it names (or binds the output naming) who may have written them.
      if (typeof writer !== 'string') {
        missing++;
        continue;
      }
      const proven = provenReadingOf(checked.value, trusted.writers ?? [writer]);
      if (!proven.ok) return bad(`input ${proven.detail}`);
      const reading = proven.value;
      const at = Date.parse(reading.observed_at);
      if (reading.quantity !== out.quantity || !(at >= from && at < to) || !inCells(checked.value.address.h3_cell)) {
        return bad(`input ${entry.record_id} is not a ${String(out.quantity)} reading of the step's cells and window`);
      }
      const instant = canonicalJson([reading.device_pk, reading.quantity, reading.observed_at]);
      if (instants.has(instant)) return bad(`input ${entry.record_id}: a second reading of its device and instant`);
      instants.add(instant);
      readings.push({
        device_pk: reading.device_pk,
        principal_pk: reading.principal_pk,
        value: reading.value,
        record_id: entry.record_id,
        record_hash: checked.value.record_hash,
      });
    }
    if (readings.length < entries.length) continue;
    const fused = fuseReadings(readings);
    for (const key of FUSION_RECOMPUTED) {
      if (fused[key] !== out[key]) return bad(`step ${step.id}: ${key} recomputed from the inputs is ${fused[key]}`);
    }
    verified++;
  }
  if (missing > 0 && !allowPending && receipt.status !== 'pending') {
    return bad(`${missing} fusion input(s) missing from a receipt marked complete`);
  }
  if (fusions.length === 0) return ok('no sensor_fusion step');
  return ok(
    `${verified} fusion step(s) recomputed from their signed inputs${missing > 0 ? `, ${missing} pending` : ''}`,
  );
}

/** The output fields a verifier recomputes from a fusion's inputs and compares. */
export const FUSION_RECOMPUTED = [
  'value',
  'mean',
  'stderr',
  'voter_count',
  'device_count',
  'reading_count',
  'merkle_root',
] as const;

/**
 * The node keys a job record's writer vouches for (docs/protocol.md §15.4): its payload's `node_keys` (the
 * deployment's gateways sharing one store, ascending and distinct, the writer among them), or the writer alone
 * when the payload names none. A malformed list is an issue (the `job_record` check fails on it).
 */
export function nodeKeysOf(payload: unknown, writer: unknown): { keys: string[]; issue?: string } {
  if (typeof writer !== 'string') return { keys: [] };
  const named = isObj(payload) ? payload.node_keys : undefined;
  if (named === undefined) return { keys: [writer] };
  const wellFormed =
    Array.isArray(named) &&
    named.every((pk, i) => isHex(pk, 32) && (i === 0 || (named[i - 1] as string) < (pk as string))) &&
    named.includes(writer);
  return wellFormed
    ? { keys: named as string[] }
    : { keys: [writer], issue: 'node_keys must be ascending distinct node keys naming the writer' };
}

/** Who the receipt's job record names: its writer and the node keys it vouches for (nodeKeysOf). */
interface NodeTrust {
  writer: unknown;
  keys: readonly string[];
}

function trustOf(jobEntry: ReceiptRecord | undefined): NodeTrust {
  const writer = isObj(jobEntry?.record?.address) ? jobEntry.record.address.pk : undefined;
  return { writer, keys: nodeKeysOf(jobEntry?.record?.payload, writer).keys };
}

/**
 * Why a custodial seal's custodian is not trusted (docs/protocol.md §12.3): only the node may seal a gone worker's
 * epoch, and the receipt names the node as the writer of its `compute/job` record (and the pinned key, if any).
 * Any key can sign a seal naming itself custodian, so a valid signature alone proves nothing.
 */
export function custodianIssue(custodian: string, trust: NodeTrust, sealerPk: string | undefined): string | undefined {
  // A peer gateway of the deployment may keep the log: the job record's writer names it in `node_keys`.
  const vouched = trust.keys.includes(custodian);
  if (sealerPk !== undefined && custodian !== sealerPk && !(trust.writer === sealerPk && vouched)) {
    return `custodial seal by ${custodian}, not by the pinned node ${sealerPk} or one of its node_keys`;
  }
  if (typeof trust.writer !== 'string') return `custodial seal by ${custodian}, but no job record names the node`;
  if (custodian !== trust.writer && !vouched) {
    return `custodial seal by ${custodian}, not by the node ${trust.writer} that wrote the job record or one of its node_keys`;
  }
  return undefined;
}

function inclusion(receipt: JobReceipt, jobEntry: ReceiptRecord | undefined, sealerPk: string | undefined): Outcome {
  let proven = 0;
  // Custodial seals (docs/protocol.md §12) verify like a writer's own when the node signed them.
  const custodians = new Set<string>();
  let custodial = 0;
  const trust = trustOf(jobEntry);
  for (const entry of receipt.records) {
    if (entry.record === null || entry.seal === null) continue;
    const result = verifyProofBundle(entry, entry.record_id);
    if (!result.verified) return bad(`${entry.record_id}: ${result.problems.join('; ')}`);
    proven++;
    if (result.seal_kind === 'custodial') {
      const issue = custodianIssue(result.sealed_by!, trust, sealerPk);
      if (issue !== undefined) return bad(`${entry.record_id}: ${issue}`);
      custodial++;
      custodians.add(result.sealed_by!);
    }
  }
  const unsealed = receipt.records.length - proven;
  const byCustodian = custodial > 0 ? ` (${custodial} under custodial seals by ${[...custodians].join(', ')})` : '';
  return ok(
    `${proven} record(s) included in their sealed epochs${byCustodian}${unsealed > 0 ? `, ${unsealed} pending` : ''}`,
  );
}

function sealChains(receipt: JobReceipt): Outcome {
  const sealers = new Set(receipt.records.flatMap((r) => (r.seal === null ? [] : [r.seal.sealer_pk])));
  let links = 0;
  for (const sealer of sealers) {
    const chain = (receipt.seal_chains ?? []).find((c) => c.sealer_pk === sealer);
    if (chain === undefined) return bad(`no seal chain for sealer ${sealer}`);
    for (const seal of chain.seals) {
      const checked = checkSeal(seal);
      if (!checked.ok) return bad(`sealer ${sealer} epoch ${String((seal as Partial<Seal>).epoch)}: ${checked.detail}`);
      if (checked.value.sealer_pk !== sealer)
        return bad(`the chain of ${sealer} holds a seal by ${checked.value.sealer_pk}`);
    }
    const problems = checkSealChain(chain.seals);
    if (problems.length > 0) return bad(`sealer ${sealer}: ${problems.map((p) => p.problem).join('; ')}`);
    for (const entry of receipt.records) {
      if (entry.seal === null || entry.seal.sealer_pk !== sealer) continue;
      const inChain = chain.seals.find((s) => s.epoch === entry.seal!.epoch);
      if (inChain === undefined || canonicalJson(inChain) !== canonicalJson(entry.seal)) {
        return bad(`${entry.record_id}: its seal of epoch ${entry.seal.epoch} is not the one in the chain`);
      }
    }
    links += chain.seals.length;
  }
  return ok(`${sealers.size} sealer chain(s), ${links} seal(s), each from the sealer's first`);
}

/**
 * Who may sign a head over `sealer`'s log (docs/protocol.md §15.4): the sealer itself, or a node that keeps the
 * log, under the custodian rule: the writer of the job record or a node key its signed `node_keys` names (the
 * deployment's gateways share one store, and whichever serves the receipt signs the heads); when pinned, the
 * pinned key or one of its `node_keys`.
 */
function headSignerIssue(head: SealHead, trust: NodeTrust, sealerPk: string | undefined): string | undefined {
  if (head.signer_pk === head.sealer_pk) return undefined;
  const vouched = trust.keys.includes(head.signer_pk);
  if (sealerPk !== undefined && head.signer_pk !== sealerPk && !(trust.writer === sealerPk && vouched)) {
    return `head of ${head.sealer_pk}'s log signed by ${head.signer_pk}, not by the pinned node ${sealerPk} or one of its node_keys`;
  }
  if (head.signer_pk !== trust.writer && !vouched) {
    return `head of ${head.sealer_pk}'s log signed by ${head.signer_pk}, neither the sealer nor the node that wrote the job record or one of its node_keys`;
  }
  return undefined;
}

/**
 * Version 2 (docs/protocol.md §15.4): one signed head per sealer of a record, none for another sealer, each signed
 * by the sealer or the node; each record's seal checks and its proof leads from its leaf (at its epoch less the
 * head's first epoch) to its head's root.
 */
function sealLogs(receipt: JobReceipt, jobEntry: ReceiptRecord | undefined, sealerPk: string | undefined): Outcome {
  const trust = trustOf(jobEntry);
  const heads = new Map<string, SealHead>();
  for (const [i, entry] of (receipt.seal_heads ?? []).entries()) {
    const checked = checkSealHead(entry.head);
    if (!checked.ok) return bad(`seal_heads[${i}]: ${checked.detail}`);
    const head = checked.value;
    if (heads.has(head.sealer_pk)) return bad(`two heads of sealer ${head.sealer_pk}`);
    const issue = headSignerIssue(head, trust, sealerPk);
    if (issue !== undefined) return bad(`seal_heads[${i}]: ${issue}`);
    heads.set(head.sealer_pk, head);
  }
  const needed = new Set<string>();
  // The records of one epoch share one seal: each distinct seal is checked once (the same verdict, fewer signatures).
  const checkedSeals = new Map<string, ReturnType<typeof checkSeal>>();
  let proven = 0;
  for (const entry of receipt.records) {
    if (entry.seal === null) {
      if (entry.seal_proof !== null) return bad(`${entry.record_id}: a seal_proof without a seal`);
      continue;
    }
    const key = canonicalJson(entry.seal);
    const seal = checkedSeals.get(key) ?? checkSeal(entry.seal);
    checkedSeals.set(key, seal);
    if (!seal.ok) return bad(`${entry.record_id}: ${seal.detail}`);
    const head = heads.get(seal.value.sealer_pk);
    if (head === undefined) return bad(`${entry.record_id}: no head of sealer ${seal.value.sealer_pk}`);
    needed.add(head.sealer_pk);
    if (entry.seal_proof == null) return bad(`${entry.record_id}: no proof of its seal in the head`);
    const issue = sealInclusionIssue(seal.value, head, entry.seal_proof);
    if (issue !== undefined) return bad(`${entry.record_id}: its seal of epoch ${seal.value.epoch}: ${issue}`);
    proven++;
  }
  const stray = [...heads.keys()].find((pk) => !needed.has(pk));
  if (stray !== undefined) return bad(`a head of sealer ${stray}, whose seal no record needs`);
  return ok(`${proven} seal(s) proven in ${heads.size} signed head(s) of their sealers' logs`);
}

/**
 * Version 2: per sealer with an anchored record, the head ending at its latest anchored epoch (the anchored head)
 * is signed like the head, of the same log, and the head is consistent with it (docs/protocol.md §15.4).
 */
function anchoredHeads(
  receipt: JobReceipt,
  jobEntry: ReceiptRecord | undefined,
  sealerPk: string | undefined,
): Outcome {
  const trust = trustOf(jobEntry);
  let consistent = 0;
  for (const [i, entry] of (receipt.seal_heads ?? []).entries()) {
    const checked = checkSealHead(entry.head);
    if (!checked.ok) return bad(`seal_heads[${i}]: ${checked.detail}`);
    const head = checked.value;
    const epochs = receipt.records.flatMap((r) =>
      r.anchor != null && r.seal?.sealer_pk === head.sealer_pk ? [r.anchor.epoch] : [],
    );
    if (epochs.length === 0) {
      if (entry.anchored !== null)
        return bad(`seal_heads[${i}]: an anchored head, but no record of ${head.sealer_pk} is anchored`);
      continue;
    }
    const latest = Math.max(...epochs);
    if (entry.anchored === null)
      return bad(`seal_heads[${i}]: epoch ${latest} is anchored, but there is no anchored head`);
    const anchoredCheck = checkSealHead(entry.anchored.head);
    if (!anchoredCheck.ok) return bad(`seal_heads[${i}].anchored: ${anchoredCheck.detail}`);
    const anchored = anchoredCheck.value;
    const issue = headSignerIssue(anchored, trust, sealerPk);
    if (issue !== undefined) return bad(`seal_heads[${i}].anchored: ${issue}`);
    if (anchored.sealer_pk !== head.sealer_pk || anchored.first_epoch !== head.first_epoch) {
      return bad(`seal_heads[${i}]: the anchored head is of another log`);
    }
    if (anchored.tree_size !== latest - anchored.first_epoch + 1) {
      return bad(`seal_heads[${i}]: the anchored head does not end at the anchored epoch ${latest}`);
    }
    const proof = entry.anchored.consistency;
    if (proof.length > 64 || !proof.every((h) => isHex(h, 32))) {
      return bad(`seal_heads[${i}]: consistency must be at most 64 hashes of 64 lowercase hex`);
    }
    const holds = verifySealConsistency(
      anchored.tree_size,
      head.tree_size,
      hexToBytes(anchored.root_hash),
      hexToBytes(head.root_hash),
      proof.map(hexToBytes),
    );
    if (!holds)
      return bad(`seal_heads[${i}]: the head of size ${head.tree_size} is not consistent with the anchored head`);
    consistent++;
  }
  return ok(`${consistent} head(s) consistent with their anchored heads`);
}

function anchors(receipt: JobReceipt, jobEntry: ReceiptRecord | undefined, sealerPk: string | undefined): Outcome {
  let anchored = 0;
  for (const entry of receipt.records) {
    if (entry.anchor === null || entry.anchor === undefined) continue;
    if (entry.seal === null) return bad(`${entry.record_id}: an anchor without a seal`);
    if (entry.anchor.root !== entry.seal.merkle_root || entry.anchor.epoch !== entry.seal.epoch) {
      return bad(`${entry.record_id}: the anchor's root or epoch is not the seal's`);
    }
    anchored++;
  }
  const heads = receipt.receipt_version === 2 ? anchoredHeads(receipt, jobEntry, sealerPk) : undefined;
  if (heads !== undefined && !heads.ok) return heads;
  const named =
    anchored === 0
      ? 'no anchor yet'
      : `${anchored} anchor(s) name their seal's root (look the transactions up on the ledger)`;
  return ok(heads === undefined ? named : `${named}; ${heads.detail}`);
}

function sealerCheck(entry: ReceiptRecord | undefined, sealerPk: string | undefined): Outcome {
  if (sealerPk === undefined) return ok('no sealer pinned');
  if (entry?.record == null) return ok('pending: no job record yet');
  if (entry.record.address.pk !== sealerPk)
    return bad(`the job record was written by ${entry.record.address.pk}, not ${sealerPk}`);
  if (entry.seal !== null && entry.seal.sealer_pk !== sealerPk)
    return bad(`sealed by ${entry.seal.sealer_pk}, not ${sealerPk}`);
  return ok(`written${entry.seal === null ? '' : ' and sealed'} by ${sealerPk}`);
}

function sealed(receipt: JobReceipt, allowPending: boolean): Outcome {
  const missing = receipt.records.filter((r) => r.record === null || r.seal === null).map((r) => r.record_id);
  const complete = receipt.job !== null && missing.length === 0 && receipt.records.some((r) => r.role === 'job');
  if (complete) return ok('every record is sealed');
  if (receipt.status === 'complete')
    return bad(`marked complete, but not sealed: ${missing.join(', ') || 'no job record'}`);
  return allowPending
    ? ok(`pending (allowed): ${receipt.pending.join('; ') || missing.join(', ')}`)
    : bad(`pending: ${receipt.pending.join('; ') || missing.join(', ')}`);
}
