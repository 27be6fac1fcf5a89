/**
 * The receipt of an openEO batch job (docs/protocol.md §16.12), a variant of the job receipt (§15) for requests
 * that an API key authenticates and a signature may not cover: the request as sent and who authenticated it, the
 * finished job's assets, each asset's signed `imagery/openeo_result` record with its seal, audit path and anchor,
 * and each sealer's chain. Pure and offline. `verifyOpenEoReceipt` checks the request's signature when it has one,
 * the process graph's hash, that the records are of this job, graph and requester and state exactly the assets
 * and costs the job answers, and (through core/receipt.ts's own checks) each record's inclusion in its sealed
 * epoch, the seal chains and the anchors.
 */
import { canonicalJson } from '../canonical-json.js';
import { sha256Hex } from '../hash.js';
import { isHex } from '../hex.js';
import { checkPublicKey, verifySignature } from '../identity.js';
import { requestSigningMessage } from '../gates/signature.js';
import { checkRecord } from '../proof-record.js';
import { verifyReceipt, type ReceiptRecord } from '../receipt.js';
import type { Seal } from '../proof-types.js';

export const OPENEO_RECEIPT_VERSION = 1;

export interface OpenEoReceiptAsset {
  name: string;
  record_id: string;
  sha256: string;
  bytes: number;
  format: string;
  media_type: string;
  cost: number;
}

export interface OpenEoReceipt {
  openeo_receipt_version: 1;
  status: 'complete' | 'pending';
  job_id: string;
  pending: string[];
  request: {
    /** The body of `POST /jobs` exactly as sent (`requester_pk` and `signature` in it when signed). */
    body: Record<string, unknown>;
    authenticated_by: { api_key_id: string; requester_pk?: string; request_signature?: string };
  };
  /** The finished job; null until it finished. */
  job: {
    id: string;
    status: string;
    process_graph_sha256: string;
    costs: number;
    assets: OpenEoReceiptAsset[];
  } | null;
  /** One per asset (`role: "step"`, `step_id` the asset's name), as in a job receipt's `records`. */
  records: ReceiptRecord[];
  seal_chains: { sealer_pk: string; seals: Seal[] }[];
}

export const OPENEO_RECEIPT_CHECKS = [
  'receipt_format',
  'request_signature',
  'process_graph',
  'asset_records',
  'costs',
  'inclusion',
  'seal_chain',
  'anchor',
  'sealer',
  'sealed',
] as const;
export type OpenEoReceiptCheckName = (typeof OPENEO_RECEIPT_CHECKS)[number];

