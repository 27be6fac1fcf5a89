/**
 * A start that fails exits (docs/operations.md "Startup errors"): with the MongoDB-protocol store reachable and
 * Temporal not, `geofabric start` has opened its store clients (and their connection pools) before it finds
 * Temporal missing. It must still print its one line and exit 1, so a supervisor restarts it; found by
 * `npm run chaos`, where a gateway restarted while Temporal was down printed the line and then hung.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { embeddedGatewayEnv, spawnGeofabric } from '../helpers/geofabric-process.js';
import { requireEnv } from './live-env.js';

async function closedPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

describe('geofabric start on MongoDB with Temporal unreachable (live)', function () {
  this.timeout(60_000);
  const mongoUri = requireEnv('MONGODB_URI');

  it('prints the Temporal line and exits 1 although its store clients are open', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'geofabric-startup-exit-'));
    const port = await closedPort();
    const dbName = `geofabric_test_startup_${process.pid}`;
    const proc = spawnGeofabric(
      ['start'],
      embeddedGatewayEnv(dataDir, {
        MONGODB_URI: mongoUri,
        MONGODB_DB: dbName,
        ORCHESTRATOR: 'temporal',
        TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      }),
    );
    try {
      const [code] = (await once(proc.child, 'exit')) as [number | null];
      assert.match(proc.stderr(), /cannot reach Temporal \(connection refused\)/);
      assert.equal(code, 1, proc.stderr());
    } finally {
      if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
      rmSync(dataDir, { recursive: true, force: true });
      const client = new MongoClient(mongoUri, { serverSelectionTimeoutMS: 5000 });
      await client.db(dbName).dropDatabase();
      await client.close();
    }
  });
});
