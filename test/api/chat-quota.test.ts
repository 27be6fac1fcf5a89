import assert from 'node:assert/strict';
import { reserveChatMessage } from '../../api/chat-quota.js';
import { ServiceError } from '../../core/errors.js';
import type { ApiKeyRecord, ApiKeyTier } from '../../store/api-key-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import type { RateLimitStore } from '../../store/types.js';

const DAY = 86_400_000;
const MIDNIGHT = Date.UTC(2026, 3, 14); // a UTC day's start
const key = (id: string, tier: ApiKeyTier = 'free'): ApiKeyRecord => ({
  id,
  name: id,
  tier,
  created_at: new Date(0).toISOString(),
  revoked_at: null,
});

describe('free-tier chat quota', () => {
  let db: ReturnType<typeof openSqlite>;
  let rateLimits: RateLimitStore;
  let now: number;
  const deps = () => ({ rateLimits, clock: () => now });
  const consume = (k: ApiKeyRecord, limit = 3) => reserveChatMessage(deps(), k, limit);

  beforeEach(() => {
    db = openSqlite(':memory:');
    rateLimits = createSqliteRateLimitStore(db);
    now = MIDNIGHT + 15 * 3_600_000; // 15:00 UTC
  });
  afterEach(() => db.close());

  it('allows a free key its daily messages, then refuses with 429 quota_exceeded until 00:00 UTC', async () => {
    for (let i = 0; i < 3; i++) await consume(key('key_a'));
    await assert.rejects(consume(key('key_a')), (error: unknown) => {
      assert.ok(error instanceof ServiceError);
      assert.equal(error.code, 'quota_exceeded');
      assert.equal(error.status, 429);
      assert.match(error.detail ?? '', /3 chat messages per day/);
      assert.deepEqual(error.headers, { 'retry-after': String(9 * 3600) });
      return true;
    });
  });

  it('rounds retry-after up to whole seconds, at least 1', async () => {
    for (let i = 0; i < 3; i++) await consume(key('key_a'));
    now = MIDNIGHT + DAY - 1; // one millisecond before midnight
    await assert.rejects(consume(key('key_a')), (error: ServiceError) => error.headers['retry-after'] === '1');
    now = MIDNIGHT + DAY - 1500;
    await assert.rejects(consume(key('key_a')), (error: ServiceError) => error.headers['retry-after'] === '2');
  });

  it('renews the allowance at 00:00 UTC', async () => {
    for (let i = 0; i < 3; i++) await consume(key('key_a'));
    await assert.rejects(consume(key('key_a')));
    now = MIDNIGHT + DAY;
    await consume(key('key_a'));
  });

  it('counts each key on its own', async () => {
    for (let i = 0; i < 3; i++) await consume(key('key_a'));
    await consume(key('key_b'));
    await assert.rejects(consume(key('key_a')));
  });

  it('never limits or counts pro and enterprise keys', async () => {
    for (let i = 0; i < 10; i++) {
      await consume(key('key_p', 'pro'));
      await consume(key('key_e', 'enterprise'));
    }
    assert.equal(await rateLimits.increment('chat:key_p', MIDNIGHT, DAY), 1);
  });

  it('refuses every free message when the allowance is 0', async () => {
    await assert.rejects(consume(key('key_a'), 0), (error: ServiceError) => error.code === 'quota_exceeded');
  });

  it('lets exactly the allowance through when requests race', async () => {
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => consume(key('key_a'), 4)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 4);
  });

  it('gives a refunded message back, once, and refusals take none of the room', async () => {
    const first = await consume(key('key_a'));
    await consume(key('key_a'));
    await first.refund();
    await first.refund(); // a second refund of the same message gives nothing more
    await consume(key('key_a'));
    await consume(key('key_a')); // the third counted message: the refunded one made room for it
    await assert.rejects(consume(key('key_a')));
    await assert.rejects(consume(key('key_a')));
    const last = await consume(key('key_b'));
    await last.refund();
    for (let i = 0; i < 3; i++) await consume(key('key_b'));
    await assert.rejects(consume(key('key_b')));
  });

  it('with refunds racing, still lets exactly the allowance through', async () => {
    const early = await Promise.all([consume(key('key_a'), 4), consume(key('key_a'), 4)]);
    await Promise.all(early.map((c) => c.refund()));
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => consume(key('key_a'), 4)));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 4);
  });
});
