import assert from 'node:assert/strict';
import { parseDateParam, resolveWindow, stacInterval } from '../../../activities/imagery/date-window.js';

const ms = (iso: string) => Date.parse(iso);

describe('imagery: date windows', () => {
  it('reads a day as its first millisecond when starting and its last when ending', () => {
    assert.deepEqual(parseDateParam('2026-02-01', 'from', 'start'), { ok: true, value: ms('2026-02-01T00:00:00Z') });
    assert.deepEqual(parseDateParam('2026-02-01', 'to', 'end'), { ok: true, value: ms('2026-02-01T23:59:59.999Z') });
  });

  it('reads full ISO 8601 UTC times', () => {
    for (const text of ['2026-02-01T10:20:30Z', '2026-02-01T10:20:30.5Z', '2026-02-01T10:20:30+00:00']) {
      const parsed = parseDateParam(text, 'from', 'start');
      assert.ok(parsed.ok, text);
      assert.equal(parsed.value, ms(text));
    }
    assert.deepEqual(parseDateParam(undefined, 'from', 'start'), { ok: true, value: undefined });
  });

  it('refuses other zones, impossible dates and other shapes with invalid_date', () => {
    for (const text of [
      '2026-02-01T10:00:00+02:00',
      '2026-02-30',
      '2026-13-01',
      '2026-02-01T24:00:00Z',
      '1/2/2026',
      '',
      20260201,
    ]) {
      const parsed = parseDateParam(text, 'from', 'start');
      assert.equal(parsed.ok, false, String(text));
      if (!parsed.ok) assert.equal(parsed.error, 'invalid_date');
    }
  });

  it('defaults to the 30 days up to now and refuses a start after the end', () => {
    const now = ms('2026-03-01T00:00:00Z');
    assert.deepEqual(resolveWindow(undefined, undefined, now), {
      ok: true,
      value: { fromMs: ms('2026-01-30T00:00:00Z'), toMs: now },
    });
    assert.equal(resolveWindow(ms('2026-03-02T00:00:00Z'), undefined, now).ok, false);
    assert.equal(resolveWindow(now, now, now).ok, true);
    assert.equal(
      stacInterval({ fromMs: ms('2026-02-01T00:00:00Z'), toMs: now }),
      '2026-02-01T00:00:00.000Z/2026-03-01T00:00:00.000Z',
    );
  });
});
