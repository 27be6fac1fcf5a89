/**
 * Local stand-ins for the web-search upstreams, speaking their real formats on ephemeral ports:
 * the Brave Search API (`GET /res/v1/web/search`, `X-Subscription-Token`, its JSON response and error shapes)
 * and DuckDuckGo's HTML endpoint (`POST` or `GET /html/`, serving recorded-style result pages from
 * test/fixtures/duckduckgo/, the bot challenge with 202 as DuckDuckGo does).
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'duckduckgo');

export interface BraveResult {
  title: string;
  url: string;
  description: string;
}

/** Results as Brave returns them: highlights in <strong>, text HTML-escaped. */
export const BRAVE_RESULTS: BraveResult[] = [
  {
    title: 'Villa Borghese gardens - Wikipedia',
    url: 'https://en.wikipedia.org/wiki/Villa_Borghese_gardens',
    description:
      'Villa Borghese is a landscape garden in <strong>Rome</strong>, the third largest public <strong>park</strong> in the city.',
  },
  {
    title: 'The <strong>parks</strong> &amp; villas of Rome | Turismo Roma',
    url: 'https://www.turismoroma.it/en/page/parks-and-villas',
    description: 'Rome&#x27;s green heart: from the Pincio terrace to the Appian Way Regional <strong>Park</strong>.',
  },
  {
    title: 'Appia Antica Regional Park',
    url: 'https://www.parcoappiaantica.it/en/',
    description: 'Countryside, aqueducts and catacombs along the Via Appia.',
  },
  { title: 'FTP mirror (not a web page)', url: 'ftp://files.example/parks.txt', description: 'Dropped.' },
  {
    title: 'Villa Doria Pamphili',
    url: 'https://www.romeandroman.com/en/villa-doria-pamphili/',
    description: '184 hectares on the Janiculum.',
  },
  ...Array.from({ length: 10 }, (_, i) => ({
    title: `More about Rome parks, part ${i + 1}`,
    url: `https://parks.example/rome/${i + 1}`,
    description: `Page ${i + 1}.`,
  })),
];

interface Faults {
  /** Answer this status (with the upstream's error body) instead of results. */
  status?: number;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer this body as is, with status 200. */
  body?: string;
}

export interface BraveServer {
  url: string;
  token: string;
  results: BraveResult[];
  requests: { q: string | null; count: string | null; token: string | undefined; userAgent: string | undefined }[];
  faults: Faults;
  close(): Promise<void>;
}

export type DuckDuckGoPage = 'results' | 'no-results' | 'challenge' | 'unrelated';

export interface DuckDuckGoServer {
  url: string;
  page: DuckDuckGoPage;
  /** The challenge comes with 202 (as DuckDuckGo sends it); tests may make it 200 to check the page is read. */
  challengeStatus: number;
  requests: { method: string; q: string | null; userAgent: string | undefined }[];
  faults: Faults;
  close(): Promise<void>;
}

