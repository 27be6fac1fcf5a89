/**
 * The operator dashboard, public like the views it reads: `GET /dashboard` (the page),
 * `/dashboard/assets/*` (its files and the vendored MapLibre GL and h3-js builds, see dashboard-assets.ts),
 * `/dashboard/config.json`, and `/dashboard/api/compliance[/:agent_pk]`, a server-side proxy to the perception
 * service's compliance report, so the browser talks to one origin only and the perception service needs no
 * CORS. Every answer carries a Content-Security-Policy allowing this origin alone (plus blob: workers for
 * MapLibre): the page can load and call nothing else, which is also what keeps it CDN-free.
 */
import type { Context } from 'koa';
import { z } from 'zod';
import { fail, pass, type Check } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { noneMatchFails } from '../../core/etag.js';
import { MAX_ZOOM, TILE_STYLES } from '../../core/tile-styles.js';
import { assetPath, createDashboardAssets, type Asset, type DashboardAssets } from '../dashboard-assets.js';
import { route } from '../route-spec.js';
import { SERVICE_VERSION } from '../version.js';

export const DEFAULT_PERCEPTION_URL = 'http://127.0.0.1:8100';
export const COMPLIANCE_TIMEOUT_MS = 5000;
/** How often the live views refresh. */
export const POLL_MS = 5000;
/** The compliance report is computed live from the agent's whole chain; a larger answer is not a report. */
const MAX_REPORT_BYTES = 4 * 1024 * 1024;

/**
 * 'self' only. `worker-src blob:` because MapLibre may build its worker from a blob URL; `img-src data: blob:`
 * for MapLibre's control icons (data: URIs in its CSS) and decoded tiles. No inline script or style anywhere.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "font-src 'self'",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "child-src 'self' blob:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': DASHBOARD_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
};

/** Vendor builds change only with the installed package (and MapLibre adds `?v=` to its worker URL). */
const VENDOR_MAX_AGE_S = 7 * 24 * 3600;

export interface DashboardDeps {
  /** Base URL of the perception service (its `/compliance/:agent_pk`); default DEFAULT_PERCEPTION_URL. */
  perceptionUrl?: string | undefined;
  /** The files to serve (tests pass another folder); default: the package's `dashboard/` and vendor builds. */
  assets?: DashboardAssets;
  fetch?: typeof fetch;
  complianceTimeoutMs?: number;
}

