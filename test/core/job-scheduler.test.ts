import assert from 'node:assert/strict';
import type { JobPlan } from '../../core/job-plan.js';
import type { StepResult } from '../../core/job-record.js';
import {
  notStarted,
  runSchedule,
  type DescribeError,
  type RunStep,
  type ScheduledStep,
  type ScheduleResult,
  type StepRun,
} from '../../core/job-scheduler.js';

interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (the scheduler only awaits promises, never timers). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

const run = (overrides: Partial<StepRun> = {}): StepRun => ({
  output: {},
  cost: 0,
  worker_pk: 'worker-pk',
  record_id: 'record',
  latency_ms: 1,
  ...overrides,
});

/** A `runStep` whose steps finish only when the test says so, recording what each step was fed. */
class ManualRunner {
  readonly started: string[] = [];
  readonly fed = new Map<string, Record<string, unknown>[]>();
  private readonly pending = new Map<string, Deferred<StepRun>>();

  readonly runStep: RunStep = (step, dependencyOutputs) => {
    this.started.push(step.id);
    this.fed.set(step.id, dependencyOutputs);
    const d = deferred<StepRun>();
    this.pending.set(step.id, d);
    return d.promise;
  };

  complete(id: string, overrides: Partial<StepRun> = {}): void {
    this.take(id).resolve(run(overrides));
  }

  fail(id: string, error: unknown): void {
    this.take(id).reject(error);
  }

  private take(id: string): Deferred<StepRun> {
    const d = this.pending.get(id);
    assert.ok(d, `step "${id}" was never started`);
    this.pending.delete(id);
    return d;
  }
}

/** A `runStep` that completes every step at once with the given runs, recording the order of starts. */
function instantRunner(runs: Record<string, Partial<StepRun>>): { runStep: RunStep; started: string[] } {
  const started: string[] = [];
  return {
    started,
    runStep: (step) => {
      started.push(step.id);
      return Promise.resolve(run(runs[step.id] ?? {}));
    },
  };
}

/** Describes a thrown Error by its name and message, so tests see what reached `describe`. */
const describeByName: DescribeError = (error) =>
  error instanceof Error ? { code: error.name, detail: error.message } : { code: 'unknown', detail: String(error) };

const step = (id: string, estimate = 0, depends_on?: string | string[]): ScheduledStep => ({
  id,
  type: 'inference',
  estimate,
  ...(depends_on === undefined ? {} : { depends_on }),
});

const plan = (...levels: string[][]): JobPlan => ({ order: levels.flat(), levels });

const byId = (result: ScheduleResult, id: string): StepResult => {
  const found = result.steps.find((s) => s.id === id);
  assert.ok(found, `no result for step "${id}"`);
  return found;
};

const failure = (name: string, message: string): Error => Object.assign(new Error(message), { name });

