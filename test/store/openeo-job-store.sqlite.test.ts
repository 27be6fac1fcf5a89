import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteOpenEoJobStore } from '../../store/sqlite/openeo-job-store.js';
import { describeOpenEoJobStoreContract } from './openeo-job-store.contract.js';

describeOpenEoJobStoreContract('SQLite (in memory)', async (retention) => {
  const db = openSqlite(':memory:');
  return { store: createSqliteOpenEoJobStore(db, retention), cleanup: async () => void db.close() };
});
