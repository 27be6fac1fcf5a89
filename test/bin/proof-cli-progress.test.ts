import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proofVerifyCommand, storeAuditCommand } from '../../bin/proof-commands.js';
import type { ManyReport } from '../../bin/proof-verify-many.js';
import type { ProgressStream } from '../../bin/progress.js';
import { storeSyncCommand } from '../../bin/store-sync.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceEntry, push, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';

const EPOCH = 6000; // long past: due for sealing
const worker = generateKeyPair();

function captured(): ProgressStream & { lines: () => string[] } {
  const chunks: string[] = [];
  return {
    isTTY: false,
    write: (chunk: string) => chunks.push(chunk) > 0,
    lines: () => chunks.join('').split('\n').filter(Boolean),
  };
}

/** A node's data directory: 5 records in EPOCH, 2 in EPOCH + 2, all sealed (EPOCH + 1 empty). */
async function nodeDir(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'geofabric-progress-'));
  const db = openSqlite(join(dir, 'geofabric.db'));
  const store = createSqliteProofStore(db);
  await store.appendRecords(worker, [
    ...['a', 'b', 'c', 'd', 'e'].map((id) => inferenceEntry(id, EPOCH)),
    ...['f', 'g'].map((id) => inferenceEntry(id, EPOCH + 2)),
  ]);
  await sealThrough(store, worker, EPOCH + 2);
  await store.close();
  db.close();
  return dir;
}

