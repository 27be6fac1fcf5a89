import assert from 'node:assert/strict';
import { Keypair, Networks } from '@stellar/stellar-sdk';
import type { HorizonClient } from '../../../activities/settlement/horizon.js';
import {
  createSettlementService,
  jobSettlementId,
  jobStellarTx,
  stroopsToAmount,
  type SettlementServiceDeps,
} from '../../../activities/settlement/settlement-service.js';
import { stellarAddress } from '../../../activities/settlement/stellar-keys.js';
import type { LedgerStore } from '../../../store/ledger-store.js';
import {
  FAST_RETRY,
  jobHashFor,
  postJob,
  recordingLogger,
  recordingSleep,
  stage,
  T0,
  type Stage,
} from '../../helpers/settlement-fixtures.js';

describe('settlement service (Stellar port, fake Horizon)', () => {
  let s: Stage;
  beforeEach(async () => {
    s = await stage();
  });
  afterEach(async () => {
    await s.close();
  });

  const service = (overrides: Partial<SettlementServiceDeps> = {}) =>
    createSettlementService({
      ledger: s.ledger,
      port: 'stellar',
      horizon: s.horizon,
      payer: s.platform,
      networkPassphrase: Networks.TESTNET,
      asset: 'native',
      thresholdUnits: 1_000_000, // 0.01 credits
      mode: 'job',
      clock: () => T0 + 60_000,
      logger: recordingLogger(),
      retry: FAST_RETRY,
      jobHashOf: async (jobId) => jobHashFor(jobId),
      sleep: recordingSleep().sleep,
      random: () => 0.5,
      ...overrides,
    });

  /** A job of 0.012 credits: worker 0 ran a relayed step, worker 1 another, the platform the proof. */
  const bigJob = (jobId: string) =>
    postJob(s, jobId, [
      { id: 'a', worker_pk: s.workers[0]!.publicKey, cost: 0.007, relay_pk: s.relay.publicKey },
      { id: 'b', worker_pk: s.workers[1]!.publicKey, cost: 0.005 },
    ]);

  describe('threshold (mode job)', () => {
    it('submits nothing while a job stays below the threshold', async () => {
      await postJob(s, 'small', [{ id: 'a', worker_pk: s.workers[0]!.publicKey, cost: 0.00512 }]);
      const settled = await service().settleJob('small');
      assert.deepEqual(settled, []);
      assert.equal(s.fake.submissions().length, 0);
      assert.equal(await s.ledger.settlement(jobSettlementId('small')), null);
      assert.equal(await jobStellarTx(s.ledger, 'small'), null);
    });

    it('pays what small jobs left once an account reaches the threshold, and never a job paid on its own', async () => {
      const w0 = s.workers[0]!.publicKey;
      const svc = service();
      await postJob(s, 'small-1', [{ id: 'a', worker_pk: w0, cost: 0.006 }]);
      await postJob(s, 'small-2', [{ id: 'a', worker_pk: w0, cost: 0.005 }]);
      assert.deepEqual(await svc.settleJob('small-1'), []);
      assert.deepEqual(await svc.settleJob('small-2'), []);
      await bigJob('big');
      const [paidJob] = await svc.settleJob('big');
      assert.equal(paidJob?.status, 'submitted');
      // The sweep: w0's two small earnings (0.011 credits) reach the threshold; the big job's are already paid.
      const swept = await svc.settleBalances();
      assert.deepEqual(
        swept.map((x) => [x.id, x.payees]),
        [[`balance:${w0}:1`, { [w0]: 1_100_000 }]],
      );
      assert.equal(swept[0]!.entry_ids.length, 2);
      assert.equal(s.fake.transactions().length, 2);
      assert.deepEqual(await svc.settleBalances(), []);
    });

    it('pays a job at the threshold in exactly one transaction: one payment per payee, memo = job hash', async () => {
      // 0.008 + 0.002 = 0.01 credits to payees: exactly the threshold.
      await postJob(s, 'exact', [
        { id: 'a', worker_pk: s.workers[0]!.publicKey, cost: 0.008 },
        { id: 'b', worker_pk: s.workers[1]!.publicKey, cost: 0.002 },
      ]);
      const [settlement] = await service().settleJob('exact');
      assert.equal(settlement?.status, 'submitted');
      const txs = s.fake.transactions();
      assert.equal(txs.length, 1);
      assert.equal(txs[0]!.memo_type, 'hash');
      assert.equal(txs[0]!.memo, jobHashFor('exact'));
      assert.equal(txs[0]!.source_account, stellarAddress(s.platform.publicKey));
      assert.deepEqual(
        s.fake
          .payments()
          .map((p) => [p.to, p.amount, p.asset])
          .sort(),
        [
          [stellarAddress(s.workers[0]!.publicKey), '0.0080000', 'native'],
          [stellarAddress(s.workers[1]!.publicKey), '0.0020000', 'native'],
        ].sort(),
      );
      assert.deepEqual(await jobStellarTx(s.ledger, 'exact'), { tx_hash: txs[0]!.hash, ledger: txs[0]!.ledger });
    });

    it('pays workers and the relay above the threshold, never the platform, and records what it settled', async () => {
      const { entries } = await bigJob('big');
      const [settlement] = await service().settleJob('big');
      assert.equal(settlement?.status, 'submitted');
      const payments = s.fake.payments();
      assert.equal(s.fake.transactions().length, 1);
      const byTo = new Map(payments.map((p) => [p.to, p.amount]));
      assert.equal(byTo.get(stellarAddress(s.workers[0]!.publicKey)), '0.0056000'); // 0.007 less the 20 % relay fee
      assert.equal(byTo.get(stellarAddress(s.relay.publicKey)), '0.0014000');
      assert.equal(byTo.get(stellarAddress(s.workers[1]!.publicKey)), '0.0050000');
      assert.equal(byTo.has(stellarAddress(s.platform.publicKey)), false);
      assert.equal(payments.length, 3);

      const stored = await s.ledger.settlement(jobSettlementId('big'));
      assert.equal(stored?.status, 'submitted');
      assert.equal(stored?.tx_hash, s.fake.transactions()[0]!.hash);
      assert.equal(stored?.memo_hash, jobHashFor('big'));
      const payeeEntries = entries.filter((e) => e.kind === 'step_earning' || e.kind === 'relay_fee');
      assert.deepEqual([...stored!.entry_ids].sort(), payeeEntries.map((e) => e.id).sort());
      for (const e of payeeEntries) assert.equal(stored!.payees[e.account_pk], e.amount_units);
      // Settled entries are no longer unsettled.
      assert.deepEqual(await s.ledger.unsettled(s.workers[0]!.publicKey), []);
    });

    it('settles a job once however often it is asked', async () => {
      await bigJob('twice');
      const svc = service();
      const [first] = await svc.settleJob('twice');
      const [second] = await svc.settleJob('twice');
      await Promise.all([svc.settleJob('twice'), svc.settleJob('twice'), svc.retryOpen()]);
      assert.equal(first?.tx_hash, second?.tx_hash);
      assert.equal(s.fake.submissions().length, 1);
      assert.equal(s.fake.transactions().length, 1);
    });

    it('floors each payment to whole stroops and records the units actually paid', async () => {
      // 0.01000005 credits to one worker: 1 000 005 units, 100 000 stroops paid, 5 units of dust.
      await postJob(s, 'dust', [{ id: 'a', worker_pk: s.workers[0]!.publicKey, cost: 0.01000005 }]);
      const [settlement] = await service().settleJob('dust');
      assert.equal(settlement?.payees[s.workers[0]!.publicKey], 1_000_000);
      assert.deepEqual(
        s.fake.payments().map((p) => p.amount),
        ['0.0100000'],
      );
    });

    it('uses a stand-in memo when the job hash is unknown, so a retry still finds the same transaction', async () => {
      await bigJob('nohash');
      const logger = recordingLogger();
      const [settlement] = await service({ jobHashOf: async () => null, logger }).settleJob('nohash');
      assert.equal(settlement?.status, 'submitted');
      assert.match(settlement!.memo_hash!, /^[0-9a-f]{64}$/);
      assert.equal(s.fake.transactions()[0]!.memo, settlement!.memo_hash);
      assert.ok(logger.lines.some((l) => l.level === 'warn' && /job hash unknown/.test(l.msg)));
    });

    it('pays in a configured credit asset CODE:ISSUER', async () => {
      await s.close();
      const issuer = Keypair.random().publicKey();
      s = await stage({ assets: [`GEOC:${issuer}`] });
      await bigJob('credit');
      const [settlement] = await service({ asset: `GEOC:${issuer}` }).settleJob('credit');
      assert.equal(settlement?.status, 'submitted');
      assert.ok(s.fake.payments().every((p) => p.asset === `GEOC:${issuer}`));
    });
  });

  describe('balance mode', () => {
    it('pays each account once its unsettled balance reaches the threshold, one payment per account', async () => {
      const w0 = s.workers[0]!.publicKey;
      const w1 = s.workers[1]!.publicKey;
      const svc = service({ mode: 'balance' });
      // 0.006 credits each for w0: below the threshold after one job, above after two.
      await postJob(s, 'j1', [{ id: 'a', worker_pk: w0, cost: 0.006 }]);
      assert.deepEqual(await svc.settleJob('j1'), []);
      await postJob(s, 'j2', [
        { id: 'a', worker_pk: w0, cost: 0.006 },
        { id: 'b', worker_pk: w1, cost: 0.003 },
      ]);
      const settled = await svc.settleJob('j2');
      assert.equal(settled.length, 1);
      assert.equal(settled[0]!.id, `balance:${w0}:1`);
      assert.deepEqual(settled[0]!.payees, { [w0]: 1_200_000 });
      assert.equal(settled[0]!.entry_ids.length, 2);
      const txs = s.fake.transactions();
      assert.equal(txs.length, 1);
      assert.equal(txs[0]!.operations.length, 1);
      assert.equal(txs[0]!.memo, settled[0]!.memo_hash);
      assert.deepEqual(
        s.fake.payments().map((p) => [p.to, p.amount]),
        [[stellarAddress(w0), '0.0120000']],
      );
      // w0 has nothing left to pay; w1 is still below.
      assert.deepEqual(await svc.settleBalances([w0, w1]), []);
      await postJob(s, 'j3', [{ id: 'a', worker_pk: w1, cost: 0.008 }]);
      const next = await svc.settleBalances([w0, w1]);
      assert.deepEqual(
        next.map((x) => [x.id, x.payees[w1]]),
        [[`balance:${w1}:1`, 1_100_000]],
      );
      assert.equal(s.fake.transactions().length, 2);
      // Job mode's per-job transaction id does not exist in balance mode.
      assert.equal(await jobStellarTx(s.ledger, 'j2'), null);
    });

    it('numbers payouts per account and never includes an entry twice', async () => {
      const w0 = s.workers[0]!.publicKey;
      const svc = service({ mode: 'balance', listAccounts: async () => [w0] });
      await postJob(s, 'k1', [{ id: 'a', worker_pk: w0, cost: 0.02 }]);
      await svc.settleBalances();
      await postJob(s, 'k2', [{ id: 'a', worker_pk: w0, cost: 0.02 }]);
      await svc.settleBalances();
      await svc.settleBalances();
      const again = createSettlementService({ ...baseDeps(), mode: 'balance', listAccounts: async () => [w0] });
      await again.settleBalances();
      assert.equal(s.fake.transactions().length, 2);
      assert.equal((await s.ledger.settlement(`balance:${w0}:1`))?.entry_ids[0], `job:k1:earning:${w0}`);
      assert.equal((await s.ledger.settlement(`balance:${w0}:2`))?.entry_ids[0], `job:k2:earning:${w0}`);
    });
  });

  const baseDeps = (): SettlementServiceDeps => ({
    ledger: s.ledger,
    port: 'stellar',
    horizon: s.horizon,
    payer: s.platform,
    thresholdUnits: 1_000_000,
    mode: 'job',
    clock: () => T0 + 60_000,
    logger: recordingLogger(),
    retry: FAST_RETRY,
    jobHashOf: async (jobId) => jobHashFor(jobId),
    sleep: async () => undefined,
  });

  describe('failures and retries', () => {
    it('retries 503s with exponential backoff and jitter, then pays once', async () => {
      await bigJob('flaky');
      s.fake.failNextSubmits(2, 503);
      const sleeper = recordingSleep();
      const [settlement] = await service({
        sleep: sleeper.sleep,
        retry: { attempts: 5, baseDelayMs: 100, maxDelayMs: 1000 },
        random: () => 1,
      }).settleJob('flaky');
      assert.equal(settlement?.status, 'submitted');
      assert.equal(settlement?.attempts, 3);
      assert.deepEqual(sleeper.delays, [100, 200]);
      assert.deepEqual(
        s.fake.submissions().map((x) => x.status),
        [503, 503, 200],
      );
      // The same envelope each time: one hash.
      assert.equal(new Set(s.fake.submissions().map((x) => x.hash)).size, 1);
      assert.equal(s.fake.transactions().length, 1);
    });

    it('caps the backoff and spreads it with jitter', async () => {
      await bigJob('capped');
      s.fake.failNextSubmits(4, 503);
      const sleeper = recordingSleep();
      await service({
        sleep: sleeper.sleep,
        retry: { attempts: 5, baseDelayMs: 100, maxDelayMs: 300 },
        random: () => 0,
      }).settleJob('capped');
      assert.deepEqual(sleeper.delays, [50, 100, 150, 150]);
    });

    it('gives up after the attempts as failed, keeps the envelope, and retryOpen pays it later', async () => {
      await bigJob('down');
      s.fake.failNextSubmits(10, 503);
      const svc = service({ retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } });
      const [failed] = await svc.settleJob('down');
      assert.equal(failed?.status, 'failed');
      assert.ok(failed?.envelope_xdr);
      assert.match(failed!.error!, /503/);
      assert.equal(await jobStellarTx(s.ledger, 'down'), null);
      assert.equal((await s.ledger.openSettlements()).length, 1);

      s.fake.failNextSubmits(0);
      const [retried] = await svc.retryOpen();
      assert.equal(retried?.status, 'submitted');
      assert.equal(retried?.tx_hash, failed?.tx_hash);
      assert.equal(s.fake.transactions().length, 1);
      assert.deepEqual(await s.ledger.openSettlements(), []);
    });

    it('a 504 whose transaction landed anyway is found by hash, not paid again', async () => {
      await bigJob('timeout');
      s.fake.failNextSubmits(1, 504, { apply: true });
      const [settlement] = await service().settleJob('timeout');
      assert.equal(settlement?.status, 'submitted');
      assert.equal(s.fake.submissions().length, 1); // the retry looked it up instead of resubmitting
      assert.equal(s.fake.transactions().length, 1);
      assert.equal(settlement?.tx_hash, s.fake.transactions()[0]!.hash);
    });

    it('a lost response within one run: the next attempt finds the transaction by hash', async () => {
      await bigJob('lost');
      s.fake.loseNextResponses(1);
      const [settlement] = await service().settleJob('lost');
      assert.equal(settlement?.status, 'submitted');
      assert.equal(s.fake.submissions().length, 1);
      assert.equal(s.fake.payments().length, 3);
    });

    it('crash between submit and record: a restarted service re-drives the pending settlement and pays once', async () => {
      await bigJob('crash');
      s.fake.loseNextResponses(1);
      // The process "dies" right after the pending record: nothing else reaches the store.
      const dying = storeThatDiesAfterPending(s.ledger);
      await assert.rejects(
        service({ ledger: dying, retry: { ...FAST_RETRY, attempts: 1 } }).settleJob('crash'),
        /process died/,
      );
      const pending = await s.ledger.settlement(jobSettlementId('crash'));
      assert.equal(pending?.status, 'pending');
      assert.equal(s.fake.transactions().length, 1); // it did land

      const restarted = service(); // same store, new process
      const [settlement] = await restarted.retryOpen();
      assert.equal(settlement?.status, 'submitted');
      assert.equal(settlement?.tx_hash, pending?.tx_hash);
      assert.equal(s.fake.submissions().length, 1); // found by hash: never resubmitted
      assert.equal(s.fake.transactions().length, 1);
      assert.equal(s.fake.payments().length, 3);
      assert.deepEqual(await restarted.settleJob('crash'), [settlement]);
      assert.equal(s.fake.submissions().length, 1);
    });

    it('crash before submit: the restarted service resubmits the same envelope, once', async () => {
      await bigJob('early');
      const crashing: HorizonClient = {
        ...s.horizon,
        submit: async () => {
          throw new Error('process died before submitting');
        },
      };
      await assert.rejects(service({ horizon: crashing }).settleJob('early'), /process died/);
      const pending = await s.ledger.settlement(jobSettlementId('early'));
      assert.equal(pending?.status, 'pending');
      assert.equal(s.fake.submissions().length, 0);

      const [settlement] = await service().retryOpen();
      assert.equal(settlement?.status, 'submitted');
      assert.equal(settlement?.tx_hash, pending?.tx_hash);
      assert.equal(s.fake.transactions().length, 1);
    });

    it('tx_bad_seq (sequence used elsewhere): nothing with the memo landed, so a new envelope pays once', async () => {
      await bigJob('badseq');
      const crashing: HorizonClient = {
        ...s.horizon,
        submit: async () => {
          throw new Error('process died before submitting');
        },
      };
      await assert.rejects(service({ horizon: crashing }).settleJob('badseq'), /process died/);
      const pending = await s.ledger.settlement(jobSettlementId('badseq'));
      s.fake.consumeSequence(stellarAddress(s.platform.publicKey)); // another wallet spent the sequence

      const [settlement] = await service().retryOpen();
      assert.equal(settlement?.status, 'submitted');
      assert.notEqual(settlement?.tx_hash, pending?.tx_hash);
      assert.deepEqual(
        s.fake.submissions().map((x) => [x.hash, x.code]),
        [
          [pending?.tx_hash, 'tx_bad_seq'],
          [settlement?.tx_hash, null],
        ],
      );
      assert.equal(s.fake.transactions().length, 1);
      assert.equal(s.fake.transactions()[0]!.memo, jobHashFor('badseq'));
      // The search went through the account's transactions before building anew.
      assert.ok(
        s.fake
          .requests()
          .some((r) => r.startsWith(`GET /accounts/${stellarAddress(s.platform.publicKey)}/transactions`)),
      );
    });

    it('tx_bad_seq because another envelope with the same memo landed: adopts it, pays nothing more', async () => {
      await bigJob('twin');
      const crashing: HorizonClient = {
        ...s.horizon,
        submit: async () => {
          throw new Error('process died before submitting');
        },
      };
      // Process A records a pending envelope and dies; process B (another store, same payer) pays the job.
      await assert.rejects(service({ horizon: crashing }).settleJob('twin'), /process died/);
      const other = await stage();
      try {
        await postJobInto(other.ledger, s, 'twin');
        const [paidByB] = await service({ ledger: other.ledger }).settleJob('twin');
        assert.equal(paidByB?.status, 'submitted');
        const [adopted] = await service().retryOpen();
        assert.equal(adopted?.status, 'submitted');
        assert.equal(adopted?.tx_hash, paidByB?.tx_hash);
        assert.equal(s.fake.transactions().length, 1);
        assert.equal(s.fake.payments().length, 3);
      } finally {
        await other.close();
      }
    });

    it('a refusal that is not tx_bad_seq fails at once (no blind retries) and keeps its entries reserved', async () => {
      await bigJob('refused');
      const wrongNetwork = service({ networkPassphrase: Networks.PUBLIC }); // signature over the wrong network id
      const [failed] = await wrongNetwork.settleJob('refused');
      assert.equal(failed?.status, 'failed');
      assert.match(failed!.error!, /tx_bad_auth/);
      assert.equal(s.fake.submissions().length, 1);
      // A balance sweep re-drives the open settlement (same envelope, refused again) and builds no other:
      // its entries stay reserved.
      const balance = service({ mode: 'balance' });
      assert.deepEqual(await balance.settleBalances([s.workers[0]!.publicKey]), []);
      const [one, two] = s.fake.submissions();
      assert.equal(s.fake.submissions().length, 2);
      assert.equal(two?.hash, one?.hash);
      assert.equal(two?.code, 'tx_bad_auth');
      assert.equal(s.fake.transactions().length, 0);
    });
  });

  describe('port none', () => {
    it('records nothing and submits nothing; stellar_tx stays null', async () => {
      await bigJob('offline');
      const svc = createSettlementService({ ...baseDeps(), port: 'none', horizon: undefined });
      assert.deepEqual(await svc.settleJob('offline'), []);
      assert.deepEqual(await svc.settleBalances([s.workers[0]!.publicKey]), []);
      assert.deepEqual(await svc.retryOpen(), []);
      svc.start(10);
      await svc.stop();
      assert.equal(s.fake.requests().length, 0);
      assert.equal(await s.ledger.settlement(jobSettlementId('offline')), null);
      assert.equal(await jobStellarTx(s.ledger, 'offline'), null);
    });
  });

  describe('sweep', () => {
    it('start() re-drives open settlements on its timer and stop() waits for the run', async () => {
      await bigJob('swept');
      s.fake.failNextSubmits(10, 503);
      let extraRuns = 0;
      const svc = service({
        retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
        alsoRetry: async () => {
          extraRuns++;
        },
      });
      assert.equal((await svc.settleJob('swept'))[0]?.status, 'failed');
      s.fake.failNextSubmits(0);
      svc.start(5);
      for (let i = 0; i < 200 && (await jobStellarTx(s.ledger, 'swept')) === null; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await svc.stop();
      assert.notEqual(await jobStellarTx(s.ledger, 'swept'), null);
      assert.ok(extraRuns >= 1, 'the sweep also re-drives what alsoRetry names (open anchors)');
      assert.equal(s.fake.transactions().length, 1);
    });
  });

  it('formats stroops as 7-decimal amounts', () => {
    assert.equal(stroopsToAmount(1), '0.0000001');
    assert.equal(stroopsToAmount(123_456_789), '12.3456789');
    assert.throws(() => stroopsToAmount(0), RangeError);
  });

  it('refuses a Stellar port without Horizon and a bad threshold', () => {
    assert.throws(() => createSettlementService({ ...baseDeps(), horizon: undefined }), TypeError);
    assert.throws(() => createSettlementService({ ...baseDeps(), thresholdUnits: 0.5 }), RangeError);
    assert.throws(() => createSettlementService({ ...baseDeps(), asset: 'GEOC' }), RangeError);
  });
});

/** A store whose writes fail once a pending settlement is recorded: the process died right after it. */
function storeThatDiesAfterPending(inner: LedgerStore): LedgerStore {
  let dead = false;
  return {
    ...inner,
    post: inner.post.bind(inner),
    balance: inner.balance.bind(inner),
    entries: inner.entries.bind(inner),
    jobEntries: inner.jobEntries.bind(inner),
    earningsByDay: inner.earningsByDay.bind(inner),
    unsettled: inner.unsettled.bind(inner),
    settlement: inner.settlement.bind(inner),
    openSettlements: inner.openSettlements.bind(inner),
    recordAnchor: inner.recordAnchor.bind(inner),
    anchor: inner.anchor.bind(inner),
    openAnchors: inner.openAnchors.bind(inner),
    close: inner.close.bind(inner),
    async recordSettlement(settlement) {
      if (dead) throw new Error('process died');
      await inner.recordSettlement(settlement);
      if (settlement.status === 'pending' && settlement.envelope_xdr !== null) dead = true;
    },
  };
}

/** Copies a job's entries from one stage's ledger into another store. */
async function postJobInto(target: LedgerStore, from: Stage, jobId: string): Promise<void> {
  await target.post(await from.ledger.jobEntries(jobId));
}
