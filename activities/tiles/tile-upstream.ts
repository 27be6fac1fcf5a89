/**
 * The HTTP client of the public XYZ tile servers. Every failure leaves as one of three ServiceErrors, so
 * callers map nothing: `tile_not_found` (404) when the upstream answers 404 — it has no tile there (past a
 * style's deepest zoom, or imagery that does not cover the place), which map clients expect as a 404 and
 * show as an empty tile; `upstream_timeout` (504) when the server did not answer within the timeout;
 * `upstream_unavailable` (502) for everything else — refused connections, 5xx, other statuses, redirects off
 * the origin.
 */
import { ServiceError } from '../../core/errors.js';
import { readBoundedBody } from '../bounded-body.js';
import { safeFetch, sameOriginOnly, UpstreamRefused } from '../safe-fetch.js';

/** A tile is tens of kilobytes; anything this large is not a tile and must not fill memory. */
export const MAX_UPSTREAM_BYTES = 8 * 1024 * 1024;

/** What the upstream said about its bytes, for the next conditional request. */
export interface Validators {
  etag?: string;
  lastModified?: string;
}

export type UpstreamResult =
  { status: 'ok'; bytes: Buffer; validators: Validators } | { status: 'not_modified'; validators: Validators };

export interface UpstreamOptions {
  userAgent: string;
  timeoutMs: number;
  /** Sent as If-None-Match / If-Modified-Since; a 304 answer is only accepted when these were sent. */
  validators?: Validators;
}

/** The template with `{z}`, `{x}`, `{y}` substituted wherever the source puts them. */
export const tileUrl = (template: string, z: number, x: number, y: number): string =>
  template.replaceAll('{z}', String(z)).replaceAll('{x}', String(x)).replaceAll('{y}', String(y));

/**
 * The host a proof record names as the source: host only, never path or query, so a key a deployment
 * put in a template never lands in a signed, synced, public record.
 */
export function upstreamHost(template: string): string {
  try {
    return new URL(tileUrl(template, 0, 0, 0)).host;
  } catch {
    return 'invalid-template';
  }
}

export async function fetchUpstreamTile(url: string, options: UpstreamOptions): Promise<UpstreamResult> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  const headers: Record<string, string> = {
    'user-agent': options.userAgent,
    accept: 'image/png,image/jpeg,image/webp;q=0.9,image/*;q=0.8',
  };
  if (options.validators?.etag) headers['if-none-match'] = options.validators.etag;
  if (options.validators?.lastModified) headers['if-modified-since'] = options.validators.lastModified;
  const conditional = 'if-none-match' in headers || 'if-modified-since' in headers;
  try {
    // A template may hold a key (path or query): redirects stay on the upstream's own origin.
    const res = await safeFetch(url, { headers, signal }, sameOriginOnly(url));
    const validators = readValidators(res.headers);
    if (res.status === 304 && conditional) {
      await res.body?.cancel();
      return { status: 'not_modified', validators };
    }
    if (res.status === 404) {
      await res.body?.cancel();
      throw new ServiceError('tile_not_found', 'the tile upstream has no tile here (it answered HTTP 404)');
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new ServiceError('upstream_unavailable', `the tile upstream answered HTTP ${res.status}`);
    }
    return { status: 'ok', bytes: await readBounded(res, signal), validators };
  } catch (error) {
    if (error instanceof ServiceError) throw error;
    if (error instanceof UpstreamRefused) {
      throw new ServiceError('upstream_unavailable', 'the tile upstream redirected off its origin (not followed)');
    }
    if (signal.aborted) {
      throw new ServiceError('upstream_timeout', `the tile upstream did not answer within ${options.timeoutMs} ms`);
    }
    throw new ServiceError('upstream_unavailable', 'the tile upstream could not be reached');
  }
}

function readValidators(headers: Headers): Validators {
  const etag = headers.get('etag');
  const lastModified = headers.get('last-modified');
  return { ...(etag ? { etag } : {}), ...(lastModified ? { lastModified } : {}) };
}

const readBounded = (res: Response, signal: AbortSignal): Promise<Buffer> =>
  readBoundedBody(
    res,
    MAX_UPSTREAM_BYTES,
    () => new ServiceError('upstream_unavailable', `the tile upstream sent more than ${MAX_UPSTREAM_BYTES} bytes`),
    signal,
  );
