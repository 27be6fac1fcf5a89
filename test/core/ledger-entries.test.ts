import assert from 'node:assert/strict';
import { BACKBONE_WORKER } from '../../core/backbone-worker.js';
import { BACKBONE_WORKER as INFERENCE_BACKBONE_WORKER } from '../../activities/inference/inference-record.js';
import type { ComputeResponse, StepResult } from '../../core/job-record.js';
import { jobLedgerEntries, proofPurchaseEntries, type JobLedgerInput } from '../../core/ledger-entries.js';
import type { LedgerEntry } from '../../core/ledger-types.js';
import { fromCreditUnits, PRICES, relayFee, sumCredits, toCreditUnits } from '../../core/pricing.js';

const pk = (c: string) => c.repeat(64);
const REQUESTER = pk('a');
const PLATFORM = pk('b');
const WORKER = pk('c');
const TILER = pk('d');
const RELAY = pk('e');
const JOB = '1b4e28ba-2fa1-81d2-883f-0016d3cca427';
const RECORD = `compute:${JOB}`;
const T0 = Date.UTC(2026, 10, 22, 9, 30);
const TIERS: Record<string, number> = { [WORKER]: 2, [TILER]: 1, [RELAY]: 1 };

const step = (id: string, overrides: Partial<StepResult>): StepResult => ({
  id,
  type: 'inference',
  status: 'complete',
  output: {},
  latency_ms: 5,
  worker_pk: WORKER,
  cost: 0,
  record_id: `rec-${id}`,
  ...overrides,
});

/** A finished job's answer, settled the way finishJob settles it (proof charged once a step completed). */
function answer(steps: StepResult[], share = 0.2, proofCredits?: number): ComputeResponse {
  const done = steps.filter((s) => s.status === 'complete');
  const proof = proofCredits ?? (done.length > 0 ? PRICES.merkleProof : 0);
  const fees = new Map<string, number>();
  for (const s of done) {
    if (s.relay_pk) fees.set(s.relay_pk, (fees.get(s.relay_pk) ?? 0) + toCreditUnits(relayFee(s.cost, share)));
  }
  return {
    job_id: JOB,
    status: steps.every((s) => s.status === 'complete') ? 'complete' : 'failed',
    worker_pk: done.at(-1)?.worker_pk ?? null,
    h3_cell: '861e8050fffffff',
    epoch: 7809,
    steps,
    settlement: {
      stellar_tx: null,
      total_credits: sumCredits([...steps.map((s) => s.cost), proof]),
      breakdown: Object.fromEntries(steps.map((s) => [s.id, s.cost])),
      proof_credits: proof,
      ...(fees.size > 0 ? { relay_fees: Object.fromEntries([...fees].map(([k, u]) => [k, fromCreditUnits(u)])) } : {}),
    },
    proof: { job_hash: 'ab'.repeat(32), verify_url: `/store/proof/${RECORD}`, record_id: RECORD },
  };
}

const input = (response: ComputeResponse, overrides: Partial<JobLedgerInput> = {}): JobLedgerInput => ({
  response,
  requesterPk: REQUESTER,
  platformPk: PLATFORM,
  recordId: RECORD,
  nowMs: T0,
  hardwareTierOf: (workerPk) => TIERS[workerPk] ?? null,
  ...overrides,
});

const sum = (entries: readonly LedgerEntry[]) => entries.reduce((total, e) => total + e.amount_units, 0);
const amounts = (entries: readonly LedgerEntry[]) => Object.fromEntries(entries.map((e) => [e.id, e.amount_units]));

