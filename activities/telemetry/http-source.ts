/**
 * The fusion step's source on a swarm worker, whose own store holds no telemetry: the gateway's
 * `GET /v1/telemetry?proof=1`, every page. Each feature carries its full signed record, re-checked here
 * (core checkRecord) and kept only when one of `writers` wrote it, its gateways' node keys as the worker is
 * configured with them (GATEWAY_NODE_PK), never a key the page names: the gateway is trusted for completeness only, never for
 * a value, and the fusion step holds each record to core's provenReadingOf.
 */
import { ServiceError } from '../../core/errors.js';
import { epochWindow } from '../../core/epoch.js';
import { checkRecord } from '../../core/proof-record.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { waitingOutOutages } from '../swarm-client/outage-wait.js';
import { MAX_FUSION_RECORDS, type TelemetrySource } from './index.js';

export interface HttpSourceOptions {
  gatewayUrl: string;
  genesisMs: number;
  epochMs: number;
  /** The only writers whose records are kept: the fusion's trusted writers (the gateways' node keys). */
  writers: readonly string[];
  timeoutMs?: number;
  /** How long a page waits out the gateway out of reach (swarm-client/outage-wait.ts). */
  outageWaitMs?: number;
  fetch?: typeof fetch;
}

/** The gateway gave no answer, or its own outage (5xx): worth asking again. */
class GatewayOutage extends ServiceError {}

export function httpTelemetrySource(options: HttpSourceOptions): TelemetrySource {
  const get = options.fetch ?? fetch;
  return async (cell, epochFrom, epochTo) => {
    const from = new Date(epochWindow(epochFrom, options.genesisMs, options.epochMs).start).toISOString();
    const to = new Date(epochWindow(epochTo, options.genesisMs, options.epochMs).end - 1).toISOString();
    const out: ProofRecord[] = [];
    let cursor: string | null = null;
    do {
      const url = new URL('/v1/telemetry', options.gatewayUrl);
      const params: Record<string, string> = { cell, from, to, limit: '1000', proof: '1' };
      if (cursor !== null) params.cursor = cursor;
      for (const [key, value] of Object.entries(params)) url.searchParams.set(key, value);
      const res = await waitingOutOutages(
        async () => {
          let res: Response;
          try {
            res = await get(url, { signal: AbortSignal.timeout(options.timeoutMs ?? 10_000) });
          } catch (error) {
            throw new GatewayOutage('upstream_unavailable', `telemetry from the gateway: ${(error as Error).message}`);
          }
          if (res.ok) return res;
          await res.body?.cancel();
          const detail = `telemetry from the gateway: HTTP ${res.status}`;
          if (res.status >= 500) throw new GatewayOutage('upstream_unavailable', detail);
          throw new ServiceError('upstream_unavailable', detail);
        },
        (error) => error instanceof GatewayOutage,
        options.outageWaitMs,
      );
      const page = (await res.json()) as { features?: { properties?: { record?: unknown } }[]; next_cursor?: unknown };
      for (const feature of page.features ?? []) {
        const checked = checkRecord(feature.properties?.record);
        if (!checked.ok || !options.writers.includes(checked.value.address.pk)) continue;
        if (checked.value.collection_type === 'telemetry') out.push(checked.value);
      }
      if (out.length > MAX_FUSION_RECORDS) {
        throw new ServiceError('invalid_request', `more than ${MAX_FUSION_RECORDS} readings in the window: narrow it`);
      }
      cursor = typeof page.next_cursor === 'string' ? page.next_cursor : null;
    } while (cursor !== null);
    return out;
  };
}
