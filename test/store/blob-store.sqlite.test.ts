import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteBlobStore } from '../../store/sqlite/blob-store.js';
import { describeBlobStoreContract } from './blob-store.contract.js';

describeBlobStoreContract('SQLite (in memory)', async (retention) => {
  const db = openSqlite(':memory:');
  return { store: createSqliteBlobStore(db, retention), cleanup: async () => void db.close() };
});
