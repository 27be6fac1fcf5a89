import { classesOf, collapseWhitespace, htmlTokens } from './html-text.js';

/**
 * Reads DuckDuckGo's HTML endpoint (html.duckduckgo.com/html/), the keyless fallback of web search. Its
 * result list is stable markup:
 *
 *   <div class="result results_links results_links_deep web-result ">        (an ad adds `result--ad`)
 *     <h2 class="result__title"><a class="result__a" href="//duckduckgo.com/l/?uddg=<url>&amp;rut=…">Title</a></h2>
 *     <a class="result__snippet" href="…">Snippet with <b>highlights</b></a>
 *   </div>
 *
 * Each `a.result__a` opens a result (its href and text), the next `.result__snippet` is its snippet. Ads,
 * links that do not unwrap to an http(s) URL, and repeated URLs are dropped. A page with no result list at
 * all (a bot challenge, a changed layout) is reported as such, so it is never mistaken for "no results".
 */

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

export interface DuckDuckGoPage {
  results: SearchResult[];
  /** The page has DuckDuckGo's result list markup (possibly empty: "No results."). */
  hasResultList: boolean;
  /** The page is DuckDuckGo's bot challenge ("anomaly") instead of results. */
  challenge: boolean;
}

interface Draft {
  href: string;
  title: string;
  snippet: string | undefined;
  ad: boolean;
}

/** Class tokens that only appear on a results page (`#links.results`, `.result`, `.no-results`). */
const RESULT_LIST_CLASSES = ['results', 'result', 'no-results'];

export function parseDuckDuckGoHtml(html: string): DuckDuckGoPage {
  const drafts: Draft[] = [];
  let capture: { draft: Draft; field: 'title' | 'snippet'; tag: string; depth: number } | null = null;
  let inAd = false;
  let hasResultList = false;
  let challenge = false;

  for (const token of htmlTokens(html)) {
    if (token.kind === 'text') {
      if (capture) capture.draft[capture.field] = (capture.draft[capture.field] ?? '') + token.text;
      continue;
    }
    if (token.kind === 'end') {
      if (capture && token.tag === capture.tag && --capture.depth === 0) capture = null;
      continue;
    }
    if (capture) {
      // Markup inside a title or snippet (<b>, <span>): only the text counts; nested same-name tags nest.
      if (token.tag === capture.tag && !token.selfClosing) capture.depth++;
      continue;
    }
    const classes = classesOf(token.attrs);
    if (RESULT_LIST_CLASSES.some((c) => classes.has(c))) hasResultList = true;
    if (
      [...classes].some((c) => c.startsWith('anomaly-modal')) ||
      /\/anomaly\.js/.test(token.attrs.get('action') ?? '')
    ) {
      challenge = true;
    }
    if (classes.has('result')) inAd = classes.has('result--ad');
    if (token.selfClosing) continue;
    if (token.tag === 'a' && classes.has('result__a')) {
      const draft: Draft = { href: token.attrs.get('href') ?? '', title: '', snippet: undefined, ad: inAd };
      drafts.push(draft);
      capture = { draft, field: 'title', tag: 'a', depth: 1 };
    } else if (classes.has('result__snippet')) {
      const draft = drafts[drafts.length - 1];
      if (draft && draft.snippet === undefined) capture = { draft, field: 'snippet', tag: token.tag, depth: 1 };
    }
  }

  const seen = new Set<string>();
  const results: SearchResult[] = [];
  for (const draft of drafts) {
    const url = draft.ad ? null : unwrapDuckDuckGoHref(draft.href);
    const title = collapseWhitespace(draft.title);
    if (url === null || title === '' || seen.has(url)) continue;
    seen.add(url);
    results.push({ title, url, snippet: collapseWhitespace(draft.snippet ?? '') });
  }
  return { results, hasResultList, challenge };
}

const isDuckDuckGoHost = (host: string): boolean => host === 'duckduckgo.com' || host.endsWith('.duckduckgo.com');

/**
 * The destination of a result link: DuckDuckGo's redirect `//duckduckgo.com/l/?uddg=<percent-encoded url>`
 * unwrapped, or a direct link as is. Null for anything that is not an http(s) URL off DuckDuckGo (ad
 * redirects `/y.js`, internal links), so a model is never handed a tracking or relative link.
 */
export function unwrapDuckDuckGoHref(href: string): string | null {
  let url: URL;
  try {
    url = new URL(href, 'https://duckduckgo.com/');
  } catch {
    return null;
  }
  if (isDuckDuckGoHost(url.hostname)) {
    const target = url.pathname === '/l/' ? url.searchParams.get('uddg') : null;
    return target === null ? null : httpUrl(target);
  }
  return httpUrl(url.href);
}

function httpUrl(value: string): string | null {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return isDuckDuckGoHost(url.hostname) ? null : url.href;
  } catch {
    return null;
  }
}
