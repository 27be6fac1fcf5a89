/**
 * Credit arithmetic (docs/protocol.md §8): binary floating point cannot represent 0.00001, so sums of credits drift
 * (10 000 × 0.00001 ≠ 0.1). Amounts are added as integer units of 1e-8 credits and appear as credits only at
 * the edges, rounded to 8 decimals. No dependencies: workflows use it.
 */
/** Credit units per credit: the smallest amount Geofabric prices or settles is 1e-8 credits. */
export const CREDIT_UNITS_PER_CREDIT = 100_000_000;

/** Credits → integer credit units, rounded to the nearest unit. Throws RangeError if not representable. */
export function toCreditUnits(credits: number): number {
  const units = Math.round(credits * CREDIT_UNITS_PER_CREDIT);
  if (!Number.isSafeInteger(units)) throw new RangeError(`not a representable credit amount: ${credits}`);
  return units === 0 ? 0 : units; // never -0
}

/** Integer credit units → credits; division of exact integers rounds once, to the nearest double. */
export function fromCreditUnits(units: number): number {
  if (!Number.isSafeInteger(units)) throw new RangeError(`credit units must be a safe integer: ${units}`);
  return units === 0 ? 0 : units / CREDIT_UNITS_PER_CREDIT;
}
