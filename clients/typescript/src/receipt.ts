/**
 * Offline verification of a Geofabric job receipt (docs/protocol.md §15), written from the protocol alone: the same
 * checks, in the same order and under the same names as the server's verifier, so both name the same failed
 * check for the same receipt (the conformance vectors test that).
 */
import { canonicalize, CanonicalJsonError } from './jcs.js';
import { hexToBytes, isHex, publicKeyIssue, sha256Hex, verify } from './crypto.js';
import {
  cellCovered,
  certShapeIssue,
  headShapeIssue,
  isCell,
  isObj,
  proofShapeIssue,
  recordShapeIssue,
  sealShapeIssue,
  timestampMs,
} from './shapes.js';
import { fuse, provenReading, trustedWritersOf, type FusionReading } from './telemetry.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

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
  failedCheck?: ReceiptCheckName;
}

export interface VerifyReceiptOptions {
  /** The node's key: it must have written the job record and sealed its epoch. */
  sealerPk?: string;
  /** Accept a pending receipt: what is there must verify, what is missing is not a failure. */
  allowPending?: boolean;
}

type Obj = Record<string, unknown>;
const GENESIS = '0'.repeat(64);
const EMPTY_ROOT = sha256Hex('');

interface Outcome {
  ok: boolean;
  detail: string;
}
const ok = (detail: string): Outcome => ({ ok: true, detail });
const bad = (detail: string): Outcome => ({ ok: false, detail });

interface Entry {
  role: 'job' | 'step' | 'input';
  step_id: string | null;
  record_id: string;
  record: Obj | null;
  seal: Obj | null;
  proof: Obj | null;
  anchor: Obj | null;
  seal_proof?: Obj | null;
}
interface HeadEntry {
  head: Obj;
  anchored: { head: Obj; consistency: unknown[] } | null;
}
interface Receipt {
  receipt_version: 1 | 2;
  status: 'complete' | 'pending';
  job_id: string;
  pending: string[];
  request: { body: Obj; delegation_chain: Obj[] | null };
  job: (Obj & { job_id: string; steps: Obj[]; proof?: Obj | null }) | null;
  records: Entry[];
  seal_chains?: { sealer_pk: string; seals: Obj[] }[];
  seal_heads?: HeadEntry[];
}

