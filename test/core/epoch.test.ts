import assert from 'node:assert/strict';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS, epochAt, epochWindow, parseEpochGenesis } from '../../core/epoch.js';

const at = (iso: string): number => Date.parse(iso);

describe('epochs', () => {
  it('starts epoch 0 at the default genesis, 2026-01-01T00:00:00Z', () => {
    assert.equal(EPOCH_MS, 3_600_000);
    assert.equal(DEFAULT_EPOCH_GENESIS_MS, at('2026-01-01T00:00:00Z'));
    assert.equal(epochAt(DEFAULT_EPOCH_GENESIS_MS), 0);
    assert.equal(epochAt(at('2026-01-01T00:59:59.999Z')), 0);
  });

  it('changes epoch exactly at the hour boundary', () => {
    assert.equal(epochAt(at('2026-03-05T13:59:59.999Z')), 63 * 24 + 13);
    assert.equal(epochAt(at('2026-03-05T14:00:00.000Z')), 63 * 24 + 14);
  });

  it('rejects times before genesis rather than issue negative epochs', () => {
    assert.throws(() => epochAt(DEFAULT_EPOCH_GENESIS_MS - 1), RangeError);
    assert.throws(() => epochAt(Number.NaN), RangeError);
  });

  it('gives each epoch a one-hour [start, end) window that maps back to it', () => {
    for (const epoch of [0, 1, 23, 8760, 1_000_000]) {
      const { start, end } = epochWindow(epoch);
      assert.equal(end - start, EPOCH_MS);
      assert.equal(epochAt(start), epoch);
      assert.equal(epochAt(end - 1), epoch);
      assert.equal(epochAt(end), epoch + 1);
    }
    assert.deepEqual(epochWindow(0), { start: DEFAULT_EPOCH_GENESIS_MS, end: DEFAULT_EPOCH_GENESIS_MS + EPOCH_MS });
    assert.throws(() => epochWindow(-1), RangeError);
    assert.throws(() => epochWindow(1.5), RangeError);
  });

  it('counts from a custom genesis', () => {
    const genesis = parseEpochGenesis('2024-06-30T22:00:00Z');
    assert.equal(genesis, at('2024-06-30T22:00:00Z'));
    assert.equal(epochAt(at('2024-07-01T01:30:00Z'), genesis), 3);
    assert.deepEqual(epochWindow(3, genesis), { start: at('2024-07-01T01:00:00Z'), end: at('2024-07-01T02:00:00Z') });
    assert.throws(() => epochAt(at('2024-06-30T21:59:59Z'), genesis), RangeError);
    assert.throws(() => epochAt(0, Number.NaN), RangeError);
  });

  it('parses an hour-aligned ISO 8601 UTC genesis', () => {
    assert.equal(parseEpochGenesis('2026-01-01T00:00:00Z'), DEFAULT_EPOCH_GENESIS_MS);
    assert.equal(parseEpochGenesis('2026-01-01T00:00:00.000Z'), DEFAULT_EPOCH_GENESIS_MS);
    assert.equal(parseEpochGenesis('2026-01-01T00:00Z'), DEFAULT_EPOCH_GENESIS_MS);
    assert.equal(parseEpochGenesis('2026-01-01T00:00:00+00:00'), DEFAULT_EPOCH_GENESIS_MS);
    assert.equal(parseEpochGenesis('2024-02-29T23:00:00Z'), at('2024-02-29T23:00:00Z'));
  });

  it('rejects a genesis that is not a strict hour-aligned UTC timestamp', () => {
    for (const bad of [
      '',
      '2026-01-01',
      '2026-01-01T00:00:00', // no zone: local time is ambiguous
      '2026-01-01T01:00:00+01:00', // not UTC
      '2026-01-01 00:00:00Z',
      '2026-01-01t00:00:00z',
      '2026-01-01T00:30:00Z',
      '2026-01-01T00:00:01Z',
      '2026-01-01T00:00:00.001Z',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-13-01T00:00:00Z',
      '2026-01-01T24:00:00Z',
      ' 2026-01-01T00:00:00Z',
      'Thu, 01 Jan 2026 00:00:00 GMT',
    ]) {
      assert.throws(() => parseEpochGenesis(bad), RangeError, bad);
    }
  });
});
