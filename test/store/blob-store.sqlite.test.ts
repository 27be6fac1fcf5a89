import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteBlobStore } from '../../store/sqlite/blob-store.js';
import { describeBlobStoreContract } from './blob-store.contract.js';

describeBlobStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteBlobStore(db), cleanup: async () => void db.close() };
});
