/**
 * The values openEO callbacks compute with. A callback (a reducer, `apply`'s process) is evaluated once for all
 * pixels of a cube, not once per pixel: its `x` is a Field (one number per pixel) and its `data` a FieldArray
 * (one Field per label of the reduced dimension). A process given a Field answers a Field, element by element,
 * with the semantics it has on single numbers; no-data is NaN in a Field. Plain JSON values (numbers, null,
 * arrays) keep their exact semantics, NaN apart from null, which the process examples check.
 */
import type { Label } from './cube.js';

/** One number per pixel; NaN is no-data (and a NaN result). */
export class Field {
  constructor(readonly values: Float64Array) {}
  get length(): number {
    return this.values.length;
  }
}

/** A labeled array per pixel: `rows[j]` holds label j's value at every pixel. */
export class FieldArray {
  constructor(
    readonly labels: readonly Label[],
    readonly rows: readonly Float64Array[],
    readonly length: number,
  ) {}
}

/** A labeled array of plain values (the process examples' `labeled-array`). */
export class LabeledArray {
  constructor(
    readonly labels: readonly Label[],
    readonly values: readonly unknown[],
  ) {}
}

/** A no-data value: null, or undefined (absent). */
export const isNoData = (value: unknown): value is null | undefined => value === null || value === undefined;

/** A Field value as a plain one: NaN is no-data. */
export const fromField = (value: number): number | null => (Number.isNaN(value) ? null : value);

/** A plain result as a Field value: no-data and NaN are NaN, booleans 1 and 0. */
export function toField(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return NaN;
}

/** The elements of an array-like argument (plain array or labeled array) with their labels (null: unlabeled). */
export function elementsOf(value: unknown): { values: readonly unknown[]; labels: readonly Label[] | null } | null {
  if (Array.isArray(value)) return { values: value, labels: null };
  if (value instanceof LabeledArray) return { values: value.values, labels: value.labels };
  return null;
}