export interface OpenEoReceiptVerdict {
  ok: boolean;
  checks: { name: OpenEoReceiptCheckName; ok: boolean; detail: string }[];
  failedCheck?: OpenEoReceiptCheckName;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
interface Outcome {
  ok: boolean;
  detail: string;
}
const ok = (detail: string): Outcome => ({ ok: true, detail });
const bad = (detail: string): Outcome => ({ ok: false, detail });

/** Whether a parsed document is an openEO job receipt (for `geofabric receipt verify`, which takes both kinds). */
export const isOpenEoReceipt = (value: unknown): boolean => isObj(value) && 'openeo_receipt_version' in value;

export function verifyOpenEoReceipt(
  value: unknown,
  options: { sealerPk?: string; allowPending?: boolean } = {},
): OpenEoReceiptVerdict {
  const checks: OpenEoReceiptVerdict['checks'] = [];
  const add = (name: OpenEoReceiptCheckName, outcome: () => Outcome) => {
    let result: Outcome;
    try {
      result = outcome();
    } catch (error) {
      result = bad(`malformed receipt: ${(error as Error).message}`);
    }
    checks.push({ name, ...result });
  };
  add('receipt_format', () => format(value));
  if (!checks[0]!.ok) return verdict(checks);
  const receipt = value as OpenEoReceipt;
  const graphHash = () =>
    sha256Hex(canonicalJson((receipt.request.body.process as { process_graph?: unknown } | undefined)?.process_graph));
  add('request_signature', () => requestSignature(receipt));
  add('process_graph', () => {
    if (!isObj(receipt.request.body.process) || !isObj(receipt.request.body.process.process_graph)) {
      return bad('the request holds no process graph');
    }
    if (receipt.job === null) return ok(`pending: ${graphHash()}`);
    return receipt.job.process_graph_sha256 === graphHash()
      ? ok(graphHash())
      : bad(`the job's process_graph_sha256 is not the request's ${graphHash()}`);
  });
  add('asset_records', () => assetRecords(receipt, graphHash(), options.allowPending === true));
  add('costs', () => {
    if (receipt.job === null) return ok('pending: the job has not finished');
    const sum = receipt.job.assets.reduce((total, a) => total + a.cost, 0);
    return Math.abs(sum - receipt.job.costs) < 1e-9
      ? ok(`${receipt.job.costs} credits`)
      : bad(`the job costs ${receipt.job.costs}, its assets ${sum}`);
  });
  // Inclusion, seal chains and anchors are a job receipt's checks (docs/protocol.md §15.2), run on these records.
  const shared = verifyReceipt({
    receipt_version: 1,
    status: receipt.status,
    job_id: receipt.job_id,
    pending: receipt.pending,
    request: { body: {}, delegation_chain: null },
    job: null,
    records: receipt.records,
    seal_chains: receipt.seal_chains,
  });
  for (const name of ['inclusion', 'seal_chain', 'anchor'] as const) {
    const check = shared.checks.find((c) => c.name === name);
    add(name, () =>
      check ? { ok: check.ok, detail: check.detail } : bad(`malformed receipt: ${shared.checks[0]?.detail}`),
    );
  }
  add('sealer', () => {
    if (options.sealerPk === undefined) return ok('no sealer pinned');
    for (const entry of receipt.records) {
      if (entry.record !== null && entry.record.address.pk !== options.sealerPk) {
        return bad(`${entry.record_id} was written by ${entry.record.address.pk}, not ${options.sealerPk}`);
      }
      if (entry.seal !== null && entry.seal.sealer_pk !== options.sealerPk) {
        return bad(`${entry.record_id} was sealed by ${entry.seal.sealer_pk}, not ${options.sealerPk}`);
      }
    }
    return ok(`written and sealed by ${options.sealerPk}`);
  });
  add('sealed', () => {
    const missing = receipt.records.filter((r) => r.record === null || r.seal === null).map((r) => r.record_id);
    if (receipt.job !== null && missing.length === 0) return ok('every record is sealed');
    if (receipt.status === 'complete') return bad(`marked complete, but not sealed: ${missing.join(', ') || 'no job'}`);
    const why = receipt.pending.join('; ') || missing.join(', ');
    return options.allowPending === true ? ok(`pending (allowed): ${why}`) : bad(`pending: ${why}`);
  });
  return verdict(checks);
}

function verdict(checks: OpenEoReceiptVerdict['checks']): OpenEoReceiptVerdict {
  const failed = checks.find((c) => !c.ok);
  return failed ? { ok: false, checks, failedCheck: failed.name } : { ok: true, checks };
}

function format(value: unknown): Outcome {
  if (!isObj(value)) return bad('a receipt is a JSON object');
  if (value.openeo_receipt_version !== OPENEO_RECEIPT_VERSION) {
    return bad(`openeo_receipt_version ${JSON.stringify(value.openeo_receipt_version)} is not 1`);
  }
  if (value.status !== 'complete' && value.status !== 'pending') return bad('status must be complete or pending');
  if (typeof value.job_id !== 'string') return bad('job_id must be a string');
  if (!Array.isArray(value.pending) || !value.pending.every((p) => typeof p === 'string')) {
    return bad('pending must be an array of strings');
  }
  const request = value.request;
  if (!isObj(request) || !isObj(request.body) || !isObj(request.authenticated_by)) {
    return bad('request needs body and authenticated_by objects');
  }
  if (typeof request.authenticated_by.api_key_id !== 'string') return bad('authenticated_by.api_key_id is a string');
  const job = value.job;
  if (job !== null) {
    if (!isObj(job) || job.id !== value.job_id || job.status !== 'finished') {
      return bad('job must be the finished job of job_id, or null');
    }
    if (typeof job.process_graph_sha256 !== 'string' || typeof job.costs !== 'number' || !Array.isArray(job.assets)) {
      return bad('job needs process_graph_sha256, costs and assets');
    }
    for (const [i, a] of job.assets.entries()) {
      const fields = isObj(a) ? a : {};
      const wrong = ['name', 'record_id', 'sha256', 'format', 'media_type'].find((k) => typeof fields[k] !== 'string');
      if (wrong !== undefined || typeof fields.bytes !== 'number' || typeof fields.cost !== 'number') {
        return bad(`job.assets[${i}] needs name, record_id, sha256, bytes, format, media_type and cost`);
      }
    }
  }
  if (!Array.isArray(value.records)) return bad('records must be an array');
  for (const [i, r] of value.records.entries()) {
    if (!isObj(r) || r.role !== 'step' || typeof r.record_id !== 'string' || typeof r.step_id !== 'string') {
      return bad(`records[${i}] needs role "step", step_id (the asset) and record_id`);
    }
    const field = (['record', 'seal', 'proof', 'anchor'] as const).find((k) => r[k] !== null && !isObj(r[k]));
    if (field !== undefined) return bad(`records[${i}].${field} must be an object or null`);
  }
  if (!Array.isArray(value.seal_chains)) return bad('seal_chains must be an array');
  return ok(`openEO receipt version 1, ${value.records.length} record(s)`);
}

function requestSignature(receipt: OpenEoReceipt): Outcome {
  const by = receipt.request.authenticated_by;
  const body = receipt.request.body;
  if (by.request_signature === undefined && by.requester_pk === undefined) {
    if (body.signature !== undefined) return bad('the body carries a signature the job does not name');
    return ok(`not signed: authenticated by API key ${by.api_key_id}`);
  }
  const key = checkPublicKey(by.requester_pk);
  if (!key.ok) return bad(`requester_pk: ${key.detail}`);
  if (!isHex(by.request_signature, 64)) return bad('request_signature must be 128 lowercase hex');
  if (body.requester_pk !== key.value || body.signature !== by.request_signature) {
    return bad("the body's requester_pk and signature are not the ones the job names");
  }
  return verifySignature(key.value, requestSigningMessage(body), by.request_signature)
    ? ok(`signed by requester ${key.value} (API key ${by.api_key_id})`)
    : bad('the signature does not match the canonical request');
}

function assetRecords(receipt: OpenEoReceipt, graphHash: string, allowPending: boolean): Outcome {
  if (receipt.job === null) {
    return receipt.records.length === 0 ? ok('pending: the job has not finished') : bad('records of an unfinished job');
  }
  const assets = receipt.job.assets;
  if (receipt.records.length !== assets.length) {
    return bad(`${assets.length} asset(s), ${receipt.records.length} record(s)`);
  }
  let missing = 0;
  for (const [i, asset] of assets.entries()) {
    const entry = receipt.records[i]!;
    if (entry.step_id !== asset.name || entry.record_id !== asset.record_id) {
      return bad(`records[${i}] is not the record of asset ${asset.name} (${asset.record_id})`);
    }
    if (entry.record === null) {
      missing++;
      continue;
    }
    const checked = checkRecord(entry.record);
    if (!checked.ok) return bad(`${asset.record_id}: ${checked.detail}`);
    const record = checked.value;
    if (record.id !== asset.record_id) return bad(`the record is ${record.id}, not ${asset.record_id}`);
    if (record.payload_type !== 'imagery/openeo_result') return bad(`${record.id} is ${record.payload_type}`);
    const payload = record.payload as Obj;
    if (payload.job_id !== receipt.job_id) return bad(`${record.id} is of job ${String(payload.job_id)}`);
    if (payload.process_graph_sha256 !== graphHash) return bad(`${record.id} is of another process graph`);
    if (canonicalJson(payload.authenticated_by ?? null) !== canonicalJson(receipt.request.authenticated_by)) {
      return bad(`${record.id} names another requester than the request's`);
    }
    const result = isObj(payload.result) ? payload.result : {};
    const stated = { sha256: asset.sha256, bytes: asset.bytes, format: asset.format, media_type: asset.media_type };
    if (canonicalJson(result) !== canonicalJson(stated))
      return bad(`${record.id} states another file than ${asset.name}`);
    if (payload.cost !== asset.cost) return bad(`${record.id} states another cost than ${asset.name}`);
  }
  if (missing > 0 && !allowPending && receipt.status !== 'pending') {
    return bad(`${missing} record(s) missing from a receipt marked complete`);
  }
  return ok(
    `${assets.length - missing} asset record(s) of this job, graph and requester${missing ? `, ${missing} pending` : ''}`,
  );
}
