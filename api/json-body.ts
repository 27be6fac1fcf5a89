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
  const text = (await readBody(ctx, limitBytes, timeoutMs)).toString('utf8');
  if (text.trim() === '')
    throw new ServiceError('invalid_json', 'the request body is empty; a JSON object is required');
  return parseJsonBody(text);
}

/** Every JSON body is parsed here (docs/security.md): duplicate keys and nesting past 64 are 400 `invalid_json`. */
export function parseJsonBody(text: string): unknown {
  const parsed = checkJsonText(text, 'the body');
  if (!parsed.ok) throw new ServiceError(parsed.error, parsed.detail);
  return parsed.value;
}

function readBody(ctx: Context, limitBytes: number, timeoutMs: number): Promise<Buffer> {
  const req = ctx.req;
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (error?: unknown) => {
      clearTimeout(timer);
      req.off('data', onData).off('end', onEnd).off('error', done).off('aborted', onAborted);
      if (error === undefined) resolve(Buffer.concat(chunks));
      else {
        req.pause(); // stop reading; the error's `connection: close` drops the rest
        reject(error);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) done(tooLarge(limitBytes));
      else chunks.push(chunk);
    };
    const onEnd = () => done();
    const onAborted = () =>
      done(new ServiceError('invalid_request', 'the client closed the request before its body arrived'));
    const timer = setTimeout(
      () =>
        done(
          new ServiceError('request_timeout', `the request body did not arrive within ${timeoutMs / 1000} s`, {
            connection: 'close',
          }),
        ),
      timeoutMs,
    );
    req.on('data', onData).on('end', onEnd).on('error', done).on('aborted', onAborted);
  });
}

const tooLarge = (limit: number) =>
  new ServiceError('payload_too_large', `the request body exceeds ${limit} bytes`, { connection: 'close' });
