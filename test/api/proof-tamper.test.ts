import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sha256Hex } from '../../core/hash.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { generateKeyPair } from '../../core/identity.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';
import { inferenceEntry, push, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';

const worker = generateKeyPair();
const EPOCH = 5000; // in the past, so every epoch here is due for sealing
const REPO = join(import.meta.dirname, '..', '..');

interface AuditOutput {
  ok: boolean;
  problems: { writer?: string; epoch?: number; record_id?: string; problem: string }[];
}

/**
 * Runs the CLI as an operator would. Asynchronously: the gateway under test lives in this process, and a
 * synchronous spawn would block the event loop the CLI's requests need.
 */
async function cli(args: string[], env: NodeJS.ProcessEnv = {}) {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', join(REPO, 'bin', 'geofabric.ts'), ...args],
      { cwd: REPO, env: { ...process.env, LOG_LEVEL: 'silent', ...env } },
    );
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { status: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

/** `geofabric store audit` on the store under `dataDir`. */
async function audit(dataDir: string): Promise<{ status: number; report: AuditOutput }> {
  const run = await cli(['store', 'audit'], { DATA_DIR: dataDir, MONGODB_URI: '' });
  // Not a terminal: stderr carries only the plain progress lines (bin/progress.ts), never an error.
  for (const line of run.stderr.split('\n').filter(Boolean))
    assert.match(line, /^store audit: \d+\/\d+ (records|seals) /);
  return { status: run.status, report: JSON.parse(run.stdout) as AuditOutput };
}

async function proofVerifyCli(url: string, id: string) {
  const run = await cli(['proof', 'verify', id, '--url', url]);
  return { status: run.status, out: JSON.parse(run.stdout) as { verified: boolean; problems: string[] } };
}

describe('tampering with the central proof store is detected', function () {
  this.timeout(60_000);
  let pristine: string;

  before(async () => {
    // A worker writes 3 epochs (the middle one empty), seals them and syncs to a file-backed central store.
    pristine = mkdtempSync(join(tmpdir(), 'geofabric-tamper-'));
    const central = openSqlite(join(pristine, 'geofabric.db'));
    // The central store's clock is in EPOCH + 3: the worker pushes its older epochs with their seals.
    const gw = await startGateway({ proofs: createSqliteProofStore(central), clock: () => timeIn(EPOCH + 3) });
    await registerWorker(gw.workers, worker);
    const local = createSqliteProofStore(openSqlite(':memory:'));
    const entries = [
      ...['a', 'b', 'c', 'd', 'e'].map((id) => inferenceEntry(id, EPOCH)),
      ...['f', 'g'].map((id) => inferenceEntry(id, EPOCH + 2)),
    ];
    const records = await local.appendRecords(worker, entries);
    const seals = await sealThrough(local, worker, EPOCH + 2);
    assert.equal((await push(gw, worker, '/store/sync', records, seals)).status, 200);
    assert.equal((await push(gw, worker, '/store/epochs', seals)).status, 200);
    await gw.close();
    central.pragma('wal_checkpoint(TRUNCATE)');
    central.close();
  });
  after(() => rmSync(pristine, { recursive: true, force: true }));

  /** A copy of the synced store, a gateway over it, and raw SQL access for the attacker. */
  async function tampered(
    attack: (db: Database.Database) => void,
  ): Promise<{ dir: string; gw: TestGateway; done: () => Promise<void> }> {
    const dir = mkdtempSync(join(tmpdir(), 'geofabric-tampered-'));
    copyFileSync(join(pristine, 'geofabric.db'), join(dir, 'geofabric.db'));
    const raw = new Database(join(dir, 'geofabric.db'));
    attack(raw);
    raw.close();
    const db = openSqlite(join(dir, 'geofabric.db'));
    const gw = await startGateway({ proofs: createSqliteProofStore(db) });
    return {
      dir,
      gw,
      done: async () => {
        await gw.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  const verified = async (gw: TestGateway, id: string) =>
    ((await gw.get(`/store/proof/${id}`)).body as { verified: boolean }).verified;
  const recordJson = (db: Database.Database, id: string) =>
    JSON.parse(
      (db.prepare('SELECT json FROM proof_records WHERE id = ?').get(id) as { json: string }).json,
    ) as ProofRecord;
  const writeRecord = (db: Database.Database, record: ProofRecord) =>
    db.prepare('UPDATE proof_records SET json = ? WHERE id = ?').run(JSON.stringify(record), record.id);

  it('an untouched store verifies everywhere', async () => {
    const t = await tampered(() => undefined);
    try {
      for (const id of ['a', 'c', 'e', 'f', 'g']) assert.equal(await verified(t.gw, id), true, id);
      const { status, report } = await audit(t.dir);
      assert.deepEqual(report.problems, []);
      assert.equal(status, 0);
      const cli = await proofVerifyCli(t.gw.url, 'c');
      assert.equal(cli.status, 0);
      assert.equal(cli.out.verified, true);
    } finally {
      await t.done();
    }
  });

  it('proof verify refuses a valid proof of another record than the one asked for', async () => {
    const t = await tampered(() => undefined);
    // A server that answers every proof request with record a's (valid) bundle.
    const liar = createServer((_req, res) => {
      void fetch(`${t.gw.url}/store/proof/a`).then(async (answer) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(await answer.text());
      });
    });
    liar.listen(0, '127.0.0.1');
    await once(liar, 'listening');
    try {
      const cli = await proofVerifyCli(`http://127.0.0.1:${(liar.address() as AddressInfo).port}`, 'c');
      assert.equal(cli.status, 1);
      assert.equal(cli.out.verified, false);
      assert.match(cli.out.problems.join(' '), /the answer is record "a", not "c"/);
    } finally {
      liar.close();
      await t.done();
    }
  });

  it('a changed payload fails its proof and is named by the audit', async () => {
    const t = await tampered((db) => {
      const record = recordJson(db, 'b');
      writeRecord(db, { ...record, payload: { ...(record.payload as object), text: 'a better answer' } });
    });
    try {
      assert.equal(await verified(t.gw, 'b'), false);
      assert.equal(await verified(t.gw, 'a'), true, 'the other records still prove');
      const cli = await proofVerifyCli(t.gw.url, 'b');
      assert.equal(cli.status, 1);
      assert.match(cli.out.problems.join(' '), /record_hash does not match/);
      const { status, report } = await audit(t.dir);
      assert.equal(status, 1);
      assert.ok(
        report.problems.some((p) => p.record_id === 'b'),
        JSON.stringify(report.problems),
      );
    } finally {
      await t.done();
    }
  });

  it('a deleted record is named by the audit (its epoch no longer matches its seal)', async () => {
    const t = await tampered((db) => db.prepare("DELETE FROM proof_records WHERE id = 'd'").run());
    try {
      assert.equal((await t.gw.get('/store/proof/d')).status, 404);
      const { status, report } = await audit(t.dir);
      assert.equal(status, 1);
      assert.ok(
        report.problems.some((p) => p.epoch === EPOCH && /seq 4 is missing/.test(p.problem)),
        JSON.stringify(report.problems),
      );
    } finally {
      await t.done();
    }
  });

  it('two records reordered (their seqs swapped, hashes recomputed) fail their proofs and the audit', async () => {
    const t = await tampered((db) => {
      const [b, c] = [recordJson(db, 'b'), recordJson(db, 'c')];
      const rehash = (r: ProofRecord, seq: number): ProofRecord => {
        const { record_hash: _h, signature: _s, ...unsigned } = { ...r, seq };
        return { ...unsigned, record_hash: sha256Hex(canonicalJson(unsigned)), signature: r.signature };
      };
      writeRecord(db, rehash(b, c.seq));
      writeRecord(db, rehash(c, b.seq));
      db.prepare("UPDATE proof_records SET seq = -seq WHERE id IN ('b', 'c')").run();
      db.prepare("UPDATE proof_records SET seq = ? WHERE id = 'b'").run(c.seq);
      db.prepare("UPDATE proof_records SET seq = ? WHERE id = 'c'").run(b.seq);
    });
    try {
      assert.equal(await verified(t.gw, 'b'), false);
      assert.equal(await verified(t.gw, 'c'), false);
      const { report } = await audit(t.dir);
      const named = new Set(report.problems.map((p) => p.record_id));
      assert.ok(named.has('b') && named.has('c'), JSON.stringify(report.problems));
    } finally {
      await t.done();
    }
  });

  it('an edited seal fails every proof of its epoch and is named by the audit', async () => {
    const t = await tampered((db) => {
      const row = db.prepare('SELECT json FROM proof_seals WHERE epoch = ?').get(EPOCH) as { json: string };
      const seal = JSON.parse(row.json) as { record_count: number };
      db.prepare('UPDATE proof_seals SET json = ? WHERE epoch = ?').run(
        JSON.stringify({ ...seal, record_count: 4 }),
        EPOCH,
      );
    });
    try {
      assert.equal(await verified(t.gw, 'a'), false);
      assert.equal(await verified(t.gw, 'f'), true, 'the next epoch still proves on its own');
      const { report } = await audit(t.dir);
      assert.ok(
        report.problems.some((p) => p.epoch === EPOCH && /seal/.test(p.problem)),
        JSON.stringify(report.problems),
      );
    } finally {
      await t.done();
    }
  });

  it("a dropped epoch's seal is named by the audit (a gap in the chain, or sealed records left unsealed)", async () => {
    const middle = await tampered((db) => db.prepare('DELETE FROM proof_seals WHERE epoch = ?').run(EPOCH + 1));
    try {
      const { status, report } = await audit(middle.dir);
      assert.equal(status, 1);
      assert.ok(
        report.problems.some((p) => p.epoch === EPOCH + 1),
        JSON.stringify(report.problems),
      );
    } finally {
      await middle.done();
    }
    const latest = await tampered((db) => db.prepare('DELETE FROM proof_seals WHERE epoch = ?').run(EPOCH + 2));
    try {
      assert.equal(((await latest.gw.get('/store/proof/f')).body as { pending?: boolean }).pending, true);
      const { report } = await audit(latest.dir);
      assert.ok(
        report.problems.some((p) => p.epoch === EPOCH + 2 && /no seal/.test(p.problem)),
        JSON.stringify(report.problems),
      );
    } finally {
      await latest.done();
    }
  });
});
