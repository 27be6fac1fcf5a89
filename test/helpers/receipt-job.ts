/**
 * A real job and its receipt (docs/protocol.md §15): a gateway on a fixed clock with a fake local runtime runs a
 * two-step inference job (the second depends on the first), optionally delegated, and seals its epoch.
 * Shared by the receipt CLI test and scripts/gen-conformance.ts.
 */
import type { DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_JOB_CELL } from '../../core/h3-cell.js';
import type { KeyPair } from '../../core/identity.js';
import type { JobReceipt } from '../../core/receipt.js';
import { startFakeRuntime } from './fake-openai-runtime.js';
import { startGateway } from './gateway.js';
import { certHeader, signJob } from './jobs.js';
import { sealThrough } from './proofs.js';

export const RECEIPT_JOB_MODEL = 'lfm2.5-1.2b-instruct';

export const twoStepJob = (nonce: string) => ({
  h3_cell: DEFAULT_JOB_CELL,
  steps: [
    { id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'Three parks in Rome' }], max_tokens: 64 },
    { id: 'pick', type: 'inference', depends_on: 'ask', messages: [{ role: 'user', content: 'Pick one' }] },
  ],
  budget_credits: 0.1,
  nonce,
});

export interface ReceiptJob {
  gateway: Awaited<ReturnType<typeof startGateway>>;
  signed: ReturnType<typeof signJob>;
  jobId: string;
  epoch: number;
  pending: JobReceipt;
  /** Sealed: call seal() first. */
  receipt: () => Promise<JobReceipt>;
  seal: () => Promise<void>;
  close: () => Promise<void>;
}

export async function runReceiptJob(options: {
  requester: KeyPair;
  node?: KeyPair;
  nowMs: number;
  nonce?: string;
  chain?: DelegationCertificate[];
  /** The job to sign; default twoStepJob. */
  job?: (nonce: string) => Record<string, unknown>;
}): Promise<ReceiptJob> {
  const runtime = await startFakeRuntime(RECEIPT_JOB_MODEL, () => ({
    content: 'Villa Borghese, Villa Ada, Villa Pamphili.',
    usage: { prompt_tokens: 12, completion_tokens: 9 },
  }));
  const gateway = await startGateway({
    clock: () => options.nowMs,
    ...(options.node ? { node: options.node } : {}),
    swarm: { workerRuntimeUrl: runtime.url, workerModels: [RECEIPT_JOB_MODEL] },
  });
  const close = async () => {
    await gateway.close();
    await runtime.close();
  };
  try {
    const signed = signJob(options.requester, (options.job ?? twoStepJob)(options.nonce ?? 'receipt-1'));
    const headers = options.chain
      ? { ...signed.headers, 'x-svc-delegation-cert': certHeader(options.chain) }
      : signed.headers;
    const res = await gateway.post('/v1/compute', signed.body, headers);
    if (res.status !== 200) throw new Error(`job failed: ${res.text}`);
    const { job_id: jobId, epoch } = res.body as { job_id: string; epoch: number };
    const fetchReceipt = async () => {
      const got = await gateway.get(`/v1/compute/${jobId}/receipt`);
      if (got.status !== 200) throw new Error(`receipt: ${got.text}`);
      return got.body as JobReceipt;
    };
    const pending = await fetchReceipt();
    return {
      gateway,
      signed,
      jobId,
      epoch,
      pending,
      receipt: fetchReceipt,
      seal: async () => void (await sealThrough(gateway.proofs, gateway.node, epoch)),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
