import assert from 'node:assert/strict';
import { createInferenceStats, type RecentInference } from '../../../activities/inference/inference-stats.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../../core/epoch.js';

const EPOCH = 4000;
const at = (epoch: number, minute = 0) => DEFAULT_EPOCH_GENESIS_MS + epoch * EPOCH_MS + minute * 60_000;

const entry = (over: Partial<RecentInference>): RecentInference => ({
  job_id: 'j',
  step_id: null,
  provider: 'worker',
  model: 'tinyllama',
  requested_model: 'tinyllama',
  worker_pk: 'a'.repeat(64),
  tokens_in: 10,
  tokens_out: 5,
  latency_ms: 100,
  cold_start: false,
  fallback_reason: null,
  cost: 0.00015,
  epoch: EPOCH,
  job_hash: 'b'.repeat(64),
  h3_cell: '861e8050fffffff',
  record_id: 'inference:j',
  at: new Date(at(EPOCH)).toISOString(),
  ...over,
});

describe('inference stats (per process)', () => {
  it('buckets per hour with tokens, exact cost, percentiles, by provider and model', () => {
    const stats = createInferenceStats(at(EPOCH));
    for (let i = 1; i <= 100; i++) stats.add(entry({ latency_ms: i }), at(EPOCH, 5));
    stats.add(
      entry({ provider: 'backbone', model: 'llama-3.3-70b-versatile', cost: 0, cold_start: true }),
      at(EPOCH, 6),
    );
    stats.add(entry({ epoch: EPOCH - 1 }), at(EPOCH - 1, 30));
    stats.error(EPOCH);
    const report = stats.report(2, EPOCH, at(EPOCH, 10));
    assert.deepEqual(
      report.buckets.map((b) => [b.epoch, b.requests]),
      [
        [EPOCH - 1, 1],
        [EPOCH, 101],
      ],
    );
    const now = report.buckets[1]!;
    assert.equal(now.cost, 0.015);
    assert.equal(now.tokens_in, 1010);
    assert.equal(now.errors, 1);
    assert.equal(now.cold_starts, 1);
    // 101 samples: 1..100 and the backbone's 100; nearest rank.
    assert.deepEqual(now.latency_ms, { p50: 51, p95: 96, p99: 100, max: 100 });
    assert.deepEqual(now.by_provider.backbone, { requests: 1, tokens_in: 10, tokens_out: 5, cost: 0 });
    assert.equal(now.by_model.tinyllama?.requests, 100);
    assert.equal(report.totals.requests, 102);
    assert.equal(report.buckets[0]!.latency_ms?.p50, 100);
  });

  it('zero-fills hours without traffic and reports no latency there', () => {
    const report = createInferenceStats(at(EPOCH)).report(3, EPOCH, at(EPOCH));
    assert.equal(report.buckets.length, 3);
    assert.equal(report.totals.requests, 0);
    assert.equal(report.totals.latency_ms, null);
    assert.deepEqual(Object.keys(report.totals.by_provider), ['worker', 'backbone']);
  });

  it('keeps the last 100 inferences, newest first, and counts the last hour by minute', () => {
    const stats = createInferenceStats(at(EPOCH));
    for (let i = 0; i < 130; i++) stats.add(entry({ job_id: `j${i}` }), at(EPOCH, i % 60));
    assert.deepEqual(
      stats.recent(3).map((e) => e.job_id),
      ['j129', 'j128', 'j127'],
    );
    assert.equal(stats.recent(500).length, 100);
    assert.equal(stats.lastHour(at(EPOCH, 59)), 130);
    assert.equal(stats.lastHour(at(EPOCH, 59) + 30 * 60_000), 60); // minutes 30..59 remain: two each
    assert.equal(stats.lastHour(at(EPOCH + 5)), 0);
  });
});
