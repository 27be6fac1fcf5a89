/**
 * Band math over Sentinel-2 bands (the `band_math` imagery operation): an arithmetic expression of `+ - * /`,
 * parentheses, numbers and band names, as titiler's `expression` and Sentinel Hub's band math take. Parsed by a
 * small recursive-descent grammar, never `eval`; the text is bounded in length and in nesting, so a hostile
 * expression costs at most a few hundred steps to refuse or to evaluate per pixel.
 *
 *   expression := term (("+" | "-") term)*
 *   term       := unary (("*" | "/") unary)*
 *   unary      := "-" unary | primary
 *   primary    := number | band | "(" expression ")"
 */
import { fail, pass, type Check } from './check.js';

/** The Sentinel-2 L2A bands an expression may name; all are read onto the 10 m grid. */
export const BAND_MATH_BANDS = ['B02', 'B03', 'B04', 'B05', 'B06', 'B07', 'B08', 'B8A', 'B11', 'B12'] as const;
export type BandName = (typeof BAND_MATH_BANDS)[number];

export const MAX_EXPRESSION_LENGTH = 256;
/** Deepest nesting of parentheses and unary minus. */
export const MAX_EXPRESSION_DEPTH = 16;

/** A parsed expression: a tree of operations over numbers and bands. */
export type BandExpression =
  | { kind: 'number'; value: number }
  | { kind: 'band'; band: BandName }
  | { kind: 'negate'; operand: BandExpression }
  | { kind: 'binary'; operator: '+' | '-' | '*' | '/'; left: BandExpression; right: BandExpression };

export interface ParsedExpression {
  tree: BandExpression;
  /** The bands the expression reads, in BAND_MATH_BANDS order. */
  bands: BandName[];
}

const isBand = (name: string): name is BandName => (BAND_MATH_BANDS as readonly string[]).includes(name);

interface Token {
  text: string;
  at: number;
}

const TOKEN = /\s*(?:(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)|([A-Za-z][A-Za-z0-9]*)|([-+*/()]))/y;

function tokenize(text: string): Check<Token[]> {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    const start = TOKEN.lastIndex;
    if (/^\s*$/.test(text.slice(start))) break;
    const match = TOKEN.exec(text);
    if (match === null) {
      const at = start + (text.slice(start).length - text.slice(start).trimStart().length);
      return fail('invalid_request', `expression: unexpected ${JSON.stringify(text[at])} at character ${at + 1}`);
    }
    const value = match[1] ?? match[2] ?? match[3]!;
    tokens.push({ text: value, at: match.index + match[0].length - value.length });
  }
  return pass(tokens);
}

/**
 * Parses `text`, or says what is wrong with it (too long, too deep, a character or token out of place, an
 * unknown band, naming the bands there are) as a 400 `invalid_request`.
 */
export function parseBandExpression(text: unknown): Check<ParsedExpression> {
  if (typeof text !== 'string' || text.trim() === '') {
    return fail('invalid_request', 'expression: a band_math expression is required, e.g. (B08-B04)/(B08+B04)');
  }
  if (text.length > MAX_EXPRESSION_LENGTH) {
    return fail('invalid_request', `expression: ${text.length} characters; at most ${MAX_EXPRESSION_LENGTH}`);
  }
  const tokens = tokenize(text);
  if (!tokens.ok) return tokens;
  const list = tokens.value;
  let next = 0;
  const bands = new Set<BandName>();
  const where = (token: Token | undefined) => (token ? `at character ${token.at + 1}` : 'at the end');

  // Each function returns a tree or a failure; depth counts parentheses and unary minus.
  const expression = (depth: number): Check<BandExpression> => {
    let left = term(depth);
    while (left.ok && (list[next]?.text === '+' || list[next]?.text === '-')) {
      const operator = list[next++]!.text as '+' | '-';
      const right = term(depth);
      if (!right.ok) return right;
      left = pass({ kind: 'binary', operator, left: left.value, right: right.value });
    }
    return left;
  };
  const term = (depth: number): Check<BandExpression> => {
    let left = unary(depth);
    while (left.ok && (list[next]?.text === '*' || list[next]?.text === '/')) {
      const operator = list[next++]!.text as '*' | '/';
      const right = unary(depth);
      if (!right.ok) return right;
      left = pass({ kind: 'binary', operator, left: left.value, right: right.value });
    }
    return left;
  };
  const tooDeep = (): Check<BandExpression> =>
    fail('invalid_request', `expression: nested more than ${MAX_EXPRESSION_DEPTH} levels deep`);
  const unary = (depth: number): Check<BandExpression> => {
    if (list[next]?.text !== '-') return primary(depth);
    if (depth >= MAX_EXPRESSION_DEPTH) return tooDeep();
    next++;
    const operand = unary(depth + 1);
    return operand.ok ? pass({ kind: 'negate', operand: operand.value }) : operand;
  };
  const primary = (depth: number): Check<BandExpression> => {
    const token = list[next];
    if (token === undefined) return fail('invalid_request', 'expression: ends where a number, band or ( is expected');
    if (token.text === '(') {
      if (depth >= MAX_EXPRESSION_DEPTH) return tooDeep();
      next++;
      const inner = expression(depth + 1);
      if (!inner.ok) return inner;
      if (list[next]?.text !== ')') {
        return fail('invalid_request', `expression: expected ) ${where(list[next])}`);
      }
      next++;
      return inner;
    }
    if (/^[\d.]/.test(token.text)) {
      next++;
      const value = Number(token.text);
      return Number.isFinite(value)
        ? pass({ kind: 'number', value })
        : fail('invalid_request', `expression: the number ${token.text} is out of range`);
    }
    if (/^[A-Za-z]/.test(token.text)) {
      const name = token.text.toUpperCase();
      if (!isBand(name)) {
        return fail(
          'invalid_request',
          `expression: unknown band ${token.text} ${where(token)}; the bands are ${BAND_MATH_BANDS.join(', ')}`,
        );
      }
      next++;
      bands.add(name);
      return pass({ kind: 'band', band: name });
    }
    return fail('invalid_request', `expression: unexpected ${token.text} ${where(token)}`);
  };

  const tree = expression(0);
  if (!tree.ok) return tree;
  if (next < list.length) {
    return fail('invalid_request', `expression: unexpected ${list[next]!.text} ${where(list[next])}`);
  }
  if (bands.size === 0) {
    return fail('invalid_request', `expression: names no band; the bands are ${BAND_MATH_BANDS.join(', ')}`);
  }
  return pass({ tree: tree.value, bands: BAND_MATH_BANDS.filter((band) => bands.has(band)) });
}

