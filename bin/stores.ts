import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import type { ApiKeyStore } from '../store/api-key-store.js';
import type { AuditStore } from '../store/audit-store.js';
import type { JobStore } from '../store/job-store.js';
import type { LedgerStore } from '../store/ledger-store.js';
import { createMongoApiKeyStore } from '../store/mongo/api-key-store.js';
import { createMongoAuditStore } from '../store/mongo/audit-store.js';
import { createMongoJobStore } from '../store/mongo/job-store.js';
import { createMongoLedgerStore } from '../store/mongo/ledger-store.js';
import { createMongoProofStore } from '../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../store/mongo/rate-limit-store.js';
import { createMongoWorkerRegistry } from '../store/mongo/worker-registry.js';
import { createSqliteApiKeyStore } from '../store/sqlite/api-key-store.js';
import { createSqliteAuditStore } from '../store/sqlite/audit-store.js';
import { createSqliteJobStore } from '../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../store/sqlite/ledger-store.js';
import { createOutcomeBatch } from '../store/outcome-batch.js';
import { createSqliteWorkerRegistry } from '../store/sqlite/worker-registry.js';
import type { WorkerRegistry } from '../store/worker-registry.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';
import type { ProofStore } from '../store/proof-store.js';
import type { RateLimitStore } from '../store/types.js';
import type { BlobStore } from '../store/blob-store.js';
import { createMongoBlobStore } from '../store/mongo/blob-store.js';
import { createSqliteBlobStore } from '../store/sqlite/blob-store.js';
import type { OpenEoJobStore } from '../store/openeo-job-store.js';
import { createMongoOpenEoJobStore } from '../store/mongo/openeo-job-store.js';
import { createSqliteOpenEoJobStore } from '../store/sqlite/openeo-job-store.js';
import type { Config } from './config.js';
import { connectingToMongo } from './startup-errors.js';

export interface Stores {
  rateLimits: RateLimitStore;
  proofs: ProofStore;
  /**
   * Chat completions' outcomes are counted in memory and written in batches (store/outcome-batch.ts); `close`
   * writes what is counted, so a graceful shutdown loses none.
   */
  workers: WorkerRegistry;
  apiKeys: ApiKeyStore;
  jobs: JobStore;
  audit: AuditStore;
  /** The credit ledger: entries, settlements, epoch anchors. */
  ledger: LedgerStore;
  /** Large step outputs, out of workflow payloads (core/output-blobs.ts). */
  blobs: BlobStore;
  /** openEO batch jobs and their result files (docs/protocol.md §16.11). */
  openEoJobs: OpenEoJobStore;
  close(): Promise<void>;
}

type OpenStores = Omit<Stores, 'close'>;

/** Closes every store, then the connection they share (stores never own it). */
function closing(stores: OpenStores, closeConnection: () => Promise<void> | void): Stores {
  return {
    ...stores,
    close: async () => {
      await Promise.all(Object.values(stores).map((store) => store.close()));
      await closeConnection();
    },
  };
}

/** The embedded default is SQLite under DATA_DIR; MONGODB_URI switches to the central MongoDB. */
export async function openStores(config: Config): Promise<Stores> {
  if (config.mongo) {
    const { uri } = config.mongo;
    const client = await connectingToMongo(uri, () => new MongoClient(uri).connect());
    const db = client.db(config.mongo.db);
    const stores: OpenStores = {
      rateLimits: await createMongoRateLimitStore(db),
      proofs: await createMongoProofStore(db),
      workers: createOutcomeBatch(
        await createMongoWorkerRegistry(db, { outcomeRetentionMs: config.workerOutcomeRetentionMs }),
      ),
      apiKeys: await createMongoApiKeyStore(db),
      jobs: await createMongoJobStore(db, { jobRetentionMs: config.jobRetentionMs }),
      audit: await createMongoAuditStore(db),
      ledger: await createMongoLedgerStore(db),
      blobs: await createMongoBlobStore(db, { blobRetentionMs: config.blobRetentionMs }),
      openEoJobs: await createMongoOpenEoJobStore(db, { jobRetentionMs: config.jobRetentionMs }),
    };
    return closing(stores, () => client.close());
  }
  mkdirSync(config.dataDir, { recursive: true });
  // STORE_MAX_MB caps the file: a write past it fails as storage_full (507) and changes nothing.
  const db = openSqlite(join(config.dataDir, 'geofabric.db'), { maxBytes: config.storeMaxBytes });
  const stores: OpenStores = {
    rateLimits: createSqliteRateLimitStore(db),
    proofs: createSqliteProofStore(db),
    workers: createOutcomeBatch(
      createSqliteWorkerRegistry(db, { outcomeRetentionMs: config.workerOutcomeRetentionMs }),
    ),
    apiKeys: createSqliteApiKeyStore(db),
    jobs: createSqliteJobStore(db, { jobRetentionMs: config.jobRetentionMs }),
    audit: createSqliteAuditStore(db),
    ledger: createSqliteLedgerStore(db),
    blobs: createSqliteBlobStore(db, { blobRetentionMs: config.blobRetentionMs }),
    openEoJobs: createSqliteOpenEoJobStore(db, { jobRetentionMs: config.jobRetentionMs }),
  };
  return closing(stores, () => {
    db.close();
  });
}
