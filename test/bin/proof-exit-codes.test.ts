/**
 * `geofabric proof verify` exit codes (bin/proof-commands.ts PROOF_EXIT): 0 verified, 1 failed (unknown id,
 * tampered, wrong key), 2 usage, 3 pending (intact, epoch not sealed yet), for one record and for many.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PROOF_EXIT, proofVerifyCommand } from '../../bin/proof-commands.js';
import type { ProgressStream } from '../../bin/progress.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startGateway } from '../helpers/gateway.js';
import { runGeofabricCli } from '../helpers/geofabric-process.js';
import { inferenceEntry, push, registerWorker, sealThrough, timeIn } from '../helpers/proofs.js';

const EPOCH = 6100;
const worker = generateKeyPair();
const quiet: ProgressStream = { isTTY: false, write: () => true };

/** The installed CLI as a user runs it: its real process exit code. */
const cli = (args: string[]) => runGeofabricCli(args);

describe('proof verify exit codes', function () {
  this.timeout(60_000);
  let gw: Awaited<ReturnType<typeof startGateway>>;
  /** Serves the gateway's proof bundles with one byte of the record's payload changed. */
  let tamperUrl: string;
  let closeTamper: () => void;

  before(async () => {
    // The store's clock is in EPOCH + 5: EPOCH's records are sealed, 'open' (EPOCH + 5) is pending.
    gw = await startGateway({ clock: () => timeIn(EPOCH + 5) });
    await registerWorker(gw.workers, worker);
    const local = createSqliteProofStore(openSqlite(':memory:'));
    const records = await local.appendRecords(worker, [
      inferenceEntry('a', EPOCH),
      inferenceEntry('b', EPOCH),
      inferenceEntry('open', EPOCH + 5),
    ]);
    const seals = await sealThrough(local, worker, EPOCH + 4);
    assert.equal((await push(gw, worker, '/store/sync', records, seals)).status, 200);
    assert.equal((await push(gw, worker, '/store/epochs', seals)).status, 200);

    const tamper = createServer((req, res) => {
      void (async () => {
        const upstream = await fetch(gw.url + (req.url ?? '/'));
        const body = (await upstream.json()) as { record?: { payload?: Record<string, unknown> } };
        if (body.record?.payload) body.record.payload = { ...body.record.payload, model: 'tampered' };
        res.writeHead(upstream.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      })();
    });
    tamper.listen(0, '127.0.0.1');
    await once(tamper, 'listening');
    tamperUrl = `http://127.0.0.1:${(tamper.address() as AddressInfo).port}`;
    closeTamper = () => tamper.close();
  });
  after(async () => {
    closeTamper();
    await gw.close();
  });

  const verify = (args: string[], url = gw.url) =>
    proofVerifyCommand([...args, '--url', url], () => undefined, { progress: quiet });

  it('are documented as 0 verified, 1 failed, 2 usage, 3 pending', () => {
    assert.deepEqual(PROOF_EXIT, { verified: 0, failed: 1, usage: 2, pending: 3 });
  });

  describe('one record', () => {
    it('0 when it verifies', async () => {
      assert.equal(await verify(['a']), 0);
    });

    it('3 when it is intact but its epoch is not sealed yet, also after --wait ran out', async () => {
      const out: { pending?: boolean; problems: string[] }[] = [];
      const code = await proofVerifyCommand(['open', '--url', gw.url], (v) => out.push(v as (typeof out)[0]));
      assert.equal(code, 3);
      assert.deepEqual(out[0]?.problems, ['record is not sealed yet']);
      assert.equal(out[0]?.pending, true);
      assert.equal(await verify(['open', '--wait', '1']), 3);
    });

    it('0 for a pending record with --allow-pending, as for many', async () => {
      assert.equal(await verify(['open', '--allow-pending']), 0);
    });

    it('1 for an unknown id, a tampered record, or another writer than --node-pk', async () => {
      assert.equal(await verify(['nope']), 1);
      assert.equal(await verify(['a'], tamperUrl), 1);
      assert.equal(await verify(['open'], tamperUrl), 1, 'tampered and unsealed is tampered, not pending');
      assert.equal(await verify(['open', '--allow-pending'], tamperUrl), 1);
      assert.equal(await verify(['a', '--node-pk', generateKeyPair().publicKey]), 1);
    });
  });

  describe('many records', () => {
    it('3 when the only records that did not verify are pending; 0 with --allow-pending', async () => {
      assert.equal(await verify(['a', 'open']), 3);
      assert.equal(await verify(['--all']), 3);
      assert.equal(await verify(['a', 'open', '--allow-pending']), 0);
      assert.equal(await verify(['--all', '--allow-pending']), 0);
    });

    it('1 when any record failed, pending ones besides or not', async () => {
      assert.equal(await verify(['a', 'open', 'nope']), 1);
      assert.equal(await verify(['a', 'open', 'nope', '--allow-pending']), 1);
      assert.equal(await verify(['a', 'b'], tamperUrl), 1);
    });
  });

  it('the installed CLI exits with them: 3 for a pending record, 2 for a usage error', async () => {
    const pending = await cli(['proof', 'verify', 'open', '--url', gw.url]);
    assert.equal(pending.code, 3, pending.stderr);
    assert.equal(JSON.parse(pending.stdout).pending, true);
    const usage = await cli(['proof', 'verify', 'a', '--wait', 'soon', '--url', gw.url]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /usage: proof verify/);
  });
});
