import assert from 'node:assert/strict';
import {
  BAND_MATH_BANDS,
  MAX_EXPRESSION_DEPTH,
  MAX_EXPRESSION_LENGTH,
  evaluateBandExpression,
  parseBandExpression,
  type BandName,
} from '../../core/band-math.js';
import { ndviStats } from '../../core/ndvi.js';

const parse = (text: string) => {
  const parsed = parseBandExpression(text);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.detail);
  return parsed.value;
};
const refusal = (text: unknown) => {
  const parsed = parseBandExpression(text);
  assert.equal(parsed.ok, false, String(text));
  assert.ok(!parsed.ok);
  assert.equal(parsed.error, 'invalid_request');
  return parsed.detail;
};

describe('band math expressions (core/band-math.ts)', () => {
  it('parses + - * / with the usual precedence, parentheses, numbers and bands', () => {
    const values: Record<string, number> = { B04: 3, B08: 5, B11: 2 };
    const at = (band: BandName) => values[band]!;
    assert.equal(evaluateBandExpression(parse('B08 - B04 * 2').tree, at), -1);
    assert.equal(evaluateBandExpression(parse('(B08 - B04) * 2').tree, at), 4);
    assert.equal(evaluateBandExpression(parse('-B04 + 1.5e1 / b11').tree, at), 4.5);
    assert.deepEqual(parse('(B08-B04)/(B08+B04)').bands, ['B04', 'B08']);
    assert.deepEqual(parse('B8A + B02 + B12').bands, ['B02', 'B8A', 'B12']);
  });

  it('gives no value for a division by zero, never Infinity', () => {
    const tree = parse('(B08-B04)/(B08+B04)').tree;
    assert.equal(
      evaluateBandExpression(tree, () => 0),
      null,
    );
    assert.equal(
      evaluateBandExpression(parse('1/(B04-B04)').tree, () => 7),
      null,
    );
  });

  it('refuses a malformed expression naming the problem and where', () => {
    assert.match(refusal('(B08-B04'), /expected \) at the end/);
    assert.match(refusal('B08 + * B04'), /unexpected \* at character 7/);
    assert.match(refusal('B08 ^ 2'), /unexpected "\^" at character 5/);
    assert.match(refusal('B08 B04'), /unexpected B04 at character 5/);
    assert.match(refusal(''), /expression is required/);
    assert.match(refusal(42), /expression is required/);
  });

  it('refuses an unknown band naming the bands', () => {
    const detail = refusal('(B09-B04)/2');
    assert.match(detail, /unknown band B09 at character 2/);
    assert.match(detail, new RegExp(`the bands are ${BAND_MATH_BANDS.join(', ')}`));
    assert.match(refusal('constructor'), /unknown band constructor/);
  });

  it('refuses an expression too long or nested too deep, before evaluating anything', () => {
    assert.match(refusal('B04+'.repeat(64) + 'B04'), new RegExp(`at most ${MAX_EXPRESSION_LENGTH}`));
    const deep = '('.repeat(MAX_EXPRESSION_DEPTH + 1) + 'B04' + ')'.repeat(MAX_EXPRESSION_DEPTH + 1);
    assert.match(refusal(deep), new RegExp(`nested more than ${MAX_EXPRESSION_DEPTH} levels`));
    assert.ok(parse('('.repeat(MAX_EXPRESSION_DEPTH) + 'B04' + ')'.repeat(MAX_EXPRESSION_DEPTH)));
    assert.match(refusal('-'.repeat(MAX_EXPRESSION_DEPTH + 1) + 'B04'), /nested more than/);
  });

  it('computes NDVI by expression bit for bit as core/ndvi does, on offset digital numbers', () => {
    const red = [1200, 0, 800, 3000, 1000, 65535];
    const nir = [4000, 900, 800, 1000, 1000, 1];
    const offset = -1000;
    const keep = new Uint8Array(red.length).fill(1);
    const expected = ndviStats(red, nir, keep, offset);
    const tree = parse('(B08-B04)/(B08+B04)').tree;
    let sum = 0;
    let valid = 0;
    for (let i = 0; i < red.length; i++) {
      // Band values as the operation reads them: DN 0 is no-data, else DN + offset clamped at 0.
      if (red[i] === 0 || nir[i] === 0) continue;
      const bands: Partial<Record<BandName, number>> = {
        B04: Math.max(0, red[i]! + offset),
        B08: Math.max(0, nir[i]! + offset),
      };
      const value = evaluateBandExpression(tree, (band) => bands[band]!);
      if (value === null) continue;
      sum += value;
      valid++;
    }
    assert.equal(valid, expected.validPixels);
    assert.equal(sum / valid, expected.mean);
  });
});
