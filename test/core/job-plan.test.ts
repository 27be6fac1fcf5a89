import assert from 'node:assert/strict';
import { planJob, type JobPlan, type PlanStep } from '../../core/job-plan.js';

function planned(steps: PlanStep[]): JobPlan {
  const result = planJob(steps);
  assert.ok(result.ok, result.ok ? '' : `${result.error}: ${result.detail}`);
  return result.value;
}

function rejected(steps: PlanStep[]): { error: string; detail: string } {
  const result = planJob(steps);
  assert.equal(result.ok, false, 'expected the plan to be rejected');
  return result.ok ? { error: '', detail: '' } : { error: result.error, detail: result.detail };
}

describe('job plans', () => {
  it('plans a single inference step (docs/protocol.md §4.1 note 4, inference-only job)', () => {
    assert.deepEqual(planned([{ id: 'ask', type: 'inference' }]), { order: ['ask'], levels: [['ask']] });
  });

  it('runs the satellite, AI and map chain in three levels (docs/protocol.md §4.1 note 4)', () => {
    const plan = planned([
      { id: 'map', type: 'tile_render', depends_on: 'ai' },
      { id: 'ai', type: 'inference', depends_on: 'ndvi' },
      { id: 'ndvi', type: 'image_process' },
    ]);
    assert.deepEqual(plan.order, ['ndvi', 'ai', 'map']);
    assert.deepEqual(plan.levels, [['ndvi'], ['ai'], ['map']]);
  });

  it('puts two independent steps in one level, in request order', () => {
    const plan = planned([
      { id: 'tile', type: 'tile_render' },
      { id: 'scene', type: 'image_process' },
    ]);
    assert.deepEqual(plan.order, ['tile', 'scene']);
    assert.deepEqual(plan.levels, [['tile', 'scene']]);
  });

  it('fans out from one step and keeps request order among ties', () => {
    const plan = planned([
      { id: 'ndvi', type: 'image_process' },
      { id: 'summary', type: 'inference', depends_on: 'ndvi' },
      { id: 'fusion', type: 'sensor_fusion' },
      { id: 'map', type: 'tile_render', depends_on: 'ndvi' },
      { id: 'annotated', type: 'tile_render', depends_on: 'summary' },
    ]);
    assert.deepEqual(plan.order, ['ndvi', 'summary', 'fusion', 'map', 'annotated']);
    assert.deepEqual(plan.levels, [['ndvi', 'fusion'], ['summary', 'map'], ['annotated']]);
  });

  it('returns an order in which every step follows its dependency', () => {
    const steps: PlanStep[] = [
      { id: 'e', type: 'tile_render', depends_on: 'd' },
      { id: 'd', type: 'inference', depends_on: 'a' },
      { id: 'c', type: 'inference', depends_on: 'b' },
      { id: 'b', type: 'image_process' },
      { id: 'a', type: 'image_process' },
    ];
    const plan = planned(steps);
    for (const step of steps) {
      if (typeof step.depends_on === 'string') {
        assert.ok(plan.order.indexOf(step.depends_on) < plan.order.indexOf(step.id));
      }
    }
    assert.deepEqual(plan.order, ['b', 'c', 'a', 'd', 'e']);
    assert.deepEqual(plan.levels, [['b', 'a'], ['d', 'c'], ['e']]);
  });

  it('rejects an empty step list', () => {
    assert.deepEqual(rejected([]), { error: 'invalid_request', detail: 'steps must contain at least one step' });
  });

  it('rejects a duplicate step id', () => {
    assert.deepEqual(
      rejected([
        { id: 'x', type: 'inference' },
        { id: 'y', type: 'tile_render' },
        { id: 'x', type: 'tile_render' },
      ]),
      { error: 'invalid_request', detail: 'duplicate step id "x"' },
    );
  });

  it('rejects a dependency on a step that does not exist', () => {
    assert.deepEqual(
      rejected([
        { id: 'ai', type: 'inference' },
        { id: 'map', type: 'tile_render', depends_on: 'a1' },
      ]),
      { error: 'invalid_request', detail: 'step "map" depends on unknown step "a1"' },
    );
  });

  it('rejects a step that depends on itself', () => {
    assert.deepEqual(rejected([{ id: 'a', type: 'inference', depends_on: 'a' }]), {
      error: 'cyclic_dependency',
      detail: 'steps form a cycle: a -> a',
    });
  });

  it('rejects a cycle and names it in dependency order', () => {
    // b depends on a, c on b, a on c: a feeds b, b feeds c, c feeds a.
    assert.deepEqual(
      rejected([
        { id: 'a', type: 'inference', depends_on: 'c' },
        { id: 'b', type: 'tile_render', depends_on: 'a' },
        { id: 'c', type: 'image_process', depends_on: 'b' },
      ]),
      { error: 'cyclic_dependency', detail: 'steps form a cycle: a -> b -> c -> a' },
    );
  });

  it('names only the cycle when other steps hang off it or are fine', () => {
    assert.deepEqual(
      rejected([
        { id: 'ok', type: 'image_process' },
        { id: 'tail', type: 'tile_render', depends_on: 'q' },
        { id: 'p', type: 'inference', depends_on: 'q' },
        { id: 'q', type: 'inference', depends_on: 'p' },
      ]),
      { error: 'cyclic_dependency', detail: 'steps form a cycle: p -> q -> p' },
    );
  });

  describe('fan-in (depends_on as a list of ids)', () => {
    it('places a step after all of its dependencies', () => {
      const plan = planned([
        { id: 'merge', type: 'inference', depends_on: ['ai', 'ndvi'] },
        { id: 'ndvi', type: 'image_process' },
        { id: 'ai', type: 'inference', depends_on: 'ndvi' },
      ]);
      assert.deepEqual(plan.order, ['ndvi', 'ai', 'merge']);
      assert.deepEqual(plan.levels, [['ndvi'], ['ai'], ['merge']]);
    });

    it('plans a one-id list exactly like the single id', () => {
      const single = planned([
        { id: 'a', type: 'image_process' },
        { id: 'b', type: 'inference', depends_on: 'a' },
      ]);
      const listed = planned([
        { id: 'a', type: 'image_process' },
        { id: 'b', type: 'inference', depends_on: ['a'] },
      ]);
      assert.deepEqual(listed, single);
    });

    it('rejects an unknown id anywhere in the list', () => {
      assert.deepEqual(
        rejected([
          { id: 'a', type: 'image_process' },
          { id: 'b', type: 'inference', depends_on: ['a', 'nope'] },
        ]),
        { error: 'invalid_request', detail: 'step "b" depends on unknown step "nope"' },
      );
    });

    it('rejects an id listed twice', () => {
      assert.deepEqual(
        rejected([
          { id: 'a', type: 'image_process' },
          { id: 'b', type: 'inference', depends_on: ['a', 'a'] },
        ]),
        { error: 'invalid_request', detail: 'step "b" lists "a" twice in depends_on' },
      );
    });

    it('rejects a cycle through a listed dependency and names it', () => {
      assert.deepEqual(
        rejected([
          { id: 'a', type: 'image_process', depends_on: 'c' },
          { id: 'b', type: 'image_process' },
          { id: 'c', type: 'inference', depends_on: ['b', 'a'] },
        ]),
        { error: 'cyclic_dependency', detail: 'steps form a cycle: a -> c -> a' },
      );
    });
  });

  it('plans a 1000-step chain given in reverse without deep recursion', () => {
    const n = 1000;
    const steps: PlanStep[] = Array.from({ length: n }, (_, k) => {
      const i = n - 1 - k;
      return i === 0 ? { id: 's0', type: 'inference' } : { id: `s${i}`, type: 'inference', depends_on: `s${i - 1}` };
    });
    const plan = planned(steps);
    assert.equal(plan.levels.length, n);
    assert.deepEqual(
      plan.order,
      Array.from({ length: n }, (_, i) => `s${i}`),
    );
  });

  it('names a 1000-step cycle', () => {
    const n = 1000;
    const steps: PlanStep[] = Array.from({ length: n }, (_, i) => ({
      id: `s${i}`,
      type: 'inference',
      depends_on: `s${(i + n - 1) % n}`,
    }));
    const result = rejected(steps);
    assert.equal(result.error, 'cyclic_dependency');
    assert.ok(result.detail.startsWith('steps form a cycle: s0 -> s1 -> s2 -> '));
    assert.ok(result.detail.endsWith(' -> s999 -> s0'));
  });
});
