/**
 * Prometheus metrics of one gateway: a registry of its own per instance, never prom-client's global
 * one, so several gateways in one process (tests) do not clash. `GET /metrics` exposes it (api/routes/metrics.ts).
 *
 * The components report through optional hooks whose signatures the methods below match, so wiring is one line
 * each and nothing under core/ or activities/ knows about Prometheus:
 *   request context (api/request-context.ts) → `request`, `inFlight`, `gateRejected`
 *   finishJob (activities/compute/job-activities.ts onJobFinished) → `jobFinished`
 *   tile serves (activities/tiles onServeEvent) → `tileEvent`; the cache size via `watchTileCache`
 *   the sealers (onEpochSealed) → `epochSealed`; the settlement service (onSettlement) → `settled`
 *   the sync agent (onRound) → `syncRound`, after `trackSync` when this process syncs at all
 *
 * Labels are bounded: HTTP routes by pattern (`/v1/compute/:jobId`, else `unmatched`), methods by the
 * standard list (else `other`), statuses by code, gates by name, error codes by the error table.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ServeEvent } from '../activities/tiles/tile-stats.js';
import type { Seal } from '../core/proof-types.js';
import type { LedgerSettlement } from '../core/ledger-types.js';

/** Seconds; HTTP answers range from a cached tile (sub-millisecond) to a compute job waited on (a minute). */
const HTTP_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Seconds; a job runs from a tile step (well under a second) to a long inference chain or a stuck hour. */
const JOB_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** Seconds; sealing one epoch reads its leaves, builds and signs the tree and stores it. */
const SEAL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

interface HttpLabels {
  method: string;
  route: string;
  status: string;
}

/** What finishJob reports: the job's final status and the time from its acceptance to its final record. */
export interface JobOutcome {
  status: string;
  durationMs: number;
}

/** A sync agent round: ok, or failed (the agent backs off and retries). */
export interface SyncOutcome {
  ok: boolean;
}

export interface GatewayMetrics {
  readonly registry: Registry;
  /** One answered (or abandoned) HTTP request; `route` is the matched pattern or `unmatched`. */
  request(method: string, route: string, status: number, seconds: number): void;
  /** +1 when a request starts, -1 when its response closes. */
  inFlight(delta: 1 | -1): void;
  /** A refusal by one of the four gates (`signature`/`api_key`, `jurisdiction`, `delegation`, `geometry`). */
  gateRejected(gate: string, code: string): void;
  jobFinished(outcome: JobOutcome): void;
  tileEvent(style: string, event: ServeEvent): void;
  /** Reports the tile cache's entries and bytes at scrape time (latest call wins). */
  watchTileCache(size: () => { entries: number; bytes: number }): void;
  epochSealed(seal: Seal, durationMs: number): void;
  settled(settlement: Pick<LedgerSettlement, 'status'>): void;
  /** This process syncs to a central store: `sync_lag_seconds` is reported from now on. */
  trackSync(): void;
  syncRound(outcome: SyncOutcome): void;
}

export interface MetricsOptions {
  /** Node.js process metrics (CPU, memory, event loop lag, GC): on for a serving process, off for tests. */
  processMetrics?: boolean;
  /** ms since the Unix epoch, for the sync lag. */
  clock?: () => number;
}

