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
  const parser = new Parser(text, maxDepth);
  const value = parser.parseValue(0);
  parser.skipSpace();
  if (parser.i < parser.n) parser.unexpected();
  return value;
}

/**
 * The parser's state and steps as methods, not closures made per call: a body is parsed on every request, and
 * each closure (named at run time under tsx) cost more than the parse of a small body.
 */
class Parser {
  i = 0;
  readonly n: number;

  constructor(
    readonly text: string,
    readonly maxDepth: number,
  ) {
    this.n = text.length;
  }

  error(message: string): never {
    throw new StrictJsonError(`${message} at position ${this.i}`);
  }

  skipSpace(): void {
    const text = this.text;
    let i = this.i;
    for (; i < this.n; i++) {
      const c = text.charCodeAt(i);
      if (c !== Space && c !== Lf && c !== Cr && c !== Tab) break;
    }
    this.i = i;
  }

  unexpected(): never {
    return this.i >= this.n
      ? this.error('unexpected end of JSON')
      : this.error(`unexpected character ${JSON.stringify(this.text[this.i])}`);
  }

  parseString(): string {
    const text = this.text;
    const n = this.n;
    this.i++; // opening quote
    const start = this.i;
    // Most strings have no escape or control character: found by the engine's native search, then one slice.
    const close = text.indexOf('"', this.i);
    if (close >= 0) {
      const plain = text.slice(start, close);
      if (!SPECIAL.test(plain)) {
        this.i = close + 1;
        return plain;
      }
    }
    for (; this.i < n; this.i++) {
      const c = text.charCodeAt(this.i);
      if (c === Quote) return text.slice(start, this.i++);
      if (c === Backslash) break;
      if (c < 0x20) this.error('unescaped control character in string');
    }
    let out = text.slice(start, this.i);
    let run = this.i;
    while (this.i < n) {
      const c = text.charCodeAt(this.i);
      if (c === Quote) {
        out += text.slice(run, this.i++);
        return out;
      }
      if (c < 0x20) this.error('unescaped control character in string');
      if (c !== Backslash) {
        this.i++;
        continue;
      }
      out += text.slice(run, this.i);
      const e = text.charCodeAt(this.i + 1);
      if (e === 117 /* u */) {
        const hex = text.slice(this.i + 2, this.i + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) this.error('bad \\u escape');
        out += String.fromCharCode(parseInt(hex, 16));
        this.i += 6;
      } else {
        const plain = ESCAPES[e];
        if (plain === undefined) this.error('bad escape');
        out += plain;
        this.i += 2;
      }
      run = this.i;
    }
    return this.error('unterminated string');
  }

  digits(): boolean {
    const start = this.i;
    while (this.i < this.n) {
      const c = this.text.charCodeAt(this.i);
      if (c < Zero || c > Nine) break;
      this.i++;
    }
    return this.i > start;
  }

  parseNumber(): number {
    const text = this.text;
    const start = this.i;
    const negative = text.charCodeAt(this.i) === Minus;
    if (negative) this.i++;
    // The digits accumulate into an exact integer; with at most 15 of them and at most 22 after the point, the
    // integer and 10^k are exact doubles and one division rounds correctly: the double Number() gives, without
    // slicing. Anything else (exponents, long mantissas) goes through Number().
    let mantissa = 0;
    let count = 0;
    let scale = 0;
    let c = text.charCodeAt(this.i);
    if (c === Zero) c = text.charCodeAt(++this.i);
    else if (c > Zero && c <= Nine) {
      do {
        mantissa = mantissa * 10 + (c - Zero);
        count++;
        c = text.charCodeAt(++this.i);
      } while (c >= Zero && c <= Nine);
    } else this.error('bad number');
    if (c === Dot) {
      c = text.charCodeAt(++this.i);
      if (c < Zero || c > Nine || Number.isNaN(c)) this.error('bad number');
      do {
        mantissa = mantissa * 10 + (c - Zero);
        count++;
        scale++;
        c = text.charCodeAt(++this.i);
      } while (c >= Zero && c <= Nine);
    }
    if (c === LowerE || c === UpperE) {
      this.i++;
      const sign = text.charCodeAt(this.i);
      if (sign === Plus || sign === Minus) this.i++;
      if (!this.digits()) this.error('bad number');
      return Number(text.slice(start, this.i));
    }
    if (count > 15 || scale > 22) return Number(text.slice(start, this.i));
    const value = scale === 0 ? mantissa : mantissa / (POWERS_OF_TEN[scale] as number);
    return negative ? -value : value;
  }

  literal(word: string, value: unknown): unknown {
    if (!this.text.startsWith(word, this.i)) this.unexpected();
    this.i += word.length;
    return value;
  }

  parseValue(depth: number): unknown {
    this.skipSpace();
    const c = this.text.charCodeAt(this.i);
    if (c === Quote) return this.parseString();
    if (c === OpenCurly || c === OpenSquare) {
      if (depth >= this.maxDepth) this.error(`JSON nests deeper than ${this.maxDepth} levels`);
      return c === OpenCurly ? this.parseObject(depth + 1) : this.parseArray(depth + 1);
    }
    if (c === Minus || (c >= Zero && c <= Nine)) return this.parseNumber();
    if (c === 116) return this.literal('true', true);
    if (c === 102) return this.literal('false', false);
    if (c === 110) return this.literal('null', null);
    return this.unexpected();
  }

  parseArray(depth: number): unknown[] {
    this.i++;
    const out: unknown[] = [];
    this.skipSpace();
    if (this.text.charCodeAt(this.i) === CloseSquare) {
      this.i++;
      return out;
    }
    for (;;) {
      out.push(this.parseValue(depth));
      this.skipSpace();
      const c = this.text.charCodeAt(this.i);
      if (c === Comma) this.i++;
      else if (c === CloseSquare) {
        this.i++;
        return out;
      } else this.unexpected();
    }
  }

  parseObject(depth: number): Record<string, unknown> {
    this.i++;
    const out: Record<string, unknown> = {};
    this.skipSpace();
    if (this.text.charCodeAt(this.i) === CloseCurly) {
      this.i++;
      return out;
    }
    for (;;) {
      this.skipSpace();
      if (this.text.charCodeAt(this.i) !== Quote) this.unexpected();
      const keyAt = this.i;
      const key = this.parseString();
      this.skipSpace();
      if (this.text.charCodeAt(this.i) !== Colon) this.unexpected();
      this.i++;
      const value = this.parseValue(depth);
      if (Object.prototype.hasOwnProperty.call(out, key)) {
        this.i = keyAt;
        this.error(`duplicate key ${JSON.stringify(key)}`);
      }
      // An own "__proto__" data property, as JSON.parse makes, never the prototype.
      if (key === '__proto__') {
        Object.defineProperty(out, key, { value, writable: true, enumerable: true, configurable: true });
      } else out[key] = value;
      this.skipSpace();
      const c = this.text.charCodeAt(this.i);
      if (c === Comma) this.i++;
      else if (c === CloseCurly) {
        this.i++;
        return out;
      } else this.unexpected();
    }
  }
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
