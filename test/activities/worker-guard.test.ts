import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { guardSteps, WORKER_INELIGIBLE, type WorkerSelf } from '../../activities/compute/worker-guard.js';
import type { StepActivities } from '../../activities/compute/step-activities.js';
import type { ImageStepInput, InferenceStepInput, TileStepInput } from '../../core/job-steps.js';
import { createModelRegistry } from '../../core/model-registry.js';
import type { StepRun } from '../../core/job-scheduler.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const ROME = '861e8050fffffff';
const NEW_YORK = '862a1072fffffff';

const run = (name: string): StepRun => ({
  output: { ran: name },
  cost: 0.001,
  worker_pk: 'w'.repeat(64),
  record_id: `record-${name}`,
  latency_ms: 1,
});

/** Step activities that record which ran. */
function fakeSteps(): StepActivities & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async inferenceStep() {
      calls.push('inference');
      return run('inference');
    },
    async tileRenderStep() {
      calls.push('tile');
      return run('tile');
    },
    async imageProcessStep() {
      calls.push('image');
      return run('image');
    },
    async sensorFusionStep() {
      calls.push('fusion');
      return run('fusion');
    },
  };
}

const laptop = (extra: Partial<WorkerSelf> = {}): WorkerSelf => ({
  models: ['tinyllama', 'lfm2.5-1.2b-instruct'],
  tools: ['web-search'],
  hardware_tier: 1,
  trust_tier: 'seedling',
  h3_cell: ROME,
  relay: false,
  ...extra,
});

const inference = (extra: Partial<InferenceStepInput> = {}): InferenceStepInput => ({
  job_id: 'job-1',
  step_id: 'ask',
  messages: [{ role: 'user', content: 'three parks in Rome' }],
  want_locations: false,
  h3_cell: ROME,
  jurisdiction: null,
  min_tier: null,
  ...extra,
});
const tile: TileStepInput = { job_id: 'job-1', step_id: 'map', center_cell: ROME, zoom: 12, style: 'osm-bright' };
const image: ImageStepInput = { job_id: 'job-1', step_id: 'ndvi', operation: 'ndvi', h3_cell: ROME };

