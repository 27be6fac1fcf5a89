/**
 * fast-check arbitraries of hostile inputs for the fuzz suites: H3 cells that are invalid, at a boundary or
 * of the wrong resolution; zooms, numbers and dates out of range; raw JSON texts that are malformed, deep,
 * huge, non-UTF-8, with duplicated or prototype keys; query strings; header values. Everything a client can
 * put on the wire, nothing that needs the server's cooperation.
 */
import fc from 'fast-check';
import { getPentagons, getRes0Cells, latLngToCell } from 'h3-js';
import { DEFAULT_JOB_CELL, DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';

/** Raw bytes that print short in a fast-check counterexample (a 1 MiB body would print as a million numbers). */
export interface Sample {
  bytes: Buffer;
  label: string;
}

export function sample(bytes: Buffer | string): Sample {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes);
  const head = JSON.stringify(buffer.subarray(0, 80).toString('latin1'));
  const label = buffer.length > 80 ? `${head}… (${buffer.length} bytes)` : head;
  return { bytes: buffer, label, [fc.toStringMethod]: () => `sample(${label})` } as Sample;
}

/** Keys that reach Object.prototype when a parser or a merge assigns them naively. */
export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
/** The property every pollution payload tries to plant; the suites check Object.prototype never gains it. */
export const POLLUTION_MARKER = 'fuzzPolluted';

const hex = (digits: number) => fc.stringMatching(new RegExp(`^[0-9a-f]{${digits}}$`));

/** Valid cells at every resolution 0..15 (so most are the wrong resolution for whoever reads them). */
export const validCell = fc
  .tuple(fc.double({ min: -89.9, max: 89.9, noNaN: true }), fc.double({ min: -180, max: 180, noNaN: true }), fc.nat(15))
  .map(([lat, lng, res]) => latLngToCell(lat, lng, res));

const PENTAGONS = Array.from({ length: 16 }, (_, res) => getPentagons(res)).flat();
const RES0 = getRes0Cells();

/** H3 cells a client may send: valid at any resolution, pentagons, res 0 and 15, and malformed in every way. */
export const hostileCell: fc.Arbitrary<string> = fc.oneof(
  validCell,
  fc.constantFrom(...PENTAGONS),
  fc.constantFrom(...RES0),
  fc.constantFrom(DEFAULT_JOB_CELL, DEFAULT_PERCEPTION_CELL, latLngToCell(41.9, 12.5, 15), latLngToCell(41.9, 12.5, 0)),
  validCell.map((c) => c.toUpperCase()),
  validCell.map((c) => c.slice(0, -1)),
  validCell.map((c) => `${c}f`),
  validCell.map((c) => ` ${c}`),
  validCell.map((c) => `${c}\u0000`),
  hex(15),
  hex(16),
  fc.constantFrom(
    '',
    '0',
    '8',
    '000000000000000',
    'fffffffffffffff',
    '7fffffffffffffff',
    'ffffffffffffffff',
    '8f2830828052d25',
    '-1',
    'NaN',
    'Infinity',
    '1e15',
    '0x851e8053fffffff',
    'rome',
    '__proto__',
    'constructor',
    'toString',
  ),
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
);

export const hostileZoom: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('-1', '21', '0', '20', '22', '-0', '00', '1.5', '1e1', '0x10', ' 3', '3 ', '', 'NaN', 'Infinity'),
  fc.constantFrom('99999999999999999999', '9007199254740993', '٣'),
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.string({ maxLength: 6 }),
);

/** Decimal-ish texts for limit, hours, rings, days, cloud, epochs, seq … */
export const hostileNumberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('-1', '0', '1', '100', '101', '168', '169', '1000', '1001', '100.5', '99.99', '1e2', '1E2', '-0'),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '', ' ', '0x1', '0b1', '1,2', '1;2', '+5', '5.', '.5', '1_000'),
  fc.constantFrom('9'.repeat(400), '9007199254740993', '1e308', '1e400', '-1e400', '5e-324'),
  fc.integer().map(String),
  fc.double().map(String),
  fc.string({ maxLength: 8 }),
);

