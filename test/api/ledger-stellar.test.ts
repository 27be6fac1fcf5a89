/**
 * Settlement and anchoring on a Stellar network (docs/protocol.md §1.10, §2.3 `settlement.stellar_tx`), wired as
 * `geofabric start` wires them (bin/start.ts startLedger, LEDGER=stellar) against a local Horizon that checks
 * every envelope (test/helpers/fake-horizon.ts): a finished job's payment shows in GET /v1/compute/:id, a sealed
 * epoch's anchor in GET /store/proof/:id, and `proof verify --anchor` checks it on Horizon.
 */
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { jobRecordOf } from '../../activities/compute/job-activities.js';
import { startAutoSealer } from '../../activities/proof/epoch-sealer.js';
import { stellarAddress } from '../../activities/settlement/stellar-keys.js';
import { loadConfig } from '../../bin/config.js';
import { proofVerifyCommand } from '../../bin/proof-commands.js';
import { startLedger } from '../../bin/start.js';
import { epochAt, epochWindow, DEFAULT_EPOCH_GENESIS_MS } from '../../core/epoch.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { jobIdFromSignature } from '../../core/job-hash.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import type { Seal } from '../../core/proof-types.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteLedgerStore } from '../../store/sqlite/ledger-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import type { WorkerRegistration } from '../../store/worker-registry.js';
import { startFakeHorizon, type FakeHorizon } from '../helpers/fake-horizon.js';
import { startGateway } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

const NOW = Date.parse('2026-03-01T10:00:00Z');
const TESTNET = 'Test SDF Network ; September 2015';
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';

