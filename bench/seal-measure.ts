// What both sealer processes (bench/seal-process.ts over SQLite, bench/mongo-seal-process.ts over MongoDB) do
// once their store is open: seal one epoch through ProofStore.sealEpoch, as the auto-sealer does, and send back
// its time and memory. Started by sealInChildProcess (bench/proof-store.ts) with fork(); the key comes over IPC.
import { keyPairFromSecret } from '../core/identity.js';
import { GENESIS_PREV_HASH } from '../core/proof-types.js';
import { createSealOverTree } from '../core/seal.js';
import type { ProofStore } from '../store/proof-store.js';

export interface SealJob {
  secretKey: string;
  epoch: number;
  sealedAt: string;
}

export interface SealProcessResult {
  ms: number;
  /** CPU time of the seal (user + system, all threads): steadier than `ms` on a shared machine. */
  cpuMs: number;
  /** RSS once loaded, before opening the store, and the process's peak (MiB). */
  rssStartMiB: number;
  rssPeakMiB: number;
  sealHash: string;
  records: number;
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

/** On the parent's job: opens the store (`open`), seals, closes it (`close`), answers and exits. */
export function serveSealJob<J extends SealJob>(
  open: (job: J) => Promise<ProofStore>,
  close: () => Promise<void>,
): void {
  process.once('message', (job: J) => {
    void (async () => {
      const rssStartMiB = mib(process.memoryUsage().rss);
      const store = await open(job);
      const signer = keyPairFromSecret(job.secretKey);
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      const { seal } = await store.sealEpoch(signer.publicKey, job.epoch, (tree) =>
        createSealOverTree(signer.secretKey, {
          epoch: job.epoch,
          tree,
          prevSealHash: GENESIS_PREV_HASH,
          sealedAt: job.sealedAt,
        }),
      );
      const ms = performance.now() - start;
      const cpu = process.cpuUsage(cpu0);
      await close();
      const result: SealProcessResult = {
        ms,
        cpuMs: (cpu.user + cpu.system) / 1000,
        rssStartMiB,
        rssPeakMiB: Math.round(process.resourceUsage().maxRSS / 1024),
        sealHash: seal.seal_hash,
        records: seal.record_count,
      };
      process.send!(result, () => process.exit(0));
    })().catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
  });
}
