import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { createMongoProofStore } from '../store/mongo/proof-store.js';
import { createMongoRateLimitStore } from '../store/mongo/rate-limit-store.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';
import type { ProofStore } from '../store/proof-store.js';
import type { RateLimitStore } from '../store/types.js';
import type { Config } from './config.js';

export interface Stores {
  rateLimits: RateLimitStore;
  proofs: ProofStore;
  close(): Promise<void>;
}

/** The embedded default is SQLite under DATA_DIR; MONGODB_URI switches to the central MongoDB. */
export async function openStores(config: Config): Promise<Stores> {
  if (config.mongo) {
    const client = await new MongoClient(config.mongo.uri).connect();
    const db = client.db(config.mongo.db);
    const rateLimits = await createMongoRateLimitStore(db);
    const proofs = await createMongoProofStore(db);
    return {
      rateLimits,
      proofs,
      close: async () => {
        await Promise.all([rateLimits.close(), proofs.close()]);
        await client.close();
      },
    };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const db = openSqlite(join(config.dataDir, 'geofabric.db'));
  const rateLimits = createSqliteRateLimitStore(db);
  const proofs = createSqliteProofStore(db);
  return {
    rateLimits,
    proofs,
    close: async () => {
      await Promise.all([rateLimits.close(), proofs.close()]);
      db.close();
    },
  };
}
