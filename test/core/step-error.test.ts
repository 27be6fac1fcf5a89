import assert from 'node:assert/strict';
import { ActivityFailure, ApplicationFailure, RetryState } from '@temporalio/common';
import { ServiceError } from '../../core/errors.js';
import { describeStepError } from '../../core/step-error.js';

describe('step errors', () => {
  it('reports a ServiceError by its code and detail', () => {
    assert.deepEqual(describeStepError(new ServiceError('no_workers', 'no worker in 851e8053fffffff')), {
      code: 'no_workers',
      detail: 'no worker in 851e8053fffffff',
    });
  });

  it('reports a ServiceError without detail by its code and message', () => {
    assert.deepEqual(describeStepError(new ServiceError('job_timeout')), {
      code: 'job_timeout',
      detail: 'job_timeout',
    });
  });

  it('reports an ApplicationFailure thrown in process by its type', () => {
    const thrown = ApplicationFailure.nonRetryable('no scene under 20% cloud', 'no_scenes');
    assert.deepEqual(describeStepError(thrown), { code: 'no_scenes', detail: 'no scene under 20% cloud' });
  });

  it('reports a retryable ApplicationFailure by its type too', () => {
    const thrown = ApplicationFailure.retryable('runtime down', 'runtime_unavailable');
    assert.deepEqual(describeStepError(thrown), { code: 'runtime_unavailable', detail: 'runtime down' });
  });

  it('reports an ApplicationFailure that reached the workflow inside an ActivityFailure by its type', () => {
    const inner = ApplicationFailure.nonRetryable('tile server timed out', 'upstream_timeout');
    const thrown = new ActivityFailure(
      'Activity task failed',
      'tileRenderStep',
      '3',
      RetryState.NON_RETRYABLE_FAILURE,
      'worker@host',
      inner,
    );
    assert.deepEqual(describeStepError(thrown), { code: 'upstream_timeout', detail: 'tile server timed out' });
  });

  it('finds the ApplicationFailure deeper in a chain of causes', () => {
    const inner = ApplicationFailure.nonRetryable('no such tool', 'tool_not_found');
    const thrown = new Error('outer', { cause: new Error('middle', { cause: inner }) });
    assert.deepEqual(describeStepError(thrown), { code: 'tool_not_found', detail: 'no such tool' });
  });

  it('reports an ActivityFailure without an ApplicationFailure cause as step_failed', () => {
    const thrown = new ActivityFailure(
      'Activity task timed out',
      'inferenceStep',
      '1',
      RetryState.TIMEOUT,
      undefined,
      new Error('heartbeat timeout'),
    );
    assert.deepEqual(describeStepError(thrown), { code: 'step_failed', detail: 'Activity task timed out' });
  });

  it('reports an ApplicationFailure without a type as step_failed', () => {
    const thrown = ApplicationFailure.create({ message: 'untyped' });
    assert.deepEqual(describeStepError(thrown), { code: 'step_failed', detail: 'untyped' });
  });

  it('reports any other Error as step_failed with its message', () => {
    assert.deepEqual(describeStepError(new TypeError('x is undefined')), {
      code: 'step_failed',
      detail: 'x is undefined',
    });
  });

  it('reports a thrown non-Error as step_failed with its text', () => {
    assert.deepEqual(describeStepError('boom'), { code: 'step_failed', detail: 'boom' });
    assert.deepEqual(describeStepError(undefined), { code: 'step_failed', detail: 'undefined' });
  });
});
