/**
 * The sensor_fusion method (docs/protocol.md §2.10) on hand-computed numbers: six PM2.5 devices, one an outlier
 * and one chatty. Expectations are worked out by hand in the comments, the Merkle root independently (RFC 6962).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { fuseReadings, fusionCells, fusionWindow, median, type FusionReading } from '../../core/sensor-fusion.js';
import { generateKeyPair } from '../../core/identity.js';
import { checkReading, isRefusal, signReading, type ReadingInput } from '../../core/telemetry.js';

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
/** A reading of device `d`, acting for principal `p` (by default its own). */
const reading = (d: string, value: number, p = d): FusionReading => {
  const id = `telemetry:r${String(n++).padStart(2, '0')}`;
  return { device_pk: device(d), principal_pk: device(p), value, record_id: id, record_hash: hashOf(id) };
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
    assert.deepEqual(fused.rejected, [
      { principal_pk: device('f'), value: 80, device_count: 1, reading_count: 1, deviation: 66.5 },
    ]);
    // mean of 10, 12, 13, 14, 15 = 64 / 5 = 12.8; sample variance = (7.84 + 0.64 + 0.04 + 1.44 + 4.84) / 4 = 3.7;
    // stderr = √(3.7 / 5) = √0.74 ≈ 0.860233
    assert.ok(Math.abs(fused.mean - 12.8) < 1e-12);
    assert.ok(Math.abs(fused.stderr! - Math.sqrt(0.74)) < 1e-12);
    assert.equal(fused.voter_count, 5);
    assert.equal(fused.device_count, 5);
    assert.equal(fused.reading_count, 9);
    assert.equal(fused.input_voter_count, 6);
    assert.equal(fused.input_device_count, 6);
    assert.equal(fused.input_reading_count, 10);
    // Every input named, ascending, and bound by an RFC 6962 root over their record hashes in that order.
    const ids = Array.from({ length: 10 }, (_, i) => `telemetry:r${String(i).padStart(2, '0')}`);
    assert.deepEqual(fused.record_ids, ids);
    assert.equal(fused.merkle_root, rfc6962(ids.map((id) => Buffer.from(hashOf(id), 'hex'))).toString('hex'));
  });

  it('one vote per principal: six keys of one owner do not outvote five independent devices', () => {
    n = 0;
    const honest = ['a', 'b', 'c', 'd', 'e'].map((d, i) => reading(d, 20 + i));
    const sybils = ['k', 'l', 'm', 'n', 'o', 'p'].map((d) => reading(d, 1999, 'z'));
    const fused = fuseReadings([...honest, ...sybils]);
    // Voters: a..e (20..24) and z (the median of six 1999s). value = median(20, 21, 22, 23, 24, 1999) = 22.5;
    // MAD = median(2.5, 1.5, 0.5, 0.5, 1.5, 1976.5) = 1.5, so z (1976.5 away) alone is rejected.
    assert.equal(fused.value, 22.5);
    assert.equal(fused.input_voter_count, 6);
    assert.equal(fused.input_device_count, 11);
    assert.deepEqual(fused.rejected, [
      { principal_pk: device('z'), value: 1999, device_count: 6, reading_count: 6, deviation: 1976.5 },
    ]);
    assert.equal(fused.voter_count, 5);
    assert.equal(fused.device_count, 5);
    assert.ok(Math.abs(fused.mean - 22) < 1e-12);
    // The same six keys as their own principals would be six votes against five: the median follows them.
    n = 0;
    const open = fuseReadings([
      ...['a', 'b', 'c', 'd', 'e'].map((d, i) => reading(d, 20 + i)),
      ...['k', 'l', 'm', 'n', 'o', 'p'].map((d) => reading(d, 1999)),
    ]);
    assert.equal(open.value, 1999);
  });

  it("a principal's value is the median of its devices' medians", () => {
    n = 0;
    const fused = fuseReadings([
      reading('a', 10, 'z'),
      reading('a', 30, 'z'),
      reading('b', 40, 'z'),
      reading('c', 9, 'z'),
    ]);
    // Devices: a median(10, 30) = 20, b 40, c 9; principal z: median(20, 40, 9) = 20.
    assert.deepEqual(fused.voters, [{ principal_pk: device('z'), value: 20, device_count: 3, reading_count: 4 }]);
    assert.equal(fused.value, 20);
    assert.equal(fused.stderr, null);
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
  const key = generateKeyPair();
  const cell = '8928308280fffff';
  const device = { device_pk: key.publicKey, h3_cell: cell };
  /** The reading as the device sends it: signed over its statement (observed_at normalised). */
  const signed = (r: Omit<ReadingInput, 'signature'>): ReadingInput => {
    const normal = Number.isNaN(Date.parse(r.observed_at)) ? r.observed_at : at(Date.parse(r.observed_at));
    return { ...r, signature: signReading(key.secretKey, { ...device, ...r, observed_at: normal }) };
  };
  const codeOf = (r: Omit<ReadingInput, 'signature'>) => {
    const out = checkReading(signed(r), 0, clock, device);
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

  it('refuses a reading the device did not sign as sent: another key, another field, another cell', () => {
    const ok = signed({ quantity: 'pm2_5', value: 12, unit: 'ug/m3', observed_at: at(now - 60_000) });
    const codeOfSent = (r: ReadingInput, who = device) => {
      const out = checkReading(r, 0, clock, who);
      return isRefusal(out) ? out.code : 'accepted';
    };
    assert.equal(codeOfSent(ok), 'accepted');
    // The statement holds observed_at normalised: the same instant written with an offset still verifies.
    const offset = new Date(Date.parse(ok.observed_at) + 2 * 3_600_000).toISOString().replace('Z', '+02:00');
    assert.equal(codeOfSent({ ...ok, observed_at: offset }), 'accepted');
    assert.equal(codeOfSent({ ...ok, value: 13 }), 'invalid_signature');
    assert.equal(codeOfSent({ ...ok, observed_at: at(now - 59_000) }), 'invalid_signature');
    assert.equal(codeOfSent(ok, { ...device, h3_cell: '8928308280bffff' }), 'invalid_signature');
    assert.equal(codeOfSent(ok, { ...device, device_pk: generateKeyPair().publicKey }), 'invalid_signature');
    assert.equal(codeOfSent({ ...ok, signature: '00'.repeat(64) }), 'invalid_signature');
  });

  it('a reading within 5 minutes ahead but in the next epoch is refused (it would close the open epoch)', () => {
    const late = { ...clock, nowMs: genesis + 101 * hour - 60_000 };
    const out = checkReading(
      signed({ quantity: 'air_temperature', value: 20, unit: 'Cel', observed_at: at(genesis + 101 * hour + 1000) }),
      0,
      late,
      device,
    );
    assert.ok(isRefusal(out) && out.code === 'reading_in_future');
  });
});
