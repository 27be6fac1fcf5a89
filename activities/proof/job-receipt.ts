/**
 * Builds a job's receipt (docs/protocol.md §15) from the stores: the signed request kept with the job, the records
 * the job's answer names (their ids as answered: a record may live at its writer-scoped id, docs/security.md §7),
 * each record's proof bundle (readProof, as `/store/proof` serves it), the anchor of each seal, and each
 * sealer's chain from its first seal. Verification is core/receipt.ts's `verifyReceipt`.
 */
import { anchorView } from '../../core/anchor-view.js';
import { RECEIPT_VERSION, type JobReceipt, type ReceiptRecord } from '../../core/receipt.js';
import type { Seal } from '../../core/proof-types.js';
import type { JobStore } from '../../store/job-store.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { readProof } from './proof-ingest.js';

export interface ReceiptSources {
  jobs: JobStore;
  proofs: ProofStore;
  ledger: LedgerStore;
  networkPassphrase?: string | undefined;
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
  return {
    found: true,
    receipt: {
      receipt_version: RECEIPT_VERSION,
      status: pending.length === 0 ? 'complete' : 'pending',
      job_id: job.job_id,
      pending,
      request: job.request,
      job: response,
      records,
      seal_chains: await sealChains(sources.proofs, records),
    },
  };
}

/**
 * Each sealer's seals from its first up to the latest epoch a record needs. Kept simple (no checkpoints): the
 * chain grows by one seal per epoch, about 600 bytes an hour per sealer (docs/protocol.md §15).
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
