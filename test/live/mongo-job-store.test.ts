import { createMongoJobStore } from '../../store/mongo/job-store.js';
import { describeJobStoreContract } from '../store/job-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The job store's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI),
// as test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol job store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeJobStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoJobStore(db);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
