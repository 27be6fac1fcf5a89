import assert from 'node:assert/strict';
import { cellArea } from 'h3-js';
import { DEFAULT_JOB_CELL, DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import {
  PRICES,
  RELAY_FEE_SHARE,
  estimateTokens,
  fromCreditUnits,
  relayFee,
  sumCredits,
  tileCost,
  toCreditUnits,
  tokensCost,
  withinBudget,
} from '../../core/pricing.js';
import { estimateJob, estimateStep, type RequestStep } from '../../core/step-types/index.js';

// The estimates are each step type's price of its worst case (core/step-types/); a job accepted in epoch 1.
const entry = (jobCell: string) => ({ jobCell, epoch: 1, epochGenesisMs: 0, epochMs: 3_600_000 });
const estimateStepCost = (step: { type: string; [field: string]: unknown }, jobCell: string): number => {
  const estimate = estimateStep({ id: 'a', ...step } as RequestStep, entry(jobCell));
  assert.ok(estimate.ok);
  return estimate.value;
};
const estimateJobCost = (steps: readonly { id: string; type: string; [field: string]: unknown }[], jobCell: string) => {
  const estimate = estimateJob(steps as RequestStep[], entry(jobCell), PRICES.merkleProof);
  assert.ok(estimate.ok);
  return estimate.value;
};

describe('pricing (docs/protocol.md §8)', () => {
  it('lists the docs/protocol.md §8 prices', () => {
    assert.deepEqual(PRICES, {
      inferenceWorkerPerToken: 0.00001,
      inferenceBackbonePerToken: 0,
      tileHit: 0.00001,
      tileMiss: 0.0001,
      imagePerMegapixel: 0.001,
      sensorFusionPerCellEpoch: 0.0005,
      merkleProof: 0.0001,
    });
    assert.ok(Object.isFrozen(PRICES));
  });

  it('prices worker tokens at 0.00001 and backbone tokens at 0', () => {
    assert.equal(tokensCost(1, 'worker'), 0.00001);
    assert.equal(tokensCost(700, 'worker'), 0.007);
    assert.equal(tokensCost(700, 'backbone'), 0);
    assert.equal(tokensCost(0, 'worker'), 0);
    assert.throws(() => tokensCost(-1, 'worker'), RangeError);
    assert.throws(() => tokensCost(1.5, 'worker'), RangeError);
  });

  it('prices a tile at 0.00001 on a hit and 0.0001 on a miss (docs/protocol.md §2.4)', () => {
    assert.equal(tileCost(true), 0.00001);
    assert.equal(tileCost(false), 0.0001);
  });

  it('sums many small amounts exactly', () => {
    assert.notEqual(
      Array.from({ length: 10_000 }, () => 0.00001).reduce((a, b) => a + b, 0),
      0.1,
      'plain floating point drifts',
    );
    assert.equal(sumCredits(Array.from({ length: 10_000 }, () => 0.00001)), 0.1);
    assert.equal(sumCredits([0.1, 0.2]), 0.3);
    assert.equal(sumCredits([]), 0);
  });

  it('converts between credits and integer credit units of 1e-8', () => {
    assert.equal(toCreditUnits(0.00001), 1000);
    assert.equal(toCreditUnits(0.1), 10_000_000);
    assert.equal(fromCreditUnits(38_636), 0.00038636);
    assert.equal(toCreditUnits(0.000000004), 0, 'below half a unit rounds away');
    assert.throws(() => toCreditUnits(Number.NaN), RangeError);
  });

  it('estimates tokens as ceil(chars / 4) plus 4 per message', () => {
    assert.equal(estimateTokens([]), 0);
    assert.equal(estimateTokens([{ content: '' }]), 4);
    assert.equal(estimateTokens([{ content: 'abcde' }, { content: 'abcd' }]), 2 + 4 + 1 + 4);
  });

  it('estimates an inference step at the worker price for input plus max_tokens (default 512)', () => {
    const messages = [{ role: 'user', content: 'x'.repeat(40) }]; // 10 + 4 tokens
    assert.equal(estimateStepCost({ type: 'inference', messages }, DEFAULT_JOB_CELL), tokensCost(14 + 512, 'worker'));
    assert.equal(estimateStepCost({ type: 'inference', messages, max_tokens: 100 }, DEFAULT_JOB_CELL), 0.00114);
    assert.equal(estimateStepCost({ type: 'inference' }, DEFAULT_JOB_CELL), 0.00512);
  });

  it('estimates a tile step as one cache miss and a sensor fusion step as one cell-epoch', () => {
    assert.equal(estimateStepCost({ type: 'tile_render', zoom: 12 }, DEFAULT_JOB_CELL), 0.0001);
    assert.equal(estimateStepCost({ type: 'sensor_fusion' }, DEFAULT_JOB_CELL), 0.0005);
  });

  it('estimates an image step from the cell area at 10 m resolution', () => {
    const megapixels = cellArea(DEFAULT_JOB_CELL, 'm2') / 100 / 1e6; // about 0.386 MP
    const expected = Math.round(megapixels * 0.001 * 1e8) / 1e8;
    assert.equal(estimateStepCost({ type: 'image_process' }, DEFAULT_JOB_CELL), expected);
    assert.equal(expected, 0.00038636);
    const larger = estimateStepCost({ type: 'image_process', center_cell: DEFAULT_PERCEPTION_CELL }, DEFAULT_JOB_CELL);
    assert.equal(larger, Math.round((cellArea(DEFAULT_PERCEPTION_CELL, 'm2') / 1e8) * 0.001 * 1e8) / 1e8);
    assert.throws(() => estimateStepCost({ type: 'image_process' }, 'not-a-cell'), RangeError);
  });

  it('estimates the docs/protocol.md §4.1 note 4 chain as the sum of its steps plus one proof', () => {
    const steps = [
      { id: 'ndvi', type: 'image_process' as const },
      {
        id: 'ai',
        type: 'inference' as const,
        depends_on: 'ndvi',
        messages: [{ role: 'user', content: 'Which fields near Rome look stressed?' }],
      },
      { id: 'map', type: 'tile_render' as const, depends_on: 'ai', zoom: 12 },
    ];
    const estimate = estimateJobCost(steps, DEFAULT_JOB_CELL);
    const parts = steps.map((step) => estimateStepCost(step, DEFAULT_JOB_CELL));
    assert.deepEqual(estimate.breakdown, { ndvi: parts[0], ai: parts[1], map: parts[2] });
    assert.equal(estimate.proof_credits, 0.0001);
    assert.equal(estimate.total_credits, sumCredits([...parts, PRICES.merkleProof]));
    // 0.00038636 (imagery) + (10 + 4 + 512) × 0.00001 (inference) + 0.0001 (tile) + 0.0001 (proof)
    assert.equal(estimate.total_credits, 0.00584636);
  });

  it('keeps a step id of "__proto__" as an ordinary breakdown key', () => {
    const estimate = estimateJobCost([{ id: '__proto__', type: 'sensor_fusion' }], DEFAULT_JOB_CELL);
    assert.deepEqual(Object.keys(estimate.breakdown), ['__proto__']);
    assert.equal(estimate.total_credits, 0.0006);
  });

  it('treats a cost equal to the budget as within it', () => {
    assert.equal(withinBudget(0.1, 0.1), true);
    assert.equal(withinBudget(sumCredits(Array.from({ length: 10_000 }, () => 0.00001)), 0.1), true);
    assert.equal(withinBudget(0.1 + 0.2, 0.3), true, 'float noise below a credit unit does not count');
    assert.equal(withinBudget(0.10000001, 0.1), false);
    assert.equal(withinBudget(0.09999999, 0.1), true);
  });

  it('takes the relay fee as a share of the step, 20 % unless configured, rounded to a credit unit', () => {
    assert.equal(RELAY_FEE_SHARE, 0.2);
    assert.equal(relayFee(0.0015), 0.0003);
    assert.equal(relayFee(0.0015, 0.1), 0.00015);
    assert.equal(relayFee(0.0015, 0), 0);
    assert.equal(relayFee(0.0015, 1), 0.0015);
    assert.equal(relayFee(0.00000003), 0.00000001, '0.6 units round to 1');
    assert.equal(relayFee(0.00000002), 0, '0.4 units round to 0');
    for (const share of [-0.1, 1.5, Number.NaN]) assert.throws(() => relayFee(0.001, share), RangeError);
  });
});