export interface ComplianceQuery {
  /** null: the perception server's own agent (its `GET /compliance`). */
  agentPk: string | null;
  from: string | undefined;
  to: string | undefined;
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/;

function checkDate(value: unknown, name: string): Check<string | undefined> {
  if (value === undefined || value === '') return pass(undefined);
  return typeof value === 'string' && ISO_DATE.test(value) && Number.isFinite(Date.parse(value))
    ? pass(value)
    : fail('invalid_date', `${name} must be an ISO 8601 date or date-time, e.g. 2026-01-01T00:00:00Z`);
}

// The API reference of these routes (`/openapi.json`, RouteDocs).
const PAGE_HEADERS = {
  'Content-Security-Policy': "This origin only ('self'), blob: workers for MapLibre",
  'Cache-Control': '`no-cache` for the page and its own files, `public, max-age=604800` for vendored builds',
  ETag: 'Revalidate with If-None-Match',
};
const isoDateDoc = z.string().describe('YYYY-MM-DD or an ISO 8601 date-time').optional();
const complianceQueryDoc = z.object({ from: isoDateDoc, to: isoDateDoc });
const complianceReportDoc = z
  .looseObject({ version: z.literal(1), agent_pk: z.string(), trust_score: z.number(), current_tier: z.string() })
  .describe('The compliance report of docs/protocol.md §2.8, as the perception service computed it');
const dashboardConfigDoc = z.object({
  version: z.string(),
  perception_url: z.string().describe('The perception service the compliance proxy asks'),
  compliance_path: z.string(),
  poll_ms: z.int(),
  tiles: z.object({ path: z.string(), styles: z.array(z.string()), style: z.string(), max_zoom: z.int() }),
});
const COMPLIANCE_ERRORS = ['invalid_public_key', 'invalid_date', 'upstream_unavailable', 'upstream_timeout'] as const;

export const dashboardRoutes = (deps: DashboardDeps = {}) => {
  const assets = deps.assets ?? createDashboardAssets();
  const perceptionUrl = (deps.perceptionUrl ?? DEFAULT_PERCEPTION_URL).replace(/\/+$/, '');
  const doFetch = deps.fetch ?? fetch;
  const timeoutMs = deps.complianceTimeoutMs ?? COMPLIANCE_TIMEOUT_MS;

  /** With `:agent_pk` that agent's report, without it the perception server's own agent's. */
  const complianceRoute = (path: string, ofAgent: boolean) =>
    route<ComplianceQuery>({
      method: 'GET',
      path,
      auth: 'public',
      facets: [],
      preflight: ({ params, query }) => {
        const agentPk = params.agent_pk;
        if (agentPk !== undefined && !/^[0-9a-f]{64}$/.test(agentPk)) {
          return fail('invalid_public_key', 'agent_pk must be an Ed25519 public key (64 lowercase hex)');
        }
        const from = checkDate(query.from, 'from');
        if (!from.ok) return from;
        const to = checkDate(query.to, 'to');
        if (!to.ok) return to;
        return pass({ agentPk: agentPk ?? null, from: from.value, to: to.value });
      },
      handler: async (ctx, query) => {
        const upstream = await fetchCompliance(doFetch, perceptionUrl, query, timeoutMs);
        ctx.set({ ...SECURITY_HEADERS, 'cache-control': 'no-store' });
        ctx.status = upstream.status;
        ctx.body = upstream.body;
      },
      docs: {
        summary: ofAgent
          ? "An agent's compliance report (proxy)"
          : "The perception agent's own compliance report (proxy)",
        description:
          'Fetched server-side from the perception service (`GET /compliance[/:agent_pk]`), so the dashboard talks to ' +
          "one origin; the service's own JSON refusals pass through with their status.",
        tags: ['Dashboard'],
        ...(ofAgent ? { params: z.object({ agent_pk: z.string().regex(/^[0-9a-f]{64}$/) }) } : {}),
        query: complianceQueryDoc,
        responses: { 200: { description: 'The report', schema: complianceReportDoc } },
        errors: [...COMPLIANCE_ERRORS],
      },
    });

  return [
    route<undefined>({
      method: 'GET',
      // The router is not strict: this also answers `/dashboard/`. The page uses absolute asset paths for that.
      path: '/dashboard',
      auth: 'public',
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        const page = assets.page();
        if (!page) throw new ServiceError('not_found', 'the dashboard is not installed with this package');
        send(ctx, page);
      },
      docs: {
        summary: 'The operator dashboard',
        description: 'Swarm map, inference audit, jobs, epochs and a proof checker, tile stats, compliance (HTML).',
        tags: ['Dashboard'],
        responses: {
          200: { description: 'The page', contentTypes: ['text/html'], headers: PAGE_HEADERS },
          304: { description: 'Not modified', contentTypes: [], headers: PAGE_HEADERS },
        },
        errors: ['not_found'],
      },
    }),
    route<string[]>({
      method: 'GET',
      path: '/dashboard/assets/*path',
      auth: 'public',
      facets: [],
      preflight: ({ params }) => assetPath(params.path),
      handler: async (ctx, segments) => {
        const asset = assets.asset(segments);
        if (!asset) throw new ServiceError('not_found', 'no such dashboard asset');
        send(ctx, asset);
      },
      docs: {
        summary: "The dashboard's files",
        description:
          'Its own files, and `vendor/` MapLibre GL and h3-js builds from the installed packages (no CDN). Names ' +
          'outside a plain alphabet, dotfiles and unknown types are 404.',
        tags: ['Dashboard'],
        params: z.object({ path: z.string().describe('e.g. app.js, vendor/maplibre-gl.mjs') }),
        responses: {
          200: {
            description: 'The file (gzip when accepted)',
            contentTypes: ['text/javascript', 'text/css', 'text/html', 'image/svg+xml', 'image/png'],
            headers: PAGE_HEADERS,
          },
          304: { description: 'Not modified', contentTypes: [], headers: PAGE_HEADERS },
        },
        errors: ['not_found'],
      },
    }),
    route<undefined>({
      method: 'GET',
      path: '/dashboard/config.json',
      auth: 'public',
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        ctx.set({ ...SECURITY_HEADERS, 'cache-control': 'no-cache' });
        ctx.body = {
          version: SERVICE_VERSION,
          // Shown to operators; the page itself asks `compliance_path` on this origin (the proxy below).
          perception_url: perceptionUrl,
          compliance_path: '/dashboard/api/compliance',
          poll_ms: POLL_MS,
          // The tile endpoint is addressed by H3 cell; the page maps MapLibre's z/x/y onto it.
          tiles: {
            path: '/v1/tiles/{cell}/{z}/{style}.png',
            styles: TILE_STYLES,
            style: 'osm-standard',
            max_zoom: MAX_ZOOM,
          },
        };
      },
      docs: {
        summary: "The dashboard's settings",
        tags: ['Dashboard'],
        responses: { 200: { description: 'Where the page finds its data', schema: dashboardConfigDoc } },
      },
    }),
    complianceRoute('/dashboard/api/compliance', false),
    complianceRoute('/dashboard/api/compliance/:agent_pk', true),
  ];
};

