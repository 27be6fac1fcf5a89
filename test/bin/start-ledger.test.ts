/**
 * `geofabric start` with LEDGER=stellar and ANCHOR_EPOCHS=true, as an operator runs it, against a
 * local Horizon: the auto-sealer's seals are anchored and shown by GET /store/proof, jobs post their ledger
 * entries (earnings, /svc/status), and SIGTERM stops it cleanly.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stellarAddress } from '../../activities/settlement/stellar-keys.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt } from '../../core/epoch.js';
import { generateKeyPair } from '../../core/identity.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startFakeHorizon, type FakeHorizon } from '../helpers/fake-horizon.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { inferenceEntry } from '../helpers/proofs.js';
import { spawnGeofabric } from '../helpers/geofabric-process.js';

async function waitFor<T>(what: string, probe: () => Promise<T | null>, ms = 15_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('geofabric start with LEDGER=stellar', function () {
  this.timeout(60_000);
  let horizon: FakeHorizon;
  let runtime: FakeRuntime;
  let dataDir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    horizon = await startFakeHorizon();
    runtime = await startFakeRuntime('lfm2.5-1.2b-instruct', () => ({
      content: 'Villa Ada.',
      usage: { prompt_tokens: 100, completion_tokens: 20 },
    }));
    dataDir = mkdtempSync(join(tmpdir(), 'geofabric-ledger-'));
  });
  after(async () => {
    if (child && child.exitCode === null) child.kill('SIGKILL');
    await horizon.close();
    await runtime.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('anchors the sealed epochs, posts job entries, and stops on SIGTERM', async () => {
    const node = generateKeyPair();
    horizon.addAccount(stellarAddress(node.publicKey));
    // A record of this node from five epochs ago: the auto-sealer seals (and so anchors) it right at start.
    const epoch = epochAt(Date.now(), DEFAULT_EPOCH_GENESIS_MS) - 5;
    const db = openSqlite(join(dataDir, 'geofabric.db'));
    await createSqliteProofStore(db).appendRecords(node, [inferenceEntry('old-answer', epoch)]);
    db.close();

    const started = spawnGeofabric(['start'], {
      ...process.env,
      DATA_DIR: dataDir,
      NODE_SECRET_KEY: node.secretKey,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      MONGODB_URI: '',
      ORCHESTRATOR: 'embedded',
      PERCEPTION_ENABLED: 'false',
      GOVERNANCE_ENABLED: 'false',
      WORKER_RUNTIME_URL: runtime.url,
      PREWARM_MODELS: '',
      SEAL_CHECK_SECONDS: '1',
      LEDGER: 'stellar',
      HORIZON_URL: horizon.url,
      ANCHOR_EPOCHS: 'true',
      SETTLEMENT_INTERVAL_SECONDS: '1',
    });
    child = started.child;
    const { lines } = started;
    const stderr = started.stderr;
    // A cold start under tsx takes seconds, more on a loaded CI machine (one took over 15 s): the wait is generous.
    const url = await waitFor(
      'the gateway',
      async () => {
        if (child!.exitCode !== null) throw new Error(`start exited ${child!.exitCode}: ${stderr()}`);
        const listening = lines.find((l) => l.msg === 'geofabric gateway listening');
        return typeof listening?.url === 'string' ? listening.url : null;
      },
      40_000,
    );
    const settling = lines.find((l) => l.msg === 'settling on stellar');
    assert.equal(settling?.account, stellarAddress(node.publicKey));

    // The seal of the old epoch is anchored: one manage_data transaction, shown with the proof.
    const proof = await waitFor('the anchor', async () => {
      const body = (await (await fetch(`${url}/store/proof/old-answer`)).json()) as {
        anchor: Record<string, unknown> | null;
        seal: { epoch: number; merkle_root: string } | null;
      };
      return body.anchor ? body : null;
    });
    assert.equal(proof.seal?.epoch, epoch);
    const anchorTx = horizon.transactions().find((t) => t.hash === proof.anchor!.tx_hash);
    assert.deepEqual(
      anchorTx?.operations.map((op) => [op.name, op.value_hex]),
      [[`epoch:${epoch}`, proof.seal!.merkle_root]],
    );
    assert.deepEqual(proof.anchor, {
      tx_hash: anchorTx!.hash,
      ledger: anchorTx!.ledger,
      epoch,
      root: proof.seal!.merkle_root,
      network_passphrase: 'Test SDF Network ; September 2015',
    });

    // A job on the node's own worker posts its entries: the node earns the step (and pays no one on Stellar).
    const signed = signJob(generateKeyPair(), inferenceJob('a park'));
    const res = await fetch(`${url}/v1/compute`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...signed.headers },
      body: JSON.stringify(signed.body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    const job = (await res.json()) as { steps: { cost: number }[]; settlement: { stellar_tx: string | null } };
    assert.equal(job.steps[0]!.cost, 0.0012);
    assert.equal(job.settlement.stellar_tx, null);
    const earnings = (await (await fetch(`${url}/svc/workers/${node.publicKey}/earnings?days=1`)).json()) as {
      by_day: { credits: number }[];
    };
    assert.deepEqual(
      earnings.by_day.map((d) => d.credits),
      [0.0012],
    );
    const status = (await (await fetch(`${url}/svc/status`)).json()) as { earnings: { window_days: number } };
    assert.equal(status.earnings.window_days, 7);

    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, stderr());
    assert.equal(horizon.payments().length, 0, 'the node does not pay itself');
  });
});
