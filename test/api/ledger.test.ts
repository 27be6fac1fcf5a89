/**
 * The credit ledger over HTTP (docs/protocol.md §1.4, §1.6, §1.10, §2.3, §8): earnings after real jobs, the swarm's
 * earnings in /svc/status, proof purchases, and bad query parameters. Settlement on Stellar and anchoring are
 * in ledger-stellar.test.ts.
 */
import assert from 'node:assert/strict';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import type { ScheduleResult } from '../../core/job-scheduler.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { signRequestBody } from '../../core/gates/signature.js';
import type { WorkerRegistration } from '../../store/worker-registry.js';
import { jobRecordOf } from '../../activities/compute/job-activities.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

interface Earnings {
  worker_pk: string;
  days: number;
  balance_credits: number;
  unsettled_credits: number;
  by_day: { day: string; credits: number; entries: number; hardware_tier: number | null }[];
  settlements: { id: string; tx_hash: string | null; ledger: number | null; status: string }[];
}
interface Job {
  job_id: string;
  epoch: number;
  steps: { id: string; cost: number; worker_pk: string | null }[];
  settlement: { stellar_tx: string | null; total_credits: number };
  proof: { record_id: string; verify_url: string };
}

const NOW = Date.parse('2026-03-01T10:00:00Z');
const TODAY = '2026-03-01';
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const PROOF = 0.0001;
// Independent arithmetic in integer units of 1e-8 credits.
const units = (credits: number) => Math.round(credits * 1e8);
const credits = (...amounts: number[]) => amounts.reduce((sum, c) => sum + units(c), 0) / 1e8;
const errorOf = (res: TestResponse) => (res.body as { error?: string }).error;

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

/** A one-step job as the router accepted it, for finishJob (the Temporal path: a remote worker, a relay). */
const acceptedJob = (requester: KeyPair, jobId: string): ComputeJobInput => ({
  job_id: jobId,
  requester_pk: requester.publicKey,
  h3_cell: '861e8050fffffff',
  epoch: 1000,
  budget_credits: 0.1,
  proof_credits: PROOF,
  steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'hi' }], estimate: 0.006 }],
  plan: { order: ['ask'], levels: [['ask']] },
  jurisdiction: null,
  min_tier: null,
  request_hash: 'ab'.repeat(32),
  created_at: new Date(NOW).toISOString(),
});

/** The step a remote worker ran for `cost`, routed by `relayPk`. */
const ranBy = (workerPk: string, relayPk: string, cost: number): ScheduleResult => ({
  status: 'complete',
  charged: cost,
  error: null,
  steps: [
    {
      id: 'ask',
      type: 'inference',
      status: 'complete',
      output: { text: 'ok' },
      latency_ms: 5,
      worker_pk: workerPk,
      cost,
      record_id: null,
      relay_pk: relayPk,
    },
  ],
});

/** Runs `result` through the gateway's own finishJob, as the Temporal workflow does after its steps. */
async function finishRemoteJob(gw: Gateway, job: ComputeJobInput, result: ScheduleResult) {
  await gw.jobs.claim(jobRecordOf(job, 'running', null, NOW));
  return gw.compute.jobs.finishJob(job, result);
}

