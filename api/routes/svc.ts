import type { Swarm } from '../../activities/inference/index.js';
import { pass } from '../../core/check.js';
import { checkHours, integerParam } from '../../core/query-params.js';
import { route } from '../route-spec.js';
import { SERVICE_VERSION } from '../version.js';

/**
 * The swarm's public views (SPEC 4.1; shapes in activities/inference/swarm-status.ts and inference-stats.ts):
 * `GET /svc/status`, `GET /svc/models` (the model marketplace), `GET /svc/inference/recent?limit` (1–100,
 * default 20, newest first) and `GET /svc/inference/stats?hours` (1–168, default 24). No key: they show
 * counts, models, public keys and hashes, never prompts, answers or API key ids. The inference views are
 * this process's memory; the proof store (`/store/query?collection=inference`) is the durable account.
 */
export const DEFAULT_RECENT = 20;
export const MAX_RECENT_LIMIT = 100;

const cors = { expose: [] };

/**
 * `earnings` (issue 10): the ledger's earnings per hardware tier, added to `/svc/status` here rather than in the
 * swarm, which knows workers, not credits.
 */
export const svcRoutes = (swarm: Swarm, views: { earnings?: () => Promise<unknown> } = {}) => [
  route<undefined>({
    method: 'GET',
    path: '/svc/status',
    auth: 'public',
    cors,
    facets: [],
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      const [status, earnings] = await Promise.all([swarm.status(), views.earnings?.()]);
      ctx.body = { version: SERVICE_VERSION, ...status, ...(earnings === undefined ? {} : { earnings }) };
    },
  }),
  route<undefined>({
    method: 'GET',
    path: '/svc/models',
    auth: 'public',
    cors,
    facets: [],
    preflight: () => pass(undefined),
    handler: async (ctx) => {
      ctx.body = await swarm.marketplace();
    },
  }),
  route<number>({
    method: 'GET',
    path: '/svc/inference/recent',
    auth: 'public',
    cors,
    facets: [],
    preflight: ({ query }) =>
      integerParam(query.limit, 'limit', { min: 1, max: MAX_RECENT_LIMIT, fallback: DEFAULT_RECENT }, 'invalid_limit'),
    handler: async (ctx, limit) => {
      const entries = swarm.recent(limit);
      ctx.body = { limit, count: entries.length, entries };
    },
  }),
  route<number>({
    method: 'GET',
    path: '/svc/inference/stats',
    auth: 'public',
    cors,
    facets: [],
    preflight: ({ query }) => checkHours(query.hours),
    handler: async (ctx, hours) => {
      ctx.body = swarm.stats(hours);
    },
  }),
];
