import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ApiKeyRecord } from '../../store/api-key-store.js';
import { createSqliteApiKeyStore } from '../../store/sqlite/api-key-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { startGateway } from '../helpers/gateway.js';

const REPO = join(import.meta.dirname, '..', '..');

/**
 * Runs the CLI as an operator would, against the SQLite store under `dataDir`. Asynchronously: the gateway
 * under test lives in this process, and a synchronous spawn would block its event loop.
 */
async function cli(dataDir: string, args: string[]) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(REPO, 'bin', 'geofabric.ts'), 'apikey', ...args],
      { cwd: REPO, env: { ...process.env, LOG_LEVEL: 'silent', DATA_DIR: dataDir, MONGODB_URI: '' } },
    );
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { status: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

describe('geofabric apikey (CLI)', function () {
  this.timeout(60_000);
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-apikey-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates a key a gateway sharing the store accepts, lists it, and revokes it for that gateway', async () => {
    const created = await cli(dataDir, ['create', '--name', 'ci bot', '--tier', 'pro', '--json']);
    assert.equal(created.status, 0, created.stderr);
    const made = JSON.parse(created.stdout) as ApiKeyRecord & { key: string };
    assert.match(made.key, /^gf_[A-Za-z0-9_-]{43}$/);
    assert.equal(made.tier, 'pro');
    assert.equal(made.name, 'ci bot');

    // A gateway on the same SQLite file, as `geofabric start` with the same DATA_DIR would be.
    const db = openSqlite(join(dataDir, 'geofabric.db'));
    const gw = await startGateway({ apiKeyStore: createSqliteApiKeyStore(db) });
    try {
      const auth = { authorization: `Bearer ${made.key}` };
      assert.equal((await gw.get('/v1/models', auth)).status, 200);

      const listed = await cli(dataDir, ['list', '--json']);
      assert.equal(listed.status, 0, listed.stderr);
      const records = JSON.parse(listed.stdout) as ApiKeyRecord[];
      assert.deepEqual(records, [
        { id: made.id, name: 'ci bot', tier: 'pro', created_at: made.created_at, revoked_at: null },
      ]);
      assert.ok(!listed.stdout.includes(made.key), 'list must never show a key');

      const revoked = await cli(dataDir, ['revoke', made.id]);
      assert.equal(revoked.status, 0, revoked.stderr);
      assert.equal(revoked.stdout.trim(), `revoked ${made.id}`);
      assert.equal((await gw.get('/v1/models', auth)).status, 401);

      const again = await cli(dataDir, ['revoke', made.id, '--json']);
      assert.equal(again.status, 1);
      assert.deepEqual(JSON.parse(again.stdout), { id: made.id, revoked: false });
    } finally {
      await gw.close();
      db.close();
    }
  });

  it('prints a new key once in plain text with its id and tier, free by default', async () => {
    const run = await cli(dataDir, ['create', '--name', 'alice']);
    assert.equal(run.status, 0, run.stderr);
    const key = /^key: +(gf_\S+)$/m.exec(run.stdout)?.[1];
    const id = /^id: +(key_[0-9a-f]{16})$/m.exec(run.stdout)?.[1];
    assert.ok(key && id, run.stdout);
    assert.match(run.stdout, /^tier: +free$/m);
    const table = await cli(dataDir, ['list']);
    assert.match(table.stdout, new RegExp(`^${id} +free +\\S+ +- +alice$`, 'm'));
    assert.ok(!table.stdout.includes(key));
  });

  it('refuses bad usage with exit 2 and a usage line, creating nothing', async () => {
    // Each run starts a Node process (~2 s): one case per kind of mistake.
    const cases = [['create'], ['create', '--name', 'x', '--tier', 'gold'], ['list', '--tier', 'pro'], ['rotate']];
    const runs = await Promise.all(cases.map((args) => cli(dataDir, args)));
    runs.forEach((run, i) => {
      assert.equal(run.status, 2, cases[i]?.join(' '));
      assert.match(run.stderr, /usage: /, cases[i]?.join(' '));
    });
    const listed = JSON.parse((await cli(dataDir, ['list', '--json'])).stdout) as ApiKeyRecord[];
    assert.ok(!listed.some((r) => r.name === 'x'));
  });
});