describe('job scheduler (docs/protocol.md §2.2)', () => {
  describe('levels and dependencies', () => {
    it('starts the second step of a level while the first is still running', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        { steps: [step('a'), step('b')], plan: plan(['a', 'b']), budgetCredits: 1, reservedCredits: 0 },
        runner.runStep,
        describeByName,
      );
      await settle();
      // Neither step has finished, yet both have started.
      assert.deepEqual(runner.started, ['a', 'b']);
      runner.complete('b');
      runner.complete('a');
      assert.equal((await job).status, 'complete');
    });

    it('starts a dependent step only after its dependency finished, fed its output', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('ndvi'), step('summary', 0, 'ndvi')],
          plan: plan(['ndvi'], ['summary']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      assert.deepEqual(runner.started, ['ndvi']);
      runner.complete('ndvi', { output: { mean_ndvi: 0.42 } });
      await settle();
      assert.deepEqual(runner.started, ['ndvi', 'summary']);
      assert.deepEqual(runner.fed.get('ndvi'), []);
      assert.deepEqual(runner.fed.get('summary'), [{ mean_ndvi: 0.42 }]);
      runner.complete('summary', { output: { text: 'green' } });
      const result = await job;
      assert.deepEqual(byId(result, 'summary').output, { text: 'green' });
    });

    it('reports steps in request order, whatever the plan order and completion order', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('map', 0, 'ai'), step('ai'), step('tile')],
          plan: plan(['ai', 'tile'], ['map']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.complete('tile');
      await settle();
      runner.complete('ai');
      await settle();
      runner.complete('map');
      const result = await job;
      assert.deepEqual(
        result.steps.map((s) => s.id),
        ['map', 'ai', 'tile'],
      );
    });

    it('records a completed step with its run, its type and no error', async () => {
      const { runStep } = instantRunner({
        tile: { output: { url: 't' }, cost: 0.0001, worker_pk: 'pk-1', record_id: 'rec-1', latency_ms: 37 },
      });
      const result = await runSchedule(
        {
          steps: [{ id: 'tile', type: 'tile_render', estimate: 0.0001 }],
          plan: plan(['tile']),
          budgetCredits: 1,
          reservedCredits: 0.0001,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(result, {
        status: 'complete',
        charged: 0.0001,
        error: null,
        steps: [
          {
            id: 'tile',
            type: 'tile_render',
            status: 'complete',
            output: { url: 't' },
            latency_ms: 37,
            worker_pk: 'pk-1',
            cost: 0.0001,
            record_id: 'rec-1',
          },
        ],
      });
    });
  });

  describe('critical path', () => {
    // a -> b and c -> d: two branches, as the plan's levels [a, c], [b, d] would put them.
    const branches = () => ({
      steps: [step('a'), step('b', 0, 'a'), step('c'), step('d', 0, 'c')],
      plan: plan(['a', 'c'], ['b', 'd']),
      budgetCredits: 1,
      reservedCredits: 0,
    });

    it('starts a step as soon as its own dependency completed, while the other branch still runs', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(branches(), runner.runStep, describeByName);
      await settle();
      assert.deepEqual(runner.started, ['a', 'c']);
      runner.complete('a', { output: { from: 'a' } });
      await settle();
      assert.deepEqual(runner.started, ['a', 'c', 'b'], 'b must not wait for c');
      assert.deepEqual(runner.fed.get('b'), [{ from: 'a' }]);
      runner.complete('b');
      runner.complete('c');
      await settle();
      assert.deepEqual(runner.started, ['a', 'c', 'b', 'd']);
      runner.complete('d');
      assert.equal((await job).status, 'complete');
    });

    it('with barrier, waits for the whole level as workflow runs started before it did', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(branches(), runner.runStep, describeByName, { barrier: true });
      await settle();
      runner.complete('a');
      await settle();
      assert.deepEqual(runner.started, ['a', 'c']);
      runner.complete('c');
      await settle();
      assert.deepEqual(runner.started, ['a', 'c', 'b', 'd']);
      runner.complete('b');
      runner.complete('d');
      assert.equal((await job).status, 'complete');
    });

    it('starts steps made ready together in request order, whatever order their dependencies finished in', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('y', 0, 'root'), step('root'), step('x', 0, 'root')],
          plan: plan(['root'], ['y', 'x']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.complete('root');
      await settle();
      assert.deepEqual(runner.started, ['root', 'y', 'x']);
      runner.complete('x');
      runner.complete('y');
      assert.equal((await job).status, 'complete');
    });

    it('fans in: starts a step after all of its dependencies, fed their outputs in the listed order', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('a'), step('b'), step('merge', 0, ['b', 'a'])],
          plan: plan(['a', 'b'], ['merge']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.complete('a', { output: { n: 'a' } });
      await settle();
      assert.deepEqual(runner.started, ['a', 'b'], 'merge waits for b too');
      runner.complete('b', { output: { n: 'b' } });
      await settle();
      assert.deepEqual(runner.fed.get('merge'), [{ n: 'b' }, { n: 'a' }]);
      runner.complete('merge');
      assert.equal((await job).status, 'complete');
    });

    it('after a failure starts nothing more, lets the running branch finish, and skips the rest', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(branches(), runner.runStep, describeByName);
      await settle();
      runner.fail('a', failure('no_scenes', 'cloudy'));
      await settle();
      runner.complete('c', { cost: 0.0003 });
      const result = await job;
      assert.deepEqual(runner.started, ['a', 'c'], 'd must not start once a failed');
      assert.deepEqual(result.error, { step_id: 'a', code: 'no_scenes', detail: 'cloudy' });
      assert.deepEqual(
        result.steps.map((s) => [s.id, s.status]),
        [
          ['a', 'failed'],
          ['b', 'skipped'],
          ['c', 'complete'],
          ['d', 'skipped'],
        ],
      );
      assert.equal(result.charged, 0.0003);
    });

    it('names the failed step first in request order even when a later one failed earlier on another branch', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(branches(), runner.runStep, describeByName);
      await settle();
      runner.complete('c');
      await settle();
      runner.fail('d', failure('upstream_timeout', 'd timed out'));
      await settle();
      runner.fail('a', failure('no_scenes', 'cloudy'));
      const result = await job;
      assert.deepEqual(result.error, { step_id: 'a', code: 'no_scenes', detail: 'cloudy' });
      assert.equal(byId(result, 'd').status, 'failed');
      assert.equal(byId(result, 'b').status, 'skipped');
    });

    it('holds a ready step that does not fit beside the running ones until they free budget', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('x', 0.002), step('y', 0.002)],
          plan: plan(['x', 'y']),
          budgetCredits: 0.003,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      assert.deepEqual(runner.started, ['x'], 'y does not fit while x may still cost 0.002');
      runner.complete('x', { cost: 0.0005 });
      await settle();
      assert.deepEqual(runner.started, ['x', 'y']);
      runner.complete('y', { cost: 0.002 });
      const result = await job;
      assert.equal(result.status, 'complete');
      assert.equal(result.charged, 0.0025);
    });

    it('reuses a done step at once and starts its dependents in the same scan', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [{ ...step('a'), done: run({ output: { kept: true }, cost: 0.001 }) }, step('b', 0, 'a'), step('c')],
          plan: plan(['a', 'c'], ['b']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      assert.deepEqual(runner.started, ['b', 'c']);
      assert.deepEqual(runner.fed.get('b'), [{ kept: true }]);
      runner.complete('b');
      runner.complete('c');
      const result = await job;
      assert.equal(byId(result, 'a').cost, 0.001);
      assert.equal(result.status, 'complete');
    });
  });

  describe('failure', () => {
    it('names the first failed step in request order, not the first to fail in time', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('a'), step('b'), step('c')],
          plan: plan(['a', 'b', 'c']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.fail('c', failure('upstream_timeout', 'c timed out'));
      await settle();
      runner.fail('b', failure('no_scenes', 'b found no scenes'));
      runner.complete('a');
      const result = await job;
      assert.equal(result.status, 'failed');
      assert.deepEqual(result.error, { step_id: 'b', code: 'no_scenes', detail: 'b found no scenes' });
      assert.equal(byId(result, 'b').status, 'failed');
      assert.equal(byId(result, 'c').status, 'failed');
      assert.deepEqual(byId(result, 'c').error, { code: 'upstream_timeout', detail: 'c timed out' });
    });

    it('lets the other steps of the failed level finish and charges them', async () => {
      const runner = new ManualRunner();
      let finished = false;
      const job = runSchedule(
        {
          steps: [step('slow', 0.001), step('broken', 0.001)],
          plan: plan(['slow', 'broken']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      ).finally(() => {
        finished = true;
      });
      await settle();
      runner.fail('broken', failure('runtime_unavailable', 'no runtime'));
      await settle();
      assert.equal(finished, false, 'the job must wait for the step still running');
      runner.complete('slow', { cost: 0.0007, record_id: 'rec-slow' });
      const result = await job;
      assert.equal(result.status, 'failed');
      assert.equal(byId(result, 'slow').status, 'complete');
      assert.equal(byId(result, 'slow').cost, 0.0007);
      assert.equal(byId(result, 'slow').record_id, 'rec-slow');
      assert.equal(result.charged, 0.0007);
    });

    it('skips the later levels with the job error code and does not start them', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('ndvi'), step('summary', 0, 'ndvi'), step('map', 0, 'summary')],
          plan: plan(['ndvi'], ['summary'], ['map']),
          budgetCredits: 1,
          reservedCredits: 0,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.fail('ndvi', failure('no_scenes', 'cloudy'));
      const result = await job;
      assert.deepEqual(runner.started, ['ndvi']);
      for (const id of ['summary', 'map']) {
        const skipped = byId(result, id);
        assert.equal(skipped.status, 'skipped');
        assert.equal(skipped.error?.code, 'no_scenes');
        assert.match(skipped.error?.detail ?? '', /"ndvi"/);
        assert.equal(skipped.cost, 0);
        assert.equal(skipped.record_id, null);
        assert.equal(skipped.worker_pk, null);
        assert.deepEqual(skipped.output, {});
      }
      assert.equal(result.charged, 0);
    });

    it('turns what runStep threw into the step error with describe', async () => {
      const thrown = { not: 'an Error' };
      const described: unknown[] = [];
      const result = await runSchedule(
        { steps: [step('a')], plan: plan(['a']), budgetCredits: 1, reservedCredits: 0 },
        () => Promise.reject(thrown),
        (error) => {
          described.push(error);
          return { code: 'tool_not_found', detail: 'described' };
        },
      );
      assert.equal(described.length, 1);
      assert.equal(described[0], thrown);
      assert.deepEqual(byId(result, 'a').error, { code: 'tool_not_found', detail: 'described' });
      assert.deepEqual(result.error, { step_id: 'a', code: 'tool_not_found', detail: 'described' });
    });

    it('charges nothing and records no worker for a failed step', async () => {
      const result = await runSchedule(
        { steps: [step('a', 0.5)], plan: plan(['a']), budgetCredits: 1, reservedCredits: 0 },
        () => Promise.reject(new Error('boom')),
        describeByName,
      );
      const failed = byId(result, 'a');
      assert.equal(failed.status, 'failed');
      assert.equal(failed.cost, 0);
      assert.equal(failed.worker_pk, null);
      assert.equal(failed.record_id, null);
      assert.equal(result.charged, 0);
    });
  });

  describe('budget', () => {
    it('fails with budget_exceeded and starts nothing when the budget does not cover the proof', async () => {
      const { runStep, started } = instantRunner({});
      const result = await runSchedule(
        {
          steps: [step('a'), step('b', 0, 'a')],
          plan: plan(['a'], ['b']),
          budgetCredits: 0.00005,
          reservedCredits: 0.0001,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(started, []);
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.step_id, null);
      assert.equal(result.error?.code, 'budget_exceeded');
      assert.equal(result.charged, 0);
      assert.deepEqual(
        result.steps.map((s) => [s.id, s.status, s.error?.code]),
        [
          ['a', 'skipped', 'budget_exceeded'],
          ['b', 'skipped', 'budget_exceeded'],
        ],
      );
    });

    it('runs every step when the budget exactly covers the proof and the estimates', async () => {
      // In floating point 0.0003 - 0.0001 < 0.0001 + 0.0001; in credit units it is equal.
      const { runStep, started } = instantRunner({ a: { cost: 0.0001 }, b: { cost: 0.0001 } });
      const result = await runSchedule(
        {
          steps: [step('a', 0.0001), step('b', 0.0001)],
          plan: plan(['a', 'b']),
          budgetCredits: 0.0003,
          reservedCredits: 0.0001,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(started, ['a', 'b']);
      assert.equal(result.status, 'complete');
      assert.equal(result.charged, 0.0002);
    });

    it('does not start a later step whose estimate exceeds what is left, and charges the earlier one', async () => {
      const { runStep, started } = instantRunner({ cheap: { cost: 0.001 } });
      const result = await runSchedule(
        {
          steps: [step('cheap', 0.001), step('dear', 0.01, 'cheap')],
          plan: plan(['cheap'], ['dear']),
          budgetCredits: 0.005,
          reservedCredits: 0.0001,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(started, ['cheap']);
      assert.equal(result.status, 'failed');
      assert.equal(result.error?.step_id, 'dear');
      assert.equal(result.error?.code, 'budget_exceeded');
      assert.equal(byId(result, 'cheap').status, 'complete');
      assert.equal(byId(result, 'cheap').cost, 0.001);
      assert.equal(byId(result, 'dear').status, 'skipped');
      assert.equal(byId(result, 'dear').error?.code, 'budget_exceeded');
      assert.equal(result.charged, 0.001);
    });

    it('within one level, runs the steps that fit and skips the one that does not', async () => {
      const { runStep, started } = instantRunner({ first: { cost: 0.002 } });
      const result = await runSchedule(
        {
          steps: [step('first', 0.002), step('second', 0.002)],
          plan: plan(['first', 'second']),
          budgetCredits: 0.003,
          reservedCredits: 0,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(started, ['first']);
      assert.equal(result.status, 'failed');
      assert.deepEqual(
        { step_id: result.error?.step_id, code: result.error?.code },
        { step_id: 'second', code: 'budget_exceeded' },
      );
      assert.equal(byId(result, 'first').status, 'complete');
      assert.equal(byId(result, 'second').status, 'skipped');
      assert.equal(result.charged, 0.002);
    });

    it('caps the charge of a step that costs more than its estimate at what is left', async () => {
      const { runStep } = instantRunner({ a: { cost: 0.005 } });
      const result = await runSchedule(
        { steps: [step('a', 0.001)], plan: plan(['a']), budgetCredits: 0.002, reservedCredits: 0.0001 },
        runStep,
        describeByName,
      );
      assert.equal(result.status, 'complete');
      assert.equal(byId(result, 'a').cost, 0.0019);
      assert.equal(result.charged, 0.0019);
    });

    it('never lets parallel overruns together exceed the budget, charging in completion order', async () => {
      const runner = new ManualRunner();
      const job = runSchedule(
        {
          steps: [step('a', 0.001), step('b', 0.001)],
          plan: plan(['a', 'b']),
          budgetCredits: 0.0025,
          reservedCredits: 0.0005,
        },
        runner.runStep,
        describeByName,
      );
      await settle();
      runner.complete('b', { cost: 0.0015 });
      await settle();
      runner.complete('a', { cost: 0.0015 });
      const result = await job;
      assert.equal(byId(result, 'b').cost, 0.0015);
      assert.equal(byId(result, 'a').cost, 0.0005);
      assert.equal(result.charged, 0.002);
    });

    it('does not start the next level once an overrun used up the budget', async () => {
      const { runStep, started } = instantRunner({ a: { cost: 0.003 } });
      const result = await runSchedule(
        {
          steps: [step('a', 0.001), step('b', 0.0001, 'a')],
          plan: plan(['a'], ['b']),
          budgetCredits: 0.002,
          reservedCredits: 0,
        },
        runStep,
        describeByName,
      );
      assert.deepEqual(started, ['a']);
      assert.equal(result.charged, 0.002);
      assert.equal(result.error?.step_id, 'b');
      assert.equal(result.error?.code, 'budget_exceeded');
    });

    it('sums charges exactly: three steps of 0.00001 charge 0.00003', async () => {
      // 0.00001 + 0.00001 + 0.00001 is 0.000030000000000000004 in floating point.
      const { runStep } = instantRunner({ a: { cost: 0.00001 }, b: { cost: 0.00001 }, c: { cost: 0.00001 } });
      const result = await runSchedule(
        {
          steps: [step('a', 0.00001), step('b', 0.00001, 'a'), step('c', 0.00001, 'b')],
          plan: plan(['a'], ['b'], ['c']),
          budgetCredits: 1,
          reservedCredits: 0.0001,
        },
        runStep,
        describeByName,
      );
      assert.equal(result.status, 'complete');
      assert.equal(result.charged, 0.00003);
    });
  });

  describe('notStarted', () => {
    it('skips every step in request order with the error and charges nothing', () => {
      const error = { step_id: null, code: 'no_workers', detail: 'no worker in cell' };
      const result = notStarted([step('b'), { id: 'a', type: 'tile_render', estimate: 0.1 }], error);
      assert.deepEqual(result, {
        status: 'failed',
        charged: 0,
        error,
        steps: [
          {
            id: 'b',
            type: 'inference',
            status: 'skipped',
            output: {},
            latency_ms: 0,
            worker_pk: null,
            cost: 0,
            record_id: null,
            error: { code: 'no_workers', detail: 'no worker in cell' },
          },
          {
            id: 'a',
            type: 'tile_render',
            status: 'skipped',
            output: {},
            latency_ms: 0,
            worker_pk: null,
            cost: 0,
            record_id: null,
            error: { code: 'no_workers', detail: 'no worker in cell' },
          },
        ],
      });
    });
  });
});
