import assert from 'node:assert/strict';
import { addressKey, bucketSize, createRateLimiter } from '../../core/rate-limiter.js';

describe('rate limiter (GCRA token buckets)', () => {
  it('allows a full bucket at once, then refuses with the wait until one request refills', () => {
    const limiter = createRateLimiter({ perMinute: 60, burstSeconds: 5 }); // 1/s, bucket of 5
    const t = 1_000_000;
    const decisions = Array.from({ length: 6 }, () => limiter.take('a', t));
    assert.deepEqual(
      decisions.map((d) => [d.allowed, d.remaining]),
      [
        [true, 4],
        [true, 3],
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
      ],
    );
    assert.equal(decisions[5]!.retryAfterMs, 1000);
    assert.equal(decisions[4]!.resetMs, 5000);
    assert.equal(limiter.take('a', t + 999).allowed, false);
    assert.equal(limiter.take('a', t + 1000).allowed, true);
    assert.equal(limiter.take('a', t + 1000).allowed, false);
  });

  it('keeps keys apart and sustains exactly its rate', () => {
    const limiter = createRateLimiter({ perMinute: 600, burstSeconds: 1 }); // 10/s, bucket of 10
    let allowed = 0;
    for (let ms = 0; ms < 10_000; ms += 10) if (limiter.take('steady', ms).allowed) allowed++;
    // 10 s at 10/s plus the initial bucket, give or take the last interval.
    assert.ok(allowed >= 109 && allowed <= 110, `allowed ${allowed}`);
    assert.equal(limiter.take('other', 10_000).allowed, true);
  });

  it('refuses nothing more after a refusal: a refused request costs nothing', () => {
    const limiter = createRateLimiter({ perMinute: 60, burstSeconds: 1 });
    assert.equal(limiter.take('k', 0).allowed, true);
    for (let i = 0; i < 100; i++) assert.equal(limiter.take('k', 500).allowed, false);
    assert.equal(limiter.take('k', 1000).allowed, true);
  });

  it('holds at most maxKeys, dropping refilled buckets first', () => {
    const limiter = createRateLimiter({ perMinute: 60, burstSeconds: 1 }, 100);
    for (let i = 0; i < 100; i++) limiter.take(`old${i}`, 0);
    // All refilled by t = 1 s: the next new key sweeps them.
    limiter.take('new', 5_000);
    assert.equal(limiter.size(), 1);
    // A flood of busy keys never grows the map past its bound.
    for (let i = 0; i < 1000; i++) limiter.take(`busy${i}`, 6_000);
    assert.ok(limiter.size() <= 100, `size ${limiter.size()}`);
  });

  it('grants the whole bucket when the interval is a fraction of a millisecond off (float rounding)', () => {
    for (const perMinute of [7, 36, 70, 3600 / 7]) {
      const limiter = createRateLimiter({ perMinute, burstSeconds: 5 });
      const size = bucketSize(limiter.rule);
      const granted = Array.from({ length: size + 1 }, () => limiter.take('k', 1.8e12 + 1 / 3).allowed);
      assert.deepEqual(granted, [...Array<boolean>(size).fill(true), false], `perMinute ${perMinute}`);
    }
  });

  it('sizes the bucket from the rate and the burst seconds, at least one', () => {
    assert.equal(bucketSize({ perMinute: 6000, burstSeconds: 10 }), 1000);
    assert.equal(bucketSize({ perMinute: 1, burstSeconds: 1 }), 1);
    assert.throws(() => createRateLimiter({ perMinute: 0, burstSeconds: 1 }), RangeError);
  });

  it('keys IPv4 (also mapped) by address and IPv6 by its /64', () => {
    assert.equal(addressKey('203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('::ffff:203.0.113.7'), '203.0.113.7');
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:0db8:0001:0002:ffff:0:0:9'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
    assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  });
});
