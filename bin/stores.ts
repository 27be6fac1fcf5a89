import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { createMongoRateLimitStore } from '../store/mongo/rate-limit-store.js';
import { openSqlite } from '../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../store/sqlite/rate-limit-store.js';
import type { RateLimitStore } from '../store/types.js';
import type { Config } from './config.js';

export interface Stores {
  rateLimits: RateLimitStore;
  close(): Promise<void>;
}

/** The embedded default is SQLite under DATA_DIR; MONGODB_URI switches to the central MongoDB. */
export async function openStores(config: Config): Promise<Stores> {
  if (config.mongo) {
    const client = await new MongoClient(config.mongo.uri).connect();
    const rateLimits = await createMongoRateLimitStore(client.db(config.mongo.db));
    return { rateLimits, close: () => client.close() };
  }
  mkdirSync(config.dataDir, { recursive: true });
  const db = openSqlite(join(config.dataDir, 'geofabric.db'));
  const rateLimits = createSqliteRateLimitStore(db);
  return {
    rateLimits,
    close: async () => {
      await rateLimits.close();
      db.close();
    },
  };
}
