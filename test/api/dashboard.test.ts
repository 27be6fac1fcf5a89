/**
 * The dashboard's HTTP side: the page and its assets with their types, caching and CSP, strict
 * path handling, the vendored builds (no CDN), `config.json`, and the compliance proxy to the perception service.
 * The page itself is exercised in a real browser by test/browser/dashboard.test.ts.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { assetPath, createDashboardAssets } from '../../api/dashboard-assets.js';
import { DASHBOARD_CSP, fetchCompliance } from '../../api/routes/dashboard.js';
import { ServiceError } from '../../core/errors.js';
import { startGateway } from '../helpers/gateway.js';

const DASHBOARD = resolve(import.meta.dirname, '../../dashboard');
const AGENT = 'ab'.repeat(32);

interface RawAnswer {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
}

/** GET with the path sent exactly as written (fetch would normalise `..` and percent-escapes away). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolvePromise, reject) => {
    const req = httpRequest({ hostname, port, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        resolvePromise({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A perception service stand-in: answers `/compliance[/:pk]` as `respond` says, and logs what it was asked. */
async function startFakePerception(respond: (req: IncomingMessage, res: ServerResponse) => void) {
  const asked: string[] = [];
  const server: Server = createServer((req, res) => {
    asked.push(req.url ?? '');
    respond(req, res);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('the dashboard over HTTP (/dashboard)', () => {
  let gw: Awaited<ReturnType<typeof startGateway>>;
  let perception: Awaited<ReturnType<typeof startFakePerception>>;
  let answer: (req: IncomingMessage, res: ServerResponse) => void;

  before(async () => {
    perception = await startFakePerception((req, res) => answer(req, res));
    gw = await startGateway({ config: { perceptionUrl: perception.url } });
  });
  after(async () => {
    await gw.close();
    await perception.close();
  });
  beforeEach(() => {
    perception.asked.length = 0;
    answer = (req, res) => json(res, 200, { version: 1, agent_pk: AGENT, trust_score: 42, url: req.url });
  });

  describe('the page and its files', () => {
    it('serves the page at /dashboard and /dashboard/ as HTML with the CSP, no-cache and an ETag', async () => {
      for (const path of ['/dashboard', '/dashboard/']) {
        const res = await rawGet(gw.url, path);
        assert.equal(res.status, 200, path);
        assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
        assert.equal(res.headers['content-security-policy'], DASHBOARD_CSP);
        assert.equal(res.headers['cache-control'], 'no-cache');
        assert.equal(res.headers['x-content-type-options'], 'nosniff');
        assert.equal(res.headers['x-frame-options'], 'DENY');
        assert.match(String(res.headers.etag), /^"[A-Za-z0-9_-]+"$/);
        assert.match(res.body.toString(), /<script type="module" src="\/dashboard\/assets\/app.js"><\/script>/);
      }
    });

    it('the CSP allows this origin only, blob: workers for MapLibre, and no inline script', () => {
      const directives = Object.fromEntries(
        DASHBOARD_CSP.split('; ').map((d) => [d.split(' ')[0], d.split(' ').slice(1)]),
      );
      assert.deepEqual(directives['default-src'], ["'self'"]);
      assert.deepEqual(directives['script-src'], ["'self'"]);
      assert.deepEqual(directives['connect-src'], ["'self'"]);
      assert.deepEqual(directives['worker-src'], ["'self'", 'blob:']);
      assert.deepEqual(directives['frame-ancestors'], ["'none'"]);
      assert.ok(!DASHBOARD_CSP.includes('unsafe'), DASHBOARD_CSP);
      assert.ok(!/https?:/.test(DASHBOARD_CSP), DASHBOARD_CSP);
    });

    it('references nothing outside this origin: no CDN in the page or its modules', () => {
      const html = readFileSync(join(DASHBOARD, 'index.html'), 'utf8');
      for (const [, url] of html.matchAll(/\b(?:src|href)="([^"]*)"/g)) {
        assert.match(url!, /^(?:\/(?!\/)|#)/, `index.html loads ${url}`);
      }
      for (const file of readdirSync(DASHBOARD).filter((f) => f.endsWith('.js'))) {
        const source = readFileSync(join(DASHBOARD, file), 'utf8');
        for (const [, specifier] of source.matchAll(/\bimport\s*(?:[^'"]*?from\s*)?\(?\s*'([^']+)'/g)) {
          assert.match(specifier!, /^\.\//, `${file} imports ${specifier}`);
        }
      }
    });

    it('serves app files as JavaScript and CSS with no-cache, and 304 on a matching If-None-Match', async () => {
      const js = await rawGet(gw.url, '/dashboard/assets/app.js');
      assert.equal(js.status, 200);
      assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
      assert.equal(js.headers['cache-control'], 'no-cache');
      assert.equal(js.headers['content-security-policy'], DASHBOARD_CSP);
      const again = await rawGet(gw.url, '/dashboard/assets/app.js', { 'if-none-match': String(js.headers.etag) });
      assert.equal(again.status, 304);
      assert.equal(again.body.length, 0);
      const css = await rawGet(gw.url, '/dashboard/assets/styles.css');
      assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
      const icon = await rawGet(gw.url, '/dashboard/assets/favicon.svg');
      assert.equal(icon.headers['content-type'], 'image/svg+xml');
    });

    it('serves the vendored MapLibre GL (module, worker, CSS) and h3-js builds with a max-age, gzipped on request', async () => {
      const expected: Record<string, [string, string]> = {
        'maplibre-gl.mjs': ['text/javascript; charset=utf-8', 'node_modules/maplibre-gl/dist/maplibre-gl.mjs'],
        'maplibre-gl-worker.mjs': [
          'text/javascript; charset=utf-8',
          'node_modules/maplibre-gl/dist/maplibre-gl-worker.mjs',
        ],
        'maplibre-gl.css': ['text/css; charset=utf-8', 'node_modules/maplibre-gl/dist/maplibre-gl.css'],
        'h3-js.mjs': ['text/javascript; charset=utf-8', 'node_modules/h3-js/dist/browser/h3-js.es.js'],
      };
      for (const [name, [type, file]] of Object.entries(expected)) {
        const res = await rawGet(gw.url, `/dashboard/assets/vendor/${name}`, { 'accept-encoding': 'gzip' });
        assert.equal(res.status, 200, name);
        assert.equal(res.headers['content-type'], type, name);
        assert.match(String(res.headers['cache-control']), /^public, max-age=\d+$/, name);
        assert.equal(res.headers['content-encoding'], 'gzip', name);
        assert.equal(res.headers.vary, 'Accept-Encoding');
        assert.deepEqual(gunzipSync(res.body), readFileSync(resolve(import.meta.dirname, '../..', file)), name);
      }
      const plain = await rawGet(gw.url, '/dashboard/assets/vendor/h3-js.mjs');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.match(plain.body.toString('utf8', 0, 200), /libh3/);
    });

    it('answers 404 JSON to traversal, dotfiles, unknown types, unlisted vendor files and encoded separators', async () => {
      const paths = [
        '/dashboard/assets/../package.json',
        '/dashboard/assets/..%2f..%2fpackage.json',
        '/dashboard/assets/%2e%2e/%2e%2e/package.json',
        '/dashboard/assets/vendor/..%2f..%2fpackage.json',
        '/dashboard/assets/vendor/%2e%2e/maplibre-gl.mjs',
        '/dashboard/assets/.eslintrc.js',
        '/dashboard/assets/tsconfig.json',
        '/dashboard/assets/app.js.map',
        '/dashboard/assets/vendor/maplibre-gl.mjs.map',
        '/dashboard/assets/vendor/index.js',
        '/dashboard/assets/vendor/maplibre-gl-dev.mjs',
        '/dashboard/assets/app.js%00.css',
        '/dashboard/assets/a%5c..%5capp.js',
        '/dashboard/assets/nothing-here.js',
        '/dashboard/assets/',
      ];
      for (const path of paths) {
        const res = await rawGet(gw.url, path);
        assert.equal(res.status, 404, `${path}: ${res.body.toString().slice(0, 200)}`);
        assert.equal((JSON.parse(res.body.toString()) as { error: string }).error, 'not_found', path);
      }
    });

    it('assetPath accepts plain nested names and refuses everything else', () => {
      assert.deepEqual(assetPath('app.js'), { ok: true, value: ['app.js'] });
      assert.deepEqual(assetPath('reference/index.html'), { ok: true, value: ['reference', 'index.html'] });
      for (const bad of [
        '',
        '..',
        '../x.js',
        'a/../b.js',
        '.x.js',
        'a//b.js',
        'a\\b.js',
        'x.json',
        'x',
        'a/b/c/d/e.js',
        7,
      ]) {
        assert.equal(assetPath(bad).ok, false, String(bad));
      }
    });

    it('never follows a symlink out of the dashboard folder', () => {
      const dir = mkdtempSync(join(tmpdir(), 'geofabric-dashboard-'));
      try {
        mkdirSync(join(dir, 'dashboard'));
        writeFileSync(join(dir, 'dashboard', 'index.html'), '<!doctype html><title>x</title>');
        writeFileSync(join(dir, 'secret.js'), 'the operator key');
        symlinkSync(join(dir, 'secret.js'), join(dir, 'dashboard', 'link.js'));
        const assets = createDashboardAssets({ root: join(dir, 'dashboard') });
        assert.equal(assets.asset(['link.js']), null);
        assert.equal(assets.page()?.contentType, 'text/html; charset=utf-8');
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('config.json names the perception service, the compliance proxy and the tile endpoint', async () => {
      const res = await gw.get('/dashboard/config.json');
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
      const body = res.body as Record<string, unknown>;
      assert.equal(body.perception_url, perception.url);
      assert.equal(body.compliance_path, '/dashboard/api/compliance');
      assert.deepEqual((body.tiles as { path: string }).path, '/v1/tiles/{cell}/{z}/{style}.png');
    });
  });

  describe('the compliance proxy (/dashboard/api/compliance)', () => {
    it("relays an agent's report with from and to", async () => {
      const res = await gw.get(`/dashboard/api/compliance/${AGENT}?from=2026-01-01&to=2026-02-01T00:00:00Z`);
      assert.equal(res.status, 200, res.text);
      assert.equal((res.body as { trust_score: number }).trust_score, 42);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.deepEqual(perception.asked, [`/compliance/${AGENT}?from=2026-01-01&to=2026-02-01T00%3A00%3A00Z`]);
    });

    it("without a key asks for the perception server's own agent", async () => {
      const res = await gw.get('/dashboard/api/compliance');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(perception.asked, ['/compliance']);
    });

    it('refuses a malformed key (400 invalid_public_key) and dates (400 invalid_date) without asking upstream', async () => {
      for (const pk of ['abc', AGENT.toUpperCase(), `${AGENT}00`]) {
        const res = await gw.get(`/dashboard/api/compliance/${pk}`);
        assert.equal(res.status, 400, pk);
        assert.equal((res.body as { error: string }).error, 'invalid_public_key');
      }
      const res = await gw.get(`/dashboard/api/compliance/${AGENT}?from=yesterday`);
      assert.equal(res.status, 400);
      assert.equal((res.body as { error: string }).error, 'invalid_date');
      assert.deepEqual(perception.asked, []);
    });

    it("passes the perception service's own JSON refusals through", async () => {
      answer = (_req, res) => json(res, 404, { error: 'agent_not_found', detail: 'no such agent' });
      const res = await gw.get(`/dashboard/api/compliance/${AGENT}`);
      assert.equal(res.status, 404);
      assert.deepEqual(res.body, { error: 'agent_not_found', detail: 'no such agent' });
    });

    it('answers 502 upstream_unavailable to a 5xx, a non-JSON answer, or no service at all', async () => {
      answer = (_req, res) => json(res, 500, { error: 'internal_error' });
      assert.equal((await gw.get(`/dashboard/api/compliance/${AGENT}`)).status, 502);
      answer = (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html>proxy error</html>');
      };
      const html = await gw.get(`/dashboard/api/compliance/${AGENT}`);
      assert.equal(html.status, 502);
      assert.equal((html.body as { error: string }).error, 'upstream_unavailable');
      const down = await startGateway({ config: { perceptionUrl: 'http://127.0.0.1:9' } });
      try {
        const res = await down.get(`/dashboard/api/compliance/${AGENT}`);
        assert.equal(res.status, 502);
        assert.equal((res.body as { error: string }).error, 'upstream_unavailable');
      } finally {
        await down.close();
      }
    });

    it('gives up on a silent perception service with upstream_timeout (504)', async () => {
      answer = () => undefined; // never answers
      await assert.rejects(
        fetchCompliance(fetch, perception.url, { agentPk: AGENT, from: undefined, to: undefined }, 200),
        (error: unknown) => error instanceof ServiceError && error.code === 'upstream_timeout' && error.status === 504,
      );
    });
  });
});