async function listen(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>) {
  const server = createServer((req, res) => {
    handler(req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

const delay = (ms: number | undefined) => (ms ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function braveError(status: number, code: string, detail: string): string {
  return JSON.stringify({
    type: 'ErrorResponse',
    error: { id: 'e0d2f6b8-6a1e-4c1b-9f57-8a4d1c3b2a10', status, code, detail, meta: { component: 'authentication' } },
    time: 1_767_225_600,
  });
}

export async function startBraveServer(token = 'brave-test-token'): Promise<BraveServer> {
  const state = { results: [...BRAVE_RESULTS], requests: [] as BraveServer['requests'], faults: {} as Faults };
  const http = await listen(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const given = req.headers['x-subscription-token'] as string | undefined;
    state.requests.push({
      q: url.searchParams.get('q'),
      count: url.searchParams.get('count'),
      token: given,
      userAgent: req.headers['user-agent'],
    });
    await delay(state.faults.delayMs);
    const json = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' }).end(body);
    };
    if (req.method !== 'GET' || url.pathname !== '/res/v1/web/search')
      return json(404, braveError(404, 'NOT_FOUND', 'Not found'));
    if (given !== token) {
      return json(422, braveError(422, 'SUBSCRIPTION_TOKEN_INVALID', 'The provided subscription token is invalid.'));
    }
    if (state.faults.status)
      return json(state.faults.status, braveError(state.faults.status, 'RATE_LIMITED', 'Request rate limit exceeded.'));
    if (state.faults.body !== undefined) return json(200, state.faults.body);
    const q = url.searchParams.get('q') ?? '';
    if (!q) return json(422, braveError(422, 'VALIDATION', 'Unable to validate request parameter(s)'));
    const count = Math.min(20, Number(url.searchParams.get('count') ?? '20'));
    const results = state.results.slice(0, count).map((r) => ({
      ...r,
      is_source_local: false,
      is_source_both: false,
      page_age: '2025-11-02T10:15:00',
      profile: { name: new URL(r.url).hostname, url: r.url, long_name: new URL(r.url).hostname, img: '' },
      language: 'en',
      family_friendly: true,
      type: 'search_result',
      subtype: 'generic',
      is_live: false,
      meta_url: { scheme: 'https', netloc: new URL(r.url).hostname, hostname: new URL(r.url).hostname, path: '' },
      age: 'November 2, 2025',
    }));
    json(
      200,
      JSON.stringify({
        query: { original: q, show_strict_warning: false, is_navigational: false, spellcheck_off: true, country: 'us' },
        mixed: {
          type: 'mixed',
          main: results.map((_, index) => ({ type: 'web', index, all: false })),
          top: [],
          side: [],
        },
        type: 'search',
        // Brave leaves `web` out when nothing matched.
        ...(results.length > 0 ? { web: { type: 'search', results, family_friendly: true } } : {}),
      }),
    );
  });
  return Object.assign(state, { url: http.url, token, close: http.close });
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' })[c] ?? c);

export async function startDuckDuckGoServer(): Promise<DuckDuckGoServer> {
  const pages = {
    results: readFileSync(join(FIXTURES, 'results.html'), 'utf8'),
    'no-results': readFileSync(join(FIXTURES, 'no-results.html'), 'utf8'),
    challenge: readFileSync(join(FIXTURES, 'challenge.html'), 'utf8'),
    unrelated: '<!DOCTYPE html><html><head><title>Moved</title></head><body><p>We moved.</p></body></html>',
  } satisfies Record<DuckDuckGoPage, string>;
  const state = {
    page: 'results' as DuckDuckGoPage,
    challengeStatus: 202,
    requests: [] as DuckDuckGoServer['requests'],
    faults: {} as Faults,
  };
  const http = await listen(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const form = req.method === 'POST' ? new URLSearchParams(await readBody(req)) : url.searchParams;
    const q = form.get('q');
    state.requests.push({ method: req.method ?? '', q, userAgent: req.headers['user-agent'] });
    await delay(state.faults.delayMs);
    const html = (status: number, body: string): void =>
      void res
        .writeHead(status, { 'content-type': 'text/html; charset=UTF-8' })
        .end(body.replaceAll('{{QUERY}}', escapeHtml(q ?? '')));
    if (url.pathname !== '/html/' || (req.method !== 'GET' && req.method !== 'POST')) return html(404, 'Not Found');
    if (state.faults.status) return html(state.faults.status, '<html><body>error</body></html>');
    if (state.faults.body !== undefined) return html(200, state.faults.body);
    // Without a query DuckDuckGo answers its (result-less) home page.
    if (!q) return html(200, pages.unrelated);
    html(state.page === 'challenge' ? state.challengeStatus : 200, pages[state.page]);
  });
  return Object.assign(state, { url: http.url, close: http.close });
}
