// The Temporal runner's eager path (api/temporal-job-runner.ts) against a stand-in for the Temporal client: which
// source answers a job (finishJob in this process, or the run's close event) and what a failed or stopped run answers.
// The real engine runs it in test/live/temporal-compute.test.ts and test/live/scale-out.test.ts.
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, RetryState } from '@temporalio/common';
import { createJobAnswers, type JobAnswers } from '../../api/job-answers.js';
import { createTemporalJobRunner } from '../../api/temporal-job-runner.js';
import { ServiceError } from '../../core/errors.js';
import type { ComputeResponse } from '../../core/job-record.js';
import type { ComputeJobInput } from '../../core/job-steps.js';
import { DEFAULT_QUEUE_NAMING } from '../../core/task-queues.js';

const job = { job_id: 'j-1', h3_cell: '851e8053fffffff', requester_pk: 'pk', epoch: 1, steps: [], budget_credits: 1 };
const answer = (status: 'complete' | 'failed'): ComputeResponse => ({ job_id: 'j-1', status }) as ComputeResponse;

/** A Temporal client whose start and result behave as told; records what the runner asked. */
function fakeClient(run: { eagerlyStarted: boolean; onStart?: () => void; result: () => Promise<ComputeResponse> }): {
  client: Client;
  calls: string[];
} {
  const calls: string[] = [];
  const workflow = {
    async start(
      type: string,
      options: { workflowId: string; requestEagerStart?: boolean; args: [{ routes?: unknown }] },
    ) {
      calls.push(`start ${type} ${options.workflowId} eager=${options.requestEagerStart}`);
      if (options.args[0].routes) calls.push(`routes ${JSON.stringify(options.args[0].routes)}`);
      run.onStart?.();
      return {
        eagerlyStarted: run.eagerlyStarted,
        result: () => {
          calls.push('result');
          return run.result();
        },
      };
    },
  };
  return { client: { workflow } as unknown as Client, calls };
}

const runnerOf = (client: Client, answers: JobAnswers, fallbackMs = 1_000) =>
  createTemporalJobRunner({
    client,
    naming: DEFAULT_QUEUE_NAMING,
    waitMs: 5_000,
    runTimeoutMs: 60_000,
    answers,
    fallbackMs,
  });

describe('Temporal runner: eager start, answers in-process', () => {
  it('answers from finishJob in this process, without reading the close event', async () => {
    const answers = createJobAnswers();
    const { client, calls } = fakeClient({
      eagerlyStarted: true,
      // finishJob runs during the eager workflow task, before start returns
      onStart: () => answers.deliver(answer('complete')),
      result: () => new Promise(() => {}),
    });
    const got = await runnerOf(client, answers).run(job as unknown as ComputeJobInput);
    assert.deepEqual(got, answer('complete'));
    assert.deepEqual(calls, ['start computeJob job-j-1 eager=true']);
  });

  it('reads the close event at once when the run was not started here (a replay joining an open run)', async () => {
    const answers = createJobAnswers();
    const { client, calls } = fakeClient({ eagerlyStarted: false, result: async () => answer('complete') });
    assert.deepEqual(
      await runnerOf(client, answers, 60_000).run(job as unknown as ComputeJobInput),
      answer('complete'),
    );
    assert.deepEqual(calls, ['start computeJob job-j-1 eager=true', 'result']);
  });

  it('falls back to the close event when an eager run finished on another gateway', async () => {
    const answers = createJobAnswers();
    const { client, calls } = fakeClient({ eagerlyStarted: true, result: async () => answer('complete') });
    assert.deepEqual(await runnerOf(client, answers, 20).run(job as unknown as ComputeJobInput), answer('complete'));
    assert.deepEqual(calls, ['start computeJob job-j-1 eager=true', 'result']);
  });

  it('answers a failed job with the response its failed run carries', async () => {
    const failure = ApplicationFailure.create({ type: 'no_workers', nonRetryable: true, details: [answer('failed')] });
    const { client } = fakeClient({
      eagerlyStarted: false,
      result: () => Promise.reject(new WorkflowFailedError('failed', failure, RetryState.NON_RETRYABLE_FAILURE)),
    });
    assert.deepEqual(
      await runnerOf(client, createJobAnswers()).run(job as unknown as ComputeJobInput),
      answer('failed'),
    );
  });

  it('answers job_timeout when the run stopped without an answer', async () => {
    const { client } = fakeClient({
      eagerlyStarted: false,
      result: () => Promise.reject(new WorkflowNotFoundError('gone', 'job-j-1', undefined)),
    });
    await assert.rejects(
      runnerOf(client, createJobAnswers()).run(job as unknown as ComputeJobInput),
      (error: unknown) => error instanceof ServiceError && error.code === 'job_timeout',
    );
  });

  it('routes the steps before the start, and leaves a routing failure to the run', async () => {
    const route = { queue: 'geofabric/backbone', fallback_reason: 'no worker' };
    for (const [routing, expected] of [
      [async () => ({ ask: route }), `routes ${JSON.stringify({ ask: route })}`],
      [() => Promise.reject(new Error('registry down')), undefined],
    ] as const) {
      const answers = createJobAnswers();
      const { client, calls } = fakeClient({
        eagerlyStarted: true,
        onStart: () => answers.deliver(answer('complete')),
        result: () => new Promise(() => {}),
      });
      const runner = createTemporalJobRunner({
        client,
        naming: DEFAULT_QUEUE_NAMING,
        waitMs: 5_000,
        runTimeoutMs: 60_000,
        answers,
        route: routing,
      });
      assert.deepEqual(await runner.run(job as unknown as ComputeJobInput), answer('complete'));
      assert.deepEqual(calls.slice(1), expected ? [expected] : []);
    }
  });

  it('hands one answer to every request waiting for the job, and none to another job', async () => {
    const answers = createJobAnswers();
    const a = answers.wait('j-1');
    const b = answers.wait('j-1');
    const other = answers.wait('j-2');
    answers.deliver(answer('complete'));
    assert.deepEqual(await Promise.all([a.answer, b.answer]), [answer('complete'), answer('complete')]);
    const pending = await Promise.race([other.answer.then(() => 'answered'), Promise.resolve('waiting')]);
    assert.equal(pending, 'waiting');
    other.cancel();
  });
});
