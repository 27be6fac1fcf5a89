/**
 * Temporal out of reach while a request waits for its job's answer (found by `npm run chaos`: the Temporal
 * server killed while a gateway read a closed run's result) is the documented transient 503 with
 * `retry-after`, as MongoDB out of reach is (api/http-errors.ts), never a 500 `internal_error`.
 */
import assert from 'node:assert/strict';
import { ServiceError as TemporalServiceError } from '@temporalio/client';
import { asServiceError } from '../../api/http-errors.js';

describe('Temporal unreachable while answering a request (api/http-errors.ts asServiceError)', () => {
  it('is 503 store_unavailable with retry-after, not 500', () => {
    const grpc = Object.assign(new Error('14 UNAVAILABLE: tcp connect error'), { code: 14 });
    const failure = asServiceError(
      new TemporalServiceError('Failed to get Workflow execution history: tcp connect error', { cause: grpc }),
    );
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
    assert.equal(failure.headers['retry-after'], '5');
  });

  it('is the same 503 when the connection broke mid-call (a bare transport error, as the chaos run saw)', () => {
    const failure = asServiceError(
      new TemporalServiceError('Failed to get Workflow execution history: transport error', { cause: new Error('') }),
    );
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
    const dropped = asServiceError(
      new TemporalServiceError(
        'Unexpected error while making gRPC request: Native Promise was dropped without being settled',
        { cause: new Error('Native Promise was dropped without being settled') },
      ),
    );
    assert.equal(dropped.status, 503);
  });

  it('is the same 503 when Temporal did not answer in time (a start call under a paused server, as the chaos run saw)', () => {
    const timedOut = asServiceError(
      new TemporalServiceError('Failed to start Workflow', { cause: new Error('Timeout expired') }),
    );
    assert.equal(timedOut.status, 503);
    assert.equal(timedOut.code, 'store_unavailable');
    const deadline = Object.assign(new Error('4 DEADLINE_EXCEEDED: deadline exceeded'), { code: 4 });
    assert.equal(asServiceError(new TemporalServiceError('Failed to start Workflow', { cause: deadline })).status, 503);
  });

  it('leaves other Temporal client errors a 500 that says nothing internal', () => {
    const grpc = Object.assign(new Error('3 INVALID_ARGUMENT: bad query'), { code: 3 });
    const failure = asServiceError(new TemporalServiceError('Failed to list workflows', { cause: grpc }));
    assert.equal(failure.status, 500);
    assert.equal(failure.code, 'internal_error');
  });
});