/** The job id of a signature: the first 128 bits of SHA-256("geofabric/job\n" + signature) as a UUIDv8. */
export function jobIdFromSignature(signature: string): string {
  const h = sha256Hex(`geofabric/job\n${signature}`);
  const variant = ((parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** The signed message of a request body: JCS of the body without `signature`. */
export function signingMessage(body: Obj): string {
  const { signature: _ignored, ...unsigned } = body;
  return canonicalize(unsigned);
}

export function verifyReceipt(value: unknown, options: VerifyReceiptOptions = {}): ReceiptVerdict {
  const checks: ReceiptCheck[] = [];
  const add = (name: ReceiptCheckName, outcome: Outcome | (() => Outcome)) => {
    try {
      checks.push({ name, ...(typeof outcome === 'function' ? outcome() : outcome) });
    } catch (error) {
      // A check that trips over a malformed part fails; verification never throws.
      checks.push({ name, ok: false, detail: `malformed receipt: ${(error as Error).message}` });
    }
  };
  const format = receiptFormat(value);
  add('receipt_format', format);
  if (!format.ok) return verdict(checks);
  const receipt = value as Receipt;
  const body = receipt.request.body;
  const jobEntry = receipt.records.find((r) => r.role === 'job');
  const payload = isObj(jobEntry?.record?.payload) ? (jobEntry.record.payload as Obj) : null;
  const allowPending = options.allowPending === true;
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
    if (r.step_id !== null && typeof r.step_id !== 'string')
      return bad(`records[${i}].step_id must be a string or null`);
    // Version 2 adds `seal_proof` (docs/protocol.md §15.4), present like the others.
    const fields: readonly string[] = version === 2 ? [...ENTRY_OBJECTS, 'seal_proof'] : ENTRY_OBJECTS;
    const field = fields.find((k) => r[k] !== null && !isObj(r[k]));
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
    if (Object.hasOwn(value, 'seal_chains')) return bad('a version 2 receipt has seal_heads, not seal_chains');
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
  const issue = publicKeyIssue(body.requester_pk);
  if (issue !== undefined) return bad(`requester_pk ${issue}`);
  if (!isHex(body.signature, 64)) return bad('signature must be 128 lowercase hex');
  let message: string;
  try {
    message = signingMessage(body);
  } catch (error) {
    if (error instanceof CanonicalJsonError) return bad(error.message);
    throw error;
  }
  return verify(body.requester_pk as string, message, body.signature)
    ? ok(`signed by requester ${String(body.requester_pk)}`)
    : bad('the signature does not match the canonical request');
}

// ---- delegation (docs/protocol.md §10.5 rules 1–4, each link valid at the job's time, §15.2) ----

function certSigningString(cert: Obj): string {
  return canonicalize({
    version: cert.version,
    agent_pk: cert.agent_pk,
    principal_pk: cert.principal_pk,
    h3_cells: cert.h3_cells,
    facets: cert.facets,
    not_before: cert.not_before,
    not_after: cert.not_after,
    max_depth: cert.max_depth,
    constraints: cert.constraints ?? null,
  });
}

const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

interface Rights {
  allowed: string[] | null;
  denied: string[];
  maxOps: number | null;
}

/** The rights in force after a link (certificates already of the right shape): lists narrowed, the lower rate. */
function narrow(rights: Rights | null, c: Obj | null): Rights {
  const parentAllowed = rights?.allowed ?? null;
  const own = c?.allowed_tools as string[] | undefined;
  const allowed =
    own === undefined ? parentAllowed : parentAllowed === null ? own : own.filter((t) => parentAllowed.includes(t));
  const denied = [...(rights?.denied ?? [])];
  for (const t of (c?.denied_tools as string[] | undefined) ?? []) if (!denied.includes(t)) denied.push(t);
  const limits = [rights?.maxOps, c?.max_ops_per_hour].filter((n): n is number => typeof n === 'number');
  return { allowed, denied, maxOps: limits.length > 0 ? Math.min(...limits) : null };
}

/** Why link `i` fails on its own or against its parent (shape, signature, keys, linkage, narrowing, depth). */
function linkIssue(chain: Obj[], i: number, rights: Rights | null): string | undefined {
  const link = chain[i] as Obj;
  const shape = certShapeIssue(link);
  if (shape !== undefined) return `link ${i}: ${shape}`;
  if (!verify(link.principal_pk as string, certSigningString(link), link.principal_signature as string)) {
    return `link ${i}: principal_signature does not verify under principal_pk`;
  }
  const agentIssue = publicKeyIssue(link.agent_pk);
  if (agentIssue !== undefined) return `link ${i}: agent_pk ${agentIssue}`;
  if (chain.slice(0, i + 1).some((earlier) => earlier.principal_pk === link.agent_pk)) {
    return `link ${i}: delegation loop`;
  }
  const parent = chain[i - 1];
  if (parent === undefined || rights === null) return undefined;
  if (parent.agent_pk !== link.principal_pk) return `link ${i}: principal_pk is not link ${i - 1}'s agent_pk`;
  const cell = (link.h3_cells as string[]).find((c) => !cellCovered(parent.h3_cells as string[], c));
  if (cell !== undefined) return `link ${i}: cell ${cell} is not inside link ${i - 1}'s cells`;
  const parentFacets = parent.facets as string[];
  const facet = (link.facets as string[]).find((f) => !parentFacets.includes('*') && !parentFacets.includes(f));
  if (facet !== undefined) return `link ${i}: facet ${facet} is not granted by link ${i - 1}`;
  const c = (link.constraints ?? null) as Obj | null;
  if (rights.allowed !== null && c?.allowed_tools !== undefined) {
    const tool = (c.allowed_tools as string[]).find((t) => !rights.allowed!.includes(t));
    if (tool !== undefined) return `link ${i}: tool ${tool} is not allowed by link ${i - 1}`;
  }
  if (c?.denied_tools !== undefined) {
    const tool = rights.denied.find((t) => !(c.denied_tools as string[]).includes(t));
    if (tool !== undefined) return `link ${i}: tool ${tool} denied by link ${i - 1} is not denied`;
  }
  if (timestampMs(link.not_before) < timestampMs(parent.not_before)) return `link ${i}: widened window`;
  if (timestampMs(link.not_after) > timestampMs(parent.not_after)) return `link ${i}: widened window`;
  if (rights.maxOps !== null && c?.max_ops_per_hour !== undefined && (c.max_ops_per_hour as number) > rights.maxOps) {
    return `link ${i}: max_ops_per_hour exceeds link ${i - 1}'s`;
  }
  if ((parent.max_depth as number) < 1) return `link ${i - 1}: max_depth 0 does not allow further delegation`;
  if ((link.max_depth as number) > (parent.max_depth as number) - 1) return `link ${i}: max_depth too large`;
  return undefined;
}

/** Tolerance around the job's time: the gate's window for a request's `created_at` (docs/protocol.md §10.3). */
const JOB_TIME_SKEW_MS = 5 * 60_000;

/**
 * The request's signed `created_at` when it is a timestamp with a zone, else the node-signed job record's
 * `written_at` (docs/protocol.md §15.2); other forms are not read, so no verdict depends on a local time zone.
 */
function jobTime(body: Obj, entry: Entry | undefined): { at: number; source: string } | null {
  const created = timestampMs(body.created_at);
  if (Number.isFinite(created)) return { at: created, source: `the request's created_at ${String(body.created_at)}` };
  const written = entry?.record?.written_at;
  const writtenMs = timestampMs(written);
  if (Number.isFinite(writtenMs)) return { at: writtenMs, source: `the job record's written_at ${String(written)}` };
  return null;
}

function delegationChain(
  chain: Obj[] | null,
  requesterPk: unknown,
  time: { at: number; source: string } | null,
): Outcome {
  if (chain === null) return ok('no delegation: the requester acts as its own principal');
  if (chain.length === 0 || chain.length > 8) return bad(`a chain has 1 to 8 links, not ${chain.length}`);
  for (const [i, link] of chain.entries()) {
    const shape = certShapeIssue(link);
    if (shape !== undefined) return bad(`link ${i}: ${shape}`);
  }
  let rights: Rights | null = null;
  for (let i = 0; i < chain.length; i++) {
    const issue = linkIssue(chain, i, rights);
    if (issue !== undefined) return bad(issue);
    rights = narrow(rights, (chain[i]!.constraints ?? null) as Obj | null);
  }
  const last = chain[chain.length - 1] as Obj;
  if (last.agent_pk !== requesterPk) return bad(`the chain ends at ${String(last.agent_pk)}, not the requester`);
  const links = `${chain.length} link(s) from human ${String(chain[0]!.principal_pk)} to the requester`;
  if (time === null) return ok(`${links}; pending: the job's time is not known yet`);
  for (const [i, link] of chain.entries()) {
    if (time.at < timestampMs(link.not_before) - JOB_TIME_SKEW_MS) {
      return bad(
        `link ${i}: not valid before ${String(link.not_before)}, not valid at the job's time (${time.source})`,
      );
    }
    if (time.at > timestampMs(link.not_after) + JOB_TIME_SKEW_MS) {
      return bad(`link ${i}: expired at ${String(link.not_after)}, not valid at the job's time (${time.source})`);
    }
  }
  return ok(`${links}, valid at the job's time (${time.source})`);
}

// ---- records, seals, inclusion (docs/protocol.md §2.6, §10.7, §12) ----

/** The server's checkRecord: the shape exactly, then the hash, then the writer's signature. */
function recordIssue(record: unknown): string | undefined {
  const shape = recordShapeIssue(record);
  if (shape !== undefined) return shape;
  const checked = record as Obj;
  const { record_hash: _h, signature: _s, ...unsigned } = checked;
  let hash: string;
  try {
    hash = sha256Hex(canonicalize(unsigned));
  } catch (error) {
    if (error instanceof CanonicalJsonError) return error.message;
    throw error;
  }
  if (hash !== checked.record_hash) return 'record_hash does not match the record';
  const writer = (checked.address as Obj).pk as string;
  if (!verify(writer, checked.record_hash as string, checked.signature as string)) return 'signature does not verify';
  return undefined;
}

/** The server's checkSeal: the shape exactly, then the hash, then the signature of its sealer or custodian. */
function sealIssue(seal: unknown): string | undefined {
  const shape = sealShapeIssue(seal, EMPTY_ROOT);
  if (shape !== undefined) return shape;
  const checked = seal as Obj;
  const { seal_hash: _h, signature: _s, ...unsigned } = checked;
  if (sha256Hex(canonicalize(unsigned)) !== checked.seal_hash) return 'seal_hash does not match the seal';
  // A custodial seal (docs/protocol.md §12) is signed by its custodian, the central store's node key.
  const signer = (checked.custodian_pk ?? checked.sealer_pk) as string;
  if (!verify(signer, checked.seal_hash as string, checked.signature as string)) return 'signature does not verify';
  return undefined;
}

const leafHash = (recordHash: string) => sha256(new Uint8Array([0, ...hexToBytes(recordHash)]));
const nodeHash = (l: Uint8Array, r: Uint8Array) => sha256(new Uint8Array([1, ...l, ...r]));

/** RFC 9162 §2.1.3.2: the root a leaf and its audit path imply, or why the path cannot be right. */
function rootOf(leafIndex: number, treeSize: number, leaf: Uint8Array, path: Uint8Array[]): Uint8Array | string {
  if (!Number.isSafeInteger(leafIndex) || !Number.isSafeInteger(treeSize) || leafIndex < 0 || leafIndex >= treeSize) {
    return 'leaf_index is not inside the tree';
  }
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return 'the path is longer than the tree is deep';
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else r = nodeHash(r, p);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : 'the path ends before the root';
}

function bundleIssue(entry: Entry): string | undefined {
  const recordProblem = recordIssue(entry.record);
  if (recordProblem !== undefined) return `record: ${recordProblem}`;
  const record = entry.record as Obj;
  if (record.id !== entry.record_id) return `the record is ${String(record.id)}, not ${entry.record_id}`;
  const sealProblem = sealIssue(entry.seal);
  if (sealProblem !== undefined) return `seal: ${sealProblem}`;
  const seal = entry.seal as Obj;
  const address = record.address as Obj;
  if (seal.sealer_pk !== address.pk || seal.epoch !== address.epoch)
    return "the seal is not the record's writer's epoch";
  const proof = entry.proof;
  if (!isObj(proof) || !Array.isArray(proof.hashes) || !proof.hashes.every((h) => isHex(h, 32))) {
    return 'proof is malformed';
  }
  if (proof.tree_size !== seal.record_count) return "proof tree_size is not the seal's record_count";
  const root = rootOf(
    proof.leaf_index as number,
    proof.tree_size as number,
    leafHash(record.record_hash as string),
    (proof.hashes as string[]).map(hexToBytes),
  );
  if (typeof root === 'string') return `proof: ${root}`;
  return bytesToHex(root) === seal.merkle_root ? undefined : 'proof: root mismatch';
}

// ---- the checks ----

function jobIdCheck(receipt: Receipt, body: Obj): Outcome {
  if (!isHex(body.signature, 64)) return bad('the request has no signature to derive the job id from');
  const derived = jobIdFromSignature(body.signature);
  if (receipt.job_id !== derived) return bad(`job_id ${receipt.job_id} is not ${derived}, the signature's`);
  if (receipt.job !== null && receipt.job.job_id !== derived) return bad(`the answer is of job ${receipt.job.job_id}`);
  return ok(derived);
}

function jobRecordCheck(receipt: Receipt, entry: Entry | undefined): Outcome {
  if (receipt.job === null) {
    return receipt.status === 'pending' ? ok('pending: the job is still running') : bad('no job answer');
  }
  const named = isObj(receipt.job.proof) ? receipt.job.proof.record_id : undefined;
  if (typeof named !== 'string') return bad('the answer names no compute/job record');
  if (entry === undefined) return bad(`no job record in the receipt (the answer names ${named})`);
  if (entry.record_id !== named) return bad(`the job record is ${entry.record_id}, the answer names ${named}`);
  if (entry.step_id !== null) return bad("the job record's entry names a step (its step_id must be null)");
  if (entry.record === null) return ok(`pending: record ${named} is not in the store yet`);
  const issue = recordIssue(entry.record);
  if (issue !== undefined) return bad(`record ${named}: ${issue}`);
  if (entry.record.id !== named) return bad(`the record is ${String(entry.record.id)}, not ${named}`);
  if (entry.record.payload_type !== 'compute/job') return bad(`record ${named} is not a compute/job record`);
  if ((entry.record.payload as Obj | null)?.job_id !== receipt.job_id) return bad(`record ${named} is of another job`);
  const nodeKeys = nodeKeysOf(entry.record.payload, (entry.record.address as Obj).pk);
  if (nodeKeys.issue !== undefined) return bad(`record ${named}: ${nodeKeys.issue}`);
  return ok(`${named} written by ${String((entry.record.address as Obj).pk)}`);
}

function jobHashCheck(receipt: Receipt, body: Obj, payload: Obj | null): Outcome {
  if (receipt.job === null || payload === null) return ok('pending: no job record yet');
  let request: string;
  try {
    request = sha256Hex(canonicalize(body));
  } catch (error) {
    if (error instanceof CanonicalJsonError) return bad(error.message);
    throw error;
  }
  if (payload.request_hash !== request) return bad(`the record's request_hash is not the request's ${request}`);
  if (payload.requester_pk !== body.requester_pk) return bad("the record's requester_pk is not the request's");
  if (!Array.isArray(payload.steps) || !payload.steps.every(isObj)) return bad('the record lists no steps');
  const outputs = (payload.steps as Obj[]).map((s) => ({
    id: s.id,
    status: s.status,
    output_hash: s.output_hash ?? null,
  }));
  const recomputed = sha256Hex(canonicalize({ request_hash: request, outputs }));
  if (payload.job_hash !== recomputed) return bad(`the record's job_hash is not the recomputed ${recomputed}`);
  const answered = isObj(receipt.job.proof) ? receipt.job.proof.job_hash : undefined;
  if (answered !== recomputed) return bad(`the answer's job_hash is not the recomputed ${recomputed}`);
  return ok(recomputed);
}

function stepOutputs(receipt: Receipt, body: Obj, payload: Obj | null): Outcome {
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
    if (step.id !== requested[i] || record.id !== requested[i])
      return bad(`step ${i} differs between request, record and answer`);
    if (step.status !== record.status) return bad(`step ${String(step.id)}: status differs from the record`);
    if (step.record_id !== record.record_id)
      return bad(`step ${String(step.id)}: the answer and the record name other records`);
    const hash = step.status === 'complete' ? sha256Hex(canonicalize(step.output)) : null;
    if (hash !== record.output_hash)
      return bad(`step ${String(step.id)}: the output does not hash to the recorded output_hash`);
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

/** Same JSON value, an absent field reading as null. */
const sameValue = (shown: unknown, recorded: unknown): boolean =>
  canonicalize(shown ?? null) === canonicalize(recorded ?? null);

/**
 * Every field of the answer is bound by the signed `compute/job` record (docs/protocol.md §15.2), as the server's
 * core checks it: status, cell, epoch, worker, settlement, error and proof link, and each step's type, worker,
 * relay, cost, latency and error; no other field. A version-1 record binds no epoch, relay or step error.
 */
function jobAnswer(receipt: Receipt, entry: Entry | undefined, payload: Obj | null): Outcome {
  if (receipt.job === null || payload === null || entry?.record == null || !Array.isArray(payload.steps)) {
    return ok('pending: no job record yet');
  }
  const job = receipt.job as Obj;
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
  const address = (entry.record as Obj).address as Obj;
  const fields: [string, unknown, unknown][] = [
    ['status', job.status, payload.status],
    ['h3_cell', job.h3_cell, version === 2 ? payload.h3_cell : address.h3_cell],
    ['worker_pk', job.worker_pk, version === 2 ? payload.worker_pk : (lastDone?.worker_pk ?? null)],
    ['settlement', job.settlement, payload.settlement],
    ['error', job.error, payload.error],
  ];
  if (version === 2) fields.push(['epoch', job.epoch, payload.epoch]);
  for (const [i, value] of (job.steps as unknown[]).entries()) {
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
    ? ok("every field of the answer is the signed record's")
    : ok("the answer is the signed record's; a version-1 record binds no epoch, relay or step error");
}

function stepRecords(receipt: Receipt, payload: Obj | null, allowPending: boolean): Outcome {
  if (payload === null || !Array.isArray(payload.steps)) return ok('pending: no job record yet');
  const named = (payload.steps as Obj[]).filter((s) => typeof s.record_id === 'string');
  const entries = receipt.records.filter((r) => r.role === 'step');
  if (entries.length !== named.length) {
    return bad(`the job names ${named.length} step records, the receipt holds ${entries.length}`);
  }
  let missing = 0;
  for (const step of named) {
    const entry = entries.find((e) => e.step_id === step.id);
    if (entry === undefined) return bad(`no record for step ${String(step.id)}`);
    if (entry.record_id !== step.record_id) return bad(`step ${String(step.id)}: not the named record`);
    if (entry.record === null) {
      missing++;
      continue;
    }
    const issue = recordIssue(entry.record);
    if (issue !== undefined) return bad(`step ${String(step.id)} record: ${issue}`);
    if (entry.record.id !== step.record_id) return bad(`step ${String(step.id)}: the record is another`);
  }
  if (missing > 0 && !allowPending && receipt.status !== 'pending') {
    return bad(`${missing} step record(s) missing from a receipt marked complete`);
  }
  return ok(`${named.length - missing} step record(s) verified${missing > 0 ? `, ${missing} pending` : ''}`);
}

// ---- sensor fusion (docs/protocol.md §2.10): the server's method, in its operation order, so doubles agree ----

/** RFC 6962 root over leaves, built bottom-up (an odd last node moves up unchanged); SHA-256("") when empty. */
function merkleRootHex(recordHashes: string[]): string {
  if (recordHashes.length === 0) return EMPTY_ROOT;
  let level: Uint8Array[] = recordHashes.map(leafHash);
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(nodeHash(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return bytesToHex(level[0]!);
}

/** The output fields recomputed from a fusion's inputs and compared. */
const FUSION_RECOMPUTED = [
  'value',
  'mean',
  'stderr',
  'voter_count',
  'device_count',
  'reading_count',
  'merkle_root',
] as const;

/**
 * Each complete `sensor_fusion` step's `role: "input"` entries are exactly its output's `record_ids`, in order, each
 * once; each is a reading that counts as evidence (telemetry.ts provenReading: written by one of the output's
 * `trusted_writers`, or without them by the job record's writer,
 * signed by its device, plausible) of the step's quantity, cells and window, no two of one device, quantity and
 * instant; and the fusion recomputed from them gives the output's numbers and Merkle root.
 */
function fusionInputs(receipt: Receipt, jobEntry: Entry | undefined, allowPending: boolean): Outcome {
  const fusions = (receipt.job?.steps ?? []).filter((s) => s.type === 'sensor_fusion' && s.status === 'complete');
  const named = new Set(fusions.map((s) => s.id));
  const stray = receipt.records.find((r) => r.role === 'input' && !named.has(r.step_id ?? ''));
  if (stray) return bad(`input ${stray.record_id} belongs to no complete sensor_fusion step`);
  const address = jobEntry?.record?.address;
  const writer = isObj(address) ? address.pk : undefined;
  let verified = 0;
  let missing = 0;
  for (const step of fusions) {
    const out = step.output as Obj;
    const ids = out.record_ids;
    if (!strings(ids)) return bad(`step ${String(step.id)}: no record_ids`);
    if (new Set(ids).size !== ids.length) return bad(`step ${String(step.id)}: an input is named twice`);
    const entries = receipt.records.filter((r) => r.role === 'input' && r.step_id === step.id);
    if (canonicalize(entries.map((e) => e.record_id)) !== canonicalize(ids)) {
      return bad(`step ${String(step.id)}: the receipt's inputs are not the ${ids.length} records the output names`);
    }
    // The writers the fusion trusted, bound by the job record: its writer's statement (docs/protocol.md §2.10).
    const trusted = trustedWritersOf(out);
    if (trusted.issue !== undefined) return bad(`step ${String(step.id)}: ${trusted.issue}`);
    const window = out.window as Obj | null | undefined;
    const from = timestampMs(window?.from);
    const to = timestampMs(window?.to);
    const cells: unknown[] = Array.isArray(out.cells) ? out.cells : [];
    if (!cells.every(isCell)) return bad(`step ${String(step.id)}: cells must be H3 cells`);
    const readings: FusionReading[] = [];
    const instants = new Set<string>();
    for (const entry of entries) {
      if (entry.record === null) {
        missing++;
        continue;
      }
      const issue = recordIssue(entry.record);
      if (issue !== undefined) return bad(`input ${entry.record_id}: ${issue}`);
      // Pending until the job record is there: it names (or binds the output naming) who may have written them.
      if (typeof writer !== 'string') {
        missing++;
        continue;
      }
      const reading = provenReading(entry.record, trusted.writers ?? [writer]);
      if (typeof reading === 'string') return bad(`input ${reading}`);
      const at = timestampMs(reading.observed_at);
      const cell = (entry.record.address as Obj).h3_cell as string;
      if (reading.quantity !== out.quantity || !(at >= from && at < to) || !cellCovered(cells as string[], cell)) {
        return bad(`input ${entry.record_id} is not a ${String(out.quantity)} reading of the step's cells and window`);
      }
      const instant = canonicalize([reading.device_pk, reading.quantity, reading.observed_at]);
      if (instants.has(instant)) return bad(`input ${entry.record_id}: a second reading of its device and instant`);
      instants.add(instant);
      readings.push({
        device_pk: reading.device_pk,
        principal_pk: reading.principal_pk,
        value: reading.value,
        record_id: entry.record_id,
        record_hash: entry.record.record_hash as string,
      });
    }
    if (readings.length < entries.length) continue;
    const fused = fuse(readings, merkleRootHex);
    for (const key of FUSION_RECOMPUTED) {
      if (fused[key] !== out[key]) {
        return bad(`step ${String(step.id)}: ${key} recomputed from the inputs is ${String(fused[key])}`);
      }
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

/**
 * The node keys a job record's writer vouches for (docs/protocol.md §15.4): its payload's `node_keys` (the
 * deployment's gateways sharing one store, ascending and distinct, the writer among them), or the writer alone.
 */
function nodeKeysOf(payload: unknown, writer: unknown): { keys: string[]; issue?: string } {
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

/** The job record's writer and the node keys it vouches for. */
interface NodeTrust {
  writer: unknown;
  keys: readonly string[];
}

const trustOf = (jobEntry: Entry | undefined): NodeTrust => {
  const record = isObj(jobEntry?.record) ? (jobEntry.record as Obj) : undefined;
  const writer = isObj(record?.address) ? record.address.pk : undefined;
  return { writer, keys: nodeKeysOf(record?.payload, writer).keys };
};

/**
 * Why a custodial seal's custodian is not trusted (docs/protocol.md §12.3): only the node may seal a gone worker's
 * epoch, and the receipt names the node as the writer of its `compute/job` record (and the pinned key, if any), or
 * one of the node keys that record names.
 */
function custodianIssue(custodian: string, trust: NodeTrust, sealerPk: string | undefined): string | undefined {
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

function inclusion(receipt: Receipt, jobEntry: Entry | undefined, sealerPk: string | undefined): Outcome {
  let proven = 0;
  const custodians = new Set<string>();
  let custodial = 0;
  const trust = trustOf(jobEntry);
  for (const entry of receipt.records) {
    if (entry.record === null || entry.seal === null) continue;
    const issue = bundleIssue(entry);
    if (issue !== undefined) return bad(`${entry.record_id}: ${issue}`);
    proven++;
    const custodian = (entry.seal as Obj).custodian_pk;
    if (custodian !== undefined) {
      const untrusted = custodianIssue(String(custodian), trust, sealerPk);
      if (untrusted !== undefined) return bad(`${entry.record_id}: ${untrusted}`);
      custodial++;
      custodians.add(String(custodian));
    }
  }
  const unsealed = receipt.records.length - proven;
  const byCustodian = custodial > 0 ? ` (${custodial} under custodial seals by ${[...custodians].join(', ')})` : '';
  return ok(
    `${proven} record(s) included in their sealed epochs${byCustodian}${unsealed > 0 ? `, ${unsealed} pending` : ''}`,
  );
}

function sealChains(receipt: Receipt): Outcome {
  const sealers = new Set(receipt.records.flatMap((r) => (isObj(r.seal) ? [r.seal.sealer_pk] : [])));
  let links = 0;
  for (const sealer of sealers) {
    const chain = (receipt.seal_chains ?? []).find((c) => c.sealer_pk === sealer);
    if (chain === undefined) return bad(`no seal chain for sealer ${sealer}`);
    const seals = [...chain.seals];
    for (const seal of seals) {
      const issue = sealIssue(seal);
      if (issue !== undefined) return bad(`sealer ${sealer} epoch ${String(seal.epoch)}: ${issue}`);
      if (seal.sealer_pk !== sealer) return bad(`the chain of ${sealer} holds another sealer's seal`);
    }
    seals.sort((a, b) => (a.epoch as number) - (b.epoch as number));
    for (const [i, seal] of seals.entries()) {
      const before = seals[i - 1];
      if (before === undefined) {
        if (seal.prev_epoch_hash !== GENESIS) return bad(`sealer ${sealer}: the earliest seal must chain to genesis`);
      } else if (seal.epoch === before.epoch) return bad(`sealer ${sealer}: epoch ${String(seal.epoch)} has two seals`);
      else if (seal.epoch !== (before.epoch as number) + 1)
        return bad(`sealer ${sealer}: epoch ${(before.epoch as number) + 1} has no seal`);
      else if (seal.prev_epoch_hash !== before.seal_hash)
        return bad(`sealer ${sealer}: epoch ${String(seal.epoch)} does not link to the one before`);
    }
    for (const entry of receipt.records) {
      if (!isObj(entry.seal) || entry.seal.sealer_pk !== sealer) continue;
      const inChain = seals.find((s) => s.epoch === entry.seal!.epoch);
      if (inChain === undefined || canonicalize(inChain) !== canonicalize(entry.seal)) {
        return bad(`${entry.record_id}: its seal is not the one in the chain`);
      }
    }
    links += seals.length;
  }
  return ok(`${sealers.size} sealer chain(s), ${links} seal(s), each from the sealer's first`);
}

// ---- version 2: seal logs (docs/protocol.md §15.4) ----

const HEAD_TAG = 'geofabric/seal-head/v1';
const LOG_LEAF_PREFIX = [0, ...new TextEncoder().encode('geofabric/seal-log/v1')];
const sealLeafHash = (sealHash: string) => sha256(new Uint8Array([...LOG_LEAF_PREFIX, ...hexToBytes(sealHash)]));

/** Shape, then head_hash (SHA-256 of the tag, a newline and JCS of the unsigned head), then signer_pk's signature. */
function headIssue(head: unknown): string | undefined {
  const shape = headShapeIssue(head);
  if (shape !== undefined) return shape;
  const checked = head as Obj;
  const { head_hash: _h, signature: _s, ...unsigned } = checked;
  if (sha256Hex(`${HEAD_TAG}\n${canonicalize(unsigned)}`) !== checked.head_hash)
    return 'head_hash does not match the head';
  if (!verify(checked.signer_pk as string, checked.head_hash as string, checked.signature as string)) {
    return 'the head signature does not verify';
  }
  return undefined;
}

/**
 * Who may sign a head of a sealer's log: the sealer, or under the custodian rule the node (the job record's writer
 * or one of its `node_keys`; when pinned, the pinned key or one of its `node_keys`).
 */
function headSignerIssue(head: Obj, trust: NodeTrust, sealerPk: string | undefined): string | undefined {
  if (head.signer_pk === head.sealer_pk) return undefined;
  const vouched = trust.keys.includes(String(head.signer_pk));
  if (sealerPk !== undefined && head.signer_pk !== sealerPk && !(trust.writer === sealerPk && vouched))
    return `head signed by ${String(head.signer_pk)}, not the pinned node or one of its node_keys`;
  if (head.signer_pk !== trust.writer && !vouched)
    return `head signed by ${String(head.signer_pk)}, neither the sealer nor the node or one of its node_keys`;
  return undefined;
}

function sealLogs(receipt: Receipt, jobEntry: Entry | undefined, sealerPk: string | undefined): Outcome {
  const trust = trustOf(jobEntry);
  const heads = new Map<string, Obj>();
  for (const [i, entry] of (receipt.seal_heads ?? []).entries()) {
    const issue = headIssue(entry.head);
    if (issue !== undefined) return bad(`seal_heads[${i}]: ${issue}`);
    const sealer = entry.head.sealer_pk as string;
    if (heads.has(sealer)) return bad(`two heads of sealer ${sealer}`);
    const signer = headSignerIssue(entry.head, trust, sealerPk);
    if (signer !== undefined) return bad(`seal_heads[${i}]: ${signer}`);
    heads.set(sealer, entry.head);
  }
  const needed = new Set<string>();
  let proven = 0;
  for (const entry of receipt.records) {
    if (entry.seal === null) {
      if (entry.seal_proof !== null) return bad(`${entry.record_id}: a seal_proof without a seal`);
      continue;
    }
    const sealProblem = sealIssue(entry.seal);
    if (sealProblem !== undefined) return bad(`${entry.record_id}: ${sealProblem}`);
    const seal = entry.seal;
    const head = heads.get(seal.sealer_pk as string);
    if (head === undefined) return bad(`${entry.record_id}: no head of sealer ${String(seal.sealer_pk)}`);
    needed.add(seal.sealer_pk as string);
    const proof = entry.seal_proof;
    if (proof === null || proof === undefined) return bad(`${entry.record_id}: no proof of its seal in the head`);
    const shape = proofShapeIssue(proof);
    if (shape !== undefined) return bad(`${entry.record_id}: seal_proof ${shape}`);
    if (proof.leaf_index !== (seal.epoch as number) - (head.first_epoch as number)) {
      return bad(`${entry.record_id}: leaf_index is not its epoch less the head's first epoch`);
    }
    if (proof.tree_size !== head.tree_size) return bad(`${entry.record_id}: the proof is not of the head's size`);
    const root = rootOf(
      proof.leaf_index as number,
      proof.tree_size as number,
      sealLeafHash(seal.seal_hash as string),
      (proof.hashes as string[]).map(hexToBytes),
    );
    if (typeof root === 'string') return bad(`${entry.record_id}: ${root}`);
    if (bytesToHex(root) !== head.root_hash)
      return bad(`${entry.record_id}: the proof does not lead to the head's root`);
    proven++;
  }
  const stray = [...heads.keys()].find((pk) => !needed.has(pk));
  if (stray !== undefined) return bad(`a head of sealer ${stray}, whose seal no record needs`);
  return ok(`${proven} seal(s) proven in ${heads.size} signed head(s)`);
}

/** RFC 9162 §2.1.4.2; for m = n the proof is empty and the roots equal (two roots of one size: equivocation). */
function consistent(m: number, n: number, oldRoot: Uint8Array, newRoot: Uint8Array, proof: Uint8Array[]): boolean {
  const same = (a: Uint8Array, b: Uint8Array) => bytesToHex(a) === bytesToHex(b);
  if (!(m >= 1 && m <= n)) return false;
  if (m === n) return proof.length === 0 && same(oldRoot, newRoot);
  const path = (m & (m - 1)) === 0 ? [oldRoot, ...proof] : [...proof];
  if (path.length === 0) return false;
  let fn = m - 1;
  let sn = n - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else sr = nodeHash(sr, c);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(fr, oldRoot) && same(sr, newRoot);
}

/** Per sealer with an anchored record: the head ending at its latest anchored epoch, and the head consistent with it. */
function anchoredHeads(receipt: Receipt, jobEntry: Entry | undefined, sealerPk: string | undefined): Outcome {
  const trust = trustOf(jobEntry);
  let consistentHeads = 0;
  for (const [i, entry] of (receipt.seal_heads ?? []).entries()) {
    const issue = headIssue(entry.head);
    if (issue !== undefined) return bad(`seal_heads[${i}]: ${issue}`);
    const head = entry.head;
    const epochs = receipt.records.flatMap((r) =>
      r.anchor !== null && r.anchor !== undefined && isObj(r.seal) && r.seal.sealer_pk === head.sealer_pk
        ? [r.anchor.epoch as number]
        : [],
    );
    if (epochs.length === 0) {
      if (entry.anchored !== null) return bad(`seal_heads[${i}]: an anchored head, but no record is anchored`);
      continue;
    }
    const latest = Math.max(...epochs);
    if (entry.anchored === null) return bad(`seal_heads[${i}]: epoch ${latest} is anchored, but no anchored head`);
    const anchoredIssue = headIssue(entry.anchored.head);
    if (anchoredIssue !== undefined) return bad(`seal_heads[${i}].anchored: ${anchoredIssue}`);
    const anchored = entry.anchored.head;
    const signer = headSignerIssue(anchored, trust, sealerPk);
    if (signer !== undefined) return bad(`seal_heads[${i}].anchored: ${signer}`);
    if (anchored.sealer_pk !== head.sealer_pk || anchored.first_epoch !== head.first_epoch) {
      return bad(`seal_heads[${i}]: the anchored head is of another log`);
    }
    if (anchored.tree_size !== latest - (anchored.first_epoch as number) + 1) {
      return bad(`seal_heads[${i}]: the anchored head does not end at the anchored epoch`);
    }
    const proof = entry.anchored.consistency;
    if (proof.length > 64 || !proof.every((h) => isHex(h, 32)))
      return bad(`seal_heads[${i}]: consistency is malformed`);
    const holds = consistent(
      anchored.tree_size as number,
      head.tree_size as number,
      hexToBytes(anchored.root_hash as string),
      hexToBytes(head.root_hash as string),
      (proof as string[]).map(hexToBytes),
    );
    if (!holds) return bad(`seal_heads[${i}]: the head is not consistent with the anchored head`);
    consistentHeads++;
  }
  return ok(`${consistentHeads} head(s) consistent with their anchored heads`);
}

function anchors(receipt: Receipt, jobEntry: Entry | undefined, sealerPk: string | undefined): Outcome {
  let anchored = 0;
  for (const entry of receipt.records) {
    if (entry.anchor === null || entry.anchor === undefined) continue;
    if (!isObj(entry.seal)) return bad(`${entry.record_id}: an anchor without a seal`);
    if (entry.anchor.root !== entry.seal.merkle_root || entry.anchor.epoch !== entry.seal.epoch) {
      return bad(`${entry.record_id}: the anchor's root or epoch is not the seal's`);
    }
    anchored++;
  }
  const named = anchored === 0 ? 'no anchor yet' : `${anchored} anchor(s) name their seal's root`;
  if (receipt.receipt_version === 1) return ok(named);
  const heads = anchoredHeads(receipt, jobEntry, sealerPk);
  return heads.ok ? ok(`${named}; ${heads.detail}`) : heads;
}

function sealerCheck(entry: Entry | undefined, sealerPk: string | undefined): Outcome {
  if (sealerPk === undefined) return ok('no sealer pinned');
  if (!isObj(entry?.record)) return ok('pending: no job record yet');
  const writer = (entry.record.address as Obj | undefined)?.pk;
  if (writer !== sealerPk) return bad(`the job record was written by ${String(writer)}, not ${sealerPk}`);
  if (isObj(entry.seal) && entry.seal.sealer_pk !== sealerPk) return bad(`sealed by ${String(entry.seal.sealer_pk)}`);
  return ok(`written${isObj(entry.seal) ? ' and sealed' : ''} by ${sealerPk}`);
}

function sealed(receipt: Receipt, allowPending: boolean): Outcome {
  const missing = receipt.records.filter((r) => r.record === null || r.seal === null).map((r) => r.record_id);
  const complete = receipt.job !== null && missing.length === 0 && receipt.records.some((r) => r.role === 'job');
  if (complete) return ok('every record is sealed');
  if (receipt.status === 'complete')
    return bad(`marked complete, but not sealed: ${missing.join(', ') || 'no job record'}`);
  const why = receipt.pending.join('; ') || missing.join(', ');
  return allowPending ? ok(`pending (allowed): ${why}`) : bad(`pending: ${why}`);
}
