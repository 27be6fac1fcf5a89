/**
 * One-byte changes to a complete job receipt (docs/protocol.md §15), each with the check that must fail first.
 * Shared by the receipt test and scripts/gen-conformance.ts (the tampered conformance vectors).
 * Each expects a sealed receipt whose records are [job, step…] and whose job has at least one step record.
 */
import type { JobReceipt } from '../../core/receipt.js';

type Obj = Record<string, unknown>;

/** The same text with its last character replaced by another (hex stays hex). */
export const flip = (text: string): string => {
  const last = text.slice(-1);
  const other = last === '0' ? '1' : /[0-9a-f]/.test(last) ? '0' : last === 'a' ? 'b' : 'a';
  return text.slice(0, -1) + other;
};

export interface ReceiptTamper {
  name: string;
  expected: string;
  apply: (receipt: JobReceipt) => void;
  /** Verified with these options (conformance vector spelling); none when absent. */
  options?: { allow_pending?: boolean };
  /** False for a receipt that lacks the part the tamper changes (a delegation chain); applies to any when absent. */
  appliesTo?: (receipt: JobReceipt) => boolean;
}

const v1 = (r: JobReceipt) => r.receipt_version === 1;
const v2 = (r: JobReceipt) => r.receipt_version === 2;
/** The head of the job record's sealer. */
const head = (r: JobReceipt) =>
  r.seal_heads!.find((h) => h.head.sealer_pk === r.records[0]!.seal!.sealer_pk)!.head as unknown as Obj & {
    tree_size: number;
    first_epoch: number;
  };
const edit = (o: Obj, key: string) => void (o[key] = flip(String(o[key])));
const payload = (r: JobReceipt, i: number) => r.records[i]!.record!.payload as Obj;
const firstStep = (r: JobReceipt) => (r.request.body.steps as Obj[])[0]!;

