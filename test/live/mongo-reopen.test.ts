import assert from 'node:assert/strict';
import { loadConfig } from '../../bin/config.js';
import { openStores } from '../../bin/stores.js';
import { useLiveMongo } from './live-env.js';

// A gateway restart opens every Mongo store again on a database that has its indexes. FerretDB v1 used to
// drop the connection there (one createIndexes command listing several existing indexes): never again.
describe('MongoDB-protocol stores reopened on the same database (live)', () => {
  const { uri, freshDb } = useLiveMongo();

  it('opens every store twice in a row, as a restarted gateway does', async () => {
    const db = freshDb();
    try {
      for (let run = 1; run <= 2; run++) {
        const stores = await openStores({ ...loadConfig({}), mongo: { uri, db: db.databaseName } });
        assert.equal(await stores.jobs.get('00000000-0000-8000-8000-000000000000'), null, `run ${run}`);
        await stores.close();
      }
    } finally {
      await db.dropDatabase();
    }
  });
});
