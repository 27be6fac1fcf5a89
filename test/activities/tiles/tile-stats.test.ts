import assert from 'node:assert/strict';
import { createTileStats } from '../../../activities/tiles/tile-stats.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../../core/epoch.js';

const EPOCH = 5000;
const at = (epoch: number) => DEFAULT_EPOCH_GENESIS_MS + epoch * EPOCH_MS + 123_456;

describe('tile stats (hourly buckets per process)', () => {
  it('counts hits, misses, errors, bytes and exact cost per style and epoch', () => {
    const stats = createTileStats(at(EPOCH));
    for (let i = 0; i < 10_000; i++)
      stats.count(EPOCH, 'dark', { kind: 'serve', cache: 'HIT', bytes: 2, cost: 0.00001 });
    stats.count(EPOCH, 'satellite', { kind: 'serve', cache: 'MISS', bytes: 500, cost: 0.0001 });
    stats.count(EPOCH - 1, 'satellite', { kind: 'error' });
    const report = stats.report(2, EPOCH, at(EPOCH));
    assert.equal(report.hours, 2);
    assert.deepEqual(
      report.buckets.map((b) => [b.epoch, b.start]),
      [
        [EPOCH - 1, new Date(DEFAULT_EPOCH_GENESIS_MS + (EPOCH - 1) * EPOCH_MS).toISOString()],
        [EPOCH, new Date(DEFAULT_EPOCH_GENESIS_MS + EPOCH * EPOCH_MS).toISOString()],
      ],
    );
    const now = report.buckets[1]!;
    assert.deepEqual(now.styles.dark, { hits: 10_000, misses: 0, errors: 0, bytes: 20_000, cost: 0.1 });
    assert.deepEqual(now.styles.satellite, { hits: 0, misses: 1, errors: 0, bytes: 500, cost: 0.0001 });
    assert.deepEqual(now.styles.terrain, { hits: 0, misses: 0, errors: 0, bytes: 0, cost: 0 });
    assert.deepEqual(now.totals, { hits: 10_000, misses: 1, errors: 0, bytes: 20_500, cost: 0.1001 });
    assert.equal(report.buckets[0]!.totals.errors, 1);
    assert.deepEqual(report.totals, { hits: 10_000, misses: 1, errors: 1, bytes: 20_500, cost: 0.1001 });
  });

  it('returns every requested hour, zero-filled, and forgets hours older than 168', () => {
    const stats = createTileStats(at(EPOCH));
    stats.count(EPOCH, 'dark', { kind: 'serve', cache: 'HIT', bytes: 1, cost: 0.00001 });
    assert.equal(stats.report(24, EPOCH + 5, at(EPOCH + 5)).buckets.length, 24);
    stats.count(EPOCH + 168, 'dark', { kind: 'serve', cache: 'HIT', bytes: 1, cost: 0.00001 });
    const week = stats.report(168, EPOCH + 168, at(EPOCH + 168));
    assert.equal(week.buckets[0]!.epoch, EPOCH + 1);
    assert.equal(week.totals.hits, 1);
  });
});
