/**
 * Builds a job's receipt (docs/protocol.md §15) from the stores: the signed request kept with the job, the records
 * the job's answer names (their ids as answered: a record may live at its writer-scoped id, docs/security.md §7),
 * each record's proof bundle (readProof, as `/store/proof` serves it), the anchor of each seal, and per sealer the
 * stored head of its seal log signed by this node with each seal's inclusion proof read from the log's stored nodes
 * (version 2, docs/protocol.md §15.4; seal-log-keeper.ts), or its
 * chain from its first seal when no node key signs heads (version 1). Verification is core/receipt.ts's
 * `verifyReceipt`.
 */
import { anchorView } from '../../core/anchor-view.js';
import type { KeyPair } from '../../core/identity.js';
import { sealHeadsFor, type JobReceipt, type ReceiptRecord, type StoredSealLog } from '../../core/receipt.js';
import type { Seal } from '../../core/proof-types.js';
import type { JobStore } from '../../store/job-store.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { readProof } from './proof-ingest.js';
import { loadSealLog } from './seal-log-keeper.js';

export interface ReceiptSources {
  jobs: JobStore;
  proofs: ProofStore;
  ledger: LedgerStore;
  networkPassphrase?: string | undefined;
  /** The node's key: it signs the heads of the seal logs a version-2 receipt carries. Without it, version 1. */
  headSigner?: KeyPair | undefined;
}

export type ReceiptLookup = { found: true; receipt: JobReceipt } | { found: false; reason: 'no_job' | 'no_request' };

export async function buildJobReceipt(sources: ReceiptSources, jobId: string): Promise<ReceiptLookup> {
  const job = await sources.jobs.get(jobId);
  if (job === null) return { found: false, reason: 'no_job' };
  if (job.request === undefined) return { found: false, reason: 'no_request' };
  const response = job.response;
  const pending: string[] = [];
  const named: { role: ReceiptRecord['role']; step_id: string | null; record_id: string }[] = [];
  if (response === null) pending.push('the job is still running');
  else {
    if (response.proof) named.push({ role: 'job', step_id: null, record_id: response.proof.record_id });
    for (const step of response.steps) {
      if (step.record_id !== null) named.push({ role: 'step', step_id: step.id, record_id: step.record_id });
    }
    // A fusion's inputs: the signed readings it names (docs/protocol.md §2.10), checked like the job's own records.
    for (const step of response.steps) {
      const ids = step.type === 'sensor_fusion' && step.status === 'complete' ? step.output.record_ids : undefined;
      if (!Array.isArray(ids)) continue;
      for (const id of ids) if (typeof id === 'string') named.push({ role: 'input', step_id: step.id, record_id: id });
    }
  }
  const records: ReceiptRecord[] = [];
  for (const entry of named) {
    const bundle = await readProof(sources.proofs, entry.record_id);
    if (bundle === null) pending.push(`record ${entry.record_id} is not in the store yet`);
    else if (bundle.seal === null)
      pending.push(`record ${entry.record_id}: epoch ${bundle.record.address.epoch} is not sealed yet`);
    const seal = bundle?.seal ?? null;
    const anchor = seal === null ? null : await sources.ledger.anchor(seal.sealer_pk, seal.epoch);
    records.push({
      ...entry,
      record: bundle?.record ?? null,
      seal,
      proof: bundle?.proof ?? null,
      anchor: anchorView(anchor, sources.networkPassphrase),
    });
  }
  const common = { job_id: job.job_id, pending, request: job.request, job: response, records };
  if (sources.headSigner === undefined) {
    const seal_chains = await sealChains(sources.proofs, records);
    const status = pending.length === 0 ? 'complete' : 'pending';
    return { found: true, receipt: { receipt_version: 1, status, ...common, seal_chains } };
  }
  const logs = new Map<string, StoredSealLog>();
  for (const { seal } of records) {
    if (seal === null || logs.has(seal.sealer_pk)) continue;
    const log = await loadSealLog(sources.proofs, sources.headSigner, seal.sealer_pk, records);
    if (log !== null) logs.set(seal.sealer_pk, log);
  }
  const seal_heads = sealHeadsFor(records, logs, sources.headSigner.secretKey);
  for (const r of records) {
    if (r.seal !== null && r.seal_proof === null)
      pending.push(`record ${r.record_id}: its seal is not in its sealer's log yet`);
  }
  const status = pending.length === 0 ? 'complete' : 'pending';
  return { found: true, receipt: { receipt_version: 2, status, ...common, seal_heads } };
}

/**
 * Version 1: each sealer's seals from its first up to the latest epoch a record needs; the chain grows by one seal
 * per epoch, about 600 bytes an hour per sealer (docs/protocol.md §15.1).
 */
export async function sealChains(proofs: ProofStore, records: readonly ReceiptRecord[]) {
  const latest = new Map<string, number>();
  for (const { seal } of records) {
    if (seal !== null) latest.set(seal.sealer_pk, Math.max(latest.get(seal.sealer_pk) ?? -1, seal.epoch));
  }
  const chains: { sealer_pk: string; seals: Seal[] }[] = [];
  for (const [sealer, through] of [...latest].sort(([a], [b]) => a.localeCompare(b))) {
    chains.push({ sealer_pk: sealer, seals: (await proofs.sealsOf(sealer)).filter((s) => s.epoch <= through) });
  }
  return chains;
}