/**
 * The expression's value for one pixel, given each band's value there; null where it has none (a division by
 * zero, or a result that is not a finite number): such a pixel is no-data, not Infinity.
 */
export function evaluateBandExpression(tree: BandExpression, value: (band: BandName) => number): number | null {
  const result = evaluate(tree, value);
  return result !== null && Number.isFinite(result) ? result : null;
}

function evaluate(node: BandExpression, value: (band: BandName) => number): number | null {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'band':
      return value(node.band);
    case 'negate': {
      const operand = evaluate(node.operand, value);
      return operand === null ? null : -operand;
    }
    case 'binary': {
      const left = evaluate(node.left, value);
      if (left === null) return null;
      const right = evaluate(node.right, value);
      if (right === null) return null;
      if (node.operator === '+') return left + right;
      if (node.operator === '-') return left - right;
      if (node.operator === '*') return left * right;
      return right === 0 ? null : left / right;
    }
  }
}

/**
 * One band of an expression on the output (10 m) pixel grid: its digital numbers, and for a band read on another
 * grid (20 m), the index into `data` of the pixel under each output pixel's centre, −1 where there is none
 * (nearest neighbour, as flood_classify resamples B11).
 */
export interface BandPixels {
  data: ArrayLike<number>;
  index: ArrayLike<number> | null;
}

export interface BandMathStats {
  /** Pixels that produced a value. */
  validPixels: number;
  /**
   * Pixels kept by the mask but with no value: a band without data there (DN 0, or no pixel under the centre), a
   * division by zero or a result that is not a finite number.
   */
  droppedPixels: number;
  /** All null when validPixels is 0. */
  mean: number | null;
  min: number | null;
  max: number | null;
  p10: number | null;
  p50: number | null;
  p90: number | null;
}

/**
 * The nearest-rank percentile of sorted values: the smallest value with at least `p` % of the values at or below
 * it, so it is always one of the pixels' own values.
 */
const nearestRank = (sorted: Float64Array, p: number): number =>
  sorted[Math.max(0, Math.ceil((p * sorted.length) / 100) - 1)]!;

/**
 * The expression over the pixels whose `keep` byte is 1 (docs/protocol.md §2.5 band_math): each band's value is
 * max(0, DN + offset), the digital number with core/ndvi's baseline offset clamped at 0 as NDVI does, and a DN of
 * 0 is Sentinel-2's no-data. Pure: the bytes a record names, decoded, give the same statistics, so a verifier can
 * recompute them. The mean sums in pixel order as core/ndvi `ndviStats` does, so `(B08-B04)/(B08+B04)` gives its
 * statistics bit for bit.
 */
export function bandMathStats(
  parsed: ParsedExpression,
  bands: Partial<Record<BandName, BandPixels>>,
  keep: Uint8Array,
  offset: number,
): BandMathStats {
  const used = parsed.bands.map((band) => {
    const pixels = bands[band];
    if (pixels === undefined) throw new RangeError(`no pixels for band ${band}`);
    if (pixels.index === null ? pixels.data.length !== keep.length : pixels.index.length !== keep.length) {
      throw new RangeError(`band ${band} and mask sizes differ`);
    }
    return { band, ...pixels };
  });
  const current: Partial<Record<BandName, number>> = {};
  const valueOf = (band: BandName) => current[band]!;
  const values = new Float64Array(keep.reduce((sum, byte) => sum + (byte === 1 ? 1 : 0), 0));
  let validPixels = 0;
  let droppedPixels = 0;
  let sum = 0;
  let min = Infinity;
  let max = -Infinity;
  pixels: for (let i = 0; i < keep.length; i++) {
    if (keep[i] !== 1) continue;
    for (const { band, data, index } of used) {
      const at = index === null ? i : index[i]!;
      const dn = at < 0 ? 0 : data[at]!;
      if (dn === 0) {
        droppedPixels++;
        continue pixels;
      }
      current[band] = Math.max(0, dn + offset);
    }
    const value = evaluateBandExpression(parsed.tree, valueOf);
    if (value === null) {
      droppedPixels++;
      continue;
    }
    values[validPixels++] = value;
    sum += value;
    if (value < min) min = value;
    if (value > max) max = value;
  }
  if (validPixels === 0) {
    return { validPixels, droppedPixels, mean: null, min: null, max: null, p10: null, p50: null, p90: null };
  }
  const sorted = values.subarray(0, validPixels).sort();
  return {
    validPixels,
    droppedPixels,
    mean: sum / validPixels,
    min,
    max,
    p10: nearestRank(sorted, 10),
    p50: nearestRank(sorted, 50),
    p90: nearestRank(sorted, 90),
  };
}