describe('ledger entries of a job', () => {
  const mixed = answer([
    step('ask', { cost: 0.0015, relay_pk: RELAY }),
    step('tile', { type: 'tile_render', worker_pk: TILER, cost: 0.0001 }),
    step('chat', { worker_pk: BACKBONE_WORKER, cost: 0 }),
    step('scene', { type: 'image_process', worker_pk: PLATFORM, cost: 0.00038636 }),
    step('later', { status: 'skipped', worker_pk: null, record_id: null }),
  ]);

  it('keeps one backbone marker, exported from core and from the inference record', () => {
    assert.equal(BACKBONE_WORKER, 'backbone');
    assert.equal(INFERENCE_BACKBONE_WORKER, BACKBONE_WORKER);
  });

  it('charges the requester, pays each worker, the relay and the platform, and sums to exactly zero', () => {
    const entries = jobLedgerEntries(input(mixed));
    assert.equal(sum(entries), 0);
    assert.deepEqual(amounts(entries), {
      [`job:${JOB}:charge`]: -208_636, // 0.0015 + 0.0001 + 0.00038636 + 0.0001 (proof)
      [`job:${JOB}:earning:${WORKER}`]: 120_000, // 0.0015 less the relay's 20 %
      [`job:${JOB}:earning:${TILER}`]: 10_000,
      [`job:${JOB}:earning:${PLATFORM}`]: 38_636, // the step the gateway served itself
      [`job:${JOB}:relay:${RELAY}`]: 30_000,
      [`job:${JOB}:proof`]: 10_000,
    });
    assert.equal(-entries[0]!.amount_units, toCreditUnits(mixed.settlement.total_credits));
    // Matches the breakdown: the charge is the steps' credits plus the proof; an earning is its steps' credits
    // less the relay fees of those steps; the relay gets the fee the answer records.
    const units = (stepIds: readonly string[]) =>
      stepIds.reduce((t, id) => t + toCreditUnits(mixed.settlement.breakdown[id]!), 0);
    const { breakdown, proof_credits, relay_fees } = mixed.settlement;
    assert.equal(-entries[0]!.amount_units, units(Object.keys(breakdown)) + toCreditUnits(proof_credits));
    const relay = entries.find((e) => e.kind === 'relay_fee')!;
    assert.equal(relay.amount_units, toCreditUnits(relay_fees![RELAY]!));
    for (const e of entries.filter((x) => x.kind === 'step_earning')) {
      const fees = e.step_ids.includes('ask') ? relay.amount_units : 0;
      assert.equal(e.amount_units, units(e.step_ids) - fees, e.id);
    }
  });

  it('says who each entry is for, what it covers and when, referencing the job record', () => {
    const entries = jobLedgerEntries(input(mixed));
    const byId = new Map(entries.map((e) => [e.id, e]));
    assert.deepEqual(byId.get(`job:${JOB}:charge`), {
      version: 1,
      id: `job:${JOB}:charge`,
      account_pk: REQUESTER,
      kind: 'job_charge',
      amount_units: -208_636,
      job_id: JOB,
      record_id: RECORD,
      step_ids: [],
      hardware_tier: null,
      created_at: new Date(T0).toISOString(),
    });
    const earning = byId.get(`job:${JOB}:earning:${WORKER}`)!;
    assert.deepEqual([earning.kind, earning.step_ids, earning.hardware_tier], ['step_earning', ['ask'], 2]);
    const relay = byId.get(`job:${JOB}:relay:${RELAY}`)!;
    assert.deepEqual(
      [relay.kind, relay.account_pk, relay.step_ids, relay.hardware_tier],
      ['relay_fee', RELAY, ['ask'], 1],
    );
    const platform = byId.get(`job:${JOB}:earning:${PLATFORM}`)!;
    assert.deepEqual([platform.step_ids, platform.hardware_tier], [['scene'], null], 'unknown tier: null');
    const proof = byId.get(`job:${JOB}:proof`)!;
    assert.deepEqual([proof.kind, proof.account_pk, proof.step_ids], ['proof_fee', PLATFORM, []]);
    assert.ok(entries.every((e) => e.record_id === RECORD && e.job_id === JOB && e.version === 1));
    assert.ok(!entries.some((e) => e.step_ids.includes('chat')), 'the free backbone step earns nobody');
  });

  it('builds the same entries from the same answer, so a re-post is a no-op', () => {
    const first = jobLedgerEntries(input(mixed));
    const again = jobLedgerEntries(input(structuredClone(mixed)));
    assert.deepEqual(again, first);
    assert.deepEqual(
      first.map((e) => e.id),
      [
        `job:${JOB}:charge`,
        `job:${JOB}:earning:${WORKER}`,
        `job:${JOB}:earning:${TILER}`,
        `job:${JOB}:earning:${PLATFORM}`,
        `job:${JOB}:relay:${RELAY}`,
        `job:${JOB}:proof`,
      ],
    );
  });

  it('posts nothing for a job that ran no step (no step charged, no proof)', () => {
    const failed = answer([
      step('ask', { status: 'skipped', worker_pk: null, record_id: null }),
      step('tile', { status: 'skipped', worker_pk: null, record_id: null }),
    ]);
    assert.equal(failed.settlement.total_credits, 0);
    assert.deepEqual(jobLedgerEntries(input(failed)), []);
  });

  it('charges a failed job what ran plus its proof, and pays who ran it', () => {
    const failed = answer([
      step('ask', { cost: 0.0002 }),
      step('tile', { status: 'failed', worker_pk: TILER, cost: 0, record_id: null }),
    ]);
    const entries = jobLedgerEntries(input(failed));
    assert.deepEqual(amounts(entries), {
      [`job:${JOB}:charge`]: -30_000,
      [`job:${JOB}:earning:${WORKER}`]: 20_000,
      [`job:${JOB}:proof`]: 10_000,
    });
  });

  it("takes each relayed step's fee with finishJob's rounding, at the configured share", () => {
    // 3 units each: 20 % is 0.6 units, rounded per step to 1 (3 + 3 units, 2 units of fees).
    const tiny = answer([
      step('a', { cost: 0.00000003, relay_pk: RELAY }),
      step('b', { cost: 0.00000003, relay_pk: RELAY }),
    ]);
    assert.deepEqual(amounts(jobLedgerEntries(input(tiny))), {
      [`job:${JOB}:charge`]: -10_006,
      [`job:${JOB}:earning:${WORKER}`]: 4,
      [`job:${JOB}:relay:${RELAY}`]: 2,
      [`job:${JOB}:proof`]: 10_000,
    });
    // Two workers behind one relay, at a 50 % share: each pays the fee of its own steps (round(1.5) = 2, round(0.5) = 1).
    const shared = answer(
      [
        step('a', { cost: 0.00000003, relay_pk: RELAY }),
        step('b', { worker_pk: TILER, cost: 0.00000001, relay_pk: RELAY }),
      ],
      0.5,
    );
    const entries = jobLedgerEntries(input(shared, { relayFeeShare: 0.5 }));
    assert.equal(sum(entries), 0);
    assert.deepEqual(amounts(entries), {
      [`job:${JOB}:charge`]: -10_004,
      [`job:${JOB}:earning:${WORKER}`]: 1,
      [`job:${JOB}:relay:${RELAY}`]: 3,
      [`job:${JOB}:proof`]: 10_000,
    });
    assert.deepEqual(entries.find((e) => e.kind === 'relay_fee')?.step_ids, ['a', 'b']);
  });

  it('pays a relay the fee its answer records even when the share has changed since, and still balances', () => {
    const at30 = answer(
      [step('a', { cost: 0.0001, relay_pk: RELAY }), step('b', { worker_pk: TILER, cost: 0.0003, relay_pk: RELAY })],
      0.3,
    );
    const entries = jobLedgerEntries(input(at30)); // the default 20 % no longer reproduces the recorded 30 %
    assert.equal(sum(entries), 0);
    assert.equal(entries.find((e) => e.kind === 'relay_fee')?.amount_units, 12_000);
    assert.equal(entries.find((e) => e.account_pk === WORKER && e.kind === 'step_earning')?.amount_units, 7_000);
    assert.equal(entries.find((e) => e.account_pk === TILER)?.amount_units, 21_000);
  });

  it('gives the platform what nobody else earns (a backbone step that cost something), documented as the remainder', () => {
    const priced = answer([step('chat', { worker_pk: BACKBONE_WORKER, cost: 0.00005 }), step('ask', { cost: 0.0001 })]);
    const entries = jobLedgerEntries(input(priced));
    assert.equal(sum(entries), 0);
    const platform = entries.find((e) => e.id === `job:${JOB}:earning:${PLATFORM}`)!;
    assert.deepEqual([platform.amount_units, platform.step_ids], [5_000, ['chat']]);
  });

  it('posts only the difference on a re-run, so the job nets to its latest settlement', () => {
    const failed = answer([
      step('ask', { cost: 0.0015, relay_pk: RELAY }),
      step('tile', { type: 'tile_render', status: 'failed', worker_pk: TILER, cost: 0, record_id: null }),
    ]);
    const first = jobLedgerEntries(input(failed));
    assert.equal(sum(first), 0);
    const rerun = answer([
      step('ask', { cost: 0.0015, relay_pk: RELAY }), // reused from the failed run, charged again
      step('tile', { type: 'tile_render', worker_pk: TILER, cost: 0.0001 }),
    ]);
    const run2 = `compute:${JOB}:run-2`;
    const second = jobLedgerEntries(input(rerun, { run: 2, recordId: run2, nowMs: T0 + 60_000, earlier: first }));
    assert.equal(sum(second), 0);
    assert.deepEqual(amounts(second), {
      [`job:${JOB}:run-2:charge`]: -10_000,
      [`job:${JOB}:run-2:earning:${TILER}`]: 10_000,
    });
    assert.ok(second.every((e) => e.record_id === run2 && e.created_at === new Date(T0 + 60_000).toISOString()));
    // Net per account: what run 2's settlement alone would post.
    const net = (entries: readonly LedgerEntry[]) => {
      const byAccount = new Map<string, number>();
      for (const e of entries)
        byAccount.set(`${e.kind} ${e.account_pk}`, (byAccount.get(`${e.kind} ${e.account_pk}`) ?? 0) + e.amount_units);
      return Object.fromEntries([...byAccount].filter(([, units]) => units !== 0).sort());
    };
    assert.deepEqual(net([...first, ...second]), net(jobLedgerEntries(input(rerun))));
    // The same re-run posted again builds the same entries.
    assert.deepEqual(
      jobLedgerEntries(input(rerun, { run: 2, recordId: run2, nowMs: T0 + 60_000, earlier: first })),
      second,
    );

    // A re-run whose reused step lost its relay reverses the relay's fee and pays the worker in full.
    const unrelayed = answer([
      step('ask', { cost: 0.0015 }),
      step('tile', { type: 'tile_render', worker_pk: TILER, cost: 0.0001 }),
    ]);
    const third = jobLedgerEntries(input(unrelayed, { run: 2, recordId: run2, earlier: first }));
    assert.equal(sum(third), 0);
    assert.deepEqual(amounts(third), {
      [`job:${JOB}:run-2:charge`]: -10_000,
      [`job:${JOB}:run-2:earning:${WORKER}`]: 30_000,
      [`job:${JOB}:run-2:earning:${TILER}`]: 10_000,
      [`job:${JOB}:run-2:relay:${RELAY}`]: -30_000,
    });
  });

  it('refuses an answer that pays out more than it charges', () => {
    const broken = structuredClone(mixed);
    broken.settlement.total_credits = 0.001;
    assert.throws(() => jobLedgerEntries(input(broken)), RangeError);
    const orphanFee = structuredClone(mixed);
    orphanFee.settlement.relay_fees = { [pk('f')]: 0.0001 };
    assert.throws(() => jobLedgerEntries(input(orphanFee)), RangeError);
    assert.throws(() => jobLedgerEntries(input(mixed, { nowMs: Number.NaN })), RangeError);
  });
});

describe('ledger entries of a bought Merkle proof', () => {
  it('charges the requester the docs/protocol.md §8 price and pays it to the platform, with ids from the request', () => {
    const entries = proofPurchaseEntries({
      requesterPk: REQUESTER,
      platformPk: PLATFORM,
      recordId: 'inference:x:ask',
      requestId: 'r1',
      nowMs: T0,
    });
    assert.equal(sum(entries), 0);
    const base = {
      version: 1,
      job_id: null,
      record_id: 'inference:x:ask',
      step_ids: [],
      hardware_tier: null,
      created_at: new Date(T0).toISOString(),
    };
    assert.deepEqual(entries, [
      { ...base, id: 'proof:r1:charge', account_pk: REQUESTER, kind: 'proof_charge', amount_units: -10_000 },
      { ...base, id: 'proof:r1:fee', account_pk: PLATFORM, kind: 'proof_fee', amount_units: 10_000 },
    ]);
  });
});