/** 200 or 304 with the dashboard's headers: no-cache (revalidate by ETag) for its own files, max-age for vendor. */
function send(ctx: Context, asset: Asset): void {
  ctx.set({
    ...SECURITY_HEADERS,
    'cache-control': asset.kind === 'vendor' ? `public, max-age=${VENDOR_MAX_AGE_S}` : 'no-cache',
    etag: asset.etag,
    vary: 'Accept-Encoding',
  });
  if (noneMatchFails(ctx.get('if-none-match') || undefined, asset.etag)) {
    ctx.status = 304;
    return;
  }
  const gzip = asset.gzip !== null && /\bgzip\b/.test(ctx.get('accept-encoding'));
  ctx.set('content-type', asset.contentType);
  if (gzip) ctx.set('content-encoding', 'gzip');
  ctx.body = gzip ? asset.gzip : asset.bytes;
}

/**
 * The perception service's report, relayed: its JSON answers (reports and its own 4xx errors) pass through with
 * their status; a 5xx, a non-JSON answer or no answer is 502 `upstream_unavailable`, no answer in time 504.
 */
export async function fetchCompliance(
  doFetch: typeof fetch,
  base: string,
  query: ComplianceQuery,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  const url = new URL(query.agentPk === null ? `${base}/compliance` : `${base}/compliance/${query.agentPk}`);
  if (query.from !== undefined) url.searchParams.set('from', query.from);
  if (query.to !== undefined) url.searchParams.set('to', query.to);
  const where = `the perception service at ${url.host}`;
  let res: Response;
  let text: string;
  try {
    res = await doFetch(url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
    text = await res.text();
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError' || name === 'AbortError') {
      throw new ServiceError('upstream_timeout', `${where} did not answer within ${timeoutMs} ms`);
    }
    throw new ServiceError('upstream_unavailable', `${where} is unreachable`);
  }
  if (res.status >= 500) throw new ServiceError('upstream_unavailable', `${where} answered ${res.status}`);
  if (text.length > MAX_REPORT_BYTES) throw new ServiceError('upstream_unavailable', `${where} answered too much`);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ServiceError('upstream_unavailable', `${where} answered ${res.status} without JSON`);
  }
  if (typeof body !== 'object' || body === null) {
    throw new ServiceError('upstream_unavailable', `${where} answered ${res.status} without a JSON object`);
  }
  return { status: res.status, body };
}
