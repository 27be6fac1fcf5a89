import assert from 'node:assert/strict';
import { TIER_THRESHOLDS, tierFor, trustScore } from '../../core/trust-score.js';
import { TRUST_TIERS } from '../../core/breadcrumb-types.js';

const NOW = Date.parse('2027-01-01T00:00:00.000Z');
const DAY = 86_400_000;
const daysAgo = (days: number) => new Date(NOW - days * DAY).toISOString();
const score = (over: Partial<Parameters<typeof trustScore>[0]> = {}) =>
  trustScore({ operations: 0, uniqueCells: 0, firstBlockAt: null, nowMs: NOW, chainValid: false, ...over });

describe('core/trust-score', () => {
  describe('trustScore (docs/protocol.md §2.8 table)', () => {
    it('is 0 for nothing and 10 for a valid empty chain', () => {
      assert.deepEqual(score(), {
        score: 0,
        parts: { operations: 0, territory: 0, longevity: 0, chain_validity: 0 },
      });
      assert.deepEqual(score({ chainValid: true }), {
        score: 10,
        parts: { operations: 0, territory: 0, longevity: 0, chain_validity: 10 },
      });
    });

    it('gives each part its full weight exactly at its cap, and no more beyond', () => {
      assert.equal(score({ operations: 5000 }).parts.operations, 40);
      assert.equal(score({ operations: 4999 }).parts.operations, 39.99);
      assert.equal(score({ operations: 1_000_000 }).parts.operations, 40);
      assert.equal(score({ uniqueCells: 20 }).parts.territory, 30);
      assert.equal(score({ uniqueCells: 19 }).parts.territory, 28.5);
      assert.equal(score({ uniqueCells: 500 }).parts.territory, 30);
      assert.equal(score({ firstBlockAt: daysAgo(365) }).parts.longevity, 20);
      assert.equal(score({ firstBlockAt: daysAgo(3650) }).parts.longevity, 20);
    });

    it('is linear below the caps', () => {
      assert.equal(score({ operations: 2500 }).parts.operations, 20);
      assert.equal(score({ uniqueCells: 10 }).parts.territory, 15);
      assert.equal(score({ firstBlockAt: daysAgo(182.5) }).parts.longevity, 10);
      assert.equal(score({ firstBlockAt: daysAgo(73) }).parts.longevity, 4);
    });

    it('rounds each part to 2 decimals, and the score is the sum of the parts shown', () => {
      assert.equal(score({ operations: 1 }).parts.operations, 0.01); // 0.008
      assert.equal(score({ operations: 3 }).parts.operations, 0.02); // 0.024
      const s = score({ operations: 7, uniqueCells: 3, firstBlockAt: daysAgo(1), chainValid: true });
      assert.deepEqual(s.parts, { operations: 0.06, territory: 4.5, longevity: 0.05, chain_validity: 10 });
      assert.equal(s.score, 14.61);
    });

    it('is 100 when every part is full', () => {
      const full = score({ operations: 5000, uniqueCells: 20, firstBlockAt: daysAgo(365), chainValid: true });
      assert.equal(full.score, 100);
      assert.equal(tierFor(full.score), 'sovereign');
      const noLongevity = score({ operations: 5000, uniqueCells: 20, chainValid: true });
      assert.equal(noLongevity.score, 80);
      assert.equal(tierFor(noLongevity.score), 'trusted');
    });

    it('earns nothing for a future first block, an unreadable date, or negative counts', () => {
      assert.equal(score({ firstBlockAt: new Date(NOW + DAY).toISOString() }).parts.longevity, 0);
      assert.equal(score({ firstBlockAt: 'not a date' }).parts.longevity, 0);
      assert.equal(score({ operations: -5, uniqueCells: -1 }).score, 0);
    });
  });

  describe('tiers (docs/protocol.md §3)', () => {
    it('has the protocol thresholds for the five tiers, ascending', () => {
      assert.deepEqual(TIER_THRESHOLDS, { provisioned: 0, observed: 25, trusted: 60, certified: 85, sovereign: 99 });
      assert.deepEqual(Object.keys(TIER_THRESHOLDS), [...TRUST_TIERS]);
    });

    it('reaches a tier exactly at its threshold', () => {
      const cases: [number, string][] = [
        [0, 'provisioned'],
        [24.99, 'provisioned'],
        [25, 'observed'],
        [59.99, 'observed'],
        [60, 'trusted'],
        [84.99, 'trusted'],
        [85, 'certified'],
        [98.99, 'certified'],
        [99, 'sovereign'],
        [100, 'sovereign'],
      ];
      for (const [value, tier] of cases) assert.equal(tierFor(value), tier, `score ${value}`);
    });
  });
});
