/**
 * JSON.parse for untrusted bodies: the same values (RFC 8259 grammar, same numbers and strings), in one
 * pass, but refusing what JSON.parse lets through and what makes a cheap request expensive:
 * - a key repeated in one object (JSON.parse keeps the last; a proxy or log keeping the first would see
 *   a different request than the one signed);
 * - nesting deeper than `maxDepth` (refused where it is reached, so a 500,000-deep array costs 64 steps).
 * Every failure is a StrictJsonError with the offset; callers map it to 400 `invalid_json`.
 */
import { fail, pass, type Check } from './check.js';

/** Default nesting limit (objects and arrays): far above any request of docs/protocol.md, far below a stack. */
export const MAX_JSON_DEPTH = 64;

export class StrictJsonError extends Error {
  override name = 'StrictJsonError';
}

// Character codes.
const Tab = 9;
const Lf = 10;
const Cr = 13;
const Space = 32;
const Quote = 34;
const Plus = 43;
const Comma = 44;
const Minus = 45;
const Dot = 46;
const Zero = 48;
const Nine = 57;
const Colon = 58;
const UpperE = 69;
const LowerE = 101;
const OpenSquare = 91;
const Backslash = 92;
const CloseSquare = 93;
const OpenCurly = 123;
const CloseCurly = 125;