export function createMetrics(options: MetricsOptions = {}): GatewayMetrics {
  const registry = new Registry();
  const registers = [registry];
  const clock = options.clock ?? Date.now;
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });

  const httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status (499: the client left before the answer)',
    labelNames: ['method', 'route', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request arriving to its response closing, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers,
  });
  // A plain number read at scrape time: the gauge's own inc() hashes its (empty) label set on every request.
  let inFlight = 0;
  new Gauge({
    name: 'http_requests_in_flight',
    help: 'HTTP requests being handled now',
    registers,
    collect() {
      this.set(inFlight);
    },
  });
  const gateRejections = new Counter({
    name: 'gate_rejections_total',
    help: 'Requests refused by a router gate, by gate and error code',
    labelNames: ['gate', 'code'] as const,
    registers,
  });
  const jobDuration = new Histogram({
    name: 'job_duration_seconds',
    help: 'Compute jobs from acceptance to their final record, by final status',
    labelNames: ['status'] as const,
    buckets: JOB_BUCKETS,
    registers,
  });
  const jobs = new Counter({
    name: 'jobs_total',
    help: 'Compute jobs finished, by final status',
    labelNames: ['status'] as const,
    registers,
  });
  const tileHits = new Counter({
    name: 'tile_cache_hits_total',
    help: 'Tile serves answered from the cache (HTTP and tile_render steps), by style',
    labelNames: ['style'] as const,
    registers,
  });
  const tileMisses = new Counter({
    name: 'tile_cache_misses_total',
    help: 'Tile serves that fetched new bytes from the upstream, by style',
    labelNames: ['style'] as const,
    registers,
  });
  const tileErrors = new Counter({
    name: 'tile_upstream_errors_total',
    help: 'Tile requests answered with an upstream failure (502/504), by style',
    labelNames: ['style'] as const,
    registers,
  });
  // Kept beside the counters so the ratio needs no walk over their label sets at scrape time.
  const tally = { hits: 0, misses: 0 };
  new Gauge({
    name: 'tile_cache_hit_ratio',
    help: 'tile_cache_hits_total / (hits + misses) since the process started; 0 before the first serve',
    registers,
    collect() {
      const total = tally.hits + tally.misses;
      this.set(total === 0 ? 0 : tally.hits / total);
    },
  });
  let cacheSize: (() => { entries: number; bytes: number }) | undefined;
  new Gauge({
    name: 'tile_cache_entries',
    help: 'Tiles held in the in-memory cache',
    registers,
    collect() {
      if (cacheSize) this.set(cacheSize().entries);
    },
  });
  new Gauge({
    name: 'tile_cache_bytes',
    help: 'Bytes the in-memory tile cache counts against its budget (TILE_CACHE_MB)',
    registers,
    collect() {
      if (cacheSize) this.set(cacheSize().bytes);
    },
  });
  const sealDuration = new Histogram({
    name: 'seal_duration_seconds',
    help: 'Time to seal one epoch: read its leaves, build and sign the Merkle tree, store the seal',
    buckets: SEAL_BUCKETS,
    registers,
  });
  const epochsSealed = new Counter({
    name: 'epochs_sealed_total',
    help: 'Epochs this process sealed (empty epochs included)',
    registers,
  });
  const settlements = new Counter({
    name: 'settlements_total',
    help: 'Settlement drives by the state they ended in (submitted: paid; pending or failed: retried by the sweep)',
    labelNames: ['status'] as const,
    registers,
  });
  const syncRounds = new Counter({
    name: 'sync_rounds_total',
    help: 'Rounds pushing proof records and seals to the central store, by result (ok, error)',
    labelNames: ['result'] as const,
    registers,
  });
  // One label object per (route, method, status), all bounded (see above): none is built per request.
  const labelSets = new Map<string, Map<string, Map<number, HttpLabels>>>();
  const requestLabels = (rawMethod: string, route: string, status: number): HttpLabels => {
    const method = METHODS.has(rawMethod) ? rawMethod : 'other';
    let byMethod = labelSets.get(route);
    if (byMethod === undefined) labelSets.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    let labels = byStatus.get(status);
    if (labels === undefined) {
      labels = { method, route, status: String(status) };
      byStatus.set(status, labels);
    }
    return labels;
  };
  /** When sync is tracked: the end of the last successful round, else when tracking started. */
  let syncedAt: number | undefined;

  return {
    registry,
    request(method, route, status, seconds) {
      const labels = requestLabels(method, route, status);
      httpRequests.inc(labels);
      httpDuration.observe(labels, seconds);
    },
    inFlight: (delta) => {
      inFlight += delta;
    },
    gateRejected: (gate, code) => gateRejections.inc({ gate, code }),
    jobFinished: ({ status, durationMs }) => {
      jobs.inc({ status });
      jobDuration.observe({ status }, Math.max(0, durationMs) / 1000);
    },
    tileEvent: (style, event) => {
      if (event.kind === 'error') {
        tileErrors.inc({ style });
      } else if (event.cache === 'HIT') {
        tally.hits++;
        tileHits.inc({ style });
      } else {
        tally.misses++;
        tileMisses.inc({ style });
      }
    },
    watchTileCache: (size) => {
      cacheSize = size;
    },
    epochSealed: (_seal, durationMs) => {
      epochsSealed.inc();
      sealDuration.observe(Math.max(0, durationMs) / 1000);
    },
    settled: ({ status }) => settlements.inc({ status }),
    trackSync: () => {
      if (syncedAt !== undefined) return;
      syncedAt = clock();
      new Gauge({
        name: 'sync_lag_seconds',
        help: 'Seconds since the last successful push to the central store (since the agent started, before one)',
        registers,
        collect() {
          this.set(Math.max(0, clock() - (syncedAt ?? clock())) / 1000);
        },
      });
    },
    syncRound: ({ ok }) => {
      syncRounds.inc({ result: ok ? 'ok' : 'error' });
      if (ok && syncedAt !== undefined) syncedAt = clock();
    },
  };
}