export const RECEIPT_TAMPERS: readonly ReceiptTamper[] = [
  {
    name: 'receipt_version',
    expected: 'receipt_format',
    apply: (r) => void ((r as unknown as Obj).receipt_version = 3),
  },
  {
    name: 'request step id',
    expected: 'request_signature',
    apply: (r) => void (firstStep(r).id = flip(String(firstStep(r).id))),
  },
  {
    name: 'request budget',
    expected: 'request_signature',
    apply: (r) => void (r.request.body.budget_credits = Number(r.request.body.budget_credits) + 1e-8),
  },
  {
    name: 'request signature',
    expected: 'request_signature',
    apply: (r) => void (r.request.body.signature = flip(String(r.request.body.signature))),
  },
  {
    name: 'requester key',
    expected: 'request_signature',
    apply: (r) => void (r.request.body.requester_pk = flip(String(r.request.body.requester_pk))),
  },
  { name: 'job id', expected: 'job_id', apply: (r) => void (r.job_id = flip(r.job_id)) },
  { name: 'answer job id', expected: 'job_id', apply: (r) => void (r.job!.job_id = flip(r.job!.job_id)) },
  {
    name: 'job record payload job_hash',
    expected: 'job_record',
    apply: (r) => void (payload(r, 0).job_hash = flip(String(payload(r, 0).job_hash))),
  },
  {
    name: 'job record signature',
    expected: 'job_record',
    apply: (r) => void (r.records[0]!.record!.signature = flip(r.records[0]!.record!.signature)),
  },
  {
    name: 'job record hash',
    expected: 'job_record',
    apply: (r) => void (r.records[0]!.record!.record_hash = flip(r.records[0]!.record!.record_hash)),
  },
  {
    name: 'job record id',
    expected: 'job_record',
    apply: (r) => void (r.records[0]!.record_id = flip(r.records[0]!.record_id)),
  },
  {
    name: 'answer job_hash',
    expected: 'job_hash',
    apply: (r) => void (r.job!.proof!.job_hash = flip(r.job!.proof!.job_hash)),
  },
  {
    name: 'step output',
    expected: 'step_outputs',
    apply: (r) => {
      const step = r.job!.steps.find((s) => s.status === 'complete')!;
      step.output = { ...step.output, tampered: true };
    },
  },
  { name: 'step record payload', expected: 'step_records', apply: (r) => void (payload(r, 1).tampered = true) },
  {
    name: 'step record signature',
    expected: 'step_records',
    apply: (r) => void (r.records[1]!.record!.signature = flip(r.records[1]!.record!.signature)),
  },
  {
    name: 'step record id',
    expected: 'step_records',
    apply: (r) => void (r.records[1]!.record_id = flip(r.records[1]!.record_id)),
  },
  {
    name: 'inclusion path hash',
    expected: 'inclusion',
    apply: (r) => {
      const hashes = r.records[0]!.proof!.hashes;
      hashes[0] = flip(hashes[0]!);
    },
  },
  { name: 'inclusion leaf index', expected: 'inclusion', apply: (r) => void (r.records[0]!.proof!.leaf_index ^= 1) },
  {
    name: 'seal merkle root',
    expected: 'inclusion',
    apply: (r) => void (r.records[0]!.seal!.merkle_root = flip(r.records[0]!.seal!.merkle_root)),
  },
  {
    name: 'seal signature',
    expected: 'inclusion',
    apply: (r) => void (r.records[0]!.seal!.signature = flip(r.records[0]!.seal!.signature)),
  },
  {
    name: 'chain seal prev_epoch_hash',
    expected: 'seal_chain',
    appliesTo: v1,
    apply: (r) => {
      const seal = r.seal_chains![0]!.seals[0]!;
      seal.prev_epoch_hash = flip(seal.prev_epoch_hash);
    },
  },
  { name: 'seal chain dropped', expected: 'seal_chain', appliesTo: v1, apply: (r) => void (r.seal_chains = []) },
  // Version 2 (docs/protocol.md §15.4): the head of the job record's sealer and the seal's proof in it.
  { name: 'seal head signature', expected: 'seal_chain', appliesTo: v2, apply: (r) => void edit(head(r), 'signature') },
  { name: 'seal head root_hash', expected: 'seal_chain', appliesTo: v2, apply: (r) => void edit(head(r), 'root_hash') },
  {
    name: 'seal head tree_size (one more seal claimed)',
    expected: 'seal_chain',
    appliesTo: v2,
    apply: (r) => void (head(r).tree_size += 1),
  },
  {
    name: 'seal head first_epoch',
    expected: 'seal_chain',
    appliesTo: v2,
    apply: (r) => void (head(r).first_epoch += 1),
  },
  { name: 'seal head sealer_pk', expected: 'seal_chain', appliesTo: v2, apply: (r) => void edit(head(r), 'sealer_pk') },
  { name: 'seal heads dropped', expected: 'seal_chain', appliesTo: v2, apply: (r) => void (r.seal_heads = []) },
  {
    name: 'seal proof node',
    expected: 'seal_chain',
    appliesTo: (r) => v2(r) && r.records[0]!.seal_proof!.hashes.length > 0,
    apply: (r) => void (r.records[0]!.seal_proof!.hashes[0] = flip(r.records[0]!.seal_proof!.hashes[0]!)),
  },
  {
    name: 'seal proof leaf_index (another epoch)',
    expected: 'seal_chain',
    appliesTo: (r) => v2(r) && r.records[0]!.seal_proof!.tree_size > 1,
    apply: (r) => void (r.records[0]!.seal_proof!.leaf_index ^= 1),
  },
  {
    name: 'seal proof tree_size',
    expected: 'seal_chain',
    appliesTo: v2,
    apply: (r) => void (r.records[0]!.seal_proof!.tree_size += 1),
  },
  {
    name: 'seal proof null on a sealed record',
    expected: 'seal_chain',
    appliesTo: v2,
    apply: (r) => void (r.records[0]!.seal_proof = null),
  },
  {
    name: 'record entry without its seal_proof field',
    expected: 'receipt_format',
    appliesTo: v2,
    apply: (r) => void delete (r.records[0] as unknown as Obj).seal_proof,
  },
  {
    name: 'anchored head dropped',
    expected: 'anchor',
    appliesTo: (r) => v2(r) && r.seal_heads![0]!.anchored !== null,
    apply: (r) => void (r.seal_heads![0]!.anchored = null),
  },
  {
    name: 'anchored head signature',
    expected: 'anchor',
    appliesTo: (r) => v2(r) && r.seal_heads![0]!.anchored !== null,
    apply: (r) => void edit(r.seal_heads![0]!.anchored!.head as unknown as Obj, 'signature'),
  },
  {
    name: 'consistency proof node',
    expected: 'anchor',
    appliesTo: (r) => v2(r) && (r.seal_heads![0]!.anchored?.consistency.length ?? 0) > 0,
    apply: (r) => {
      const proof = r.seal_heads![0]!.anchored!.consistency;
      proof[0] = flip(proof[0]!);
    },
  },
  {
    // Outside the nine signed fields, so no signature breaks: the shape check must refuse it, in every verifier.
    name: 'delegation certificate with an extra unsigned field',
    expected: 'delegation_chain',
    appliesTo: (r) => (r.request.delegation_chain ?? []).length > 0,
    apply: (r) => void ((r.request.delegation_chain![0] as Obj).note = 'not signed'),
  },
  {
    // Absent is not null (docs/protocol.md §15.1): a verifier may not read a missing seal as "not sealed yet".
    name: 'record entry without its seal field, pending allowed',
    expected: 'receipt_format',
    options: { allow_pending: true },
    apply: (r) => void delete (r.records[1] as unknown as Obj).seal,
  },
  {
    name: 'status complete while pending',
    expected: 'sealed',
    apply: (r) =>
      Object.assign(r.records[1]!, { seal: null, proof: null, anchor: null }, v2(r) ? { seal_proof: null } : {}),
  },
];
