/**
 * Hourly tile-serving statistics (`GET /v1/tiles/stats`, docs/protocol.md §4.1; its shape is ours):
 *
 * ```
 * { hours, since, buckets: [{ epoch, start, styles: { <style>: counts }, totals: counts }], totals: counts }
 * counts = { hits, misses, errors, bytes, cost }
 * ```
 *
 * One bucket per proof epoch (one hour), oldest first, the current epoch last; every requested hour and
 * every style appear, zero-filled, so a chart needs no gap logic. `bytes` counts body bytes sent (a 304
 * sends none); `errors` counts upstream failures (502/504) answered; `cost` is in credits.
 *
 * Per process, since `since` (its start), kept for 168 hours: a restart or a second gateway starts from
 * zero. The durable, verifiable account is the proof store (one `tile/raster` record per serve).
 */
import { createHourlyBuckets } from '../../core/hourly-buckets.js';
import { fromCreditUnits, toCreditUnits } from '../../core/pricing.js';
import { TILE_STYLES, type TileStyle } from '../../core/tile-styles.js';

export interface TileCounts {
  hits: number;
  misses: number;
  errors: number;
  bytes: number;
  cost: number;
}

export interface TileStatsBucket {
  epoch: number;
  /** ISO 8601 UTC start of the epoch's hour. */
  start: string;
  styles: Record<TileStyle, TileCounts>;
  totals: TileCounts;
}

export interface TileStatsReport {
  hours: number;
  /** When this process started counting. */
  since: string;
  buckets: TileStatsBucket[];
  totals: TileCounts;
}

export type ServeEvent = { kind: 'serve'; cache: 'HIT' | 'MISS'; bytes: number; cost: number } | { kind: 'error' };

/** Costs are summed in integer credit units: 10 000 × 0.00001 must be 0.1, not 0.09999999. */
interface Tally {
  hits: number;
  misses: number;
  errors: number;
  bytes: number;
  costUnits: number;
}

const emptyTally = (): Tally => ({ hits: 0, misses: 0, errors: 0, bytes: 0, costUnits: 0 });

function add(into: Tally, from: Tally): void {
  into.hits += from.hits;
  into.misses += from.misses;
  into.errors += from.errors;
  into.bytes += from.bytes;
  into.costUnits += from.costUnits;
}

const counts = ({ costUnits, ...rest }: Tally): TileCounts => ({ ...rest, cost: fromCreditUnits(costUnits) });

export interface TileStats {
  count(epoch: number, style: TileStyle, event: ServeEvent): void;
  /**
   * The last `hours` epochs up to `currentEpoch`. `nowMs` places the buckets in time: epochs start on UTC
   * hours because the epoch genesis must lie on an hour boundary (parseEpochGenesis enforces it).
   */
  report(hours: number, currentEpoch: number, nowMs: number): TileStatsReport;
}

export function createTileStats(startedAtMs: number): TileStats {
  const buckets = createHourlyBuckets(() => new Map<TileStyle, Tally>());

  function count(epoch: number, style: TileStyle, event: ServeEvent): void {
    const bucket = buckets.at(epoch);
    let tally = bucket.get(style);
    if (!tally) bucket.set(style, (tally = emptyTally()));
    if (event.kind === 'error') {
      tally.errors++;
      return;
    }
    if (event.cache === 'HIT') tally.hits++;
    else tally.misses++;
    tally.bytes += event.bytes;
    tally.costUnits += toCreditUnits(event.cost);
  }

  function report(hours: number, currentEpoch: number, nowMs: number): TileStatsReport {
    const grand = emptyTally();
    const out = buckets.window(hours, currentEpoch, nowMs).map(({ epoch, start, bucket }): TileStatsBucket => {
      const total = emptyTally();
      const styles = {} as Record<TileStyle, TileCounts>;
      for (const style of TILE_STYLES) {
        const tally = bucket?.get(style) ?? emptyTally();
        add(total, tally);
        styles[style] = counts(tally);
      }
      add(grand, total);
      return { epoch, start, styles, totals: counts(total) };
    });
    return { hours, since: new Date(startedAtMs).toISOString(), buckets: out, totals: counts(grand) };
  }

  return { count, report };
}
