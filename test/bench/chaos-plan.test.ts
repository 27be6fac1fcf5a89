import assert from 'node:assert/strict';
import {
  chaosSettings,
  faultChoice,
  figuresTable,
  overlapsAny,
  percentile,
  PROCESS_KINDS,
  seededRandom,
  shuffled,
} from '../../bench/chaos-plan.js';

describe('npm run chaos: the seeded plan (bench/chaos-plan.ts)', () => {
  const schedule = (seed: number) => {
    const random = seededRandom(seed);
    const first = shuffled(random, PROCESS_KINDS);
    return Array.from({ length: 30 }, (_, n) => faultChoice(random, n, first));
  };

  it('replays the same fault choices from the same seed, and other ones from another seed', () => {
    assert.deepEqual(schedule(1234), schedule(1234));
    assert.notDeepEqual(schedule(1234), schedule(1235));
  });

  it('kills each of the four process kinds first, so even a short run hits all of them', () => {
    for (const seed of [1, 2, 3, 99, 4_294_967_295]) {
      const first = schedule(seed).slice(0, 4);
      assert.ok(first.every((f) => f.kind === 'kill'));
      assert.deepEqual(first.map((f) => f.target).sort(), [...PROCESS_KINDS].sort());
    }
  });

  it('takes its settings from the environment, a random seed only when none is given', () => {
    const s = chaosSettings({ CHAOS_SEED: '42', CHAOS_DURATION_S: '1200', CHAOS_FAULT_EVERY_S: '20' }, () => 7);
    assert.equal(s.seed, 42);
    assert.equal(s.durationS, 1200);
    assert.equal(s.faultEveryS, 20);
    assert.equal(chaosSettings({}, () => 7).seed, 7);
    assert.equal(chaosSettings({}, () => 7).durationS, 240);
    assert.throws(() => chaosSettings({ CHAOS_DURATION_S: 'soon' }, () => 7), /CHAOS_DURATION_S/);
  });

  it('computes nearest-rank percentiles and fault overlap', () => {
    assert.equal(percentile([5, 1, 4, 2, 3], 50), 3);
    assert.equal(percentile([5, 1, 4, 2, 3], 99), 5);
    assert.ok(Number.isNaN(percentile([], 50)));
    assert.equal(overlapsAny(10, 20, [{ start: 20, end: 30 }]), true);
    assert.equal(overlapsAny(10, 19, [{ start: 20, end: 30 }]), false);
  });

  it('prints the figures table with every figure docs/operations.md lists', () => {
    const table = figuresTable({
      seed: 42,
      runS: 1500,
      loadS: 1200,
      clients: 3,
      submitted: 10,
      completed: 9,
      failed: 1,
      faults: { 'kill gateway': 2, 'pause worker': 1 },
      violations: 0,
      latencyFaultFree: [1000, 2000],
      latencyDuringFaults: [3000],
      longestFaultWaitMs: 3000,
      chats: 1,
      mcpCalls: 2,
      readings: 3,
    });
    for (const figure of [
      'seed',
      'run length',
      'jobs submitted',
      'faults injected',
      'invariant violations',
      'p50 / p99',
      'longest wait',
    ]) {
      assert.match(table, new RegExp(figure));
    }
    assert.match(table, /3: kill gateway 2, pause worker 1/);
  });
});