const registration = (overrides: Partial<WorkerRegistration> = {}): WorkerRegistration => ({
  pk: generateKeyPair().publicKey,
  h3_cell: '861e8050fffffff',
  models: [WORKER_MODEL],
  tools: [],
  hardware: { platform: 'linux-x64', gpu: 'NVIDIA GeForce RTX 3060', vram_gb: 12, ram_gb: 32, cores: 8 },
  hardware_tier: 2,
  relay: false,
  version: '0.1.0',
  ...overrides,
});

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined>, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('settlement and anchoring on Stellar (LEDGER=stellar, fake Horizon)', function () {
  this.timeout(20_000);
  let horizon: FakeHorizon;
  let db: SqliteDatabase;
  let gw: Gateway;
  let node: KeyPair;
  let ledger: ReturnType<typeof startLedger>;
  const alice = generateKeyPair();

  beforeEach(async () => {
    horizon = await startFakeHorizon();
    node = generateKeyPair();
    horizon.addAccount(stellarAddress(node.publicKey));
    db = openSqlite(':memory:');
    const stores = {
      ledger: createSqliteLedgerStore(db),
      jobs: createSqliteJobStore(db),
      workers: createSqliteWorkerRegistry(db),
      proofs: createSqliteProofStore(db),
    };
    const config = loadConfig({
      LEDGER: 'stellar',
      HORIZON_URL: horizon.url,
      SETTLEMENT_THRESHOLD: '0',
      ANCHOR_EPOCHS: 'true',
    });
    ledger = startLedger(config, { stores, signer: node, logger: pino({ level: 'silent' }) });
    gw = await startGateway({
      clock: () => NOW,
      node,
      ...stores,
      ...(ledger.onJobPosted ? { onJobPosted: ledger.onJobPosted } : {}),
      networkPassphrase: config.ledger.networkPassphrase,
    });
  });
  afterEach(async () => {
    await ledger.stop();
    await gw.close();
    db.close();
    await horizon.close();
  });

  /** A signed job that a remote worker ran through a relay (the Temporal path's finishJob), as the gateway stored it. */
  async function remoteJob(prompt: string) {
    const worker = registration();
    const relay = registration({ relay: true, hardware_tier: 1, models: [] });
    await gw.workers.register(worker, NOW);
    await gw.workers.register(relay, NOW);
    const signed = signJob(alice, inferenceJob(prompt));
    const job: ComputeJobInput = {
      job_id: jobIdFromSignature(signed.headers['x-idn-signature']),
      requester_pk: alice.publicKey,
      h3_cell: '861e8050fffffff',
      epoch: epochAt(NOW, DEFAULT_EPOCH_GENESIS_MS),
      budget_credits: 0.1,
      proof_credits: 0.0001,
      steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: prompt }], estimate: 0.006 }],
      plan: { order: ['ask'], levels: [['ask']] },
      jurisdiction: null,
      min_tier: null,
      request_hash: 'ab'.repeat(32),
      created_at: new Date(NOW).toISOString(),
    };
    const result: ScheduleResult = {
      status: 'complete',
      charged: 0.0015,
      error: null,
      steps: [
        {
          id: 'ask',
          type: 'inference',
          status: 'complete',
          output: { text: 'Villa Ada.' },
          latency_ms: 5,
          worker_pk: worker.pk,
          cost: 0.0015,
          record_id: null,
          relay_pk: relay.pk,
        },
      ],
    };
    await gw.jobs.claim(jobRecordOf(job, 'running', null, NOW));
    const response = await gw.compute.jobs.finishJob(job, result);
    return { signed, response, worker, relay };
  }

  const stellarTxOf = async (jobId: string) =>
    ((await gw.get(`/v1/compute/${jobId}`)).body as ComputeResponse).settlement.stellar_tx;

  it('pays a finished job in one transaction whose memo is the job hash; GET /v1/compute/:id shows it', async () => {
    const { signed, response, worker, relay } = await remoteJob('a park');
    assert.equal(response.settlement.stellar_tx, null, 'finishJob answers before the payment');
    const tx = await waitFor('the settlement', () => stellarTxOf(response.job_id));

    const [paid, ...more] = horizon.transactions();
    assert.deepEqual(more, [], 'one transaction');
    assert.equal(paid!.hash, tx);
    assert.equal(paid!.source_account, stellarAddress(node.publicKey));
    assert.equal(paid!.memo_type, 'hash');
    assert.equal(paid!.memo, response.proof!.job_hash);
    const amounts = Object.fromEntries(horizon.payments().map((p) => [p.to, Number(p.amount)]));
    assert.deepEqual(amounts, { [stellarAddress(worker.pk)]: 0.0012, [stellarAddress(relay.pk)]: 0.0003 });

    // The stored job never changes; the answer is enriched when read, and a replayed POST shows it too.
    assert.equal((await gw.jobs.get(response.job_id))!.response!.settlement.stellar_tx, null);
    const replay = await gw.post('/v1/compute', signed.body, signed.headers);
    assert.equal(replay.status, 200, replay.text);
    assert.equal((replay.body as ComputeResponse).settlement.stellar_tx, tx);

    const earnings = (await gw.get(`/svc/workers/${worker.pk}/earnings`)).body as {
      unsettled_credits: number;
      settlements: unknown[];
    };
    assert.equal(earnings.unsettled_credits, 0);
    assert.deepEqual(earnings.settlements, [
      {
        id: `job:${response.job_id}`,
        tx_hash: tx,
        ledger: paid!.ledger,
        status: 'submitted',
        credits: 0.0012,
        at: (earnings.settlements[0] as { at: string }).at,
      },
    ]);
  });

  it('anchors each new seal; GET /store/proof shows the anchor and `proof verify --anchor` checks it', async () => {
    const { response } = await remoteJob('a fountain');
    const recordId = response.proof!.record_id;
    const epoch = response.epoch;
    await gw.writer.flush();
    const sealed: Seal[] = [];
    const sealer = startAutoSealer({
      store: gw.proofs,
      signer: node,
      clock: () => epochWindow(epoch + 1).start + 61_000,
      genesisMs: DEFAULT_EPOCH_GENESIS_MS,
      onError: (error) => assert.fail(String(error)),
      onSealed: async (seals) => {
        sealed.push(...seals);
        await ledger.onSealed!(seals);
      },
    });
    const path = `/store/proof/${encodeURIComponent(recordId)}`;
    const anchored = await waitFor('the anchor', async () => {
      const body = (await gw.get(path)).body as { anchor: Record<string, unknown> | null; seal: Seal | null };
      return body.anchor ? body : null;
    });
    await sealer.stop();
    const seal = sealed.find((s) => s.epoch === epoch)!;
    const anchorTx = horizon.transactions().find((t) => t.hash === anchored.anchor!.tx_hash)!;
    assert.deepEqual(anchored.anchor, {
      tx_hash: anchorTx.hash,
      ledger: anchorTx.ledger,
      epoch,
      root: seal.merkle_root,
      network_passphrase: TESTNET,
    });
    assert.deepEqual(anchorTx.operations, [
      {
        type: 'manage_data',
        source_account: stellarAddress(node.publicKey),
        name: `epoch:${epoch}`,
        value_hex: seal.merkle_root,
      },
    ]);

    const outputs: Record<string, unknown>[] = [];
    const verify = (id: string) =>
      proofVerifyCommand([id, '--url', gw.url, '--anchor', '--horizon', horizon.url], (value) =>
        outputs.push(value as Record<string, unknown>),
      );
    assert.equal(await verify(recordId), 0, JSON.stringify(outputs));
    assert.equal(outputs[0]!.verified, true);
    assert.equal((outputs[0]!.anchor as { ok: boolean }).ok, true);

    // The server names another transaction for this epoch (one that exists, but is the job's payment).
    const payment = await waitFor('the settlement', () => stellarTxOf(response.job_id));
    const stored = (await gw.ledger.anchor(node.publicKey, epoch))!;
    await gw.ledger.recordAnchor({ ...stored, tx_hash: payment, at: new Date(NOW + 1).toISOString() });
    assert.equal(await verify(recordId), 1);
    const mismatch = outputs.at(-1)!;
    assert.equal(mismatch.verified, false);
    assert.match(String((mismatch.problems as string[]).at(-1)), /^anchor: no manage_data epoch:\d+ in [0-9a-f]{64}/);
    // Or the root it shows is not this seal's.
    await gw.ledger.recordAnchor({ ...stored, at: new Date(NOW + 2).toISOString(), root: 'ee'.repeat(32) });
    assert.equal(await verify(recordId), 1);
    assert.match(String((outputs.at(-1)!.problems as string[]).at(-1)), /is not this seal's/);
  });

  it('`proof verify --anchor` exits 1 when the epoch is not anchored; without --anchor the proof alone decides', async () => {
    const { response } = await remoteJob('a square');
    await gw.writer.flush();
    await sealThrough(gw.proofs, node, response.epoch); // sealed without the anchoring hook
    const outputs: Record<string, unknown>[] = [];
    const out = (value: unknown) => outputs.push(value as Record<string, unknown>);
    const id = response.proof!.record_id;
    assert.equal(await proofVerifyCommand([id, '--url', gw.url, '--anchor', '--horizon', horizon.url], out), 1);
    assert.match(String((outputs[0]!.problems as string[])[0]), /^anchor: epoch \d+ of [0-9a-f]{64} is not anchored/);
    assert.equal(await proofVerifyCommand([id, '--url', gw.url], out), 0);
    assert.equal(outputs[1]!.verified, true);
    await assert.rejects(proofVerifyCommand([id, '--url', gw.url, '--horizon', horizon.url], out), /usage/);
  });

  it('the anchor sweep anchors seals a crash kept from the sealer hook (they were stored, never handed over)', async () => {
    const { response } = await remoteJob('a fountain');
    await gw.writer.flush();
    await sealThrough(gw.proofs, node, response.epoch); // stored, then "killed" before onSealed
    const path = `/store/proof/${encodeURIComponent(response.proof!.record_id)}`;
    assert.equal(((await gw.get(path)).body as { anchor: unknown }).anchor, null);
    // The restarted process: its sweep (every second here) finds the newest seal unanchored.
    const restarted = startLedger(
      loadConfig({
        LEDGER: 'stellar',
        HORIZON_URL: horizon.url,
        ANCHOR_EPOCHS: 'true',
        SETTLEMENT_INTERVAL_SECONDS: '1',
      }),
      {
        stores: { ledger: gw.ledger, jobs: gw.jobs, workers: gw.workers, proofs: gw.proofs },
        signer: node,
        logger: pino({ level: 'silent' }),
      },
    );
    try {
      const anchored = await waitFor('the catch-up anchor', async () => {
        const body = (await gw.get(path)).body as { anchor: { epoch: number } | null };
        return body.anchor;
      });
      assert.equal(anchored.epoch, response.epoch);
      const out: Record<string, unknown>[] = [];
      const verified = await proofVerifyCommand(
        [response.proof!.record_id, '--url', gw.url, '--anchor', '--horizon', horizon.url],
        (value) => out.push(value as Record<string, unknown>),
      );
      assert.equal(verified, 0, JSON.stringify(out));
    } finally {
      await restarted.stop();
    }
  });
});
