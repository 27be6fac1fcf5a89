import assert from 'node:assert/strict';
import { CanonicalJsonError, canonicalJson } from '../../core/canonical-json.js';

describe('canonical JSON (RFC 8785)', () => {
  it('sorts keys recursively and drops whitespace (RFC 8785 section 3.2.2 example)', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001], "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    assert.equal(
      canonicalJson(input),
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('orders property names by UTF-16 code units (RFC 8785 section 3.2.3 example)', () => {
    const input = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    assert.equal(
      canonicalJson(input),
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it('formats numbers as ECMAScript does (RFC 8785 appendix B samples)', () => {
    const samples: Array<[number, string]> = [
      [0, '0'],
      [-0, '0'],
      [5e-324, '5e-324'],
      [1.7976931348623157e308, '1.7976931348623157e+308'],
      [9007199254740992, '9007199254740992'],
      [295147905179352830000, '295147905179352830000'],
      [1e21, '1e+21'],
      [0.000001, '0.000001'],
      [1e-7, '1e-7'],
      [333333333.3333333, '333333333.3333333'],
    ];
    for (const [n, text] of samples) assert.equal(canonicalJson(n), text);
  });

  it('rejects values JSON cannot carry', () => {
    assert.throws(() => canonicalJson({ a: NaN }), CanonicalJsonError);
    assert.throws(() => canonicalJson([Infinity]), CanonicalJsonError);
    assert.throws(() => canonicalJson({ a: 1n }), CanonicalJsonError);
  });

  it('names where the value JSON cannot carry sits', () => {
    assert.throws(() => canonicalJson({ a: [1, { b: NaN }] }), { message: '$.a[1].b: non-finite number' });
    assert.throws(() => canonicalJson({ z: 1, y: [2n] }), { message: '$.y[0]: bigint is not representable in JSON' });
  });

  it('omits undefined members like JSON.stringify, so optional fields do not change the signature', () => {
    assert.equal(canonicalJson({ b: 1, a: undefined }), '{"b":1}');
  });
});