/** Dates and times a client may send: out of range, impossible, malformed, boundary. */
export const hostileDate: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0000-01-01',
    '0000-00-00',
    '10000-01-01',
    '9999-12-31',
    '2026-02-30',
    '2026-02-29',
    '2024-02-29',
    '2026-13-01',
    '2026-00-10',
    '2026-04-31',
    '2026-3-1',
    '2026-03-01T25:00:00Z',
    '2026-03-01T23:60:00Z',
    '2026-03-01T23:59:60Z',
    '2026-03-01T12:00:00+25:00',
    '2026-03-01T12:00:00',
    '2026-03-01 12:00:00Z',
    '1969-12-31T23:59:59Z',
    '1970-01-01T00:00:00Z',
    '-000001-01-01T00:00:00Z',
    '+275760-09-13T00:00:00.000Z',
    '+275760-09-13T00:00:00.001Z',
    '9999-12-31T23:59:59.999Z',
    '2026-03-01T12:00:00.0000000000001Z',
    'now',
    'today',
    '',
    'NaN',
    '1e12',
    '1772366400000',
  ),
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc
    .tuple(fc.integer({ min: -1, max: 10_001 }), fc.integer({ min: -1, max: 14 }), fc.integer({ min: -1, max: 33 }))
    .map(([y, m, d]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`),
  fc.string({ maxLength: 12 }),
);

/** Ed25519 public keys as text: valid, small-order, non-canonical, wrong case or length. */
export const hostilePublicKey: fc.Arbitrary<string> = fc.oneof(
  hex(64),
  hex(64).map((k) => k.toUpperCase()),
  hex(63),
  hex(66),
  fc.constantFrom(
    '0100000000000000000000000000000000000000000000000000000000000000', // identity point: small order
    '0000000000000000000000000000000000000000000000000000000000000000',
    'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y >= p
    'ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff',
    '',
    '__proto__',
  ),
  fc.string({ maxLength: 70 }),
);

/** A JSON text that is not JSON, or is JSON only to a lenient parser. */
export const invalidJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '[',
    '}',
    '{"a":}',
    "{'a':1}",
    '{"a":1,}',
    '[1,2,]',
    'undefined',
    'NaN',
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":-Infinity}',
    '{"budget_credits":NaN,"steps":[]}',
    '[1,2',
    '"unterminated',
    '{"a":1}{"b":2}',
    '{"a":01}',
    '{"a":1e}',
    '{"a":.5}',
    '{"a":0x10}',
    'tru',
    'nul',
    '{"a":"\\x41"}',
    '{"a":"\\u12"}',
    '{a:1}',
    '// comment\n{}',
    '\u0000',
    ' ',
    '\t\n',
  ),
  fc.string({ maxLength: 40 }),
);

/** Bytes that are not UTF-8: overlong forms, lone continuation bytes, encoded surrogates, truncations. */
export const invalidUtf8: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.constantFrom(
      [0xff, 0xfe],
      [0xc0, 0xaf],
      [0xe0, 0x80, 0xaf],
      [0x80],
      [0xe2, 0x82],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xf8, 0x88, 0x80, 0x80, 0x80],
    ),
    fc.constantFrom('bare', 'in-string', 'in-key'),
  )
  .map(([bytes, where]) => {
    const bad = Buffer.from(bytes);
    if (where === 'bare') return bad;
    if (where === 'in-string') return Buffer.concat([Buffer.from('{"h3_cell":"'), bad, Buffer.from('"}')]);
    return Buffer.concat([Buffer.from('{"'), bad, Buffer.from('":1}')]);
  });

/** Arrays or objects nested `levels` deep, alone or under a field a route reads. */
export const deepJsonText: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom(64, 1_000, 1_001, 10_000, 100_000),
    fc.constantFrom('array', 'object'),
    fc.constantFrom(null, 'steps', 'messages', 'records', 'h3_cell', 'svc'),
  )
  .map(([levels, kind, field]) => {
    const deep =
      kind === 'array' ? '['.repeat(levels) + ']'.repeat(levels) : '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);
    return field === null ? deep : `{"${field}":${deep}}`;
  });

/** Texts with the same key twice (JSON.parse keeps the last), or prototype keys where fields are read. */
export const trickyKeysText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    `{"operation":"ndvi","operation":"cloud_mask","h3_cell":"${DEFAULT_JOB_CELL}","h3_cell":123}`,
    `{"h3_cell":"${DEFAULT_JOB_CELL}","h3_cell":"not-a-cell"}`,
    '{"steps":[],"steps":[{"id":"a","type":"inference"}]}',
    `{"__proto__":{"${POLLUTION_MARKER}":"yes"}}`,
    `{"constructor":{"prototype":{"${POLLUTION_MARKER}":"yes"}}}`,
    `{"__proto__":{"${POLLUTION_MARKER}":"yes"},"operation":"ndvi","h3_cell":"${DEFAULT_JOB_CELL}"}`,
    `{"steps":[{"__proto__":{"type":"inference","${POLLUTION_MARKER}":1},"id":"a"}]}`,
    `{"svc":{"__proto__":{"${POLLUTION_MARKER}":1}},"messages":[{"role":"user","content":"x","__proto__":{"role":"system"}}]}`,
    `{"records":[{"__proto__":{"${POLLUTION_MARKER}":1}}],"seals":[{"constructor":{"prototype":{"${POLLUTION_MARKER}":1}}}]}`,
    `{"hardware":{"__proto__":{"${POLLUTION_MARKER}":1}},"models":{"__proto__":[]}}`,
  ),
  fc
    .tuple(
      fc.constantFrom(...PROTO_KEYS, 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__'),
      fc.jsonValue({ maxDepth: 2 }),
    )
    .map(([key, value]) => `{"${key}":${JSON.stringify({ [POLLUTION_MARKER]: value })}}`),
);

/** Large but under `limit` bytes, or over it. */
export const sizedJsonText = (limit: number): fc.Arbitrary<string> =>
  fc
    .tuple(fc.constantFrom('string', 'array', 'keys', 'steps'), fc.constantFrom('under', 'over'))
    .map(([shape, side]) => {
      const target = side === 'under' ? limit - 64 - 1024 : limit + 1 + 1024;
      if (shape === 'string') return `{"h3_cell":"${'a'.repeat(target)}"}`;
      if (shape === 'array') return `{"records":[${'1,'.repeat(Math.floor(target / 2))}1]}`;
      if (shape === 'keys') {
        const count = Math.floor(target / 12);
        return `{${Array.from({ length: count }, (_, i) => `"k${i.toString(36).padStart(5, '0')}":1`).join(',')}}`;
      }
      return `{"steps":[${'{"id":"s","type":"inference"},'.repeat(Math.floor(target / 31))}{}]}`;
    });

/** Numbers JSON can spell but JavaScript bends: huge (→ Infinity), tiny (→ 0), -0, beyond 2^53. */
export const numericEdgeText: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('budget_credits', 'zoom', 'limit', 'cloud', 'seq', 'max_tokens', 'temperature', 'hardware_tier'),
    fc.constantFrom('1e400', '-1e400', '1e-400', '-0', '9007199254740993', '123456789012345678901234567890', '0.1e1'),
  )
  .map(([field, n]) => `{"${field}":${n},"h3_cell":"${DEFAULT_JOB_CELL}","operation":"ndvi"}`);

/** Any JSON value, shallow, with prototype keys allowed to appear. */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 });

/** A header value Node's client will send (visible ASCII, spaces, obs-text), possibly empty or huge. */
export const headerText: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }).map((s) => s.replace(/[^\t\x20-\x7e]/g, '')) },
  { weight: 3, arbitrary: fc.stringMatching(/^[\x20-\x7e\x80-\xff]{0,60}$/) },
  { weight: 3, arbitrary: fc.constantFrom('', ' ', '\t', 'null', 'undefined', '__proto__', 'constructor') },
  { weight: 1, arbitrary: fc.integer({ min: 1000, max: 6000 }).map((n) => 'h'.repeat(n)) },
);
