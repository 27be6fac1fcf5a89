/**
 * Just enough HTML reading for search-result pages: a tokenizer (start tags with attributes, end tags,
 * text) and entity decoding. Not a browser parser: it does not build a tree or repair markup. Callers match
 * a page they know the shape of, and must treat every string it yields as untrusted text (it ends up in a
 * model's context, never in HTML again).
 */

export type HtmlToken =
  | { kind: 'start'; tag: string; attrs: ReadonlyMap<string, string>; selfClosing: boolean }
  | { kind: 'end'; tag: string }
  | { kind: 'text'; text: string };

const TAG_START = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)/y;
/** Elements whose content is text, not markup: a `<a class="result__a">` inside a script is not a result. */
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title']);
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?/g;

/**
 * The page as a flat token stream; text tokens are entity-decoded, tag and attribute names lower-cased.
 * Comments, doctypes and raw-text element content yield nothing. One left-to-right pass, linear in the
 * input whatever it holds (no backtracking regex over the page): an unterminated tag or comment ends it.
 */
export function* htmlTokens(html: string): Generator<HtmlToken> {
  let text = 0; // start of the text not yet yielded
  let at = 0;
  const flush = function* (end: number): Generator<HtmlToken> {
    if (end > text) yield { kind: 'text', text: decodeHtmlEntities(html.slice(text, end)) };
  };
  while (at < html.length) {
    const lt = html.indexOf('<', at);
    if (lt < 0) break;
    if (html.startsWith('<!--', lt) || html[lt + 1] === '!' || html[lt + 1] === '?') {
      yield* flush(lt);
      const comment = html.startsWith('<!--', lt);
      const end = comment ? html.indexOf('-->', lt + 4) : html.indexOf('>', lt);
      at = text = end < 0 ? html.length : end + (comment ? 3 : 1);
      continue;
    }
    TAG_START.lastIndex = lt;
    const name = TAG_START.exec(html);
    if (!name) {
      at = lt + 1; // a bare '<' is text
      continue;
    }
    const close = tagEnd(html, lt + name[0].length);
    yield* flush(lt);
    if (close < 0) {
      text = html.length; // an unterminated tag ends the page
      break;
    }
    at = text = close + 1;
    const tag = (name[2] ?? '').toLowerCase();
    if (name[1]) {
      yield { kind: 'end', tag };
      continue;
    }
    const rest = html.slice(lt + name[0].length, close);
    yield { kind: 'start', tag, attrs: attributes(rest), selfClosing: /\/\s*$/.test(rest) };
    if (RAW_TEXT.has(tag)) {
      const end = new RegExp(`</${tag}\\s*>`, 'gi');
      end.lastIndex = at;
      const found = end.exec(html);
      // The raw text is skipped (a title is no result); its end tag is still yielded to balance the start.
      at = text = found ? found.index + found[0].length : html.length;
      if (found) yield { kind: 'end', tag };
    }
  }
  yield* flush(html.length);
}

/** Index of the '>' closing a tag whose attributes start at `from`, honouring quotes; -1 when there is none. */
function tagEnd(html: string, from: number): number {
  let quote = '';
  for (let i = from; i < html.length; i++) {
    const c = html[i];
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '>') {
      return i;
    }
  }
  return -1;
}

function attributes(source: string): Map<string, string> {
  const attrs = new Map<string, string>();
  for (const [, name, double, single, bare] of source.matchAll(ATTRIBUTE)) {
    const key = (name ?? '').toLowerCase();
    // The first occurrence wins, as in browsers.
    if (key && !attrs.has(key)) attrs.set(key, decodeHtmlEntities(double ?? single ?? bare ?? ''));
  }
  return attrs;
}

/** The class attribute as a set of tokens. */
export const classesOf = (attrs: ReadonlyMap<string, string>): Set<string> =>
  new Set((attrs.get('class') ?? '').split(/\s+/).filter(Boolean));

// The named entities search snippets use in practice; anything else numeric is decoded generically and an
// unknown name is left as written (harmless in plain text).
const NAMED: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: ' ',
  hellip: '…',
  mdash: '—',
  ndash: '–',
  lsquo: '‘',
  rsquo: '’',
  ldquo: '“',
  rdquo: '”',
  laquo: '«',
  raquo: '»',
  middot: '·',
  bull: '•',
  copy: '©',
  reg: '®',
  trade: '™',
  deg: '°',
  euro: '€',
};

export function decodeHtmlEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z][a-zA-Z0-9]{1,31});?/g, (whole, body: string) => {
    if (body.startsWith('#')) {
      const code = body[1] === 'x' || body[1] === 'X' ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
      // NUL, surrogates and out-of-range code points become U+FFFD, as the HTML spec says.
      const valid = code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff);
      return String.fromCodePoint(valid ? code : 0xfffd);
    }
    return NAMED[body] ?? whole;
  });
}

/** Whitespace runs (including the non-breaking spaces entities leave) as one space, trimmed. */
export const collapseWhitespace = (text: string): string => text.replace(/[\s\u00a0]+/g, ' ').trim();

/** An HTML fragment (a title or snippet with <b>/<strong> highlights and entities) as plain text. */
export function htmlFragmentText(fragment: string): string {
  let text = '';
  for (const token of htmlTokens(fragment)) {
    if (token.kind === 'text') text += token.text;
    else if (token.tag === 'br' || token.tag === 'p' || token.tag === 'div' || token.tag === 'li') text += ' ';
  }
  return collapseWhitespace(text);
}
