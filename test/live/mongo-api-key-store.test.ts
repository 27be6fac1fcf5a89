import { createMongoApiKeyStore } from '../../store/mongo/api-key-store.js';
import { describeApiKeyStoreContract } from '../store/api-key-store.contract.js';
import { useLiveMongo } from './live-env.js';

// The API key store's contract on the MongoDB-protocol server (FerretDB in CI, any MongoDB by MONGODB_URI),
// as test/live/mongo.test.ts runs the other stores': a database per test, dropped afterwards.
describe('MongoDB-protocol API key store (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  describeApiKeyStoreContract(`MongoDB protocol at ${uri}`, async () => {
    const db = freshDb();
    const store = await createMongoApiKeyStore(db);
    const stored = async () => {
      const [keys, revocations] = await Promise.all([
        db.collection('api_keys').find({}).toArray(),
        db.collection('api_key_revocations').find({}).toArray(),
      ]);
      return JSON.stringify({ keys, revocations });
    };
    return { store, stored, cleanup: async () => void (await db.dropDatabase()) };
  });
});
