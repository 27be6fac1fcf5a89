import { createHash, timingSafeEqual } from 'node:crypto';
import { pass } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import type { GatewayMetrics } from '../metrics.js';
import { route } from '../route-spec.js';

export interface MetricsRouteDeps {
  metrics: GatewayMetrics;
  /** METRICS_TOKEN: when set, scrapes must send `Authorization: Bearer <token>`; unset, /metrics is public. */
  token?: string | undefined;
}

/**
 * `GET /metrics`: the gateway's Prometheus metrics in the text exposition format (api/metrics.ts). Public like
 * /health unless METRICS_TOKEN is set: the figures reveal traffic and error rates, not data, and scrapers are
 * usually fenced at the network; the token is for when they are not.
 */
export const metricsRoutes = (deps: MetricsRouteDeps) => {
  // Compared as SHA-256 digests: equal lengths, so timingSafeEqual applies and the time taken tells nothing.
  const expected = deps.token === undefined ? undefined : sha256(deps.token);
  return [
    route({
      method: 'GET',
      path: '/metrics',
      auth: 'public',
      // Reading counters exercises no delegation facet.
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx) => {
        if (expected !== undefined) {
          const token = /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
          if (token === undefined || !timingSafeEqual(sha256(token), expected)) {
            throw new ServiceError('unauthorized', 'a valid metrics token is required: Authorization: Bearer <token>', {
              'www-authenticate': 'Bearer realm="metrics"',
            });
          }
        }
        const text = await deps.metrics.registry.metrics();
        ctx.set({ 'content-type': deps.metrics.registry.contentType, 'cache-control': 'no-store' });
        ctx.body = text;
      },
      docs: {
        summary: 'Prometheus metrics',
        description:
          'The text exposition format. Public unless METRICS_TOKEN is set; then `Authorization: Bearer <token>`.',
        tags: ['Service'],
        responses: { 200: { description: 'The metrics', contentTypes: ['text/plain'] } },
        errors: ['unauthorized'],
      },
    }),
  ];
};

const sha256 = (value: string): Buffer => createHash('sha256').update(value).digest();