describe('the credit ledger over HTTP', function () {
  this.timeout(20_000);
  const gateways: Gateway[] = [];
  const runtimes: FakeRuntime[] = [];
  const alice = generateKeyPair();

  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });

  async function gateway(options: Parameters<typeof startGateway>[0] = {}) {
    const gw = await startGateway({ clock: () => NOW, ...options });
    gateways.push(gw);
    return gw;
  }

  /** A gateway whose own worker answers every inference with `tokens` (in, out). */
  async function gatewayWithWorker(tokens: [number, number][]) {
    let call = 0;
    const runtime = await startFakeRuntime(WORKER_MODEL, () => {
      const [prompt, completion] = tokens[call++ % tokens.length]!;
      return { content: 'Villa Borghese.', usage: { prompt_tokens: prompt, completion_tokens: completion } };
    });
    runtimes.push(runtime);
    return gateway({ swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] } });
  }

  const earnings = async (gw: Gateway, pk: string, query = '') => {
    const res = await gw.get(`/svc/workers/${pk}/earnings${query}`);
    assert.equal(res.status, 200, res.text);
    return res.body as Earnings;
  };

  describe('GET /svc/workers/:pk/earnings', () => {
    it('after embedded jobs: the worker earned the sum of its steps, the requester paid steps plus proofs', async () => {
      const gw = await gatewayWithWorker([
        [120, 30],
        [40, 10],
      ]);
      const jobs: Job[] = [];
      for (const prompt of ['one park in Rome', 'one fountain in Rome']) {
        const signed = signJob(alice, inferenceJob(prompt));
        const res = await gw.post('/v1/compute', signed.body, signed.headers);
        assert.equal(res.status, 200, res.text);
        jobs.push(res.body as Job);
      }
      const costs = jobs.flatMap((job) => job.steps.map((s) => s.cost));
      assert.deepEqual(costs, [0.0015, 0.0005]);
      assert.ok(jobs.every((job) => job.steps.every((s) => s.worker_pk === gw.node.publicKey)));

      // The gateway's own worker ran both steps: it earns their cost (no relay in the embedded runner) and,
      // being the platform that sealed the proofs, the proof fees too (in the balance, not the step earnings).
      const tier = (await gw.workers.get(gw.node.publicKey))!.hardware_tier;
      const node = await earnings(gw, gw.node.publicKey);
      assert.deepEqual(node, {
        worker_pk: gw.node.publicKey,
        days: 7,
        from: '2026-02-23T00:00:00.000Z',
        to: new Date(NOW).toISOString(),
        balance_credits: credits(...costs, PROOF, PROOF),
        unsettled_credits: credits(...costs, PROOF, PROOF),
        by_day: [{ day: TODAY, credits: credits(...costs), entries: 2, hardware_tier: tier }],
        settlements: [],
      });
      // The requester's account: what the jobs charged, as their settlement said.
      const paid = await earnings(gw, alice.publicKey, '?days=1');
      assert.equal(paid.balance_credits, -credits(...jobs.map((job) => job.settlement.total_credits)));
      assert.equal(paid.balance_credits, -credits(...costs, PROOF, PROOF));
      assert.deepEqual(paid.by_day, []);
      assert.equal(paid.unsettled_credits, 0);
      // A replayed request is the same job: nothing is posted twice.
      const again = signJob(alice, inferenceJob('one park in Rome'));
      assert.equal((await gw.post('/v1/compute', again.body, again.headers)).status, 200);
      assert.equal((await earnings(gw, gw.node.publicKey)).balance_credits, node.balance_credits);
    });

    it('a routed step: the worker earns its cost less the relay fee (RELAY_FEE_PERCENT), the relay the fee', async () => {
      const gw = await gateway({ relayFeeShare: 0.25 });
      const worker = registration({ hardware_tier: 2 });
      const relay = registration({ relay: true, hardware_tier: 1, models: [] });
      await gw.workers.register(worker, NOW);
      await gw.workers.register(relay, NOW);
      const response = await finishRemoteJob(
        gw,
        acceptedJob(alice, '1b4e28ba-2fa1-81d2-883f-0016d3cca427'),
        ranBy(worker.pk, relay.pk, 0.0015),
      );
      assert.deepEqual(response.settlement.relay_fees, { [relay.pk]: 0.000375 });

      const w = await earnings(gw, worker.pk);
      const r = await earnings(gw, relay.pk);
      assert.deepEqual(w.by_day, [{ day: TODAY, credits: 0.001125, entries: 1, hardware_tier: 2 }]);
      assert.deepEqual(r.by_day, [{ day: TODAY, credits: 0.000375, entries: 1, hardware_tier: 1 }]);
      assert.equal(credits(w.balance_credits, r.balance_credits), 0.0015, 'the fee is a share of the step');
      assert.equal(w.unsettled_credits, 0.001125);
      assert.deepEqual(w.settlements, [], 'LEDGER=none pays nothing out');
      // Outside the window the day is gone, the balance (all time) is not.
      const later = await gateway({ clock: () => NOW + 3 * 86_400_000, ledger: gw.ledger });
      const old = await earnings(later, worker.pk, '?days=2');
      assert.deepEqual(old.by_day, []);
      assert.equal(old.balance_credits, 0.001125);
    });

    it('refuses bad days and keys with 400 JSON, never a 500', async () => {
      const gw = await gateway();
      const pk = generateKeyPair().publicKey;
      for (const bad of ['0', '91', 'seven', '1e1', '7.0', '-1', '']) {
        const res = await gw.get(`/svc/workers/${pk}/earnings?days=${bad}`);
        assert.equal(res.status, 400, `days=${bad}: ${res.text}`);
        assert.equal(errorOf(res), 'invalid_days');
        assert.match((res.body as { detail: string }).detail, /days must be one integer 1\.\.90/);
      }
      const twice = await gw.get(`/svc/workers/${pk}/earnings?days=1&days=2`);
      assert.equal(twice.status, 400);
      for (const key of ['abc', pk.toUpperCase(), `${pk}00`]) {
        const res = await gw.get(`/svc/workers/${key}/earnings`);
        assert.equal(res.status, 400, key);
        assert.equal(errorOf(res), 'invalid_public_key');
      }
      const unknown = await earnings(gw, pk, '?days=90');
      assert.deepEqual(
        { days: unknown.days, balance: unknown.balance_credits, rows: unknown.by_day },
        { days: 90, balance: 0, rows: [] },
      );
    });
  });

  describe('GET /svc/status earnings', () => {
    it('shows the last week per hardware tier per day beside docs/protocol.md §1.6 figures, keeping the swarm fields', async () => {
      const gw = await gateway();
      const empty = (await gw.get('/svc/status')).body as Record<string, unknown>;
      assert.deepEqual(empty.earnings, {
        window_days: 7,
        per_day_by_tier: { '1': 0, '2': 0, '3': 0, unknown: 0 },
        spec_reference: { '1': 0.35, '2': 8.7, '3': 25 },
      });

      const tier3 = registration({
        hardware_tier: 3,
        hardware: { ...registration().hardware, gpu: 'NVIDIA A100', vram_gb: 80 },
      });
      const relay = registration({ relay: true, hardware_tier: 1, models: [] });
      await gw.workers.register(tier3, NOW);
      await gw.workers.register(relay, NOW);
      // 0.7 credits of tier-3 work over the week (0.56 after the 20 % relay fee) → 0.08 a day for tier 3.
      await finishRemoteJob(
        gw,
        acceptedJob(alice, '2c5f39cb-3fa2-82e3-994f-1127e4ddb538'),
        ranBy(tier3.pk, relay.pk, 0.7),
      );
      const res = await gw.get('/svc/status');
      assert.equal(res.status, 200);
      const status = res.body as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      assert.deepEqual(status.earnings.per_day_by_tier, { '1': 0.02, '2': 0, '3': 0.08, unknown: 0 });
      assert.equal(status.version, '0.1.0');
      assert.equal(typeof status.epoch, 'number');
      assert.equal(status.workers.online, 1);
      assert.equal(status.workers.relays_online, 1);
    });
  });

  describe('buying a Merkle proof (docs/protocol.md §8: 0.0001 credits)', () => {
    /** A gateway with one job whose compute/job record is sealed. */
    async function withSealedJob() {
      const gw = await gatewayWithWorker([[10, 2]]);
      const signed = signJob(alice, inferenceJob('a park'));
      const job = (await gw.post('/v1/compute', signed.body, signed.headers)).body as Job;
      await gw.writer.flush();
      await sealThrough(gw.proofs, gw.node, job.epoch);
      return { gw, job };
    }

    const purchase = (buyer: KeyPair, recordId: string, extra: Record<string, unknown> = {}) =>
      signRequestBody(buyer.secretKey, { record_id: recordId, created_at: new Date(NOW).toISOString(), ...extra });
    const buy = (
      gw: Gateway,
      signed: { body: { record_id: string }; signature: string },
      path = signed.body.record_id,
    ) => gw.post(`/store/proof/${encodeURIComponent(path)}`, signed.body, { 'x-idn-signature': signed.signature });

    it('a signed POST answers the bundle and the charge; a replay is charged once; a GET is free', async () => {
      const { gw, job } = await withSealedJob();
      const bob = generateKeyPair();
      const recordId = job.proof.record_id;
      const before = await gw.ledger.balance(gw.node.publicKey);
      const read = await gw.get(`/store/proof/${encodeURIComponent(recordId)}`);
      assert.equal(read.status, 200);
      const bundle = read.body as Record<string, unknown>;
      assert.equal(bundle.verified, true);
      assert.equal(bundle.anchor, null, 'LEDGER=none: no anchor');
      assert.equal('charge' in bundle, false);

      const signed = purchase(bob, recordId);
      const first = await buy(gw, signed);
      assert.equal(first.status, 200, first.text);
      const bought = first.body as Record<string, unknown> & { charge: { credits: number; entry_ids: string[] } };
      assert.equal(bought.charge.credits, 0.0001);
      assert.equal(bought.charge.entry_ids.length, 2);
      const { charge: _charge, ...same } = bought;
      assert.deepEqual(same, bundle, 'the same bundle as the free read');
      assert.equal(await gw.ledger.balance(bob.publicKey), -units(0.0001));
      assert.equal(await gw.ledger.balance(gw.node.publicKey), before + units(0.0001));

      const replay = await buy(gw, signed);
      assert.equal(replay.status, 200);
      assert.deepEqual((replay.body as typeof bought).charge, bought.charge);
      assert.equal(await gw.ledger.balance(bob.publicKey), -units(0.0001), 'a replay is not charged again');

      // Another signed request is another purchase; the free read still charges nothing.
      assert.equal((await buy(gw, purchase(bob, recordId, { nonce: '2' }))).status, 200);
      await gw.get(`/store/proof/${encodeURIComponent(recordId)}`);
      assert.equal(await gw.ledger.balance(bob.publicKey), -units(0.0002));
      const buyer = await earnings(gw, bob.publicKey);
      assert.equal(buyer.balance_credits, -0.0002);
    });

    it('charges nothing for a record not sealed yet, and refuses bad purchases before charging', async () => {
      const gw = await gatewayWithWorker([[10, 2]]);
      const signed = signJob(alice, inferenceJob('a fountain'));
      const job = (await gw.post('/v1/compute', signed.body, signed.headers)).body as Job;
      const bob = generateKeyPair();
      const pending = await buy(gw, purchase(bob, job.proof.record_id));
      assert.equal(pending.status, 200, pending.text);
      assert.deepEqual((pending.body as { charge: unknown; pending: boolean }).charge, { credits: 0, entry_ids: [] });
      assert.equal((pending.body as { pending: boolean }).pending, true);

      const unknown = await buy(gw, purchase(bob, 'compute:nope'));
      assert.equal(unknown.status, 404);
      assert.equal(errorOf(unknown), 'record_not_found');
      const elsewhere = await buy(gw, purchase(bob, job.proof.record_id), 'compute:other');
      assert.equal(elsewhere.status, 400);
      assert.equal(errorOf(elsewhere), 'invalid_request');
      const undated = signRequestBody(bob.secretKey, { record_id: job.proof.record_id });
      assert.equal(errorOf(await buy(gw, undated)), 'invalid_request');
      const stale = purchase(bob, job.proof.record_id, { created_at: new Date(NOW - 3_600_000).toISOString() });
      assert.equal(errorOf(await buy(gw, stale)), 'stale_request');
      const unsigned = await gw.post(`/store/proof/${encodeURIComponent(job.proof.record_id)}`, {
        requester_pk: bob.publicKey,
        record_id: job.proof.record_id,
        created_at: new Date(NOW).toISOString(),
      });
      assert.equal(unsigned.status, 401);
      assert.equal(errorOf(unsigned), 'signature_required');
      assert.equal(await gw.ledger.balance(bob.publicKey), 0);
    });
  });
});
