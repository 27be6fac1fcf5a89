/**
 * MongoDB lost in the middle of a bulk insert (found by `npm run chaos`: FerretDB killed while a gateway stored a
 * telemetry batch) is the documented transient 503 `store_unavailable` with `retry-after`, as MongoDB out of
 * reach is (api/http-errors.ts, store/store-errors.ts), never a 500 `internal_error`.
 */
import assert from 'node:assert/strict';
import { MongoBulkWriteError, MongoNetworkError, MongoServerError, type BulkWriteResult } from 'mongodb';
import { asServiceError } from '../../api/http-errors.js';

const noResult = {} as BulkWriteResult;

describe('MongoDB lost during a bulk insert (api/http-errors.ts asServiceError)', () => {
  it('is 503 store_unavailable with retry-after when the connection closed mid-batch', () => {
    const lost = new MongoBulkWriteError(new MongoNetworkError('connection 11 to 127.0.0.1:39093 closed'), noResult);
    const failure = asServiceError(lost);
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
    assert.equal(failure.headers['retry-after'], '5');
  });

  it('leaves a bulk write the server refused (not a lost connection) a 500 that says nothing internal', () => {
    const refused = new MongoBulkWriteError(new MongoServerError({ message: 'bad document', code: 2 }), noResult);
    assert.equal(asServiceError(refused).status, 500);
  });
});
