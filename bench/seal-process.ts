// A sealer process of its own, as an operator runs one beside the writers: opens the store file the bench
// wrote and seals one epoch (bench/seal-measure.ts). Started by benchSeal (bench/proof-store.ts).
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { serveSealJob, type SealJob } from './seal-measure.js';

export interface SealProcessJob extends SealJob {
  path: string;
}

let db: ReturnType<typeof openSqlite> | undefined;
serveSealJob<SealProcessJob>(
  async (job) => createSqliteProofStore((db = openSqlite(job.path))),
  async () => {
    db?.close();
  },
);
