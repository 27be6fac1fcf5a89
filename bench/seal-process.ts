// A sealer process of its own, as an operator runs one beside the writers: opens the store file the bench
// wrote, seals one epoch through ProofStore.sealEpoch (as the auto-sealer does) and sends back its time and
// memory. Started by benchSeal (bench/proof-store.ts) with fork(); the key comes over IPC, not argv.
import { keyPairFromSecret } from '../core/identity.js';
import { GENESIS_PREV_HASH } from '../core/proof-types.js';
import { createSealOverTree } from '../core/seal.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';

export interface SealProcessJob {
  path: string;
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

process.once('message', (job: SealProcessJob) => {
  void (async () => {
    const rssStartMiB = mib(process.memoryUsage().rss);
    const db = openSqlite(job.path);
    const store = createSqliteProofStore(db);
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
    db.close();
    const result: SealProcessResult = {
      ms,
      cpuMs: (cpu.user + cpu.system) / 1000,
      rssStartMiB,
      rssPeakMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      sealHash: seal.seal_hash,
      records: seal.record_count,
    };
    process.send!(result, () => process.exit(0));
  })();
});
