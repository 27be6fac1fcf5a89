/**
 * The scalar processes of openEO (math, comparisons, logic, reducers, array access) with their official
 * semantics on plain values (no-data is null, NaN is a number), lifted to Fields (one value per pixel, NaN as
 * no-data) and FieldArrays (a labeled array per pixel) so a callback runs once for a whole cube.
 */
import type { Label } from './cube.js';
import { OpenEoError } from './errors.js';
import { Field, FieldArray, LabeledArray, elementsOf, fromField, isNoData, toField } from './values.js';

const invalid = (process: string, parameter: string, reason: string) =>
  new OpenEoError(
    'ProcessParameterInvalid',
    `The value passed for parameter '${parameter}' in process '${process}' is invalid: ${reason}`,
  );

/** The length of the Fields among `values` (all must agree), or -1 when none is a Field. */
function fieldLength(process: string, values: readonly unknown[]): number {
  let length = -1;
  for (const v of values) {
    if (v instanceof Field) {
      if (length >= 0 && v.length !== length) throw new OpenEoError('Internal', `${process}: fields of unequal size`);
      length = v.length;
    } else if (v instanceof FieldArray || v instanceof LabeledArray || Array.isArray(v)) {
      throw invalid(process, 'x', 'expected a number, not an array');
    }
  }
  return length;
}

/**
 * Applies a scalar function to its arguments, element by element when any is a Field (plain arguments are
 * broadcast; a Field's NaN is given as null, a null or boolean result stored as NaN or 1/0).
 */
export function lift(process: string, args: readonly unknown[], fn: (...values: unknown[]) => unknown): unknown {
  const n = fieldLength(process, args);
  if (n < 0) return fn(...args);
  const out = new Float64Array(n);
  const values = new Array<unknown>(args.length);
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < args.length; k++) {
      const a = args[k];
      values[k] = a instanceof Field ? fromField(a.values[i]!) : a;
    }
    out[i] = toField(fn(...values));
  }
  return new Field(out);
}

const number = (process: string, parameter: string, value: unknown): number | null => {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'number') throw invalid(process, parameter, `expected a number, got ${typeof value}`);
  return value;
};

/** A two-number process whose result is no-data when either is. */
const arithmetic =
  (process: string, fn: (x: number, y: number) => number) =>
  (args: Record<string, unknown>): unknown =>
    lift(process, [args.x, args.y], (x, y) => {
      const a = number(process, 'x', x);
      const b = number(process, 'y', y);
      return a === null || b === null ? null : fn(a, b);
    });

export const add = arithmetic('add', (x, y) => x + y);
export const subtract = arithmetic('subtract', (x, y) => x - y);
export const multiply = arithmetic('multiply', (x, y) => x * y);
// IEEE 754 throughout: x / 0 is ±Infinity or NaN, which the definition allows instead of DivisionByZero.
export const divide = arithmetic('divide', (x, y) => x / y);
export const normalizedDifference = arithmetic('normalized_difference', (x, y) => (x - y) / (x + y));

export function linearScaleRange(args: Record<string, unknown>): unknown {
  return lift(
    'linear_scale_range',
    [args.x, args.inputMin, args.inputMax, args.outputMin, args.outputMax],
    (x, inMin, inMax, outMin, outMax) => {
      const v = number('linear_scale_range', 'x', x);
      if (v === null) return null;
      const [a, b, c, d] = [
        number('linear_scale_range', 'inputMin', inMin) ?? NaN,
        number('linear_scale_range', 'inputMax', inMax) ?? NaN,
        number('linear_scale_range', 'outputMin', outMin) ?? 0,
        number('linear_scale_range', 'outputMax', outMax) ?? 1,
      ];
      const clipped = Math.min(Math.max(v, Math.min(a, b)), Math.max(a, b));
      return ((clipped - a) / (b - a)) * (d - c) + c;
    },
  );
}

/** Comparison: no-data if either is; numbers compared, anything else of another type is false. */
const comparison =
  (process: string, fn: (x: number, y: number) => boolean) =>
  (args: Record<string, unknown>): unknown =>
    lift(process, [args.x, args.y], (x, y) => {
      if (isNoData(x) || isNoData(y)) return null;
      return typeof x === 'number' && typeof y === 'number' ? fn(x, y) : false;
    });

export const lt = comparison('lt', (x, y) => x < y);
export const lte = comparison('lte', (x, y) => x <= y);
export const gt = comparison('gt', (x, y) => x > y);
export const gte = comparison('gte', (x, y) => x >= y);

function equals(x: unknown, y: unknown, delta: unknown, caseSensitive: unknown): boolean | null {
  if (isNoData(x) || isNoData(y)) return null;
  if (typeof x === 'number' && typeof y === 'number') {
    return typeof delta === 'number' ? Math.abs(x - y) <= delta : x === y;
  }
  if (typeof x === 'string' && typeof y === 'string') {
    return caseSensitive === false ? x.toLowerCase() === y.toLowerCase() : x === y;
  }
  if (typeof x === 'boolean' && typeof y === 'boolean') return x === y;
  return false;
}

export const eq = (args: Record<string, unknown>): unknown =>
  lift('eq', [args.x, args.y], (x, y) => equals(x, y, args.delta, args.case_sensitive));

