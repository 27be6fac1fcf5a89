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

const payload = (r: JobReceipt, i: number) => r.records[i]!.record!.payload as Obj;
const firstStep = (r: JobReceipt) => (r.request.body.steps as Obj[])[0]!;

export const RECEIPT_TAMPERS: readonly ReceiptTamper[] = [
  {
    name: 'receipt_version',
    expected: 'receipt_format',
    apply: (r) => void ((r as unknown as Obj).receipt_version = 2),
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
    apply: (r) => {
      const seal = r.seal_chains[0]!.seals[0]!;
      seal.prev_epoch_hash = flip(seal.prev_epoch_hash);
    },
  },
  { name: 'seal chain dropped', expected: 'seal_chain', apply: (r) => void (r.seal_chains = []) },
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
    apply: (r) => Object.assign(r.records[1]!, { seal: null, proof: null, anchor: null }),
  },
];
