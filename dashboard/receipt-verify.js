// @ts-check
/**
 * Verifies a job receipt (docs/protocol.md §15) in the browser, trusting nothing the server computed: the same
 * checks, in the same order and under the same names as the server's core/receipt.ts and both clients, on
 * WebCrypto (SHA-256, Ed25519) through proof-verify.js. The conformance vectors
 * (test/fixtures/conformance) hold for it too (test/dashboard/receipt-verify.test.ts).
 */
import {
  bytesToHex,
  canonicalJson,
  hexToBytes,
  leafHash,
  nodeHash,
  publicKeyIssue,
  sha256Hex,
  verifyEd25519,
  without,
} from './proof-verify.js';
import {
  cellCovered,
  certShapeIssue,
  fuse,
  headShapeIssue,
  isCell,
  isObj,
  proofShapeIssue,
  provenReading,
  trustedWritersOf,
  recordShapeIssue,
  sealShapeIssue,
  timestampMs,
} from './receipt-shapes.js';

/** @typedef {{ name: string, ok: boolean, detail: string }} ReceiptCheck */
/** @typedef {{ ok: boolean, checks: ReceiptCheck[], failedCheck?: string }} ReceiptVerdict */
/** @typedef {{ ok: boolean, detail: string }} Outcome */

export const RECEIPT_CHECKS = [
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

const GENESIS = '0'.repeat(64);
/** Tolerance around the job's time: the gate's window for a request's created_at (docs/protocol.md §10.3). */
const JOB_TIME_SKEW_MS = 5 * 60_000;

/** @param {unknown} v @param {number} bytes */
const isHex = (v, bytes) => typeof v === 'string' && v.length === bytes * 2 && /^[0-9a-f]*$/.test(v);
/** @param {unknown} v @returns {v is number} */
const isInt = (v) => typeof v === 'number' && Number.isSafeInteger(v);
/** @param {unknown} v @returns {v is string[]} */
const strings = (v) => Array.isArray(v) && v.every((s) => typeof s === 'string');
/** @param {string} detail @returns {Outcome} */
const ok = (detail) => ({ ok: true, detail });
/** @param {string} detail @returns {Outcome} */
const bad = (detail) => ({ ok: false, detail });

/** The job id of a signature: the first 128 bits of SHA-256("geofabric/job\n" + signature) as a UUIDv8. */
export async function jobIdFromSignature(/** @type {string} */ signature) {
  const h = await sha256Hex(`geofabric/job\n${signature}`);
  const variant = ((parseInt(h.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Every check of the receipt, each reported; `failedCheck` names the first that failed. Never throws: a check
 * that trips over a malformed part fails.
 * @param {unknown} value @param {{ sealerPk?: string, allowPending?: boolean }} [options]
 * @returns {Promise<ReceiptVerdict>}
 */
export async function verifyReceipt(value, options = {}) {
  /** @type {ReceiptCheck[]} */
  const checks = [];
  const add = async (/** @type {string} */ name, /** @type {() => Outcome | Promise<Outcome>} */ run) => {
    try {
      checks.push({ name, ...(await run()) });
    } catch (error) {
      checks.push({ name, ok: false, detail: `malformed receipt: ${error instanceof Error ? error.message : error}` });
    }
  };
  await add('receipt_format', () => receiptFormat(value));
  if (checks[0]?.ok) {
    const receipt = /** @type {Record<string, any>} */ (value);
    const body = receipt.request.body;
    const jobEntry = receipt.records.find((/** @type {any} */ r) => r.role === 'job');
    const payload = isObj(jobEntry?.record?.payload) ? jobEntry.record.payload : null;
    const allowPending = options.allowPending === true;
    await add('request_signature', () => requestSignature(body));
    await add('delegation_chain', () =>
      delegationChain(receipt.request.delegation_chain, body.requester_pk, jobTime(body, jobEntry)),
    );
    await add('job_id', () => jobIdCheck(receipt, body));
    await add('job_record', () => jobRecordCheck(receipt, jobEntry));
    await add('job_hash', () => jobHashCheck(receipt, body, payload));
    await add('step_outputs', () => stepOutputs(receipt, body, payload));
    await add('job_answer', () => jobAnswer(receipt, jobEntry, payload));
    await add('step_records', () => stepRecords(receipt, payload, allowPending));
    await add('fusion_inputs', () => fusionInputs(receipt, jobEntry, allowPending));
    await add('inclusion', () => inclusion(receipt, jobEntry, options.sealerPk || undefined));
    await add('seal_chain', () =>
      receipt.receipt_version === 1 ? sealChains(receipt) : sealLogs(receipt, jobEntry, options.sealerPk || undefined),
    );
    await add('anchor', () => anchors(receipt, jobEntry, options.sealerPk || undefined));
    await add('sealer', () => sealerCheck(jobEntry, options.sealerPk));
    await add('sealed', () => sealed(receipt, allowPending));
  }
  const failed = checks.find((c) => !c.ok);
  return failed ? { ok: false, checks, failedCheck: failed.name } : { ok: true, checks };
}

/** The fields of a `records` entry that hold an object, or null until there is one (docs/protocol.md §15.1). */
const ENTRY_OBJECTS = ['record', 'seal', 'proof', 'anchor'];

/** @param {unknown} value @returns {Outcome} */
function receiptFormat(value) {
  if (!isObj(value)) return bad('a receipt is a JSON object');
  const version = value.receipt_version;
  if (version !== 1 && version !== 2) return bad(`receipt_version ${JSON.stringify(version)} is not 1 or 2`);
  if (value.status !== 'complete' && value.status !== 'pending') return bad('status must be complete or pending');
  if (typeof value.job_id !== 'string') return bad('job_id must be a string');
  if (!strings(value.pending)) return bad('pending must be an array of strings');
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
    if (!isObj(r) || !['job', 'step', 'input'].includes(r.role) || typeof r.record_id !== 'string') {
      return bad(`records[${i}] needs role (job, step or input) and record_id`);
    }
    if (r.step_id !== null && typeof r.step_id !== 'string')
      return bad(`records[${i}].step_id must be a string or null`);
    // Version 2 adds `seal_proof` (docs/protocol.md §15.4), present like the others.
    const fields = version === 2 ? [...ENTRY_OBJECTS, 'seal_proof'] : ENTRY_OBJECTS;
    const field = fields.find((k) => r[k] !== null && !isObj(r[k]));
    if (field !== undefined) return bad(`records[${i}].${field} must be an object or null`);
  }
  if (value.records.filter((/** @type {any} */ r) => r.role === 'job').length > 1)
    return bad('more than one job record');
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

/** @param {Record<string, any>} body */
async function requestSignature(body) {
  const issue = publicKeyIssue(body.requester_pk);
  if (issue !== undefined) return bad(`requester_pk ${issue}`);
  if (!isHex(body.signature, 64)) return bad('signature must be 128 lowercase hex');
  const signed = await verifyEd25519(body.requester_pk, canonicalJson(without(body, ['signature'])), body.signature);
  return signed
    ? ok(`signed by requester ${body.requester_pk}`)
    : bad('the signature does not match the canonical request');
}

// ---- delegation (docs/protocol.md §10.5 rules 1–4, each link valid at the job's time, §15.2) ----

/** @param {Record<string, any>} cert */
const certSigningString = (cert) =>
  canonicalJson({
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

/** @typedef {{ allowed: string[] | null, denied: string[], maxOps: number | null }} Rights */

/**
 * The rights in force after a link (certificates already of the right shape): lists narrowed, the lower rate.
 * @param {Rights | null} rights @param {Record<string, any> | null} c @returns {Rights}
 */
function narrow(rights, c) {
  const parentAllowed = rights?.allowed ?? null;
  /** @type {string[] | undefined} */
  const own = c?.allowed_tools;
  const allowed =
    own === undefined ? parentAllowed : parentAllowed === null ? own : own.filter((t) => parentAllowed.includes(t));
  const denied = [...(rights?.denied ?? [])];
  for (const t of c?.denied_tools ?? []) if (!denied.includes(t)) denied.push(t);
  const limits = [rights?.maxOps, c?.max_ops_per_hour].filter((n) => typeof n === 'number');
  return { allowed, denied, maxOps: limits.length > 0 ? Math.min(...limits) : null };
}

/**
 * Why link `i` fails on its own or against its parent (shape, signature, keys, linkage, narrowing, depth).
 * @param {Record<string, any>[]} chain @param {number} i @param {Rights | null} rights
 */
async function linkIssue(chain, i, rights) {
  const link = /** @type {Record<string, any>} */ (chain[i]);
  const shape = certShapeIssue(link);
  if (shape !== undefined) return `link ${i}: ${shape}`;
  if (!(await verifyEd25519(link.principal_pk, certSigningString(link), link.principal_signature))) {
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
  const cell = link.h3_cells.find((/** @type {string} */ c) => !cellCovered(parent.h3_cells, c));
  if (cell !== undefined) return `link ${i}: cell ${cell} is not inside link ${i - 1}'s cells`;
  const facet = link.facets.find(
    (/** @type {string} */ f) => !parent.facets.includes('*') && !parent.facets.includes(f),
  );
  if (facet !== undefined) return `link ${i}: facet ${facet} is not granted by link ${i - 1}`;
  const c = link.constraints ?? null;
  const allowed = rights.allowed;
  if (allowed !== null && c?.allowed_tools !== undefined) {
    const tool = c.allowed_tools.find((/** @type {string} */ t) => !allowed.includes(t));
    if (tool !== undefined) return `link ${i}: tool ${tool} is not allowed by link ${i - 1}`;
  }
  if (c?.denied_tools !== undefined) {
    const tool = rights.denied.find((t) => !c.denied_tools.includes(t));
    if (tool !== undefined) return `link ${i}: tool ${tool} denied by link ${i - 1} is not denied`;
  }
  if (timestampMs(link.not_before) < timestampMs(parent.not_before)) return `link ${i}: widened window`;
  if (timestampMs(link.not_after) > timestampMs(parent.not_after)) return `link ${i}: widened window`;
  if (rights.maxOps !== null && c?.max_ops_per_hour !== undefined && c.max_ops_per_hour > rights.maxOps) {
    return `link ${i}: max_ops_per_hour exceeds link ${i - 1}'s`;
  }
  if (parent.max_depth < 1) return `link ${i - 1}: max_depth 0 does not allow further delegation`;
  if (link.max_depth > parent.max_depth - 1) return `link ${i}: max_depth too large`;
  return undefined;
}

/**
 * The request's signed created_at when it is a timestamp with a zone, else the node-signed job record's
 * written_at (docs/protocol.md §15.2); other forms are not read, so no verdict depends on a local time zone.
 * @param {Record<string, any>} body @param {any} entry
 */
function jobTime(body, entry) {
  const created = timestampMs(body.created_at);
  if (Number.isFinite(created)) return { at: created, source: `the request's created_at ${body.created_at}` };
  const written = entry?.record?.written_at;
  const writtenMs = timestampMs(written);
  if (Number.isFinite(writtenMs)) return { at: writtenMs, source: `the job record's written_at ${written}` };
  return null;
}

/**
 * @param {Record<string, any>[] | null} chain @param {unknown} requesterPk
 * @param {{ at: number, source: string } | null} time
 */
async function delegationChain(chain, requesterPk, time) {
  if (chain === null) return ok('no delegation: the requester acts as its own principal');
  if (chain.length === 0 || chain.length > 8) return bad(`a chain has 1 to 8 links, not ${chain.length}`);
  for (const [i, link] of chain.entries()) {
    const shape = certShapeIssue(link);
    if (shape !== undefined) return bad(`link ${i}: ${shape}`);
  }
  /** @type {Rights | null} */
  let rights = null;
  for (let i = 0; i < chain.length; i++) {
    const issue = await linkIssue(chain, i, rights);
    if (issue !== undefined) return bad(issue);
    const link = /** @type {Record<string, any>} */ (chain[i]);
    rights = narrow(rights, link.constraints ?? null);
  }
  const last = /** @type {Record<string, any>} */ (chain[chain.length - 1]);
  if (last.agent_pk !== requesterPk) return bad(`the chain ends at ${String(last.agent_pk)}, not the requester`);
  const links = `${chain.length} link(s) from human ${String(chain[0]?.principal_pk)} to the requester`;
  if (time === null) return ok(`${links}; pending: the job's time is not known yet`);
  for (const [i, link] of chain.entries()) {
    if (time.at < timestampMs(link.not_before) - JOB_TIME_SKEW_MS) {
      return bad(`link ${i}: not valid before ${link.not_before}, not valid at the job's time (${time.source})`);
    }
    if (time.at > timestampMs(link.not_after) + JOB_TIME_SKEW_MS) {
      return bad(`link ${i}: expired at ${link.not_after}, not valid at the job's time (${time.source})`);
    }
  }
  return ok(`${links}, valid at the job's time (${time.source})`);
}

// ---- records, seals, inclusion (docs/protocol.md §2.6, §10.7, §12) ----

/**
 * The server's checkRecord: the shape exactly, then the hash, then the writer's signature.
 * @param {unknown} record @returns {Promise<string | undefined>}
 */
async function recordIssue(record) {
  const shape = recordShapeIssue(record);
  if (shape !== undefined) return shape;
  const checked = /** @type {Record<string, any>} */ (record);
  const hash = await sha256Hex(canonicalJson(without(checked, ['record_hash', 'signature'])));
  if (hash !== checked.record_hash) return 'record_hash does not match the record';
  if (!(await verifyEd25519(checked.address.pk, checked.record_hash, checked.signature))) {
    return 'signature does not verify';
  }
  return undefined;
}

/**
 * The server's checkSeal: the shape exactly, then the hash, then the signature of its sealer or custodian.
 * @param {unknown} seal @returns {Promise<string | undefined>}
 */
async function sealIssue(seal) {
  const shape = sealShapeIssue(seal, await sha256Hex(''));
  if (shape !== undefined) return shape;
  const checked = /** @type {Record<string, any>} */ (seal);
  if ((await sha256Hex(canonicalJson(without(checked, ['seal_hash', 'signature'])))) !== checked.seal_hash) {
    return 'seal_hash does not match the seal';
  }
  // A custodial seal (docs/protocol.md §12) is signed by its custodian, the central store's node key.
  const signer = checked.custodian_pk ?? checked.sealer_pk;
  if (!(await verifyEd25519(signer, checked.seal_hash, checked.signature))) return 'signature does not verify';
  return undefined;
}

/** RFC 9162 §2.1.3.2: the root a leaf and its audit path imply, or why the path cannot be right. */
async function rootOf(
  /** @type {unknown} */ leafIndex,
  /** @type {unknown} */ treeSize,
  /** @type {Uint8Array} */ leaf,
  /** @type {Uint8Array[]} */ path,
) {
  if (!isInt(leafIndex) || !isInt(treeSize) || leafIndex < 0 || leafIndex >= treeSize) {
    return 'leaf_index is not inside the tree';
  }
  let fn = leafIndex;
  let sn = treeSize - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return 'the path is longer than the tree is deep';
    if (fn % 2 === 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else r = await nodeHash(r, p);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 ? r : 'the path ends before the root';
}

/** @param {Record<string, any>} entry */
async function bundleIssue(entry) {
  const recordProblem = await recordIssue(entry.record);
  if (recordProblem !== undefined) return `record: ${recordProblem}`;
  const record = entry.record;
  if (record.id !== entry.record_id) return `the record is ${String(record.id)}, not ${entry.record_id}`;
  const sealProblem = await sealIssue(entry.seal);
  if (sealProblem !== undefined) return `seal: ${sealProblem}`;
  const seal = entry.seal;
  if (seal.sealer_pk !== record.address.pk || seal.epoch !== record.address.epoch) {
    return "the seal is not the record's writer's epoch";
  }
  const proof = entry.proof;
  if (!isObj(proof) || !Array.isArray(proof.hashes) || !proof.hashes.every((h) => isHex(h, 32))) {
    return 'proof is malformed';
  }
  if (proof.tree_size !== seal.record_count) return "proof tree_size is not the seal's record_count";
  const root = await rootOf(
    proof.leaf_index,
    proof.tree_size,
    await leafHash(record.record_hash),
    proof.hashes.map((/** @type {string} */ h) => hexToBytes(h)),
  );
  if (typeof root === 'string') return `proof: ${root}`;
  return bytesToHex(root) === seal.merkle_root ? undefined : 'proof: root mismatch';
}

// ---- the checks ----

/** @param {Record<string, any>} receipt @param {Record<string, any>} body */
async function jobIdCheck(receipt, body) {
  if (!isHex(body.signature, 64)) return bad('the request has no signature to derive the job id from');
  const derived = await jobIdFromSignature(body.signature);
  if (receipt.job_id !== derived) return bad(`job_id ${receipt.job_id} is not ${derived}, the signature's`);
  if (receipt.job !== null && receipt.job.job_id !== derived) return bad(`the answer is of job ${receipt.job.job_id}`);
  return ok(derived);
}

/** @param {Record<string, any>} receipt @param {any} entry */
async function jobRecordCheck(receipt, entry) {
  if (receipt.job === null) {
    return receipt.status === 'pending' ? ok('pending: the job is still running') : bad('no job answer');
  }
  const named = isObj(receipt.job.proof) ? receipt.job.proof.record_id : undefined;
  if (typeof named !== 'string') return bad('the answer names no compute/job record');
  if (entry === undefined) return bad(`no job record in the receipt (the answer names ${named})`);
  if (entry.record_id !== named) return bad(`the job record is ${entry.record_id}, the answer names ${named}`);
  if (entry.step_id !== null) return bad("the job record's entry names a step (its step_id must be null)");
  if (entry.record === null) return ok(`pending: record ${named} is not in the store yet`);
  const issue = await recordIssue(entry.record);
  if (issue !== undefined) return bad(`record ${named}: ${issue}`);
  if (entry.record.id !== named) return bad(`the record is ${String(entry.record.id)}, not ${named}`);
  if (entry.record.payload_type !== 'compute/job') return bad(`record ${named} is not a compute/job record`);
  if (entry.record.payload?.job_id !== receipt.job_id) return bad(`record ${named} is of another job`);
  const nodeKeys = nodeKeysOf(entry.record.payload, entry.record.address?.pk);
  if (nodeKeys.issue !== undefined) return bad(`record ${named}: ${nodeKeys.issue}`);
  return ok(`${named} written by ${String(entry.record.address.pk)}`);
}

/** @param {Record<string, any>} receipt @param {Record<string, any>} body @param {Record<string, any> | null} payload */
async function jobHashCheck(receipt, body, payload) {
  if (receipt.job === null || payload === null) return ok('pending: no job record yet');
  const request = await sha256Hex(canonicalJson(body));
  if (payload.request_hash !== request) return bad(`the record's request_hash is not the request's ${request}`);
  if (payload.requester_pk !== body.requester_pk) return bad("the record's requester_pk is not the request's");
  if (!Array.isArray(payload.steps) || !payload.steps.every(isObj)) return bad('the record lists no steps');
  const outputs = payload.steps.map((/** @type {any} */ s) => ({
    id: s.id,
    status: s.status,
    output_hash: s.output_hash ?? null,
  }));
  const recomputed = await sha256Hex(canonicalJson({ request_hash: request, outputs }));
  if (payload.job_hash !== recomputed) return bad(`the record's job_hash is not the recomputed ${recomputed}`);
  const answered = isObj(receipt.job.proof) ? receipt.job.proof.job_hash : undefined;
  if (answered !== recomputed) return bad(`the answer's job_hash is not the recomputed ${recomputed}`);
  return ok(recomputed);
}

/** @param {Record<string, any>} receipt @param {Record<string, any>} body @param {Record<string, any> | null} payload */
async function stepOutputs(receipt, body, payload) {
  if (receipt.job === null || payload === null || !Array.isArray(payload.steps)) {
    return ok('pending: no job record yet');
  }
  const requested = Array.isArray(body.steps)
    ? body.steps.map((/** @type {any} */ s) => (isObj(s) ? s.id : undefined))
    : [];
  const recorded = payload.steps;
  const answered = receipt.job.steps;
  if (recorded.length !== requested.length || answered.length !== requested.length) {
    return bad(`${requested.length} steps requested, ${recorded.length} recorded, ${answered.length} answered`);
  }
  for (const [i, step] of answered.entries()) {
    const record = recorded[i];
    if (step.id !== requested[i] || record.id !== requested[i]) {
      return bad(`step ${i} differs between request, record and answer`);
    }
    if (step.status !== record.status) return bad(`step ${String(step.id)}: status differs from the record`);
    if (step.record_id !== record.record_id) {
      return bad(`step ${String(step.id)}: the answer and the record name other records`);
    }
    const hash = step.status === 'complete' ? await sha256Hex(canonicalJson(step.output)) : null;
    if (hash !== record.output_hash) {
      return bad(`step ${String(step.id)}: the output does not hash to the recorded output_hash`);
    }
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

/** Same JSON value, an absent field reading as null. @param {unknown} shown @param {unknown} recorded */
const sameValue = (shown, recorded) => canonicalJson(shown ?? null) === canonicalJson(recorded ?? null);

/**
 * Every field of the answer is bound by the signed `compute/job` record (docs/protocol.md §15.2), as the server's
 * core checks it: status, cell, epoch, worker, settlement, error and proof link, and each step's type, worker,
 * relay, cost, latency and error; no other field. A version-1 record binds no epoch, relay or step error.
 * @param {Record<string, any>} receipt @param {Record<string, any> | undefined} entry
 * @param {Record<string, any> | null} payload
 * @returns {Outcome}
 */
function jobAnswer(receipt, entry, payload) {
  if (receipt.job === null || payload === null || entry?.record == null || !Array.isArray(payload.steps)) {
    return ok('pending: no job record yet');
  }
  const job = receipt.job;
  const version = payload.version;
  if (version !== 1 && version !== 2) return bad(`compute/job payload version ${String(version)} is not 1 or 2`);
  /** @param {Record<string, any>} value @param {string[]} allowed */
  const extra = (value, allowed) => Object.keys(value).find((k) => !allowed.includes(k));
  const unknownField = extra(job, ANSWER_FIELDS);
  if (unknownField !== undefined) return bad(`the answer's field ${unknownField} is bound by nothing`);
  if (!isObj(job.proof)) return bad('the answer has no proof');
  const proofField = extra(job.proof, PROOF_FIELDS);
  if (proofField !== undefined) return bad(`the answer's proof.${proofField} is bound by nothing`);
  const link = `/store/proof/${encodeURIComponent(entry.record_id)}`;
  if (typeof job.proof.verify_url !== 'string' || !job.proof.verify_url.endsWith(link)) {
    return bad(`proof.verify_url does not name ${link}`);
  }
  /** @type {Record<string, any>[]} */
  const recorded = payload.steps;
  const lastDone = [...recorded].reverse().find((s) => s.status === 'complete');
  /** @type {[string, unknown, unknown][]} */
  const fields = [
    ['status', job.status, payload.status],
    ['h3_cell', job.h3_cell, version === 2 ? payload.h3_cell : entry.record.address.h3_cell],
    ['worker_pk', job.worker_pk, version === 2 ? payload.worker_pk : (lastDone?.worker_pk ?? null)],
    ['settlement', job.settlement, payload.settlement],
    ['error', job.error, payload.error],
  ];
  if (version === 2) fields.push(['epoch', job.epoch, payload.epoch]);
  for (const [i, value] of /** @type {unknown[]} */ (job.steps).entries()) {
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

/** @param {Record<string, any>} receipt @param {Record<string, any> | null} payload @param {boolean} allowPending */
async function stepRecords(receipt, payload, allowPending) {
  if (payload === null || !Array.isArray(payload.steps)) return ok('pending: no job record yet');
  const named = payload.steps.filter((/** @type {any} */ s) => typeof s.record_id === 'string');
  const entries = receipt.records.filter((/** @type {any} */ r) => r.role === 'step');
  if (entries.length !== named.length) {
    return bad(`the job names ${named.length} step records, the receipt holds ${entries.length}`);
  }
  let missing = 0;
  for (const step of named) {
    const entry = entries.find((/** @type {any} */ e) => e.step_id === step.id);
    if (entry === undefined) return bad(`no record for step ${String(step.id)}`);
    if (entry.record_id !== step.record_id) return bad(`step ${String(step.id)}: not the named record`);
    if (entry.record === null) {
      missing++;
      continue;
    }
    const issue = await recordIssue(entry.record);
    if (issue !== undefined) return bad(`step ${String(step.id)} record: ${issue}`);
    if (entry.record.id !== step.record_id) return bad(`step ${String(step.id)}: the record is another`);
  }
  if (missing > 0 && !allowPending && receipt.status !== 'pending') {
    return bad(`${missing} step record(s) missing from a receipt marked complete`);
  }
  return ok(`${named.length - missing} step record(s) verified${missing > 0 ? `, ${missing} pending` : ''}`);
}

// ---- sensor fusion (docs/protocol.md §2.10): the server's method, in its operation order, so doubles agree ----

/** RFC 6962 root over the leaves of record hashes, built bottom-up; SHA-256("") when empty. @param {string[]} recordHashes */
async function merkleRootHex(recordHashes) {
  if (recordHashes.length === 0) return sha256Hex('');
  /** @type {Uint8Array[]} */
  let level = [];
  for (const h of recordHashes) level.push(await leafHash(h));
  while (level.length > 1) {
    /** @type {Uint8Array[]} */
    const next = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(await nodeHash(level[i], level[i + 1]));
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return bytesToHex(level[0]);
}

/** The output fields recomputed from a fusion's inputs and compared. */
const FUSION_RECOMPUTED = ['value', 'mean', 'stderr', 'voter_count', 'device_count', 'reading_count', 'merkle_root'];

/**
 * Each complete `sensor_fusion` step's `role: "input"` entries are exactly its output's `record_ids`, in order, each
 * once; each is a reading that counts as evidence (receipt-shapes.js provenReading: written by one of the
 * output's `trusted_writers`, or without them by the job record's
 * writer, signed by its device, plausible) of the step's quantity, cells and window, no two of one device, quantity
 * and instant; and the fusion recomputed from them gives the output's numbers and Merkle root.
 * @param {Record<string, any>} receipt @param {any} jobEntry @param {boolean} allowPending
 */
async function fusionInputs(receipt, jobEntry, allowPending) {
  const fusions = (receipt.job?.steps ?? []).filter(
    (/** @type {any} */ s) => s.type === 'sensor_fusion' && s.status === 'complete',
  );
  const named = new Set(fusions.map((/** @type {any} */ s) => s.id));
  const stray = receipt.records.find((/** @type {any} */ r) => r.role === 'input' && !named.has(r.step_id ?? ''));
  if (stray) return bad(`input ${stray.record_id} belongs to no complete sensor_fusion step`);
  const address = jobEntry?.record?.address;
  const writer = isObj(address) ? address.pk : undefined;
  let verified = 0;
  let missing = 0;
  for (const step of fusions) {
    const out = step.output;
    const ids = out.record_ids;
    if (!strings(ids)) return bad(`step ${String(step.id)}: no record_ids`);
    if (new Set(ids).size !== ids.length) return bad(`step ${String(step.id)}: an input is named twice`);
    const entries = receipt.records.filter((/** @type {any} */ r) => r.role === 'input' && r.step_id === step.id);
    if (canonicalJson(entries.map((/** @type {any} */ e) => e.record_id)) !== canonicalJson(ids)) {
      return bad(`step ${String(step.id)}: the receipt's inputs are not the ${ids.length} records the output names`);
    }
    // The writers the fusion trusted, bound by the job record: its writer's statement (docs/protocol.md §2.10).
    const trusted = trustedWritersOf(out);
    if (trusted.issue !== undefined) return bad(`step ${String(step.id)}: ${trusted.issue}`);
    const from = timestampMs(out.window?.from);
    const to = timestampMs(out.window?.to);
    /** @type {unknown[]} */
    const cells = Array.isArray(out.cells) ? out.cells : [];
    if (!cells.every(isCell)) return bad(`step ${String(step.id)}: cells must be H3 cells`);
    const readings = [];
    const instants = new Set();
    for (const entry of entries) {
      if (entry.record === null) {
        missing++;
        continue;
      }
      const issue = await recordIssue(entry.record);
      if (issue !== undefined) return bad(`input ${entry.record_id}: ${issue}`);
      // Pending until the job record is there: it names (or binds the output naming) who may have written them.
      if (typeof writer !== 'string') {
        missing++;
        continue;
      }
      const reading = await provenReading(entry.record, trusted.writers ?? [writer], verifyEd25519);
      if (typeof reading === 'string') return bad(`input ${reading}`);
      const at = timestampMs(reading.observed_at);
      const inCells = cellCovered(/** @type {string[]} */ (cells), entry.record.address.h3_cell);
      if (reading.quantity !== out.quantity || !(at >= from && at < to) || !inCells) {
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
        record_hash: entry.record.record_hash,
      });
    }
    if (readings.length < entries.length) continue;
    const fused = await fuse(readings, merkleRootHex);
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
 * @param {unknown} payload @param {unknown} writer
 * @returns {{ keys: string[], issue?: string }}
 */
function nodeKeysOf(payload, writer) {
  if (typeof writer !== 'string') return { keys: [] };
  const named = isObj(payload) ? payload.node_keys : undefined;
  if (named === undefined) return { keys: [writer] };
  const wellFormed =
    Array.isArray(named) &&
    named.every((pk, i) => isHex(pk, 32) && (i === 0 || named[i - 1] < pk)) &&
    named.includes(writer);
  return wellFormed
    ? { keys: named }
    : { keys: [writer], issue: 'node_keys must be ascending distinct node keys naming the writer' };
}

/**
 * The job record's writer and the node keys it vouches for.
 * @param {any} jobEntry
 * @returns {{ writer: unknown, keys: string[] }}
 */
function trustOf(jobEntry) {
  const record = isObj(jobEntry?.record) ? jobEntry.record : undefined;
  const writer = isObj(record?.address) ? record.address.pk : undefined;
  return { writer, keys: nodeKeysOf(record?.payload, writer).keys };
}

/**
 * Why a custodial seal's custodian is not trusted (docs/protocol.md §12.3): only the node seals a gone worker's
 * epoch, and the receipt names the node as the writer of its `compute/job` record (and the pinned key, if any), or
 * one of the node keys that record names.
 * @param {string} custodian @param {{ writer: unknown, keys: string[] }} trust @param {string | undefined} sealerPk
 * @returns {string | undefined}
 */
function custodianIssue(custodian, trust, sealerPk) {
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

/** @param {Record<string, any>} receipt @param {any} jobEntry @param {string | undefined} sealerPk */
async function inclusion(receipt, jobEntry, sealerPk) {
  let proven = 0;
  /** @type {Set<string>} */
  const custodians = new Set();
  let custodial = 0;
  const trust = trustOf(jobEntry);
  for (const entry of receipt.records) {
    if (entry.record === null || entry.seal === null) continue;
    const issue = await bundleIssue(entry);
    if (issue !== undefined) return bad(`${entry.record_id}: ${issue}`);
    proven++;
    if ('custodian_pk' in entry.seal) {
      const custodian = String(entry.seal.custodian_pk);
      const untrusted = custodianIssue(custodian, trust, sealerPk);
      if (untrusted !== undefined) return bad(`${entry.record_id}: ${untrusted}`);
      custodial++;
      custodians.add(custodian);
    }
  }
  const unsealed = receipt.records.length - proven;
  const byCustodian = custodial > 0 ? ` (${custodial} under custodial seals by ${[...custodians].join(', ')})` : '';
  return ok(
    `${proven} record(s) included in their sealed epochs${byCustodian}${unsealed > 0 ? `, ${unsealed} pending` : ''}`,
  );
}

/** @param {Record<string, any>} receipt */
async function sealChains(receipt) {
  /** @type {Set<string>} */
  const sealers = new Set(
    receipt.records.flatMap((/** @type {any} */ r) => (isObj(r.seal) ? [String(r.seal.sealer_pk)] : [])),
  );
  let links = 0;
  for (const sealer of sealers) {
    const chain = (receipt.seal_chains ?? []).find((/** @type {any} */ c) => c.sealer_pk === sealer);
    if (chain === undefined) return bad(`no seal chain for sealer ${sealer}`);
    /** @type {Record<string, any>[]} */
    const seals = [...chain.seals];
    for (const seal of seals) {
      const issue = await sealIssue(seal);
      if (issue !== undefined) return bad(`sealer ${sealer} epoch ${String(seal?.epoch)}: ${issue}`);
      if (seal.sealer_pk !== sealer) return bad(`the chain of ${sealer} holds another sealer's seal`);
    }
    seals.sort((a, b) => a.epoch - b.epoch);
    for (const [i, seal] of seals.entries()) {
      const before = seals[i - 1];
      if (before === undefined) {
        if (seal.prev_epoch_hash !== GENESIS) return bad(`sealer ${sealer}: the earliest seal must chain to genesis`);
      } else if (seal.epoch === before.epoch) return bad(`sealer ${sealer}: epoch ${seal.epoch} has two seals`);
      else if (seal.epoch !== before.epoch + 1) return bad(`sealer ${sealer}: epoch ${before.epoch + 1} has no seal`);
      else if (seal.prev_epoch_hash !== before.seal_hash) {
        return bad(`sealer ${sealer}: epoch ${seal.epoch} does not link to the one before`);
      }
    }
    for (const entry of receipt.records) {
      if (!isObj(entry.seal) || entry.seal.sealer_pk !== sealer) continue;
      const inChain = seals.find((s) => s.epoch === entry.seal.epoch);
      if (inChain === undefined || canonicalJson(inChain) !== canonicalJson(entry.seal)) {
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

/** SHA-256(0x00 ‖ "geofabric/seal-log/v1" ‖ the 32 bytes of seal_hash). @param {string} sealHash */
async function sealLeafHash(sealHash) {
  const input = new Uint8Array([...LOG_LEAF_PREFIX, ...hexToBytes(sealHash)]);
  return new Uint8Array(await crypto.subtle.digest('SHA-256', input));
}

/**
 * Shape, then head_hash (SHA-256 of the tag, a newline and JCS of the unsigned head), then signer_pk's signature.
 * @param {unknown} head @returns {Promise<string | undefined>}
 */
async function headIssue(head) {
  const shape = headShapeIssue(head);
  if (shape !== undefined) return shape;
  const checked = /** @type {Record<string, any>} */ (head);
  const hash = await sha256Hex(`${HEAD_TAG}\n${canonicalJson(without(checked, ['head_hash', 'signature']))}`);
  if (hash !== checked.head_hash) return 'head_hash does not match the head';
  if (!(await verifyEd25519(checked.signer_pk, checked.head_hash, checked.signature))) {
    return 'the head signature does not verify';
  }
  return undefined;
}

/**
 * Who may sign a head of a sealer's log: the sealer, or under the custodian rule the node (the job record's writer
 * or one of its `node_keys`; when pinned, the pinned key or one of its `node_keys`).
 * @param {Record<string, any>} head @param {{ writer: unknown, keys: string[] }} trust
 * @param {string | undefined} sealerPk
 */
function headSignerIssue(head, trust, sealerPk) {
  if (head.signer_pk === head.sealer_pk) return undefined;
  const vouched = trust.keys.includes(head.signer_pk);
  if (sealerPk !== undefined && head.signer_pk !== sealerPk && !(trust.writer === sealerPk && vouched))
    return `head signed by ${head.signer_pk}, not the pinned node or one of its node_keys`;
  if (head.signer_pk !== trust.writer && !vouched)
    return `head signed by ${head.signer_pk}, neither the sealer nor the node or one of its node_keys`;
  return undefined;
}

/** @param {Record<string, any>} receipt @param {any} jobEntry @param {string | undefined} sealerPk */
async function sealLogs(receipt, jobEntry, sealerPk) {
  const trust = trustOf(jobEntry);
  /** @type {Map<string, Record<string, any>>} */
  const heads = new Map();
  for (const [i, entry] of receipt.seal_heads.entries()) {
    const issue = await headIssue(entry.head);
    if (issue !== undefined) return bad(`seal_heads[${i}]: ${issue}`);
    const sealer = entry.head.sealer_pk;
    if (heads.has(sealer)) return bad(`two heads of sealer ${sealer}`);
    const signer = headSignerIssue(entry.head, trust, sealerPk);
    if (signer !== undefined) return bad(`seal_heads[${i}]: ${signer}`);
    heads.set(sealer, entry.head);
  }
  /** @type {Set<string>} */
  const needed = new Set();
  let proven = 0;
  for (const entry of receipt.records) {
    if (entry.seal === null) {
      if (entry.seal_proof !== null) return bad(`${entry.record_id}: a seal_proof without a seal`);
      continue;
    }
    const sealProblem = await sealIssue(entry.seal);
    if (sealProblem !== undefined) return bad(`${entry.record_id}: ${sealProblem}`);
    const seal = entry.seal;
    const head = heads.get(seal.sealer_pk);
    if (head === undefined) return bad(`${entry.record_id}: no head of sealer ${seal.sealer_pk}`);
    needed.add(seal.sealer_pk);
    const proof = entry.seal_proof;
    if (proof === null || proof === undefined) return bad(`${entry.record_id}: no proof of its seal in the head`);
    const shape = proofShapeIssue(proof);
    if (shape !== undefined) return bad(`${entry.record_id}: seal_proof ${shape}`);
    if (proof.leaf_index !== seal.epoch - head.first_epoch) {
      return bad(`${entry.record_id}: leaf_index is not its epoch less the head's first epoch`);
    }
    if (proof.tree_size !== head.tree_size) return bad(`${entry.record_id}: the proof is not of the head's size`);
    const root = await rootOf(
      proof.leaf_index,
      proof.tree_size,
      await sealLeafHash(seal.seal_hash),
      proof.hashes.map((/** @type {string} */ h) => hexToBytes(h)),
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

/**
 * RFC 9162 §2.1.4.2; for m = n the proof is empty and the roots equal (two roots of one size: equivocation).
 * @param {number} m @param {number} n @param {Uint8Array} oldRoot @param {Uint8Array} newRoot @param {Uint8Array[]} proof
 */
async function consistent(m, n, oldRoot, newRoot, proof) {
  const same = (/** @type {Uint8Array} */ a, /** @type {Uint8Array} */ b) => bytesToHex(a) === bytesToHex(b);
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
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = await nodeHash(c, fr);
      sr = await nodeHash(c, sr);
      while (fn % 2 === 0 && fn !== 0) {
        fn = Math.floor(fn / 2);
        sn = Math.floor(sn / 2);
      }
    } else sr = await nodeHash(sr, c);
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && same(fr, oldRoot) && same(sr, newRoot);
}

/**
 * Per sealer with an anchored record: the head ending at its latest anchored epoch, and the head consistent with it.
 * @param {Record<string, any>} receipt @param {any} jobEntry @param {string | undefined} sealerPk
 */
async function anchoredHeads(receipt, jobEntry, sealerPk) {
  const trust = trustOf(jobEntry);
  let consistentHeads = 0;
  for (const [i, entry] of receipt.seal_heads.entries()) {
    const issue = await headIssue(entry.head);
    if (issue !== undefined) return bad(`seal_heads[${i}]: ${issue}`);
    const head = entry.head;
    /** @type {number[]} */
    const epochs = receipt.records.flatMap((/** @type {any} */ r) =>
      r.anchor !== null && r.anchor !== undefined && isObj(r.seal) && r.seal.sealer_pk === head.sealer_pk
        ? [r.anchor.epoch]
        : [],
    );
    if (epochs.length === 0) {
      if (entry.anchored !== null) return bad(`seal_heads[${i}]: an anchored head, but no record is anchored`);
      continue;
    }
    const latest = Math.max(...epochs);
    if (entry.anchored === null) return bad(`seal_heads[${i}]: epoch ${latest} is anchored, but no anchored head`);
    const anchoredIssue = await headIssue(entry.anchored.head);
    if (anchoredIssue !== undefined) return bad(`seal_heads[${i}].anchored: ${anchoredIssue}`);
    const anchored = entry.anchored.head;
    const signer = headSignerIssue(anchored, trust, sealerPk);
    if (signer !== undefined) return bad(`seal_heads[${i}].anchored: ${signer}`);
    if (anchored.sealer_pk !== head.sealer_pk || anchored.first_epoch !== head.first_epoch) {
      return bad(`seal_heads[${i}]: the anchored head is of another log`);
    }
    if (anchored.tree_size !== latest - anchored.first_epoch + 1) {
      return bad(`seal_heads[${i}]: the anchored head does not end at the anchored epoch`);
    }
    const proof = entry.anchored.consistency;
    if (proof.length > 64 || !proof.every((/** @type {unknown} */ h) => isHex(h, 32))) {
      return bad(`seal_heads[${i}]: consistency is malformed`);
    }
    const holds = await consistent(
      anchored.tree_size,
      head.tree_size,
      hexToBytes(anchored.root_hash),
      hexToBytes(head.root_hash),
      proof.map((/** @type {string} */ h) => hexToBytes(h)),
    );
    if (!holds) return bad(`seal_heads[${i}]: the head is not consistent with the anchored head`);
    consistentHeads++;
  }
  return ok(`${consistentHeads} head(s) consistent with their anchored heads`);
}

/** @param {Record<string, any>} receipt @param {any} jobEntry @param {string | undefined} sealerPk */
async function anchors(receipt, jobEntry, sealerPk) {
  let anchored = 0;
  for (const entry of receipt.records) {
    if (entry.anchor === null || entry.anchor === undefined) continue;
    if (!isObj(entry.seal)) return bad(`${entry.record_id}: an anchor without a seal`);
    if (entry.anchor.root !== entry.seal.merkle_root || entry.anchor.epoch !== entry.seal.epoch) {
      return bad(`${entry.record_id}: the anchor's root or epoch is not the seal's`);
    }
    anchored++;
  }
  const named = anchored === 0 ? 'no anchor yet' : `${anchored} anchor(s) name their seal's root (not looked up here)`;
  if (receipt.receipt_version === 1) return ok(named);
  const heads = await anchoredHeads(receipt, jobEntry, sealerPk);
  return heads.ok ? ok(`${named}; ${heads.detail}`) : heads;
}

/** @param {any} entry @param {string | undefined} sealerPk */
function sealerCheck(entry, sealerPk) {
  if (sealerPk === undefined || sealerPk === '') return ok('no sealer pinned');
  if (!isObj(entry?.record)) return ok('pending: no job record yet');
  const writer = entry.record.address?.pk;
  if (writer !== sealerPk) return bad(`the job record was written by ${String(writer)}, not ${sealerPk}`);
  if (isObj(entry.seal) && entry.seal.sealer_pk !== sealerPk) return bad(`sealed by ${String(entry.seal.sealer_pk)}`);
  return ok(`written${isObj(entry.seal) ? ' and sealed' : ''} by ${sealerPk}`);
}

/** @param {Record<string, any>} receipt @param {boolean} allowPending */
function sealed(receipt, allowPending) {
  const missing = receipt.records
    .filter((/** @type {any} */ r) => r.record === null || r.seal === null)
    .map((/** @type {any} */ r) => r.record_id);
  const complete =
    receipt.job !== null && missing.length === 0 && receipt.records.some((/** @type {any} */ r) => r.role === 'job');
  if (complete) return ok('every record is sealed');
  if (receipt.status === 'complete')
    return bad(`marked complete, but not sealed: ${missing.join(', ') || 'no job record'}`);
  const why = receipt.pending.join('; ') || missing.join(', ');
  return allowPending ? ok(`pending (allowed): ${why}`) : bad(`pending: ${why}`);
}
