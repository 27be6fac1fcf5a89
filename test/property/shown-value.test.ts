import assert from 'node:assert/strict';
import fc from 'fast-check';
import { shownValue } from '../../core/shown-value.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(200);
const tally = new CaseTally('property', 'shown-value');

/** Nesting deeper than JSON.stringify can write (it overflows the stack at some thousands of levels). */
const deep = fc
  .tuple(fc.integer({ min: 1, max: 200_000 }), fc.boolean())
  .map(([levels, array]) =>
    JSON.parse(array ? '['.repeat(levels) + ']'.repeat(levels) : '{"a":'.repeat(levels) + '1' + '}'.repeat(levels)),
  );

describe('property: shownValue (core/shown-value.ts), the bounded rendering of untrusted values in error details', () => {
  after(() => tally.print());

  it('never throws and stays short, whatever the value: deep, huge, wide or odd', () => {
    const anything = fc.oneof(
      fc.anything(),
      deep,
      fc.integer({ min: 1, max: 2_000_000 }).map((n) => 'x'.repeat(n)),
      fc.integer({ min: 1, max: 100_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
    );
    fc.assert(
      fc.property(anything, fc.integer({ min: 1, max: 300 }), (value, max) => {
        tally.add('bounded', 'shownValue');
        const text = shownValue(value, max);
        assert.equal(typeof text, 'string');
        assert.ok(text.length <= max + 1, `${text.length} > ${max + 1}`);
      }),
      fcParams(RUNS),
    );
  });

  it('renders small JSON values exactly as JSON.stringify does', () => {
    const small = fc.jsonValue({ maxDepth: 2 }).filter((v) => {
      const text = JSON.stringify(v);
      const wide = (x: unknown): boolean =>
        typeof x === 'object' && x !== null && (Object.keys(x).length > 10 || Object.values(x).some(wide));
      return text.length <= 120 && !wide(v) && !text.includes('-0');
    });
    fc.assert(
      fc.property(small, (value) => {
        tally.add('small-equals-json', 'shownValue');
        assert.equal(shownValue(value), JSON.stringify(value));
      }),
      fcParams(RUNS),
    );
  });
});