/** The retryable worker_ineligible failure, with the reason in its message. */
async function assertIneligible(promise: Promise<unknown>, reason: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(error)}`);
    assert.equal(error.type, WORKER_INELIGIBLE);
    assert.equal(error.nonRetryable, false);
    assert.match(error.message, reason);
    return true;
  });
}

describe('worker guard (the worker re-checks each step it takes)', () => {
  const models = createModelRegistry();

  it('runs a step this worker may take and returns its result unchanged', async () => {
    const steps = fakeSteps();
    const guarded = guardSteps(steps, () => laptop(), { models });
    assert.deepEqual(await guarded.inferenceStep(inference({ tools: ['web-search'] })), run('inference'));
    assert.deepEqual(await guarded.tileRenderStep(tile), run('tile'));
    assert.deepEqual(steps.calls, ['inference', 'tile']);
  });

  it('refuses a model it does not serve, and never runs the step', async () => {
    const steps = fakeSteps();
    const guarded = guardSteps(steps, () => laptop(), { models });
    await assertIneligible(guarded.inferenceStep(inference({ model: 'gemma-2-2b' })), /model gemma-2-2b is not served/);
    assert.deepEqual(steps.calls, []);
  });

  it("checks a step without a model against the registry's default model", async () => {
    const guarded = guardSteps(fakeSteps(), () => laptop({ models: ['tinyllama'] }), { models });
    await assertIneligible(guarded.inferenceStep(inference()), new RegExp(`model ${models.defaultModel} `));
    const withDefault = guardSteps(fakeSteps(), () => laptop({ models: [models.defaultModel] }), { models });
    await withDefault.inferenceStep(inference());
  });

  it('refuses a step requiring a tool it does not advertise', async () => {
    const guarded = guardSteps(fakeSteps(), () => laptop(), { models });
    await assertIneligible(
      guarded.inferenceStep(inference({ tools: ['web-search', 'file-ops'] })),
      /tools \[file-ops\] are not advertised/,
    );
  });

  it("refuses a tool above its trust tier (the tool registry's min_trust_tier)", async () => {
    const self = laptop({ tools: ['web-search', 'python-repl'] });
    const guarded = guardSteps(fakeSteps(), () => self, { models });
    await assertIneligible(
      guarded.inferenceStep(inference({ tools: ['python-repl'] })),
      /python-repl needs trust tier navigator/,
    );
    self.trust_tier = 'navigator';
    await guarded.inferenceStep(inference({ tools: ['python-repl'] }));
  });

  it('refuses a job whose x-svc-min-tier is above its trust tier, reading the tier on every attempt', async () => {
    let tier: WorkerSelf['trust_tier'] = 'seedling';
    const guarded = guardSteps(fakeSteps(), () => laptop({ trust_tier: tier }), { models });
    await assertIneligible(guarded.inferenceStep(inference({ min_tier: 'explorer' })), /trust tier explorer or above/);
    tier = 'trailblazer'; // the gateway promoted it (learnt from a heartbeat)
    await guarded.inferenceStep(inference({ min_tier: 'explorer' }));
  });

  it('refuses a job restricted to a jurisdiction its cell lies outside', async () => {
    const guarded = guardSteps(fakeSteps(), () => laptop(), { models });
    await guarded.inferenceStep(inference({ jurisdiction: 'EU' }));
    await guarded.inferenceStep(inference({ jurisdiction: 'IT' }));
    await assertIneligible(guarded.inferenceStep(inference({ jurisdiction: 'US' })), /jurisdiction US/);
    const american = guardSteps(fakeSteps(), () => laptop({ h3_cell: NEW_YORK }), { models });
    await assertIneligible(american.inferenceStep(inference({ jurisdiction: 'EU' })), /outside it/);
  });

  describe("gate 5 at take-up: the tool policy against this worker's own cell and tier", () => {
    const BEIJING = '8631aa42fffffff';
    const toolPolicy = examplePolicy();

    it('never runs a tool its jurisdiction forbids, whatever cell the job named', async () => {
      const steps = fakeSteps();
      const chinese = guardSteps(steps, () => laptop({ h3_cell: BEIJING }), { models, toolPolicy });
      await assertIneligible(
        chinese.inferenceStep(inference({ h3_cell: ROME, tools: ['web-search'] })),
        /tool web-search is not permitted in cell 8631aa42fffffff \(CN, jurisdiction CN\) by tool policy rule cn-no-web-search/,
      );
      assert.deepEqual(steps.calls, [], 'the step never ran');
      // The same step on a worker in Rome runs; without a policy the Beijing worker runs it too.
      await guardSteps(steps, () => laptop(), { models, toolPolicy }).inferenceStep(
        inference({ tools: ['web-search'] }),
      );
      await guardSteps(steps, () => laptop({ h3_cell: BEIJING }), { models }).inferenceStep(
        inference({ tools: ['web-search'] }),
      );
      assert.deepEqual(steps.calls, ['inference', 'inference']);
    });

    it('checks a worker-tier rule the gateway deferred, reading the tier on every attempt', async () => {
      const steps = fakeSteps();
      const self = laptop({ tools: ['web-search', 'file-ops'], trust_tier: 'explorer' });
      const guarded = guardSteps(steps, () => self, { models, toolPolicy });
      await assertIneligible(
        guarded.inferenceStep(inference({ tools: ['file-ops'] })),
        /framework GDPR\) by tool policy rule gdpr-file-ops-navigator: it needs worker trust tier navigator; this worker is explorer/,
      );
      assert.deepEqual(steps.calls, []);
      self.trust_tier = 'navigator';
      await guarded.inferenceStep(inference({ tools: ['file-ops'] }));
      assert.deepEqual(steps.calls, ['inference']);
    });

    it("judges the step's own cell too: a worker-tier rule there holds for a worker outside it", async () => {
      const steps = fakeSteps();
      const self = laptop({ tools: ['web-search', 'file-ops'], trust_tier: 'explorer', h3_cell: NEW_YORK });
      await assertIneligible(
        guardSteps(steps, () => self, { models, toolPolicy }).inferenceStep(inference({ tools: ['file-ops'] })),
        /cell 861e8050fffffff \(IT, framework GDPR\) by tool policy rule gdpr-file-ops-navigator/,
      );
      assert.deepEqual(steps.calls, []);
    });

    it('fails for good a step whose own cell forbids the tool on every worker (not retried elsewhere)', async () => {
      const steps = fakeSteps();
      const guarded = guardSteps(steps, () => laptop({ trust_tier: 'sovereign' }), { models, toolPolicy });
      // A res-2 cell whose centroid is in North Korea and which covers Dandong, China: judged in China too.
      for (const cell of [BEIJING, '82302ffffffffff']) {
        await assert.rejects(guarded.inferenceStep(inference({ h3_cell: cell, tools: ['WEB-SEARCH'] })), (error) => {
          assert.ok(error instanceof ApplicationFailure, String(error));
          assert.equal(error.type, 'tool_not_permitted');
          assert.equal(error.nonRetryable, true);
          assert.match(
            error.message,
            /step "ask" of job job-1: tool web-search .*\(CN, jurisdiction CN\).*cn-no-web-search/,
          );
          return true;
        });
      }
      assert.deepEqual(steps.calls, []);
    });
  });

  it('leaves image processing to hardware tier 2 and tiles to any worker', async () => {
    const tier1 = guardSteps(fakeSteps(), () => laptop(), { models });
    await assertIneligible(tier1.imageProcessStep(image), /image_process step needs hardware tier 2/);
    await tier1.tileRenderStep(tile);
    const tier2 = guardSteps(fakeSteps(), () => laptop({ hardware_tier: 2 }), { models });
    assert.deepEqual(await tier2.imageProcessStep(image), run('image'));
  });

  it("refuses a model above its hardware tier (the model registry's min_hardware_tier)", async () => {
    const self = laptop({ models: ['phi-3-mini'] });
    const guarded = guardSteps(fakeSteps(), () => self, { models });
    await assertIneligible(guarded.inferenceStep(inference({ model: 'phi-3-mini' })), /needs hardware tier 2/);
    self.hardware_tier = 2;
    await guarded.inferenceStep(inference({ model: 'phi-3-mini' }));
  });

  it('lets a relay take no step at all', async () => {
    const guarded = guardSteps(fakeSteps(), () => laptop({ relay: true, hardware_tier: 3 }), { models });
    await assertIneligible(guarded.tileRenderStep(tile), /relay/);
    await assertIneligible(guarded.inferenceStep(inference()), /relay/);
    await assertIneligible(guarded.imageProcessStep(image), /relay/);
  });

  it('names the job and step in the failure, so the workflow history says which step bounced', async () => {
    const guarded = guardSteps(fakeSteps(), () => laptop({ models: [] }), { models });
    await assertIneligible(guarded.inferenceStep(inference()), /^step "ask" of job job-1: model .* \(serves: none\)$/);
  });
});
