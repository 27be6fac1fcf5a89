/**
 * The store failures a caller answers in its own way rather than as an internal error, whichever adapter
 * raised them: the store is full (507 `storage_full`), or it cannot be reached right now (503
 * `store_unavailable`). Either way the write that failed changed nothing (SQLite statements and transactions
 * are atomic; a Mongo write that never reached the server did not happen), so the client may retry.
 */
import {
  MongoBulkWriteError,
  MongoClientClosedError,
  MongoNetworkError,
  MongoNotConnectedError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';

/**
 * Socket errors the MongoDB driver can let through unwrapped: writing a command to a connection the server had
 * just closed rejects with Node's own `EPIPE` ("This socket has been ended by the other party"), not a
 * MongoNetworkError (found by `npm run chaos`, FerretDB killed). The command never reached the server.
 */
const SOCKET_ERRORS = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED']);

/** MongoDB's OutOfDiskSpace. */
const MONGO_OUT_OF_DISK = 14031;

/**
 * The store ran out of space: SQLite's SQLITE_FULL (the max_page_count cap of STORE_MAX_MB, or the disk
 * itself: SQLite reports ENOSPC as SQLITE_FULL), a Node system error ENOSPC from a file written beside it, or
 * MongoDB's OutOfDiskSpace.
 */
export function isStorageFull(error: unknown): boolean {
  if (error instanceof MongoServerError) return error.code === MONGO_OUT_OF_DISK;
  if (typeof error !== 'object' || error === null) return false;
  const { code } = error as { code?: unknown };
  return code === 'SQLITE_FULL' || code === 'ENOSPC';
}

/**
 * The store cannot be reached now: MongoDB unreachable (no server selected within the driver's timeout, a
 * connection lost, also in the middle of a bulk insert or as a bare socket error, the client closed, also under
 * an operation in flight), or SQLite still locked by another writer after its busy timeout.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (
    error instanceof MongoServerSelectionError ||
    error instanceof MongoNetworkError ||
    error instanceof MongoNotConnectedError ||
    error instanceof MongoTopologyClosedError ||
    // A request still running when a stopping gateway's drain window ended and it closed its client.
    error instanceof MongoClientClosedError
  ) {
    return true;
  }
  // insertMany's error when the connection broke mid-batch wraps the driver's network error (its errorResponse).
  if (error instanceof MongoBulkWriteError)
    return error.errorResponse !== error && isStoreUnavailable(error.errorResponse);
  if (typeof error !== 'object' || error === null) return false;
  const { code } = error as { code?: unknown };
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED' || (typeof code === 'string' && SOCKET_ERRORS.has(code));
}
