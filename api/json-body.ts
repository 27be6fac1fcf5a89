import type { Context } from 'koa';
import { ServiceError } from '../core/errors.js';

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Reads a JSON body within a byte limit. Parsing is per route, not global, so a route that needs the raw
 * stream (MCP transports) still gets it. Over the limit → 413 before the rest is read.
 */
export async function readJsonBody(ctx: Context, limitBytes: number): Promise<unknown> {
  const declared = Number(ctx.get('content-length') || NaN);
  if (declared > limitBytes) throw tooLarge(limitBytes);
  const type = ctx.get('content-type');
  if (type !== '' && !/^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) {
    throw new ServiceError('unsupported_media_type', 'the body must be application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req as AsyncIterable<Buffer>) {
    size += chunk.length;
    // Stop reading; `connection: close` on the 413 drops the rest of an oversized upload.
    if (size > limitBytes) throw tooLarge(limitBytes);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '')
    throw new ServiceError('invalid_json', 'the request body is empty; a JSON object is required');
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new ServiceError('invalid_json', `the body is not valid JSON: ${(error as Error).message}`);
  }
}

const tooLarge = (limit: number) =>
  new ServiceError('payload_too_large', `the request body exceeds ${limit} bytes`, { connection: 'close' });
