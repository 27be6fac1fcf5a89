import type { Collection, Document, IndexDescription } from 'mongodb';

/**
 * Creates `indexes` on `collection`, one `createIndexes` command each. Idempotent on MongoDB and FerretDB
 * alike: FerretDB v1 drops the connection (a server-side panic) when one command lists several indexes that
 * all exist already, which is every restart of a store.
 */
export async function ensureIndexes<T extends Document>(
  collection: Collection<T>,
  indexes: readonly IndexDescription[],
): Promise<void> {
  for (const index of indexes) await collection.createIndexes([index]);
}
