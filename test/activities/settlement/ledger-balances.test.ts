import assert from 'node:assert/strict';
import { toCreditUnits } from '../../../core/credits.js';
import { relayFee } from '../../../core/pricing.js';
import { createSettlementService } from '../../../activities/settlement/settlement-service.js';
import { publicKeyOfAddress } from '../../../activities/settlement/stellar-keys.js';
import {
  FAST_RETRY,
  jobHashFor,
  postJob,
  recordingLogger,
  stage,
  T0,
  type Stage,
  type StepSpec,
} from '../../helpers/settlement-fixtures.js';

describe('ledger balances against job breakdowns, and what settlement pays', () => {
  let s: Stage;
  beforeEach(async () => {
    s = await stage();
  });
  afterEach(async () => {
    await s.close();
  });

  it('balances equal the sums of the job breakdowns; balance payouts equal the positive balances at or above the threshold', async () => {
    const [w0, w1, w2] = s.workers.map((w) => w.publicKey) as [string, string, string];
    const relay = s.relay.publicKey;
    const jobs: Record<string, StepSpec[]> = {
      j1: [
        { id: 'chat', worker_pk: w0, cost: 0.00512, relay_pk: relay },
        { id: 'tile', worker_pk: w1, cost: 0.0001 },
      ],
      j2: [
        { id: 'ndvi', worker_pk: w1, cost: 0.0123 },
        { id: 'chat', worker_pk: 'backbone', cost: 0 },
      ],
      j3: [
        { id: 'a', worker_pk: w0, cost: 0.00731, relay_pk: relay },
        { id: 'b', worker_pk: w2, cost: 0.00001 },
        { id: 'c', worker_pk: s.platform.publicKey, cost: 0.0002 },
      ],
      j4: [{ id: 'x', worker_pk: w0, cost: 0.00099, relay_pk: relay }],
    };

    // What the breakdowns say each account is owed (or owes), computed independently of core/ledger-entries.
    const expected = new Map<string, number>();
    const add = (pk: string, units: number) => expected.set(pk, (expected.get(pk) ?? 0) + units);
    let minute = 0;
    for (const [jobId, steps] of Object.entries(jobs)) {
      const { response } = await postJob(s, jobId, steps, T0 + minute++ * 60_000);
      const breakdownUnits = Object.values(response.settlement.breakdown).reduce((a, c) => a + toCreditUnits(c), 0);
      const proofUnits = toCreditUnits(response.settlement.proof_credits);
      assert.equal(toCreditUnits(response.settlement.total_credits), breakdownUnits + proofUnits);
      add(s.requester.publicKey, -(breakdownUnits + proofUnits));
      add(s.platform.publicKey, proofUnits);
      for (const step of steps) {
        const cost = toCreditUnits(response.settlement.breakdown[step.id]!);
        const fee = step.relay_pk ? toCreditUnits(relayFee(step.cost)) : 0;
        if (step.relay_pk) add(step.relay_pk, fee);
        if (step.worker_pk !== 'backbone' && step.worker_pk !== null) add(step.worker_pk, cost - fee);
      }
    }

    const accounts = [...expected.keys()];
    for (const pk of accounts) assert.equal(await s.ledger.balance(pk), expected.get(pk), `balance of ${pk}`);
    const sum = (await Promise.all(accounts.map((pk) => s.ledger.balance(pk)))).reduce((a, b) => a + b, 0);
    assert.equal(sum, 0, 'a job ledger is balanced');

    const threshold = 1_000_000;
    const svc = createSettlementService({
      ledger: s.ledger,
      port: 'stellar',
      horizon: s.horizon,
      payer: s.platform,
      thresholdUnits: threshold,
      mode: 'balance',
      clock: () => T0 + 3_600_000,
      logger: recordingLogger(),
      retry: FAST_RETRY,
      jobHashOf: async (jobId) => jobHashFor(jobId),
      listAccounts: async () => accounts,
      sleep: async () => undefined,
    });
    await svc.settleBalances();

    // Payees: every account but the platform (and the requester, who owes) with a balance ≥ threshold.
    const owed = accounts.filter(
      (pk) => pk !== s.platform.publicKey && pk !== s.requester.publicKey && expected.get(pk)! >= threshold,
    );
    assert.ok(owed.length >= 2, 'the scenario pays several accounts');
    const paid = new Map(s.fake.payments().map((p) => [publicKeyOfAddress(p.to)!, Math.round(Number(p.amount) * 1e8)]));
    assert.deepEqual([...paid.keys()].sort(), [...owed].sort());
    for (const pk of owed) {
      // Paid = the balance floored to whole stroops (10 credit units).
      assert.equal(paid.get(pk), Math.floor(expected.get(pk)! / 10) * 10, `payment to ${pk}`);
    }
    assert.equal(s.fake.transactions().length, owed.length);

    // Everything paid is settled; below-threshold accounts keep their entries unsettled.
    for (const pk of owed) assert.deepEqual(await s.ledger.unsettled(pk), []);
    for (const pk of accounts.filter((a) => !owed.includes(a) && expected.get(a)! > 0)) {
      const left = (await s.ledger.unsettled(pk)).reduce((a, e) => a + e.amount_units, 0);
      assert.equal(left, expected.get(pk));
    }
  });

  it('in job mode every job total ≥ threshold is paid once and the payments add up to those jobs’ payee entries', async () => {
    const [w0, w1] = s.workers.map((w) => w.publicKey) as [string, string];
    const specs: Record<string, StepSpec[]> = {
      big1: [{ id: 'a', worker_pk: w0, cost: 0.02, relay_pk: s.relay.publicKey }],
      small: [{ id: 'a', worker_pk: w1, cost: 0.0004 }],
      big2: [
        { id: 'a', worker_pk: w0, cost: 0.006 },
        { id: 'b', worker_pk: w1, cost: 0.006 },
      ],
    };
    const payeeUnits = new Map<string, number>();
    const svc = createSettlementService({
      ledger: s.ledger,
      port: 'stellar',
      horizon: s.horizon,
      payer: s.platform,
      thresholdUnits: 1_000_000,
      mode: 'job',
      clock: () => T0,
      logger: recordingLogger(),
      retry: FAST_RETRY,
      jobHashOf: async (jobId) => jobHashFor(jobId),
      sleep: async () => undefined,
    });
    for (const [jobId, steps] of Object.entries(specs)) {
      const { entries } = await postJob(s, jobId, steps);
      const payees = entries.filter((e) => e.amount_units > 0 && e.account_pk !== s.platform.publicKey);
      const total = payees.reduce((a, e) => a + e.amount_units, 0);
      if (total >= 1_000_000)
        for (const e of payees) payeeUnits.set(e.account_pk, (payeeUnits.get(e.account_pk) ?? 0) + e.amount_units);
      await svc.settleJob(jobId);
      await svc.settleJob(jobId);
    }
    assert.deepEqual(
      s.fake.transactions().map((t) => t.memo),
      [jobHashFor('big1'), jobHashFor('big2')],
    );
    const paid = new Map<string, number>();
    for (const p of s.fake.payments()) {
      const pk = publicKeyOfAddress(p.to)!;
      paid.set(pk, (paid.get(pk) ?? 0) + Math.round(Number(p.amount) * 1e8));
    }
    assert.deepEqual(paid, payeeUnits);
  });
});
