/**
 * The sensor_fusion method (docs/protocol.md §2.10) on hand-computed numbers: six PM2.5 devices, one an outlier
 * and one chatty. Expectations are worked out by hand in the comments, the Merkle root independently (RFC 6962).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { fuseReadings, fusionCells, fusionWindow, median, type FusionReading } from '../../core/sensor-fusion.js';
import { checkReading, isRefusal } from '../../core/telemetry.js';

const sha = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
/** RFC 6962 §2.1 Merkle tree hash, written out independently of core/merkle. */
function rfc6962(leaves: Buffer[]): Buffer {
  if (leaves.length === 1) return sha(Buffer.from([0]), leaves[0]!);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha(Buffer.from([1]), rfc6962(leaves.slice(0, k)), rfc6962(leaves.slice(k)));
}

const device = (c: string) => c.repeat(64);
const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');
let n = 0;
const reading = (d: string, value: number): FusionReading => {
  const id = `telemetry:r${String(n++).padStart(2, '0')}`;
  return { device_pk: device(d), value, record_id: id, record_hash: hashOf(id) };
};

/** Six devices: a..e near 13, c chatty (five readings), f an outlier at 80. */
function sixDevices(): FusionReading[] {
  n = 0;
  return [
    reading('a', 10),
    reading('b', 12),
    reading('c', 11),
    reading('c', 13),
    reading('c', 14),
    reading('c', 30),
    reading('c', 9),
    reading('d', 14),
    reading('e', 15),
    reading('f', 80),
  ];
}

describe('sensor fusion (core/sensor-fusion.ts)', () => {
  it('median: odd and even counts', () => {
    assert.equal(median([3, 1, 2]), 2);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.throws(() => median([]), RangeError);
  });

  it('fuses six devices, rejecting the outlier and counting the chatty device once', () => {
    const fused = fuseReadings(sixDevices());
    // Device medians: a 10, b 12, c median(9, 11, 13, 14, 30) = 13, d 14, e 15, f 80.
    assert.deepEqual(
      fused.devices.map((d) => [d.device_pk[0], d.value, d.reading_count]),
      [
        ['a', 10, 1],
        ['b', 12, 1],
        ['c', 13, 5],
        ['d', 14, 1],
        ['e', 15, 1],
      ],
    );
    // value = median(10, 12, 13, 14, 15, 80) = (13 + 14) / 2 = 13.5
    assert.equal(fused.value, 13.5);
    // |d − 13.5| = 3.5, 1.5, 0.5, 0.5, 1.5, 66.5 → MAD = median = (1.5 + 1.5) / 2 = 1.5
    assert.equal(fused.mad, 1.5);
    // threshold = 3 × 1.4826 × 1.5 = 6.6717: only f (66.5 away) is rejected.
    assert.ok(Math.abs(fused.threshold - 6.6717) < 1e-12);
    assert.deepEqual(fused.rejected, [{ device_pk: device('f'), value: 80, reading_count: 1, deviation: 66.5 }]);
    // mean of 10, 12, 13, 14, 15 = 64 / 5 = 12.8; sample variance = (7.84 + 0.64 + 0.04 + 1.44 + 4.84) / 4 = 3.7;
    // stderr = √(3.7 / 5) = √0.74 ≈ 0.860233
    assert.ok(Math.abs(fused.mean - 12.8) < 1e-12);
    assert.ok(Math.abs(fused.stderr! - Math.sqrt(0.74)) < 1e-12);
    assert.equal(fused.device_count, 5);
    assert.equal(fused.reading_count, 9);
    assert.equal(fused.input_device_count, 6);
    assert.equal(fused.input_reading_count, 10);
    // Every input named, ascending, and bound by an RFC 6962 root over their record hashes in that order.
    const ids = Array.from({ length: 10 }, (_, i) => `telemetry:r${String(i).padStart(2, '0')}`);
    assert.deepEqual(fused.record_ids, ids);
    assert.equal(fused.merkle_root, rfc6962(ids.map((id) => Buffer.from(hashOf(id), 'hex'))).toString('hex'));
  });

  it('is independent of the order readings arrive in', () => {
    const forward = fuseReadings(sixDevices());
    const backward = fuseReadings(sixDevices().reverse());
    assert.deepEqual(backward, forward);
  });

  it('one device: its median, stderr null; none: RangeError', () => {
    n = 0;
    const fused = fuseReadings([reading('a', 4), reading('a', 6)]);
    assert.equal(fused.value, 5);
    assert.equal(fused.stderr, null);
    assert.equal(fused.device_count, 1);
    assert.throws(() => fuseReadings([]), RangeError);
  });

  it('k-rings: 1, 7 and 19 cells', () => {
    const cell = '891e8050003ffff';
    assert.deepEqual(fusionCells(cell, 0), [cell]);
    assert.equal(fusionCells(cell, 1).length, 7);
    assert.equal(fusionCells(cell, 2).length, 19);
    assert.throws(() => fusionCells(cell, 3), RangeError);
  });

  it('windows: the last closed epoch by default, an epoch, dates (a date is its whole day)', () => {
    const genesis = Date.UTC(2026, 0, 1);
    const hour = 3_600_000;
    const byDefault = fusionWindow({ job_epoch: 10 }, genesis, hour);
    assert.deepEqual(byDefault, {
      ok: true,
      value: { fromMs: genesis + 9 * hour, toMs: genesis + 10 * hour, epochFrom: 9, epochTo: 9 },
    });
    const epoch = fusionWindow({ job_epoch: 10, epoch: 3 }, genesis, hour);
    assert.ok(epoch.ok && epoch.value.epochFrom === 3 && epoch.value.epochTo === 3);
    const day = fusionWindow({ job_epoch: 100, date_from: '2026-01-02', date_to: '2026-01-02' }, genesis, hour);
    assert.ok(day.ok && day.value.epochFrom === 24 && day.value.epochTo === 47);
    const week = fusionWindow({ job_epoch: 9999, date_from: '2026-01-01', date_to: '2026-01-08' }, genesis, hour);
    assert.deepEqual(week.ok ? null : week.error, 'invalid_request');
    const backwards = fusionWindow({ job_epoch: 99, date_from: '2026-01-03', date_to: '2026-01-02' }, genesis, hour);
    assert.deepEqual(backwards.ok ? null : backwards.error, 'invalid_date');
  });
});

