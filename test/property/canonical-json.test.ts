import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CanonicalJsonError, MAX_CANONICAL_DEPTH, canonicalJson } from '../../core/canonical-json.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(200);
const tally = new CaseTally('property', 'canonical-json');

/** JSON values as a JSON round trip gives them back (no -0, which JSON writes as 0). */
const json = fc
  .jsonValue({ maxDepth: 5 })
  .map((value) => JSON.parse(JSON.stringify(value)) as unknown)
  .filter((value) => value !== undefined);

/** An independent JCS reference: keys compared as UTF-16 code unit strings, values as JSON.stringify writes them. */
function reference(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The same value with every object's keys inserted in the order `order` picks (a seeded shuffle). */
function reordered(value: unknown, order: (keys: string[]) => string[]): unknown {
  if (Array.isArray(value)) return value.map((item) => reordered(item, order));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of order(Object.keys(value))) {
    // defineProperty, not assignment: a "__proto__" key must stay an own data property.
    Object.defineProperty(out, key, {
      value: reordered((value as Record<string, unknown>)[key], order),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

const check = <T>(name: string, arb: fc.Arbitrary<T>, predicate: (value: T) => void, runs = RUNS) => {
  fc.assert(
    fc.property(arb, (value) => {
      tally.add(name, 'canonicalJson');
      predicate(value);
    }),
    fcParams(runs),
  );
};

/** RFC 8785 section 3.2.2.3 / ECMAScript Number::toString shapes. */
const ES_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d*[1-9])?(?:e[+-][1-9]\d{0,2})?$/;

describe('property: canonical JSON (RFC 8785)', () => {
  after(() => tally.print());

  it('parses back to the value it canonicalised', () => {
    check('round-trip', json, (value) => assert.deepEqual(JSON.parse(canonicalJson(value)), value));
  });

  it('is idempotent: canonicalising the canonical text again changes nothing', () => {
    check('idempotent', json, (value) => {
      const once = canonicalJson(value);
      assert.equal(canonicalJson(JSON.parse(once)), once);
    });
  });

  it('equals an independent reference (keys by UTF-16 code units, no whitespace)', () => {
    check('reference', json, (value) => assert.equal(canonicalJson(value), reference(value)));
  });

  it('does not depend on key insertion order', () => {
    check('key-order', fc.tuple(json, fc.integer()), ([value, seed]) => {
      const shuffle = (keys: string[]) => {
        const out = [...keys];
        let state = seed >>> 0 || 1;
        for (let i = out.length - 1; i > 0; i--) {
          state = (state * 1103515245 + 12345) >>> 0;
          const j = state % (i + 1);
          [out[i], out[j]] = [out[j] as string, out[i] as string];
        }
        return out;
      };
      assert.equal(canonicalJson(reordered(value, shuffle)), canonicalJson(value));
      assert.equal(canonicalJson(reordered(value, (keys) => [...keys].reverse())), canonicalJson(value));
    });
  });

  it('writes every finite double as ECMAScript Number::toString, exactly and round-trippably', () => {
    check(
      'number-format',
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      (d) => {
        const text = canonicalJson(d);
        assert.equal(text, Object.is(d, -0) ? '0' : String(d));
        assert.match(text, ES_NUMBER);
        assert.equal(Number(text), d === 0 ? 0 : d);
        // Plain notation exactly for 1e-6 <= |d| < 1e21 (RFC 8785 appendix B).
        const magnitude = Math.abs(d);
        assert.equal(text.includes('e'), magnitude !== 0 && (magnitude < 1e-6 || magnitude >= 1e21), text);
      },
      RUNS * 5,
    );
  });

  it('escapes any string (lone surrogates included) as JSON.stringify does, and reads it back', () => {
    check('strings', fc.string({ unit: 'binary', maxLength: 64 }), (s) => {
      const text = canonicalJson(s);
      assert.equal(text, JSON.stringify(s));
      assert.equal(JSON.parse(text), s);
      assert.equal(canonicalJson({ [s]: s }), `{${text}:${text}}`);
    });
  });

  it('refuses NaN and the infinities anywhere, naming where', () => {
    const bad = fc.constantFrom(NaN, Infinity, -Infinity);
    check('non-finite', fc.tuple(fc.array(fc.string({ maxLength: 4 }), { maxLength: 4 }), bad), ([path, n]) => {
      let value: unknown = n;
      for (const key of [...path].reverse()) value = key.length % 2 === 0 ? [value] : { [key]: value };
      assert.throws(() => canonicalJson(value), CanonicalJsonError);
    });
  });

  it('refuses nesting beyond MAX_CANONICAL_DEPTH with CanonicalJsonError, not a stack overflow', () => {
    // Regression (fuzz): a signed 1 MiB body of 400,000 `[` crashed gate 1 with a RangeError → 500.
    const nest = (levels: number): unknown => JSON.parse('['.repeat(levels) + ']'.repeat(levels));
    assert.equal(canonicalJson(nest(MAX_CANONICAL_DEPTH)).length, 2 * MAX_CANONICAL_DEPTH);
    for (const levels of [MAX_CANONICAL_DEPTH + 1, 10_000, 400_000]) {
      assert.throws(() => canonicalJson({ x: nest(levels) }), {
        name: 'CanonicalJsonError',
        message: /nests deeper than 1000 levels/,
      });
    }
    const deepObject = JSON.parse('{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000)) as unknown;
    assert.throws(() => canonicalJson(deepObject), CanonicalJsonError);
  });
});
