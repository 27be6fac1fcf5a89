import type { Swarm } from '../../activities/inference/index.js';
import { pass } from '../../core/check.js';
import { checkHours, integerParam } from '../../core/query-params.js';
import { route } from '../route-spec.js';
import { hoursQuery, limitQuery } from '../schemas/param-docs.js';
import {
  inferenceStatsSchema,
  marketplaceSchema,
  recentInferencesSchema,
  swarmStatusSchema,
} from '../schemas/swarm-responses.js';
import { SERVICE_VERSION } from '../version.js';
import { isOperator } from '../operator-auth.js';

/**
 * The swarm's public views (docs/protocol.md §4.1; shapes in activities/inference/swarm-status.ts and inference-stats.ts):
 * `GET /svc/status`, `GET /svc/models` (the model marketplace), `GET /svc/inference/recent?limit` (1–100,
 * default 20, newest first) and `GET /svc/inference/stats?hours` (1–168, default 24). No key: they show
 * counts, models, public keys and hashes, never prompts, answers or API key ids; the recent entries name their
 * jobs (ids are capabilities) only to the operator (OPERATOR_TOKEN). The inference views are
 * this process's memory; the proof store (`/store/query?collection=inference`) is the durable account.
 */
export const DEFAULT_RECENT = 20;
export const MAX_RECENT_LIMIT = 100;

const cors = { expose: [] };

/**
 * `earnings`: the ledger's earnings per hardware tier, added to `/svc/status` here rather than in the
 * swarm, which knows workers, not credits.
 */
export const svcRoutes = (
  swarm: Swarm,
  views: { earnings?: () => Promise<unknown>; operatorToken?: string | undefined } = {},
) => [
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
    docs: {
      summary: 'Swarm status',
      description:
        'Workers online by tier and cell, models, jobs in the last hour, backbone, epoch, version, earnings.',
      tags: ['Swarm'],
      responses: { 200: { description: 'The swarm status', schema: swarmStatusSchema } },
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
    docs: {
      summary: 'Model marketplace',
      description: 'Per model: workers online, their cells, warm or cold, price.',
      tags: ['Swarm'],
      responses: { 200: { description: 'The models and the backbone', schema: marketplaceSchema } },
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
      if (isOperator(ctx, views.operatorToken)) {
        ctx.body = { view: 'operator', limit, count: entries.length, entries };
        return;
      }
      // The job id is a capability (GET /v1/compute/:jobId answers the outputs): only the operator sees it.
      const anonymous = entries.map(({ job_id: _j, step_id: _s, job_hash: _h, record_id: _r, ...rest }) => rest);
      ctx.body = { view: 'public', limit, count: anonymous.length, entries: anonymous };
    },
    docs: {
      summary: 'Recent inference audit entries',
      description:
        "Newest first; this process's memory (the proof store is the durable account). No prompts or answers. " +
        'With `Authorization: Bearer <OPERATOR_TOKEN>` each entry names its job, step, job hash and record; ' +
        'without, those are left out.',
      tags: ['Swarm'],
      query: limitQuery(MAX_RECENT_LIMIT, DEFAULT_RECENT),
      responses: { 200: { description: 'Recent inferences', schema: recentInferencesSchema } },
      errors: ['invalid_limit', 'unauthorized'],
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
    docs: {
      summary: 'Hourly inference statistics',
      description: 'Counts, tokens and latency percentiles by provider and model, every hour listed.',
      tags: ['Swarm'],
      query: hoursQuery,
      responses: { 200: { description: 'Statistics per hour', schema: inferenceStatsSchema } },
      errors: ['invalid_hours'],
    },
  }),
];
