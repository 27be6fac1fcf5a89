import { createMongoOpenEoJobStore } from '../../store/mongo/openeo-job-store.js';
import { describeOpenEoJobStoreContract } from '../store/openeo-job-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The openEO job store's contract on the MongoDB-protocol server (FerretDB in CI): a database per test, dropped after.
describe('MongoDB-protocol openEO job store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeOpenEoJobStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoOpenEoJobStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
