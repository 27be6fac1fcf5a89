import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_JSON_DEPTH, parseStrictJson, StrictJsonError } from '../../core/strict-json.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(300);
const tally = new CaseTally('property', 'strict-json');

/** JSON.parse's verdict on `text`, or 'throws'. */
const native = (text: string): { value: unknown } | 'throws' => {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return 'throws';
  }
};
const strict = (text: string): { value: unknown } | StrictJsonError => {
  try {
    return { value: parseStrictJson(text) };
  } catch (error) {
    if (error instanceof StrictJsonError) return error;
    throw error; // anything else is a parser bug
  }
};

/** Same value as JSON.parse, or refused for the parser's two extra rules only, never another exception. */
function agrees(text: string): void {
  const expected = native(text);
  const actual = strict(text);
  if (expected === 'throws') {
    assert.ok(actual instanceof StrictJsonError, `accepted what JSON.parse refuses: ${JSON.stringify(text)}`);
    return;
  }
  if (actual instanceof StrictJsonError) {
    assert.match(
      actual.message,
      /duplicate key|nests deeper/,
      `refused valid JSON ${JSON.stringify(text)}: ${actual.message}`,
    );
    return;
  }
  assert.deepStrictEqual(actual.value, expected.value);
  // Key order too (deepStrictEqual ignores it).
  assert.equal(JSON.stringify(actual.value), JSON.stringify(expected.value));
}

const whitespace = fc.constantFrom('', ' ', '\n', '\t', '\r\n  ');
const numberText = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map(String),
  fc
    .tuple(
      fc.constantFrom('', '-'),
      fc.constantFrom('0', '1', '9', '10', '0123', '123456789012345678901234567890'),
      fc.constantFrom('', '.', '.0', '.5', '.000001'),
      fc.constantFrom('', 'e', 'E', 'e+', 'e-5', 'E+308', 'e400', 'e-400'),
    )
    .map((parts) => parts.join('')),
);
const jsonish = fc.constantFrom(
  '{',
  '}',
  '[',
  ']',
  ':',
  ',',
  '"',
  '\\',
  'u',
  '0',
  '-',
  '.',
  'e',
  ' ',
  'true',
  'null',
  'a',
);

describe('parseStrictJson', () => {
  after(() => tally.lines().forEach((line) => console.log(line)));

  it('returns what JSON.parse returns for any JSON value, whatever the spacing', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), whitespace, fc.boolean(), (value, space, pretty) => {
        tally.add('agrees', 'values');
        const text = space + JSON.stringify(value, null, pretty ? 2 : undefined) + space;
        assert.deepStrictEqual(parseStrictJson(text), JSON.parse(text));
      }),
      fcParams(RUNS),
    );
  });

  it('agrees with JSON.parse on any string, unicode and escapes included', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        tally.add('agrees', 'strings');
        agrees(JSON.stringify(s));
        agrees(JSON.stringify({ [s]: s }));
        agrees(`"${s}"`); // raw: control characters, lone backslashes, quotes
      }),
      fcParams(RUNS),
    );
  });

  it('agrees with JSON.parse on number spellings, valid and not', () => {
    fc.assert(
      fc.property(numberText, whitespace, (text, space) => {
        tally.add('agrees', 'numbers');
        agrees(space + text + space);
        agrees(`[${text}]`);
      }),
      fcParams(RUNS),
    );
  });

  it('agrees with JSON.parse on mutated and random JSON-like text', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 4 }),
        fc.array(fc.tuple(fc.nat(), fc.nat(2), jsonish), { maxLength: 4 }),
        (value, edits) => {
          tally.add('agrees', 'mutations');
          let text = JSON.stringify(value);
          for (const [at, kind, piece] of edits) {
            const i = text.length === 0 ? 0 : at % (text.length + 1);
            if (kind === 0) text = text.slice(0, i) + piece + text.slice(i);
            else if (kind === 1) text = text.slice(0, i) + text.slice(i + 1);
            else text = text.slice(0, i) + piece + text.slice(i + 1);
          }
          agrees(text);
        },
      ),
      fcParams(RUNS),
    );
    fc.assert(
      fc.property(fc.array(jsonish, { maxLength: 30 }), (pieces) => {
        tally.add('agrees', 'random');
        agrees(pieces.join(''));
      }),
      fcParams(RUNS),
    );
  });

  it('refuses a key repeated in one object, however it is spelled', () => {
    for (const text of [
      '{"a":1,"a":2}',
      '{"a":1,"b":{"c":1},"a":1}',
      '{"a":1,"\\u0061":2}',
      '[{"x":{"k":null,"k":null}}]',
      '{"__proto__":1,"__proto__":2}',
    ]) {
      assert.throws(() => parseStrictJson(text), /duplicate key/, text);
    }
    // The same key in sibling objects is no duplicate.
    assert.deepEqual(parseStrictJson('[{"a":1},{"a":2}]'), [{ a: 1 }, { a: 2 }]);
  });

  it('keeps "__proto__" an own property, as JSON.parse does', () => {
    const value = parseStrictJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    assert.equal(Object.getPrototypeOf(value), Object.prototype);
    assert.deepEqual(Object.keys(value), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it(`allows ${MAX_JSON_DEPTH} levels of nesting and refuses more where it is reached`, () => {
    const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    assert.doesNotThrow(() => parseStrictJson(nested(MAX_JSON_DEPTH)));
    assert.throws(() => parseStrictJson(nested(MAX_JSON_DEPTH + 1)), /nests deeper than 64/);
    assert.throws(() => parseStrictJson(`{"a":${'{"a":'.repeat(MAX_JSON_DEPTH)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`));
    // Half a million levels: refused at level 65, without reading (or recursing into) the rest.
    assert.throws(() => parseStrictJson('['.repeat(500_000)), /nests deeper/);
  });
});