/** What a string's plain fast path cannot take: an escape or a raw control character. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON strings may not hold raw
const SPECIAL = /[\\\u0000-\u001f]/;
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => 10 ** k);
const ESCAPES: Record<number, string> = {
  34: '"',
  92: '\\',
  47: '/',
  98: '\b',
  102: '\f',
  110: '\n',
  114: '\r',
  116: '\t',
};

export function parseStrictJson(text: string, maxDepth: number = MAX_JSON_DEPTH): unknown {
  let i = 0;
  const n = text.length;

  const error = (message: string): never => {
    throw new StrictJsonError(`${message} at position ${i}`);
  };
  const skipSpace = (): void => {
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c !== Space && c !== Lf && c !== Cr && c !== Tab) return;
    }
  };
  const unexpected = (): never =>
    i >= n ? error('unexpected end of JSON') : error(`unexpected character ${JSON.stringify(text[i])}`);

  const parseString = (): string => {
    i++; // opening quote
    const start = i;
    // Most strings have no escape or control character: found by the engine's native search, then one slice.
    const close = text.indexOf('"', i);
    if (close >= 0) {
      const plain = text.slice(start, close);
      if (!SPECIAL.test(plain)) {
        i = close + 1;
        return plain;
      }
    }
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === Quote) return text.slice(start, i++);
      if (c === Backslash) break;
      if (c < 0x20) error('unescaped control character in string');
    }
    let out = text.slice(start, i);
    let run = i;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === Quote) {
        out += text.slice(run, i++);
        return out;
      }
      if (c < 0x20) error('unescaped control character in string');
      if (c !== Backslash) {
        i++;
        continue;
      }
      out += text.slice(run, i);
      const e = text.charCodeAt(i + 1);
      if (e === 117 /* u */) {
        const hex = text.slice(i + 2, i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) error('bad \\u escape');
        out += String.fromCharCode(parseInt(hex, 16));
        i += 6;
      } else {
        const plain = ESCAPES[e];
        if (plain === undefined) error('bad escape');
        out += plain;
        i += 2;
      }
      run = i;
    }
    return error('unterminated string');
  };

  const digits = (): boolean => {
    const start = i;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c < Zero || c > Nine) break;
      i++;
    }
    return i > start;
  };
  const parseNumber = (): number => {
    const start = i;
    const negative = text.charCodeAt(i) === Minus;
    if (negative) i++;
    // The digits accumulate into an exact integer; with at most 15 of them and at most 22 after the point, the
    // integer and 10^k are exact doubles and one division rounds correctly: the double Number() gives, without
    // slicing. Anything else (exponents, long mantissas) goes through Number().
    let mantissa = 0;
    let count = 0;
    let scale = 0;
    let c = text.charCodeAt(i);
    if (c === Zero) c = text.charCodeAt(++i);
    else if (c > Zero && c <= Nine) {
      do {
        mantissa = mantissa * 10 + (c - Zero);
        count++;
        c = text.charCodeAt(++i);
      } while (c >= Zero && c <= Nine);
    } else error('bad number');
    if (c === Dot) {
      c = text.charCodeAt(++i);
      if (c < Zero || c > Nine || Number.isNaN(c)) error('bad number');
      do {
        mantissa = mantissa * 10 + (c - Zero);
        count++;
        scale++;
        c = text.charCodeAt(++i);
      } while (c >= Zero && c <= Nine);
    }
    if (c === LowerE || c === UpperE) {
      i++;
      const sign = text.charCodeAt(i);
      if (sign === Plus || sign === Minus) i++;
      if (!digits()) error('bad number');
      return Number(text.slice(start, i));
    }
    if (count > 15 || scale > 22) return Number(text.slice(start, i));
    const value = scale === 0 ? mantissa : mantissa / (POWERS_OF_TEN[scale] as number);
    return negative ? -value : value;
  };
  const literal = (word: string, value: unknown): unknown => {
    if (!text.startsWith(word, i)) unexpected();
    i += word.length;
    return value;
  };

  const parseValue = (depth: number): unknown => {
    skipSpace();
    const c = text.charCodeAt(i);
    if (c === Quote) return parseString();
    if (c === OpenCurly || c === OpenSquare) {
      if (depth >= maxDepth) error(`JSON nests deeper than ${maxDepth} levels`);
      return c === OpenCurly ? parseObject(depth + 1) : parseArray(depth + 1);
    }
    if (c === Minus || (c >= Zero && c <= Nine)) return parseNumber();
    if (c === 116) return literal('true', true);
    if (c === 102) return literal('false', false);
    if (c === 110) return literal('null', null);
    return unexpected();
  };

  const parseArray = (depth: number): unknown[] => {
    i++;
    const out: unknown[] = [];
    skipSpace();
    if (text.charCodeAt(i) === CloseSquare) {
      i++;
      return out;
    }
    for (;;) {
      out.push(parseValue(depth));
      skipSpace();
      const c = text.charCodeAt(i);
      if (c === Comma) i++;
      else if (c === CloseSquare) {
        i++;
        return out;
      } else unexpected();
    }
  };

  const parseObject = (depth: number): Record<string, unknown> => {
    i++;
    const out: Record<string, unknown> = {};
    skipSpace();
    if (text.charCodeAt(i) === CloseCurly) {
      i++;
      return out;
    }
    for (;;) {
      skipSpace();
      if (text.charCodeAt(i) !== Quote) unexpected();
      const keyAt = i;
      const key = parseString();
      skipSpace();
      if (text.charCodeAt(i) !== Colon) unexpected();
      i++;
      const value = parseValue(depth);
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        i = keyAt;
        error(`duplicate key ${JSON.stringify(key)}`);
      }
      // An own "__proto__" data property, as JSON.parse makes, never the prototype.
      if (key === '__proto__') {
        Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      } else out[key] = value;
      skipSpace();
      const c = text.charCodeAt(i);
      if (c === Comma) i++;
      else if (c === CloseCurly) {
        i++;
        return out;
      } else unexpected();
    }
  };

  const value = parseValue(0);
  skipSpace();
  if (i < n) unexpected();
  return value;
}

/**
 * parseStrictJson for a request's JSON (a body, a decoded header): any refusal is the Check failure
 * `invalid_json` naming `what`, for callers that answer 400.
 */
export function checkJsonText(text: string, what: string): Check<unknown> {
  try {
    return pass(parseStrictJson(text));
  } catch (error) {
    if (error instanceof StrictJsonError) return fail('invalid_json', `${what} is not valid JSON: ${error.message}`);
    throw error;
  }
}
