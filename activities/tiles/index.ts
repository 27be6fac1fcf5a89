/**
 * Tile rendering (docs/protocol.md §1.2, §2.4): a caching proxy of five public raster styles, and the
 * `tile_render` activity that annotates a tile with an inference step's places. Every serve — HTTP hit,
 * miss or 304, and every activity run — leaves a `tile/raster` proof record.
 *
 * The HTTP path is split in two so a hit stays synchronous: `lookupTile` answers a cached tile without a
 * promise, and `recordServe` adds the serve to its tile's aggregate record (ProofWriter.aggregate: batched,
 * never awaited) once the route knows whether it sends 200 or 304.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { tileCost } from '../../core/pricing.js';
import type { TileStyle } from '../../core/tile-styles.js';
import type { ProofWriter } from '../proof/record-batcher.js';
import { TILE_WORKER, type TileServe, type TileServesHead } from './tile-record.js';
import { createTileRenderer } from './tile-render.js';
import { createTileSource, type TileLookup, type TileRequest } from './tile-source.js';
import { createTileStats, type ServeEvent, type TileStats } from './tile-stats.js';

/** Upstream XYZ URL templates per style (`{z}`, `{x}`, `{y}` placeholders, in whatever order the source uses). */
export type TileTemplates = Record<TileStyle, string>;

export interface TileConfig {
  templates: TileTemplates;
  /** Per upstream request. */
  timeoutMs: number;
  /** Byte budget of the in-memory tile cache. */
  cacheBytes: number;
  /** Sent upstream: public tile servers (OSM's usage policy) require an identifying User-Agent. */
  userAgent: string;
  /**
   * What proof records name as a style's upstream instead of its template's host: DEMO's synthetic upstream is
   * named `demo-tiles@<host>`, so a record of a demo tile says so (bin/demo-upstream.ts).
   */
  upstreamNames?: Partial<Record<TileStyle, string>>;
}

export interface TileDeps {
  config: TileConfig;
  proofs: ProofWriter;
  clock: () => number;
  logger?: Logger;
  /** Random part of HTTP serve record ids (default: a random UUID); injected so tests can pin it. */
  randomId?: () => string;
  /** Told every serve (cache HIT or MISS) and upstream failure the stats count: the gateway's metrics. */
  onServeEvent?: (style: TileStyle, event: ServeEvent) => void;
}

export type { TileLookup, TileRequest } from './tile-source.js';
export type { TileStep, TileRenderOutput } from './tile-render.js';
export type { TileStatsReport } from './tile-stats.js';

/** What a served HTTP answer recorded: the headers X-Svc-Record, X-Svc-Epoch and X-Svc-Cost. */
export interface ServeReceipt {
  recordId: string;
  epoch: number;
  cost: number;
  /** The epoch and cost as header text (made once per epoch and outcome, not per serve). */
  epochText: string;
  costText: string;
}

const COST_TEXT = { HIT: String(tileCost(true)), MISS: String(tileCost(false)) } as const;

export function createTileActivities(deps: TileDeps) {
  const source = createTileSource({ config: deps.config, logger: deps.logger });
  const stats = createTileStats(deps.clock());
  const randomId = deps.randomId ?? randomUUID;
  const observe = deps.onServeEvent;
  const count: TileStats['count'] = observe
    ? (epoch, style, event) => {
        stats.count(epoch, style, event);
        observe(style, event);
      }
    : stats.count;

  /** The tile for an HTTP request: synchronous on a hit; a promise when the upstream is asked. */
  function lookupTile(request: TileRequest): TileLookup | Promise<TileLookup> {
    const epoch = deps.proofs.epochNow();
    const found = source.lookup(request, epoch);
    if (!(found instanceof Promise)) return found;
    return found.catch((error: unknown) => {
      count(epoch, request.style, { kind: 'error' });
      throw error;
    });
  }

  /** A cached tile answered at once, or undefined: nothing fetched, nothing counted (api/tile-hits.ts). */
  const peekTile = (request: TileRequest): TileLookup | undefined => source.peek(request, deps.proofs.epochNow());

  /** The head of a new `serves` record; made once, not per serve (a named closure per serve costs a rename under tsx). */
  function openServes(request: TileRequest, { tile, upstreamHost }: TileLookup) {
    const head: TileServesHead = {
      version: 1,
      kind: 'serves',
      style: request.style,
      zoom: request.zoom,
      x: tile.x,
      y: tile.y,
      format: request.format,
      bytes: tile.bytes.length,
      sha256: tile.sha256,
      worker: TILE_WORKER,
      upstream_host: upstreamHost,
    };
    return {
      id: `tile:${randomId()}`,
      h3_cell: request.cell,
      collection_type: 'tile' as const,
      payload_type: 'tile/raster' as const,
      payload: head,
    };
  }
  let lastEpoch = -1;
  let lastEpochText = '';
  /**
   * Adds the serve to its tile's open `serves` record (one per cell, tile and flush; see tile-record.ts) and
   * counts it; never blocks, never throws.
   */
  function recordServe(request: TileRequest, found: TileLookup, status: 200 | 304, requestId: string): ServeReceipt {
    const cost = tileCost(found.cache === 'HIT');
    const { tile } = found;
    const serve: TileServe = { request_id: requestId, cache: found.cache, status, cost };
    const key = `${request.cell}/${request.style}/${request.zoom}.${request.format}/${tile.sha256}`;
    const { id, epoch } = deps.proofs.aggregate(key, () => openServes(request, found), serve);
    const sent = status === 200 ? found.tile.bytes.length : 0;
    count(epoch, request.style, { kind: 'serve', cache: found.cache, bytes: sent, cost });
    if (epoch !== lastEpoch) {
      lastEpoch = epoch;
      lastEpochText = String(epoch);
    }
    return { recordId: id, epoch, cost, epochText: lastEpochText, costText: COST_TEXT[found.cache] };
  }

  return {
    lookupTile,
    peekTile,
    recordServe,
    /** The `tile_render` activity (docs/protocol.md §2.2 rule 2). */
    renderTile: createTileRenderer({ source, proofs: deps.proofs, count }),
    /** Hourly serving statistics of this process (see tile-stats.ts for the shape). */
    stats: (hours: number) => stats.report(hours, deps.proofs.epochNow(), deps.clock()),
    /** Entries and bytes in the tile cache. */
    cacheSize: () => source.size(),
  };
}
export type TileActivities = ReturnType<typeof createTileActivities>;
