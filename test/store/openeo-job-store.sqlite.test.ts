import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteOpenEoJobStore } from '../../store/sqlite/openeo-job-store.js';
import { describeOpenEoJobStoreContract } from './openeo-job-store.contract.js';

describeOpenEoJobStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return { store: createSqliteOpenEoJobStore(db), cleanup: async () => void db.close() };
});
