// The MongoDB adapter's sealer in a process of its own, as bench/seal-process.ts is the SQLite one's: connects to
// the store the bench filled, seals one epoch through ProofStore.sealEpoch (as the auto-sealer does,
// activities/proof/epoch-sealer.ts) and sends back its time and memory in the same shape. Started by
// benchMongoSeal (bench/mongo-seal.ts) with fork(); the key comes over IPC, not argv.
import { MongoClient } from 'mongodb';
import { keyPairFromSecret } from '../core/identity.js';
import { GENESIS_PREV_HASH } from '../core/proof-types.js';
import { createSealOverTree } from '../core/seal.js';
import { createMongoProofStore } from '../store/mongo/proof-store.js';
import type { SealProcessResult } from './seal-process.js';

export interface MongoSealProcessJob {
  uri: string;
  dbName: string;
  secretKey: string;
  epoch: number;
  sealedAt: string;
}

const mib = (bytes: number) => Math.round(bytes / 2 ** 20);

process.once('message', (job: MongoSealProcessJob) => {
  void (async () => {
    const rssStartMiB = mib(process.memoryUsage().rss);
    // As bin/stores.ts connects: the driver's default options.
    const client = await new MongoClient(job.uri).connect();
    const store = await createMongoProofStore(client.db(job.dbName));
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
    await store.close();
    await client.close();
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
