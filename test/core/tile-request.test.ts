import assert from 'node:assert/strict';
import { checkHours } from '../../core/query-params.js';
import { checkFormat, checkRings, checkStyle, checkTileFile, checkZoom } from '../../core/tile-request.js';

const code = (check: { ok: boolean; error?: string }) => (check.ok ? 'ok' : check.error);

describe('tile request parameters', () => {
  it('accepts zoom 0..20 written as plain digits', () => {
    assert.deepEqual(checkZoom('0'), { ok: true, value: 0 });
    assert.deepEqual(checkZoom('20'), { ok: true, value: 20 });
    for (const bad of ['21', '-1', '1.5', '1e1', '0x1', ' 3', '', 'ten', undefined]) {
      assert.equal(code(checkZoom(bad)), 'invalid_zoom', String(bad));
    }
  });

  it('knows the five styles and lists them when refusing one', () => {
    for (const s of ['osm-bright', 'osm-standard', 'dark', 'terrain', 'satellite'])
      assert.equal(code(checkStyle(s)), 'ok');
    const bad = checkStyle('toner');
    assert.ok(!bad.ok && bad.error === 'invalid_style' && bad.detail.includes('osm-bright, osm-standard'));
  });

  it('reads png, jpg, webp, and jpeg as jpg', () => {
    assert.deepEqual(checkFormat('jpeg'), { ok: true, value: 'jpg' });
    assert.equal(code(checkFormat('gif')), 'invalid_format');
    assert.equal(code(checkFormat('PNG')), 'invalid_format');
  });

  it('splits {style}.{format} at the last dot', () => {
    assert.deepEqual(checkTileFile('dark.webp'), { ok: true, value: { style: 'dark', format: 'webp' } });
    assert.equal(code(checkTileFile('satellite')), 'invalid_format');
    assert.equal(code(checkTileFile('satellite.')), 'invalid_format');
    assert.equal(code(checkTileFile('toner.png')), 'invalid_style');
    assert.equal(code(checkTileFile('dark.png.gif')), 'invalid_style');
  });

  it('defaults rings to 0 and hours to 24, refusing anything but one integer in range', () => {
    assert.deepEqual(checkRings(undefined, 10), { ok: true, value: 0 });
    assert.deepEqual(checkRings('10', 10), { ok: true, value: 10 });
    for (const bad of ['11', '-1', '1.0', '', ['1', '2']]) assert.equal(code(checkRings(bad, 10)), 'invalid_rings');
    assert.deepEqual(checkHours(undefined), { ok: true, value: 24 });
    assert.deepEqual(checkHours('168'), { ok: true, value: 168 });
    for (const bad of ['0', '169', '2.5', 'x', ['1']]) assert.equal(code(checkHours(bad)), 'invalid_hours');
  });
});
