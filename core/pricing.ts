import { cellArea } from 'h3-js';
import { fromCreditUnits, toCreditUnits } from './credits.js';
import { isCell } from './h3-cell.js';

/**
 * docs/protocol.md §8 prices and the cost arithmetic behind budgets and settlement. Binary floating point cannot
 * represent 0.00001, so summing credits directly drifts (10 000 × 0.00001 ≠ 0.1). All arithmetic here
 * is in integer credit units of 1e-8 credits; credits appear only at the edges (inputs and results),
 * rounded to 8 decimals.
 */
export const PRICES = Object.freeze({
  inferenceWorkerPerToken: 0.00001,
  inferenceBackbonePerToken: 0,
  tileHit: 0.00001,
  tileMiss: 0.0001,
  imagePerMegapixel: 0.001,
  sensorFusionPerCellEpoch: 0.0005,
  merkleProof: 0.0001,
} as const);

export { CREDIT_UNITS_PER_CREDIT, fromCreditUnits, toCreditUnits } from './credits.js';

const UNIT_PRICES = {
  workerToken: toCreditUnits(PRICES.inferenceWorkerPerToken),
  backboneToken: toCreditUnits(PRICES.inferenceBackbonePerToken),
  tileHit: toCreditUnits(PRICES.tileHit),
  tileMiss: toCreditUnits(PRICES.tileMiss),
  megapixel: toCreditUnits(PRICES.imagePerMegapixel),
  cellEpoch: toCreditUnits(PRICES.sensorFusionPerCellEpoch),
};

/** The relay's share of a step it routed (docs/protocol.md §1.4 relay fee, configurable). */
export const RELAY_FEE_SHARE = 0.2;

/**
 * The relay fee of a step that cost `credits`: `share` (0 to 1, default RELAY_FEE_SHARE) of it, rounded to the
 * nearest credit unit. A share outside [0, 1] would charge the worker more than the step earned: RangeError.
 */
export function relayFee(credits: number, share: number = RELAY_FEE_SHARE): number {
  if (!(share >= 0 && share <= 1)) throw new RangeError(`relay fee share must be in [0, 1]: ${share}`);
  return fromCreditUnits(Math.round(toCreditUnits(credits) * share));
}

/** Output tokens assumed for an inference step that does not state `max_tokens`. */
export const DEFAULT_MAX_TOKENS = 512;
/** Sentinel-2 L2A ground resolution (docs/protocol.md §2.5): one pixel covers 10 m × 10 m. */
const SENTINEL2_PIXEL_M2 = 100;

/**
 * Token count before a tokenizer is known (the serving model is chosen at dispatch): about four
 * characters (UTF-16 code units) per token, rounded up, plus 4 tokens per message for the chat
 * template's role and separators. Deliberately generous: it feeds a worst-case budget check.
 */
export function estimateTokens(messages: readonly { content: string }[]): number {
  return messages.reduce((sum, message) => sum + Math.ceil(message.content.length / 4) + 4, 0);
}

export function tokensCost(tokens: number, provider: 'worker' | 'backbone'): number {
  return fromCreditUnits(tokensUnits(tokens, provider));
}

export function tileCost(hit: boolean): number {
  return fromCreditUnits(hit ? UNIT_PRICES.tileHit : UNIT_PRICES.tileMiss);
}

/** Megapixels of an H3 cell imaged at Sentinel-2's 10 m resolution. */
export function cellMegapixels(cell: string): number {
  if (!isCell(cell)) throw new RangeError(`not a valid H3 cell: ${JSON.stringify(cell)}`);
  return cellArea(cell, 'm2') / SENTINEL2_PIXEL_M2 / 1e6;
}

export function imageCost(megapixels: number): number {
  return fromCreditUnits(imageUnits(megapixels));
}

/** Sum of credit amounts, exact to 1e-8 credits. */
export function sumCredits(values: readonly number[]): number {
  return fromCreditUnits(values.reduce((sum, value) => sum + toCreditUnits(value), 0));
}

/** True when `cost` fits in `budget`; spending exactly the budget is allowed. */
export function withinBudget(cost: number, budget: number): boolean {
  return toCreditUnits(cost) <= toCreditUnits(budget);
}

/** A sensor_fusion step's price: 0.0005 credits per cell-epoch covered. */
export function sensorFusionCost(cellEpochs: number): number {
  return fromCreditUnits(sensorFusionUnits(cellEpochs));
}

function sensorFusionUnits(cellEpochs: number): number {
  if (!Number.isSafeInteger(cellEpochs) || cellEpochs < 0) throw new RangeError(`invalid cell-epochs: ${cellEpochs}`);
  return cellEpochs * UNIT_PRICES.cellEpoch;
}

function tokensUnits(tokens: number, provider: 'worker' | 'backbone'): number {
  return checkTokens(tokens) * (provider === 'worker' ? UNIT_PRICES.workerToken : UNIT_PRICES.backboneToken);
}

function imageUnits(megapixels: number): number {
  if (!Number.isFinite(megapixels) || megapixels < 0) throw new RangeError(`invalid megapixels: ${megapixels}`);
  // Fractional megapixels are priced to the nearest credit unit.
  return Math.round(megapixels * UNIT_PRICES.megapixel);
}

function checkTokens(tokens: number): number {
  if (!Number.isSafeInteger(tokens) || tokens < 0) throw new RangeError(`invalid token count: ${tokens}`);
  return tokens;
}
