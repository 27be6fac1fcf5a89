import assert from 'node:assert/strict';
import {
  BOA_ADD_OFFSET,
  baselineNumber,
  baselineOffset,
  classifyHealth,
  isSclMasked,
  metadataEstimate,
  ndviStats,
  roundNdvi,
} from '../../core/ndvi.js';

describe('core/ndvi', () => {
  describe('classifyHealth (docs/protocol.md §2.5; each boundary belongs to the class above it)', () => {
    const cases: [number, string][] = [
      [0.9, 'healthy'],
      [0.6, 'healthy'],
      [0.5999, 'moderate'],
      [0.4, 'moderate'],
      [0.3999, 'stressed'],
      [0.2, 'stressed'],
      [0.1999, 'bare'],
      [0, 'bare'],
      [-0.5, 'bare'],
    ];
    for (const [ndvi, status] of cases) {
      it(`${ndvi} → ${status}`, () => assert.equal(classifyHealth(ndvi), status));
    }
  });

  describe('baseline offset', () => {
    it('reads baselines as numbers and refuses other text', () => {
      assert.equal(baselineNumber('04.00'), 400);
      assert.equal(baselineNumber('05.11'), 511);
      assert.equal(baselineNumber('03.01'), 301);
      assert.equal(baselineNumber('N0400'), null);
      assert.equal(baselineNumber(null), null);
    });

    it('applies −1000 from baseline 04.00 on, not before, and not when the catalog already did', () => {
      assert.equal(baselineOffset('03.01', false).offset, 0);
      assert.equal(baselineOffset('04.00', false).offset, BOA_ADD_OFFSET);
      assert.equal(baselineOffset('05.10', false).offset, -1000);
      assert.equal(baselineOffset('05.10', true).offset, 0);
      assert.match(baselineOffset('05.10', true).reason, /already applied/);
    });

    it('applies no offset to an unknown baseline, and says so', () => {
      const rule = baselineOffset(undefined, false);
      assert.equal(rule.offset, 0);
      assert.match(rule.reason, /unknown/);
    });
  });

  describe('ndviStats', () => {
    const red = Uint16Array.from([2000, 2000, 7000, 0, 1000, 500]);
    const nir = Uint16Array.from([5000, 5000, 7200, 4000, 1000, 600]);

    it('computes NDVI on reflectance (DN + offset) / 10000 over kept pixels only', () => {
      const stats = ndviStats(red, nir, Uint8Array.from([1, 1, 0, 0, 0, 0]), 0);
      assert.equal(stats.validPixels, 2);
      assert.ok(Math.abs(stats.mean! - 3 / 7) < 1e-12);
      const offset = ndviStats(red, nir, Uint8Array.from([1, 1, 0, 0, 0, 0]), -1000);
      assert.ok(Math.abs(offset.mean! - 0.6) < 1e-12);
    });

    it('drops no-data (DN 0) and pixels whose reflectances sum to 0; clamps negative reflectance', () => {
      const stats = ndviStats(red, nir, Uint8Array.from([0, 0, 0, 1, 1, 1]), -1000);
      // DN 0 dropped; 1000/1000 → 0 + 0 dropped; 500/600 → red −0.05 clamped to 0, nir also ≤ 0 → dropped.
      assert.equal(stats.validPixels, 0);
      assert.equal(stats.droppedPixels, 3);
      assert.equal(stats.mean, null);
      const clamped = ndviStats(Uint16Array.from([900]), Uint16Array.from([1500]), Uint8Array.from([1]), -1000);
      assert.equal(clamped.mean, 1); // red reflectance −0.01 → 0
    });

    it('reports min and max over the valid pixels', () => {
      const stats = ndviStats(red, nir, Uint8Array.from([1, 0, 1, 0, 0, 0]), 0);
      assert.ok(Math.abs(stats.min! - 200 / 14200) < 1e-12);
      assert.ok(Math.abs(stats.max! - 3 / 7) < 1e-12);
    });

    it('refuses bands and masks of different sizes', () => {
      assert.throws(() => ndviStats(red, nir, new Uint8Array(2), 0), RangeError);
    });
  });

  it('masks SCL no-data, saturated, shadow, cloud and cirrus classes, and out-of-range values', () => {
    const masked = [0, 1, 3, 8, 9, 10, 12, 255, 256];
    const kept = [2, 4, 5, 6, 7, 11];
    for (const v of masked) assert.equal(isSclMasked(v), true, String(v));
    for (const v of kept) assert.equal(isSclMasked(v), false, String(v));
  });

  describe('metadataEstimate', () => {
    it('is the share-weighted mean of typical class NDVI over the surface classes present', () => {
      const estimate = metadataEstimate({ vegetation: 40, not_vegetated: 30, water: 10, snow_ice: 0 })!;
      assert.ok(Math.abs(estimate.mean - (40 * 0.7 + 30 * 0.15 + 10 * -0.3) / 80) < 1e-12);
      assert.equal(estimate.min, -0.3);
      assert.equal(estimate.max, 0.7);
      assert.deepEqual(estimate.shares, { vegetation: 40, not_vegetated: 30, water: 10, snow_ice: 0 });
    });

    it('ignores absent shares and returns null when no surface class is present', () => {
      assert.equal(metadataEstimate({ vegetation: 50 })!.mean, 0.7);
      assert.equal(metadataEstimate({}), null);
      assert.equal(metadataEstimate({ vegetation: 0, water: null }), null);
    });
  });

  it('rounds to 4 decimals without producing −0', () => {
    assert.equal(roundNdvi(0.59996), 0.6);
    assert.equal(roundNdvi(-0.00001), 0);
    assert.ok(!Object.is(roundNdvi(-0.00001), -0));
  });
});
