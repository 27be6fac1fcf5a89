/**
 * The receipt of an openEO batch job (docs/protocol.md §16.12): the job's request as sent (with its signature when
 * it was signed), who authenticated it, the finished job's assets, and for each asset its `imagery/openeo_result`
 * record with the seal, audit path and anchor that prove it, plus each sealer's chain; built from the same parts
 * as a compound job's receipt (activities/proof/job-receipt.ts). Verification is core/openeo/receipt.ts.
 */
import { anchorView } from '../../core/anchor-view.js';
import { OPENEO_RECEIPT_VERSION, type OpenEoReceipt } from '../../core/openeo/receipt.js';
import type { ReceiptRecord } from '../../core/receipt.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { OpenEoJob } from '../../store/openeo-job-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { sealChains } from './job-receipt.js';
import { readProof } from './proof-ingest.js';

export interface OpenEoReceiptSources {
  proofs: ProofStore;
  ledger: LedgerStore;
  networkPassphrase?: string | undefined;
}

export async function buildOpenEoReceipt(sources: OpenEoReceiptSources, job: OpenEoJob): Promise<OpenEoReceipt> {
  const pending: string[] = [];
  const finished = job.status === 'finished';
  if (!finished) pending.push(`the job is ${job.status}, not finished`);
  const records: ReceiptRecord[] = [];
  for (const asset of finished ? job.assets : []) {
    const bundle = await readProof(sources.proofs, asset.record_id);
    if (bundle === null) pending.push(`record ${asset.record_id} is not in the store yet`);
    else if (bundle.seal === null) {
      pending.push(`record ${asset.record_id}: epoch ${bundle.record.address.epoch} is not sealed yet`);
    }
    const seal = bundle?.seal ?? null;
    const anchor = seal === null ? null : await sources.ledger.anchor(seal.sealer_pk, seal.epoch);
    records.push({
      role: 'step',
      step_id: asset.name,
      record_id: asset.record_id,
      record: bundle?.record ?? null,
      seal,
      proof: bundle?.proof ?? null,
      anchor: anchorView(anchor, sources.networkPassphrase),
    });
  }
  return {
    openeo_receipt_version: OPENEO_RECEIPT_VERSION,
    status: pending.length === 0 ? 'complete' : 'pending',
    job_id: job.id,
    pending,
    request: { body: job.request, authenticated_by: job.authenticated_by },
    job: finished
      ? {
          id: job.id,
          status: job.status,
          process_graph_sha256: job.process_graph_sha256,
          costs: job.costs ?? 0,
          assets: job.assets.map(({ name, record_id, sha256, bytes, format, media_type, cost }) => ({
            name,
            record_id,
            sha256,
            bytes,
            format,
            media_type,
            cost,
          })),
        }
      : null,
    records,
    seal_chains: await sealChains(sources.proofs, records),
  };
}
