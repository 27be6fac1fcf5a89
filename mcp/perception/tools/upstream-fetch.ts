/**
 * One JSON request to a perception tool's upstream (weather API, STAC catalog, inference endpoint), bounded
 * by a timeout and the caller's cancellation. Transport failures leave as ToolErrors the agent may read:
 * no answer in time → `upstream_timeout`; refused, reset, unresolvable, oversized or non-JSON →
 * `upstream_unavailable`; the caller went away → `cancelled`. An HTTP error status is returned, not thrown:
 * each tool knows what its upstream's error bodies mean.
 */
import { readBoundedBody } from '../../../activities/bounded-body.js';
import { Deadline } from '../../../activities/deadline.js';
import { safeFetch, sameOriginOnly, UpstreamRefused } from '../../../activities/safe-fetch.js';
import { ToolError } from '../tool-def.js';

/** Upstream answers are small JSON documents; anything larger is refused unread. */
export const MAX_UPSTREAM_BYTES = 1 << 20;

export interface UpstreamRequest {
  /** How messages name the upstream ("the weather API"). */
  name: string;
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface UpstreamAnswer {
  status: number;
  ok: boolean;
  /** The parsed body; `undefined` when an error answer was not JSON. */
  json: unknown;
}

export async function fetchUpstreamJson(request: UpstreamRequest): Promise<UpstreamAnswer> {
  const deadline = new Deadline(request.timeoutMs, request.signal);
  let status: number;
  let text: string;
  try {
    // Redirects stay on the upstream's origin (activities/safe-fetch.ts).
    const res = await safeFetch(
      request.url,
      {
        method: request.method ?? 'GET',
        headers: {
          accept: 'application/json',
          ...(request.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...request.headers,
        },
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: deadline.signal,
      },
      sameOriginOnly(request.url),
    );
    status = res.status;
    text = await readText(res, request.name, deadline.signal);
  } catch (error) {
    if (error instanceof ToolError) throw error;
    if (error instanceof UpstreamRefused) {
      throw new ToolError('upstream_unavailable', `${request.name} redirected off its origin (not followed)`);
    }
    if (request.signal?.aborted)
      throw new ToolError('cancelled', `the call was cancelled while waiting for ${request.name}`);
    const kind = (error as { name?: unknown }).name;
    if (kind === 'TimeoutError' || kind === 'AbortError' || deadline.expired) {
      throw new ToolError('upstream_timeout', `${request.name} did not answer within ${request.timeoutMs} ms`);
    }
    const cause = (error as { cause?: { code?: unknown } }).cause?.code;
    throw new ToolError(
      'upstream_unavailable',
      `${request.name} is unreachable${typeof cause === 'string' ? ` (${cause})` : ''}`,
    );
  } finally {
    deadline.clear();
  }
  const ok = status >= 200 && status < 300;
  let json: unknown;
  try {
    json = JSON.parse(text) as unknown;
  } catch {
    if (ok)
      throw new ToolError(
        'upstream_unavailable',
        `${request.name} answered HTTP ${status} with a body that is not JSON`,
      );
  }
  return { status, ok, json };
}

const readText = async (res: Response, name: string, signal: AbortSignal): Promise<string> =>
  (
    await readBoundedBody(
      res,
      MAX_UPSTREAM_BYTES,
      () => new ToolError('upstream_unavailable', `${name} answered more than ${MAX_UPSTREAM_BYTES} bytes`),
      signal,
    )
  ).toString('utf8');

/** The first 200 characters of an upstream's own error text (it may be long or echo the request). */
export const upstreamReason = (json: unknown): string | undefined => {
  if (typeof json !== 'object' || json === null) return undefined;
  const body = json as Record<string, unknown>;
  const reason = [body.reason, body.detail, body.error, body.message].find((v) => typeof v === 'string');
  return typeof reason === 'string' ? reason.slice(0, 200) : undefined;
};
