// The MongoDB adapter's sealer in a process of its own, as bench/seal-process.ts is the SQLite one's: connects to
// the store the bench filled and seals one epoch (bench/seal-measure.ts). Started by benchMongoSeal
// (bench/mongo-seal.ts).
import { MongoClient } from 'mongodb';
import type { ProofStore } from '../store/proof-store.js';
import { createMongoProofStore } from '../store/mongo/proof-store.js';
import { serveSealJob, type SealJob } from './seal-measure.js';

export interface MongoSealProcessJob extends SealJob {
  uri: string;
  dbName: string;
}

let client: MongoClient | undefined;
let store: ProofStore | undefined;
serveSealJob<MongoSealProcessJob>(
  async (job) => {
    // As bin/stores.ts connects: the driver's default options.
    client = await new MongoClient(job.uri).connect();
    return (store = await createMongoProofStore(client.db(job.dbName)));
  },
  async () => {
    await store?.close();
    await client?.close();
  },
);