describe('telemetry readings (core/telemetry.ts)', () => {
  const genesis = Date.UTC(2026, 0, 1);
  const hour = 3_600_000;
  const now = genesis + 100 * hour + 30 * 60_000; // half past, epoch 100
  const clock = { nowMs: now, genesisMs: genesis, epochMs: hour, oldestEpoch: 99 };
  const at = (ms: number) => new Date(ms).toISOString();
  const codeOf = (r: Parameters<typeof checkReading>[0]) => {
    const out = checkReading(r, 0, clock);
    return isRefusal(out) ? out.code : 'accepted';
  };

  it('refuses per reading: quantity, unit, range, future, too old, bad date', () => {
    const ok = { quantity: 'pm2_5', value: 12, unit: 'ug/m3', observed_at: at(now - 60_000) };
    assert.equal(codeOf(ok), 'accepted');
    assert.equal(codeOf({ ...ok, quantity: 'ozone' }), 'unknown_quantity');
    assert.equal(codeOf({ ...ok, unit: 'mg/m3' }), 'unit_mismatch');
    assert.equal(codeOf({ ...ok, value: -1 }), 'value_out_of_range');
    assert.equal(codeOf({ ...ok, value: 1001 }), 'value_out_of_range');
    assert.equal(codeOf({ ...ok, observed_at: at(now + 5 * 60_000) }), 'accepted');
    assert.equal(codeOf({ ...ok, observed_at: at(now + 5 * 60_000 + 1) }), 'reading_in_future');
    assert.equal(codeOf({ ...ok, observed_at: at(genesis + 99 * hour) }), 'accepted');
    assert.equal(codeOf({ ...ok, observed_at: at(genesis + 99 * hour - 1) }), 'reading_too_old');
    assert.equal(codeOf({ ...ok, observed_at: 'yesterday' }), 'invalid_date');
  });

  it('a reading within 5 minutes ahead but in the next epoch is refused (it would close the open epoch)', () => {
    const late = { ...clock, nowMs: genesis + 101 * hour - 60_000 };
    const out = checkReading(
      { quantity: 'air_temperature', value: 20, unit: 'Cel', observed_at: at(genesis + 101 * hour + 1000) },
      0,
      late,
    );
    assert.ok(isRefusal(out) && out.code === 'reading_in_future');
  });
});
