import { randomUUID } from 'node:crypto';
import { MongoClient, type Db } from 'mongodb';

/** Live suites run only against real engines: a missing variable is a setup error, never a skip. */
export function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run the live suites with \`npm run test:live\` (scripts/engines.sh starts the engines)`,
    );
  }
  return value;
}

/**
 * The MongoDB-protocol server of MONGODB_URI (FerretDB in CI, any MongoDB), connected for the enclosing
 * `describe`. Each test takes its own database from `freshDb` and drops it, so a shared server is left as it
 * was found.
 */
export function useLiveMongo(): { uri: string; client: MongoClient; freshDb: () => Db } {
  const uri = requireEnv('MONGODB_URI');
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  before(async () => {
    await client.connect();
  });
  after(async () => {
    await client.close();
  });
  return { uri, client, freshDb: () => client.db(`geofabric_test_${randomUUID().replaceAll('-', '')}`) };
}
