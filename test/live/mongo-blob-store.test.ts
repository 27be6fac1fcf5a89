import { createMongoBlobStore } from '../../store/mongo/blob-store.js';
import { describeBlobStoreContract } from '../store/blob-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The blob store's contract on the MongoDB-protocol server (FerretDB in CI): a database per test, dropped after.
describe('MongoDB-protocol blob store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeBlobStoreContract(`MongoDB protocol at ${uri}`, async (retention) => {
    const db = freshDb();
    const store = await createMongoBlobStore(db, retention);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