describe('progress of the long CLI commands', function () {
  this.timeout(30_000);
  const dirs: string[] = [];
  after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const freshDir = async () => {
    const dir = await nodeDir();
    dirs.push(dir);
    return dir;
  };

  describe('store audit', () => {
    it('reports records then seals on stderr, the report on out, exit 0 for a sound store', async () => {
      const dir = await freshDir();
      const progress = captured();
      const reports: unknown[] = [];
      const code = await storeAuditCommand([], { env: { DATA_DIR: dir }, out: (v) => reports.push(v), progress });
      assert.equal(code, 0);
      assert.deepEqual(reports, [
        { ok: true, writers: 1, records_checked: 7, seals_checked: 3, epochs_pruned: 0, problems: [] },
      ]);
      const lines = progress.lines();
      assert.equal(lines.length, 2, lines.join('\n'));
      assert.match(lines[0]!, /^store audit: 7\/7 records \(100%\) in \d+\.\d s$/);
      assert.match(lines[1]!, /^store audit: 3\/3 seals \(100%\) in \d+\.\d s$/);
    });

    it('keeps exit 1 for a store with a problem', async () => {
      const dir = await freshDir();
      const db = openSqlite(join(dir, 'geofabric.db'));
      db.prepare('DELETE FROM proof_seals WHERE epoch = ?').run(EPOCH + 2);
      db.close();
      const progress = captured();
      const reports: { ok: boolean }[] = [];
      const code = await storeAuditCommand([], {
        env: { DATA_DIR: dir },
        out: (v) => reports.push(v as { ok: boolean }),
        progress,
      });
      assert.equal(code, 1);
      assert.equal(reports[0]?.ok, false);
      // The seals counted 5 records; the 2 unsealed ones raise the total as they are met.
      assert.match(progress.lines()[0]!, /^store audit: 7\/7 records \(100%\)/);
    });
  });

  describe('proof verify of many records', () => {
    let gw: Awaited<ReturnType<typeof startGateway>>;
    before(async () => {
      // The central store's clock is in EPOCH + 5: EPOCH's records go with their seals.
      gw = await startGateway({ clock: () => timeIn(EPOCH + 5) });
      await registerWorker(gw.workers, worker);
      const local = createSqliteProofStore(openSqlite(':memory:'));
      const records = await local.appendRecords(worker, [
        ...['a', 'b', 'c'].map((id) => inferenceEntry(id, EPOCH)),
        inferenceEntry('far', EPOCH, '851e8053fffffff'),
        inferenceEntry('open', EPOCH + 5),
      ]);
      const seals = await sealThrough(local, worker, EPOCH + 4);
      assert.equal((await push(gw, worker, '/store/sync', records, seals)).status, 200);
      assert.equal((await push(gw, worker, '/store/epochs', seals)).status, 200);
    });
    after(() => gw.close());

    const run = async (args: string[]) => {
      const progress = captured();
      const out: ManyReport[] = [];
      const code = await proofVerifyCommand([...args, '--url', gw.url], (v) => out.push(v as ManyReport), {
        progress,
      });
      return { code, report: out[0]!, lines: progress.lines() };
    };

    it('--all verifies every listed record; an unsealed one is pending (exit 3) unless --allow-pending', async () => {
      const strict = await run(['--all']);
      assert.equal(strict.code, 3);
      assert.deepEqual(
        { records: strict.report.records, ok: strict.report.ok, failed: strict.report.failed },
        { records: 5, ok: 4, failed: 1 },
      );
      assert.deepEqual(strict.report.failures, [{ record_id: 'open', problems: ['record is not sealed yet'] }]);
      assert.match(
        strict.lines.at(-1)!,
        /^proof verify: 5\/5 records \(100%\) in .*; 4 verified, 1 failed, 1 pending$/,
      );
      assert.ok(strict.lines.some((l) => l.startsWith('proof verify: listing: 5 records')));

      const lenient = await run(['--all', '--allow-pending']);
      assert.equal(lenient.code, 0);
      assert.equal(lenient.report.verified, true);
      assert.deepEqual(lenient.report.pending_ids, ['open']);
    });

    it('--cell and --epoch narrow the listing', async () => {
      const rome = await run(['--all', '--cell', '861e8050fffffff', '--epoch', String(EPOCH)]);
      assert.equal(rome.code, 0);
      assert.equal(rome.report.records, 3);
      const empty = await run(['--all', '--epoch', String(EPOCH + 1)]);
      assert.equal(empty.code, 0);
      assert.equal(empty.report.records, 0);
    });

    it('a list of ids verifies those; an unknown one fails the run', async () => {
      const known = await run(['a', 'far']);
      assert.equal(known.code, 0);
      assert.equal(known.report.ok, 2);
      const withUnknown = await run(['a', 'nope']);
      assert.equal(withUnknown.code, 1);
      assert.deepEqual(withUnknown.report.failures, [
        { record_id: 'nope', problems: ['server answered 404 record_not_found'] },
      ]);
    });

    it('a listing the server refuses fails the run', async () => {
      const bad = await run(['--all', '--cell', 'not-a-cell']);
      assert.equal(bad.code, 1);
      assert.match(bad.report.listing_error ?? '', /listing: server answered 400 invalid_cell/);
    });

    it('one record keeps its old output; pending is exit 3; mixing modes is a usage error', async () => {
      const single: unknown[] = [];
      assert.equal(await proofVerifyCommand(['a', '--url', gw.url], (v) => single.push(v)), 0);
      // Plus which kind of seal it checked and who signed it (docs/protocol.md §12.3).
      assert.deepEqual(Object.keys(single[0] as object), [
        'record_id',
        'verified',
        'problems',
        'seal_kind',
        'sealed_by',
        'server_said_verified',
      ]);
      assert.equal(await proofVerifyCommand(['open', '--url', gw.url], () => undefined), 3);
      await assert.rejects(proofVerifyCommand(['a', '--all', '--url', gw.url]), /usage/);
      await assert.rejects(proofVerifyCommand(['a', '--cell', '861e8050fffffff', '--url', gw.url]), /usage/);
      await assert.rejects(proofVerifyCommand(['--all', '--epoch', 'x', '--url', gw.url]), /usage/);
    });
  });

  describe('store sync', () => {
    it('pushes every unsynced record then seal once, with progress; a second run pushes nothing', async () => {
      const dir = await freshDir();
      // The worker syncs its own store under its own key, registered at the central store (clock in EPOCH + 3).
      const central = await startGateway({ clock: () => timeIn(EPOCH + 3) });
      await registerWorker(central.workers, worker);
      try {
        const progress = captured();
        const out: Record<string, unknown>[] = [];
        const env = { DATA_DIR: dir, NODE_SECRET_KEY: worker.secretKey };
        const io = { env, out: (v: unknown) => out.push(v as Record<string, unknown>), progress };
        assert.equal(await storeSyncCommand(['--central', central.url], io), 0);
        assert.deepEqual(out[0], {
          synced: true,
          central: central.url,
          records: 7,
          seals: 3,
          refused: 0,
          refusals: [],
        });
        assert.deepEqual(
          progress.lines().map((l) => l.replace(/ in \d+\.\d s$/, '')),
          ['store sync: 7 records', 'store sync: 3 seals'],
        );
        assert.equal((await central.get('/store/proof/g')).status, 200);
        assert.equal(await storeSyncCommand([], { ...io, env: { ...env, CENTRAL_STORE_URL: central.url } }), 0);
        assert.deepEqual([out[1]?.records, out[1]?.seals], [0, 0]);
      } finally {
        await central.close();
      }
    });

    it('exit 1 when the central store cannot be reached; a usage error without a central URL', async () => {
      const dir = await freshDir();
      const out: Record<string, unknown>[] = [];
      const code = await storeSyncCommand(['--central', 'http://127.0.0.1:9'], {
        env: { DATA_DIR: dir },
        out: (v) => out.push(v as Record<string, unknown>),
        progress: captured(),
      });
      assert.equal(code, 1);
      assert.equal(out[0]?.synced, false);
      assert.match(String(out[0]?.error), /\/store\/sync/);
      await assert.rejects(storeSyncCommand([], { env: { DATA_DIR: dir } }), /usage/);
    });
  });
});
