import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../../bin/config.js';
import { startGovernance } from '../../bin/governance.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';

/** The governance server's routes carry no authentication: unless GOVERNANCE_HOST says otherwise it is local. */
describe('governance bind address (GOVERNANCE_HOST)', () => {
  it('binds loopback by default and logs the address it listens on', async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'governance-bind-'));
    const db = openSqlite(':memory:');
    const audit = createSqliteAuditStore(db);
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = loadConfig({ DATA_DIR: tmp, GOVERNANCE_PORT: '0' });
    assert.equal(config.governance.host, '127.0.0.1');
    const { url, server } = await startGovernance(config, { audit, logger: pino({ level: 'info' }, sink) });
    try {
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const health = await fetch(`${url}/health`);
      assert.equal(health.status, 200);
      const listening = lines.find((l) => l.msg === 'geofabric governance listening');
      assert.equal(listening?.url, url);
    } finally {
      await server.close();
      await audit.close();
      db.close();
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('binds the address GOVERNANCE_HOST names', () => {
    assert.equal(loadConfig({ GOVERNANCE_HOST: '0.0.0.0' }).governance.host, '0.0.0.0');
  });
});
