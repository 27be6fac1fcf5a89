import assert from 'node:assert/strict';
import {
  applyOutcome,
  DEMOTION_STREAK,
  INITIAL_TRUST,
  meetsWorkerTier,
  TRUST_LADDER,
  type JobOutcome,
  type TrustState,
} from '../../core/worker-trust.js';
import { WORKER_TIERS } from '../../core/tiers.js';

const run = (state: TrustState, outcome: JobOutcome, times: number): TrustState => {
  let s = state;
  for (let i = 0; i < times; i++) s = applyOutcome(s, outcome);
  return s;
};
const at = (trust_tier: TrustState['trust_tier'], jobs_completed: number, jobs_failed = 0): TrustState => ({
  trust_tier,
  jobs_completed,
  jobs_failed,
  streak: 0,
});

describe('worker trust ladder', () => {
  it('starts at seedling and climbs one rung at 10, 100, 1,000 and 10,000 clean completions', () => {
    assert.equal(INITIAL_TRUST.trust_tier, 'seedling');
    let s = run(INITIAL_TRUST, 'completed', 9);
    assert.equal(s.trust_tier, 'seedling');
    s = applyOutcome(s, 'completed');
    assert.equal(s.trust_tier, 'explorer');
    s = run(s, 'completed', 89);
    assert.equal(s.trust_tier, 'explorer');
    s = applyOutcome(s, 'completed');
    assert.equal(s.trust_tier, 'navigator');
    s = run(s, 'completed', 900);
    assert.equal(s.trust_tier, 'trailblazer');
    s = run(s, 'completed', 9_000);
    assert.equal(s.trust_tier, 'sovereign');
    assert.equal(s.jobs_completed, 10_000);
    s = run(s, 'completed', 100);
    assert.equal(s.trust_tier, 'sovereign');
  });

  it('keeps every rung table entry stricter than the one below', () => {
    for (let i = 1; i < WORKER_TIERS.length; i++) {
      const [below, above] = [TRUST_LADDER[WORKER_TIERS[i - 1]!], TRUST_LADDER[WORKER_TIERS[i]!]];
      assert.ok(above.minCompleted > below.minCompleted);
      assert.ok(above.maxFailureRate < below.maxFailureRate);
    }
  });

  it('never promotes past a failure-rate ceiling', () => {
    // 100 completed, 12 failed (10.7 %): navigator allows 10 %.
    const s = run({ ...at('explorer', 90, 12), streak: 0 }, 'completed', 10);
    assert.equal(s.jobs_completed, 100);
    assert.equal(s.trust_tier, 'explorer');
  });

  it(`demotes one rung after ${DEMOTION_STREAK} failures in a row, however long the record`, () => {
    let s = at('sovereign', 50_000);
    s = run(s, 'failed', DEMOTION_STREAK - 1);
    assert.equal(s.trust_tier, 'sovereign');
    s = applyOutcome(s, 'failed');
    assert.equal(s.trust_tier, 'trailblazer');
    assert.equal(s.streak, 0);
    s = run(s, 'failed', DEMOTION_STREAK);
    assert.equal(s.trust_tier, 'navigator');
  });

  it('resets the failure streak on a completion', () => {
    let s = at('navigator', 500);
    for (let i = 0; i < 5; i++) s = applyOutcome(applyOutcome(applyOutcome(s, 'failed'), 'failed'), 'completed');
    assert.equal(s.trust_tier, 'navigator');
    assert.equal(s.jobs_failed, 10);
  });

  it('demotes one rung when the lifetime failure rate passes the rung ceiling', () => {
    // explorer allows 20 %: 16 completed and 4 failed is 20 %, the fifth failure makes it 23.8 %.
    let s = at('explorer', 16, 4);
    s = applyOutcome(s, 'failed');
    assert.equal(s.trust_tier, 'seedling');
  });

  it('never demotes below seedling', () => {
    const s = run(INITIAL_TRUST, 'failed', 10);
    assert.equal(s.trust_tier, 'seedling');
    assert.equal(s.jobs_failed, 10);
  });

  it('makes a demoted worker earn its rung back with 10 completions in a row', () => {
    let s = run(at('navigator', 200), 'failed', DEMOTION_STREAK);
    assert.equal(s.trust_tier, 'explorer');
    s = run(s, 'completed', 9);
    assert.equal(s.trust_tier, 'explorer');
    s = applyOutcome(s, 'completed');
    assert.equal(s.trust_tier, 'navigator');
  });

  it('compares tiers on the ladder', () => {
    assert.equal(meetsWorkerTier('navigator', 'explorer'), true);
    assert.equal(meetsWorkerTier('navigator', 'navigator'), true);
    assert.equal(meetsWorkerTier('explorer', 'trailblazer'), false);
  });
});
