/**
 * WEB_CONCURRENCY=2 (bin/cluster.ts): `geofabric start` as two gateway processes on one DATA_DIR. Closed epochs
 * seeded through the store (as the node itself writes) are sealed by exactly one auto-sealer; tile serves
 * spread over both processes write proof records concurrently into the one SQLite file; afterwards every writer's
 * seqs are 1…n with none taken twice, `geofabric store audit` finds nothing wrong, and neither process logged an
 * error. A store-backed limit (new worker keys per address per hour) holds across the two processes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { cellToChildren } from 'h3-js';
import { EPOCH_MS, epochWindow } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { loadNodeKey } from '../../bin/node-key.js';
import type { NewRecord } from '../../store/proof-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { embeddedGatewayEnv, spawnGeofabric, type GeofabricProcess } from '../helpers/geofabric-process.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

const ROOT = resolve(import.meta.dirname, '../..');
const GEOFABRIC = join(ROOT, 'bin', 'geofabric.ts');
const EPOCHS = 40;
const SEEDED = [3, 20, 38] as const;

async function waitFor<T>(what: string, probe: () => T | null | undefined, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** One request on a fresh connection, so the primary hands it to the next worker (round-robin). */
function fresh(url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; body: string }>((resolveRequest, reject) => {
    const req = request(url, { method: init.method ?? 'GET', headers: init.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolveRequest({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

describe('geofabric start with WEB_CONCURRENCY=2 on one DATA_DIR', function () {
  this.timeout(180_000);
  let dataDir: string;
  let upstream: XyzServer;
  let service: GeofabricProcess | undefined;
  let env: NodeJS.ProcessEnv;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-web-concurrency-'));
    upstream = await startXyzServer();
    const genesisMs = Math.floor(Date.now() / EPOCH_MS) * EPOCH_MS - EPOCHS * EPOCH_MS;
    env = embeddedGatewayEnv(dataDir, {
      EPOCH_GENESIS: new Date(genesisMs).toISOString(),
      LEDGER: 'none',
      ANCHOR_EPOCHS: 'false',
      SEAL_CHECK_SECONDS: '1',
      WORKER_NEW_KEYS_PER_ADDRESS_PER_HOUR: '3',
      TILE_URL_OSM_STANDARD: upstream.template('png'),
      WEB_CONCURRENCY: '2',
    });
    // Closed epochs with records, written as the node writes them, for the leader's sealer to catch up on.
    const node = loadNodeKey(dataDir, undefined).key;
    const db = openSqlite(join(dataDir, 'geofabric.db'));
    const store = createSqliteProofStore(db);
    for (const epoch of SEEDED) {
      const written = new Date(epochWindow(epoch, genesisMs).start + 1000).toISOString();
      const entries = Array.from({ length: 50 }, (_, i): NewRecord => ({
        id: `inference:${epoch}:${i}`,
        h3_cell: '861e8050fffffff',
        epoch,
        collection_type: 'inference',
        payload_type: 'hive/inference',
        payload: { model: 'tinyllama', provider: 'worker', tokens_in: 12, tokens_out: 40, text: `answer ${i}` },
        written_at: written,
      }));
      await store.appendRecords(node, entries);
    }
    db.close();
  });

  after(async () => {
    const child = service?.child;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }
    await upstream?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves from both processes, seals once, keeps seqs unique, and audits clean', async () => {
    service = spawnGeofabric(['start'], env);
    const { lines } = service;
    const listening = () => lines.filter((l) => l.msg === 'geofabric gateway listening');
    await waitFor('two listening workers', () => (listening().length >= 2 ? true : null));
    const url = String(listening()[0]!.url);
    assert.equal(new Set(listening().map((l) => l.pid)).size, 2, 'two worker processes');
    assert.equal(new Set(listening().map((l) => l.url)).size, 1, 'one shared port');

    // Tile serves on fresh connections: both processes write proof records into the one file at once.
    const cells = cellToChildren('861e8050fffffff', 8).slice(0, 20);
    const answers = await Promise.all(
      [...cells, ...cells].map((cell) => fresh(`${url}/v1/tiles/${cell}/14/osm-standard.png`)),
    );
    assert.deepEqual(
      answers.map((a) => a.status),
      answers.map(() => 200),
    );
    const served = lines.filter((l) => l.msg === 'request' && String(l.path).startsWith('/v1/tiles/'));
    assert.equal(new Set(served.map((l) => l.pid)).size, 2, 'tile requests were served by both processes');

    // A store-backed limit holds across processes: 3 new worker keys per address per hour, whichever serves.
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const key = generateKeyPair();
      const signed = signRequestBody(key.secretKey, {
        h3_cell: '861e8050fffffff',
        models: ['tinyllama'],
        tools: [],
        hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 8, cores: 2 },
        hardware_tier: 1,
        relay: false,
        version: '0.1.0',
        created_at: new Date().toISOString(),
      });
      const answer = await fresh(`${url}/svc/workers/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-idn-signature': signed.signature },
        body: JSON.stringify(signed.body),
      });
      statuses.push(answer.status);
    }
    const registered = lines.filter((l) => l.msg === 'request' && l.path === '/svc/workers/register');
    assert.equal(new Set(registered.map((l) => l.pid)).size, 2, 'registrations reached both processes');
    assert.deepEqual(statuses, [201, 201, 201, 429, 429], 'three new keys pass, the rest are 429');

    // The seeded closed epochs (and every empty one) get sealed, by the leader alone.
    const node = loadNodeKey(dataDir, undefined).key;
    const db = openSqlite(join(dataDir, 'geofabric.db'));
    let seals: number;
    try {
      const store = createSqliteProofStore(db);
      const latest = async () => (await store.latestSeal(node.publicKey))?.epoch ?? -1;
      const until = Date.now() + 90_000;
      while ((await latest()) < SEEDED[2] && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
      assert.ok((await latest()) >= SEEDED[2], 'the seeded epochs are sealed');

      // Stop: the primary drains both workers and exits 0.
      const exited = once(service.child, 'exit');
      service.child.kill('SIGTERM');
      const [code] = (await exited) as [number];
      assert.equal(code, 0, service.stderr());

      const seqs = db
        .prepare<[string], { seq: number }>('SELECT seq FROM proof_records WHERE pk = ? ORDER BY seq')
        .all(node.publicKey)
        .map((r) => r.seq);
      assert.ok(seqs.length >= SEEDED.length * 50 + cells.length, `records: ${seqs.length}`);
      assert.deepEqual(
        seqs,
        seqs.map((_, i) => i + 1),
        'the node key’s seqs are 1…n, none twice',
      );
      const perEpoch = db
        .prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM proof_seals WHERE sealer_pk = ? GROUP BY epoch')
        .all(node.publicKey);
      assert.ok(perEpoch.every((r) => r.n === 1));
      seals = perEpoch.length;
    } finally {
      db.close();
    }
    const sealers = new Set(lines.filter((l) => /seal/i.test(String(l.msg))).map((l) => l.pid));
    assert.ok(sealers.size <= 1, `sealing logged by one process only: ${[...sealers].join(', ')}`);
    const errors = lines.filter((l) => typeof l.level === 'number' && l.level >= 50);
    assert.deepEqual(errors, [], 'no error logs');

    const audit = await promisify(execFile)(process.execPath, ['--import', 'tsx', GEOFABRIC, 'store', 'audit'], {
      cwd: ROOT,
      env,
    });
    const report = JSON.parse(audit.stdout) as { problems: unknown[]; records_checked: number; seals_checked: number };
    assert.deepEqual(report.problems, []);
    // From the first seeded epoch (none before a writer's first record) through the last.
    assert.ok(seals > SEEDED[2] - SEEDED[0], `seals stored: ${seals}`);
    assert.equal(report.seals_checked, seals);
    assert.ok(report.records_checked >= SEEDED.length * 50 + cells.length);
  });
});