export const neq = (args: Record<string, unknown>): unknown =>
  lift('neq', [args.x, args.y], (x, y) => {
    const same = equals(x, y, args.delta, args.case_sensitive);
    return same === null ? null : !same;
  });

/** A boolean argument: a Field's numbers are true when non-zero. */
const truth = (process: string, parameter: string, value: unknown): boolean | null => {
  if (isNoData(value)) return null;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isNaN(value) ? null : value !== 0;
  throw invalid(process, parameter, 'expected a boolean');
};

export const or = (args: Record<string, unknown>): unknown =>
  lift('or', [args.x, args.y], (x, y) => {
    const a = truth('or', 'x', x);
    const b = truth('or', 'y', y);
    if (a === true || b === true) return true;
    return a === null || b === null ? null : false;
  });

export const and = (args: Record<string, unknown>): unknown =>
  lift('and', [args.x, args.y], (x, y) => {
    const a = truth('and', 'x', x);
    const b = truth('and', 'y', y);
    if (a === false || b === false) return false;
    return a === null || b === null ? null : true;
  });

export const not = (args: Record<string, unknown>): unknown =>
  lift('not', [args.x], (x) => {
    const a = truth('not', 'x', x);
    return a === null ? null : !a;
  });

/** The statistics of the reducers, on the numbers of one array (no-data already dropped, none left). */
const STATISTICS = {
  mean: (values: number[]) => values.reduce((s, v) => s + v, 0) / values.length,
  min: (values: number[]) => values.reduce((m, v) => (Number.isNaN(v) || v < m ? v : m), Infinity),
  max: (values: number[]) => values.reduce((m, v) => (Number.isNaN(v) || v > m ? v : m), -Infinity),
  median: (values: number[]) => {
    if (values.some(Number.isNaN)) return NaN;
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  },
};
export type Statistic = keyof typeof STATISTICS;

/** A reducer process (`mean`, `min`, `max`, `median`) over a plain array, a labeled array or a FieldArray. */
export const reducer =
  (process: Statistic) =>
  (args: Record<string, unknown>): unknown => {
    const ignore = args.ignore_nodata !== false;
    const statistic = STATISTICS[process];
    if (args.data instanceof FieldArray)
      return new Field(reduceRows(args.data.rows, args.data.length, process, ignore));
    const elements = elementsOf(args.data);
    if (elements === null) throw invalid(process, 'data', 'expected an array');
    const values: number[] = [];
    for (const v of elements.values) {
      if (isNoData(v)) {
        if (!ignore) return null;
        continue;
      }
      if (typeof v !== 'number') throw invalid(process, 'data', 'expected an array of numbers');
      values.push(v);
    }
    return values.length === 0 ? null : statistic(values);
  };

/** A statistic of each column of `rows` (each of `length` values); a Field's NaN is no-data. */
export function reduceRows(
  rows: readonly Float64Array[],
  length: number,
  process: Statistic,
  ignoreNoData = true,
): Float64Array {
  const out = new Float64Array(length);
  const statistic = STATISTICS[process];
  const column: number[] = [];
  for (let i = 0; i < length; i++) {
    column.length = 0;
    let missing = false;
    for (const row of rows) {
      const v = row[i]!;
      if (Number.isNaN(v)) missing = true;
      else column.push(v);
    }
    out[i] = column.length === 0 || (missing && !ignoreNoData) ? NaN : statistic(column);
  }
  return out;
}

/** `array_element`: by index or by label, from a plain, labeled or per-pixel array. */
export function arrayElement(args: Record<string, unknown>): unknown {
  const { data, index, label } = args;
  const hasIndex = !isNoData(index);
  const hasLabel = !isNoData(label);
  if (!hasIndex && !hasLabel) {
    throw new OpenEoError(
      'ArrayElementParameterMissing',
      'The array element parameter is missing: give index or label.',
    );
  }
  if (hasIndex && hasLabel) {
    throw new OpenEoError('ArrayElementParameterConflict', 'The parameters index and label must not both be given.');
  }
  const labels: readonly Label[] | null =
    data instanceof FieldArray ? data.labels : data instanceof LabeledArray ? data.labels : null;
  const count = data instanceof FieldArray ? data.rows.length : (elementsOf(data)?.values.length ?? -1);
  if (count < 0) throw invalid('array_element', 'data', 'expected an array');
  let at: number;
  if (hasIndex) {
    if (typeof index !== 'number' || !Number.isInteger(index))
      throw invalid('array_element', 'index', 'expected an integer');
    at = index;
  } else {
    if (labels === null) throw new OpenEoError('ArrayNotLabeled', 'The array is not a labeled array.');
    at = labels.findIndex((l) => l === label);
  }
  if (at < 0 || at >= count) {
    if (args.return_nodata === true) {
      return data instanceof FieldArray ? new Field(new Float64Array(data.length).fill(NaN)) : null;
    }
    throw new OpenEoError('ArrayElementNotAvailable', 'The array has no element with the specified index or label.');
  }
  if (data instanceof FieldArray) return new Field(data.rows[at]!);
  return elementsOf(data)!.values[at];
}
