import type { IncomingMessage } from 'node:http';
import type { Context } from 'koa';
import { ServiceError } from '../core/errors.js';
import { checkJsonText } from '../core/strict-json.js';
import { DEFAULT_RECEIVE_TIMEOUTS } from './http-server.js';

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Reads a JSON body within a byte limit and a time limit. Parsing is per route, not global, so a route that
 * needs the raw stream (MCP transports) still gets it. Over the size → 413 before the rest is read; a body
 * still arriving after `timeoutMs` (a slowloris upload) → 408. Either way the connection is then closed,
 * dropping whatever else the client sends.
 */
export async function readJsonBody(
  ctx: Context,
  limitBytes: number,
  timeoutMs: number = DEFAULT_RECEIVE_TIMEOUTS.requestTimeoutMs,
): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > limitBytes) throw tooLarge(limitBytes);
  const type = ctx.get('content-type');
  if (type !== '' && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) {
    throw new ServiceError('unsupported_media_type', 'the body must be application/json');
  }
  const pre = preReadOf(ctx.req);
  if (pre?.bodyError !== undefined) throw pre.bodyError;
  const text = (pre?.body ?? (await readBody(ctx.req, limitBytes, timeoutMs))).toString('utf8');
  // A regular expression, not trim(): no copy of a large body. \s is exactly what trim() removes.
  if (/^\s*$/.test(text))
    throw new ServiceError('invalid_json', 'the request body is empty; a JSON object is required');
  return parseJsonBody(text);
}

/** Every JSON body is parsed here (docs/security.md): duplicate keys and nesting past 64 are 400 `invalid_json`. */
export function parseJsonBody(text: string): unknown {
  const parsed = checkJsonText(text, 'the body');
  if (!parsed.ok) throw new ServiceError(parsed.error, parsed.detail);
  return parsed.value;
}

/** What one body read has gathered so far; kept on the request, so the listeners are shared functions. */
interface BodyRead {
  chunks: Buffer[];
  size: number;
  limitBytes: number;
  timer: NodeJS.Timeout;
  resolve: (body: Buffer) => void;
  reject: (error: unknown) => void;
}

const READ = Symbol('geofabric.bodyRead');
type ReadingMessage = IncomingMessage & { [READ]?: BodyRead };

/**
 * What a lane before Koa (api/chat-lane.ts) did with a request it then handed to Koa: the body it read (or the
 * error reading it ended in), and the per-address takes it made with the headers they set, so Koa reads and
 * counts nothing twice (api/rate-limit.ts requestBounds).
 */
export interface PreRead {
  body?: Buffer;
  bodyError?: unknown;
  addressCounted?: boolean;
  bytesCounted?: boolean;
  rateHeaders?: Record<string, string>;
}
const PRE_READ = Symbol('geofabric.preRead');
type PreReadMessage = IncomingMessage & { [PRE_READ]?: PreRead };

export const handOver = (req: IncomingMessage, pre: PreRead): void => {
  (req as PreReadMessage)[PRE_READ] = pre;
};
export const preReadOf = (req: IncomingMessage): PreRead | undefined => (req as PreReadMessage)[PRE_READ];

/** The raw body within the byte and time limits, as readJsonBody reads it (413, 408, a client gone). */
export function readRawBody(
  req: IncomingMessage,
  limitBytes: number,
  timeoutMs: number = DEFAULT_RECEIVE_TIMEOUTS.requestTimeoutMs,
): Promise<Buffer> {
  return readBody(req, limitBytes, timeoutMs);
}

function readBody(message: IncomingMessage, limitBytes: number, timeoutMs: number): Promise<Buffer> {
  const req = message as ReadingMessage;
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    req[READ] = {
      chunks: [],
      size: 0,
      limitBytes,
      timer: setTimeout(onTimeout, timeoutMs, req, timeoutMs),
      resolve,
      reject,
    };
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
  });
}

// Module-level listeners (`this` is the request), not closures made per request: this runs on every body.
function finishRead(req: ReadingMessage, error?: unknown): void {
  const read = req[READ];
  if (read === undefined) return;
  req[READ] = undefined;
  clearTimeout(read.timer);
  req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
  if (error === undefined) read.resolve(read.chunks.length === 1 ? read.chunks[0]! : Buffer.concat(read.chunks));
  else {
    req.pause(); // stop reading; the error's `connection: close` drops the rest
    read.reject(error);
  }
}

function onData(this: ReadingMessage, chunk: Buffer): void {
  const read = this[READ]!;
  read.size += chunk.length;
  if (read.size > read.limitBytes) finishRead(this, tooLarge(read.limitBytes));
  else read.chunks.push(chunk);
}

function onEnd(this: ReadingMessage): void {
  finishRead(this);
}

function onError(this: ReadingMessage, error: unknown): void {
  finishRead(this, error);
}

function onAborted(this: ReadingMessage): void {
  finishRead(this, new ServiceError('invalid_request', 'the client closed the request before its body arrived'));
}

function onTimeout(req: ReadingMessage, timeoutMs: number): void {
  finishRead(
    req,
    new ServiceError('request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`, {
      connection: 'close',
    }),
  );
}

const tooLarge = (limit: number) =>
  new ServiceError('payload_too_large', `the request body exceeds ${limit} bytes`, { connection: 'close' });
