/**
 * fetch() for upstreams (docs/security.md §8): the request and every redirect may only go to
 * allowed origins, redirects are followed by hand (each hop checked) and at most `maxRedirects` times. A
 * request carrying a credential (an API key header, a key in the URL) is allowed its own origin only, so a
 * redirect can never carry the key elsewhere; fetch's own `redirect: 'follow'` would, for any header but
 * Authorization.
 */

/** Redirects followed by default: upstreams that redirect at all do it once or twice. */
export const DEFAULT_MAX_REDIRECTS = 3;

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** The request was not sent: its URL, or a redirect's, is off the allowed origins, or redirects ran out. */
export class UpstreamRefused extends Error {
  override name = 'UpstreamRefused';
  constructor(
    readonly reason: 'origin' | 'redirects',
    /** The URL refused: for logs only, never for a public answer (it may name an internal address). */
    readonly url: string,
  ) {
    super(reason === 'origin' ? `${url}: origin not allowed` : `${url}: too many redirects`);
  }
}

export interface SafeFetchOptions {
  /** `scheme://host[:port]` origins the request and its redirects may reach (normalise with originOf). */
  origins: ReadonlySet<string>;
  maxRedirects?: number;
}

/** The origin of an http(s) URL, normalised as URL does (lower-case host, default port dropped); else null. */
export function originOf(url: string | URL): string | null {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : null;
  } catch {
    return null;
  }
}

/** A set of origins from URLs or origins; entries that are no http(s) URL are dropped. */
export function originSet(urls: Iterable<string>): Set<string> {
  const set = new Set<string>();
  for (const url of urls) {
    const origin = originOf(url);
    if (origin) set.add(origin);
  }
  return set;
}

/** The request's own origin and nothing else: for requests that carry a credential. */
export const sameOriginOnly = (url: string | URL): SafeFetchOptions => ({ origins: originSet([String(url)]) });

export async function safeFetch(
  input: string | URL,
  init: RequestInit = {},
  options: SafeFetchOptions,
): Promise<Response> {
  const max = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  let url = new URL(input);
  let method = (init.method ?? 'GET').toUpperCase();
  let body = init.body;
  const headers = new Headers(init.headers);
  for (let hop = 0; ; hop++) {
    const origin = originOf(url);
    if (origin === null || !options.origins.has(origin)) throw new UpstreamRefused('origin', url.href);
    const res = await fetch(url, { ...init, method, headers, body: body ?? null, redirect: 'manual' });
    const location = res.headers.get('location');
    if (!REDIRECTS.has(res.status) || location === null) return res;
    await res.body?.cancel();
    if (hop >= max) throw new UpstreamRefused('redirects', url.href);
    let next: URL;
    try {
      next = new URL(location, url);
    } catch {
      throw new UpstreamRefused('origin', location.slice(0, 200));
    }
    // As fetch does: 303, and 301/302 after a POST, continue as a GET without the body.
    if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
      if (method !== 'HEAD') method = 'GET';
      body = undefined;
      headers.delete('content-type');
      headers.delete('content-length');
    }
    url = next;
  }
}
