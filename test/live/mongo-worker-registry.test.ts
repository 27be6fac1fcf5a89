import { createMongoWorkerRegistry } from '../../store/mongo/worker-registry.js';
import { describeWorkerRegistryContract } from '../store/worker-registry.contract.js';
import { useLiveMongo } from './live-env.js';

// The worker registry's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI),
// as test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol worker registry (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeWorkerRegistryContract(`MongoDB protocol at ${uri}`, async (retention) => {
    const db = freshDb();
    const store = await createMongoWorkerRegistry(db, retention);
    return { store, cleanup: async () => void (await db.dropDatabase()) };
  });
});
