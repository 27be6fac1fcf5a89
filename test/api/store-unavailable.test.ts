/**
 * MongoDB lost in the middle of a bulk insert, or a command written to a connection FerretDB had just closed (found by `npm run chaos`: FerretDB killed while a gateway stored a
 * telemetry batch) is the documented transient 503 `store_unavailable` with `retry-after`, as MongoDB out of
 * reach is (api/http-errors.ts, store/store-errors.ts), never a 500 `internal_error`.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoNetworkError,
  MongoServerError,
  type BulkWriteResult,
} from 'mongodb';
import { asServiceError } from '../../api/http-errors.js';

const noResult = {} as BulkWriteResult;

/** Node's own error for a write to a connection whose peer has closed it, as the driver let it through. */
async function writeAfterPeerClosed(): Promise<Error> {
  const server = net.createServer((socket) => socket.end());
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.resume();
    await once(socket, 'end');
    return await new Promise<Error>((resolve) => socket.write('command', (error) => resolve(error!)));
  } finally {
    server.close();
  }
}

describe('MongoDB lost during a bulk insert (api/http-errors.ts asServiceError)', () => {
  it('is 503 store_unavailable with retry-after when the connection closed mid-batch', () => {
    const lost = new MongoBulkWriteError(new MongoNetworkError('connection 11 to 127.0.0.1:39093 closed'), noResult);
    const failure = asServiceError(lost);
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
    assert.equal(failure.headers['retry-after'], '5');
  });

  it('is 503 store_unavailable when the driver lets a bare socket error through (EPIPE: FerretDB killed)', async () => {
    const epipe = await writeAfterPeerClosed();
    assert.equal((epipe as { code?: string }).code, 'EPIPE');
    const failure = asServiceError(epipe);
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
    assert.equal(failure.headers['retry-after'], '5');
  });

  it('is 503 store_unavailable for an operation a stopping gateway closed its client under (MongoClientClosedError)', () => {
    // What the driver throws for an operation on a checked-out connection when MongoClient.close() runs (a
    // request still in flight when the drain window ended, found by `npm run chaos`).
    const failure = asServiceError(new MongoClientClosedError());
    assert.equal(failure.status, 503);
    assert.equal(failure.code, 'store_unavailable');
  });

  it('leaves a bulk write the server refused (not a lost connection) a 500 that says nothing internal', () => {
    const refused = new MongoBulkWriteError(new MongoServerError({ message: 'bad document', code: 2 }), noResult);
    assert.equal(asServiceError(refused).status, 500);
  });
});
