import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteApiKeyStore } from '../../store/sqlite/api-key-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { describeApiKeyStoreContract } from './api-key-store.contract.js';

describeApiKeyStoreContract('SQLite (in memory)', async () => {
  const db = openSqlite(':memory:');
  return {
    store: createSqliteApiKeyStore(db),
    stored: async () => JSON.stringify(db.prepare('SELECT * FROM api_keys').all()),
    cleanup: async () => void db.close(),
  };
});

describe('SQLite API key store on a shared file', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-api-keys-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a key revoked through another connection, as `geofabric apikey revoke` would', async () => {
    const path = join(dir, 'geofabric.db');
    const [gateway, cli] = [openSqlite(path), openSqlite(path)];
    try {
      const [served, admin] = [createSqliteApiKeyStore(gateway), createSqliteApiKeyStore(cli)];
      const { key, record } = await admin.create('shared', 'free', 0);
      assert.deepEqual(await served.verify(key), record);
      assert.equal(await admin.revoke(record.id, 1), true);
      assert.equal(await served.verify(key), null);
    } finally {
      gateway.close();
      cli.close();
    }
  });

  it('reads back no tier a hand-edited row did not have: an unknown tier fails loudly', async () => {
    const db = openSqlite(':memory:');
    try {
      const store = createSqliteApiKeyStore(db);
      const { key } = await store.create('edited', 'free', 0);
      db.pragma('ignore_check_constraints = ON');
      db.prepare("UPDATE api_keys SET tier = 'root'").run();
      await assert.rejects(store.verify(key));
    } finally {
      db.close();
    }
  });
});
