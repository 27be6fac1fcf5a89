import { z } from 'zod';
import { ServiceError } from '../../core/errors.js';
import { readBoundedBody } from '../bounded-body.js';
import { originSet, safeFetch, UpstreamRefused, type SafeFetchOptions } from '../safe-fetch.js';
import { parseDuckDuckGoHtml, type SearchResult } from './duckduckgo-html.js';
import { htmlFragmentText } from './html-text.js';

export type { SearchResult } from './duckduckgo-html.js';

/**
 * The `web-search` tool's upstream (docs/protocol.md §2.7: the one tool with an executor). With `braveApiKey` it asks the
 * Brave Search API; without, DuckDuckGo's keyless HTML endpoint, which rate-limits bots with a challenge page,
 * so production deployments set BRAVE_API_KEY. There is no silent fallback from Brave to DuckDuckGo: a caller
 * always knows which engine answered (`provider`), and a broken key shows up as errors, not as worse results.
 */
export interface WebSearchConfig {
  /** Brave Search API root without a trailing slash (https://api.search.brave.com). */
  braveUrl: string;
  braveApiKey: string | undefined;
  /** DuckDuckGo HTML root without a trailing slash (https://html.duckduckgo.com). */
  duckDuckGoUrl: string;
  /** Per search, response body included. */
  timeoutMs: number;
  userAgent: string;
}

export type SearchProvider = 'brave' | 'duckduckgo';

export interface WebSearchResults {
  provider: SearchProvider;
  results: SearchResult[];
}

export interface WebSearch {
  readonly provider: SearchProvider;
  /** At most `count` results, best first. Upstream failures are ServiceErrors (502 / 504). */
  search(query: string, count: number): Promise<WebSearchResults>;
}

/** Search pages are tens of kilobytes; anything far larger is not one, and is not held in memory. */
const MAX_BODY_BYTES = 2 * 1024 * 1024;

const PROVIDER_NAME: Record<SearchProvider, string> = { brave: 'Brave Search', duckduckgo: 'DuckDuckGo' };

// Brave's documented web search response, reduced to what we read; `web` is absent when nothing matched.
const braveResponseSchema = z.object({
  web: z
    .object({
      results: z.array(z.object({ title: z.string(), url: z.string(), description: z.string().optional() })),
    })
    .optional(),
});

export function createWebSearch(config: WebSearchConfig): WebSearch {
  const provider: SearchProvider = config.braveApiKey ? 'brave' : 'duckduckgo';
  // Redirects stay on the upstream's origin: a Brave request carries the key in a header. DuckDuckGo carries
  // none and may move between its own two hosts.
  const origins: Record<SearchProvider, SafeFetchOptions> = {
    brave: { origins: originSet([config.braveUrl]) },
    duckduckgo: {
      origins: originSet([config.duckDuckGoUrl, 'https://html.duckduckgo.com', 'https://duckduckgo.com']),
    },
  };

  async function brave(query: string, count: number): Promise<SearchResult[]> {
    const url = new URL(`${config.braveUrl}/res/v1/web/search`);
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(count));
    const text = await request('brave', url, {
      headers: {
        accept: 'application/json',
        'x-subscription-token': config.braveApiKey ?? '',
        'user-agent': config.userAgent,
      },
    });
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ServiceError('upstream_unavailable', 'malformed Brave Search response: the body is not JSON');
    }
    const parsed = braveResponseSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new ServiceError(
        'upstream_unavailable',
        `malformed Brave Search response: ${issue?.path.join('.') || 'body'}: ${issue?.message}`,
      );
    }
    // Titles and descriptions carry <strong> highlights and entities: the model gets plain text.
    return (parsed.data.web?.results ?? []).flatMap((r) => {
      const link = httpUrl(r.url);
      return link
        ? [{ title: htmlFragmentText(r.title), url: link, snippet: htmlFragmentText(r.description ?? '') }]
        : [];
    });
  }

  async function duckDuckGo(query: string): Promise<SearchResult[]> {
    // POST, as the page's own search form does; a GET with ?q= answers the same page.
    const html = await request('duckduckgo', new URL(`${config.duckDuckGoUrl}/html/`), {
      method: 'POST',
      headers: {
        accept: 'text/html',
        'content-type': 'application/x-www-form-urlencoded',
        'user-agent': config.userAgent,
      },
      body: new URLSearchParams({ q: query, b: '' }).toString(),
    });
    const page = parseDuckDuckGoHtml(html);
    if (page.challenge) throw challengeError();
    if (!page.hasResultList) {
      throw new ServiceError('upstream_unavailable', 'DuckDuckGo answered a page without a result list');
    }
    return page.results;
  }

  async function request(which: SearchProvider, url: URL, init: RequestInit): Promise<string> {
    const signal = AbortSignal.timeout(config.timeoutMs);
    try {
      const res = await safeFetch(url, { ...init, signal }, origins[which]);
      // DuckDuckGo answers its bot challenge with 202 Accepted and a page without results.
      if (which === 'duckduckgo' && res.status === 202) {
        await res.body?.cancel();
        throw challengeError();
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new ServiceError('upstream_unavailable', statusDetail(which, res.status));
      }
      return await readText(res, PROVIDER_NAME[which], signal);
    } catch (error) {
      throw upstreamError(error, PROVIDER_NAME[which], config.timeoutMs);
    }
  }

  return {
    provider,
    async search(query, count) {
      const results = provider === 'brave' ? await brave(query, count) : await duckDuckGo(query);
      return { provider, results: results.slice(0, count) };
    },
  };
}

function statusDetail(which: SearchProvider, status: number): string {
  const name = PROVIDER_NAME[which];
  if (which === 'brave' && (status === 401 || status === 403 || status === 422)) {
    return `${name} refused the API key (HTTP ${status}): check BRAVE_API_KEY`;
  }
  if (status === 429) return `${name} rate limit reached (HTTP 429)`;
  return `${name} answered HTTP ${status}`;
}

const challengeError = () =>
  new ServiceError(
    'upstream_unavailable',
    'DuckDuckGo answered with its bot challenge instead of results; set BRAVE_API_KEY for reliable search',
  );

/** The body as text, refusing more than MAX_BODY_BYTES without reading it all. */
const readText = async (res: Response, name: string, signal: AbortSignal): Promise<string> =>
  (
    await readBoundedBody(
      res,
      MAX_BODY_BYTES,
      () => new ServiceError('upstream_unavailable', `${name} answered more than ${MAX_BODY_BYTES} bytes`),
      signal,
    )
  ).toString('utf8');

function httpUrl(value: string): string | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Timeouts → 504 upstream_timeout; refused connections, resets, DNS failures → 502 upstream_unavailable. */
function upstreamError(error: unknown, name: string, timeoutMs: number): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof UpstreamRefused) {
    const why = error.reason === 'origin' ? 'to another origin (not followed)' : 'too many times';
    return new ServiceError('upstream_unavailable', `${name} redirected ${why}`);
  }
  const kind = (error as { name?: unknown }).name;
  if (kind === 'TimeoutError' || kind === 'AbortError') {
    return new ServiceError('upstream_timeout', `${name} did not answer within ${timeoutMs} ms`);
  }
  const cause = (error as { cause?: { code?: unknown } }).cause?.code;
  return new ServiceError(
    'upstream_unavailable',
    `${name} unreachable${typeof cause === 'string' ? ` (${cause})` : ''}`,
  );
}
