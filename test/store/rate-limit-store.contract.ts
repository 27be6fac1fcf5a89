import assert from 'node:assert/strict';
import type { RateLimitStore } from '../../store/types.js';

/** Opens a fresh, empty store; `cleanup` runs after each test (close the store, drop the database …). */
export type RateLimitStoreFactory = () => Promise<{ store: RateLimitStore; cleanup?: () => Promise<void> }>;

const HOUR = 3_600_000;
const W0 = Date.UTC(2026, 0, 1); // epoch 0 of the default EPOCH_GENESIS
const W1 = W0 + HOUR;

/** The behaviour every RateLimitStore adapter must show; gate 3 relies on nothing else. */
export function describeRateLimitStoreContract(name: string, factory: RateLimitStoreFactory): void {
  describe(`RateLimitStore contract: ${name}`, () => {
    let store: RateLimitStore;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('counts 1, 2, 3 … for one key in one window', async () => {
      const counts = [];
      for (let i = 0; i < 5; i++) counts.push(await store.increment('agent:a', W0, HOUR));
      assert.deepEqual(counts, [1, 2, 3, 4, 5]);
    });

    it('peeks at a count without counting: 0 before the first, the current count after', async () => {
      assert.equal(await store.peek('agent:p', W0), 0);
      await store.increment('agent:p', W0, HOUR);
      await store.increment('agent:p', W0, HOUR);
      assert.equal(await store.peek('agent:p', W0), 2);
      assert.equal(await store.peek('agent:p', W0), 2);
      assert.equal(await store.peek('agent:p', W1), 0);
      assert.equal(await store.increment('agent:p', W0, HOUR), 3);
    });

    it('counts separate keys independently', async () => {
      assert.equal(await store.increment('agent:a', W0, HOUR), 1);
      assert.equal(await store.increment('agent:a', W0, HOUR), 2);
      assert.equal(await store.increment('agent:b', W0, HOUR), 1);
      assert.equal(await store.increment('agent:a', W0, HOUR), 3);
    });

    it('restarts the count in a new window and keeps the previous window its own', async () => {
      assert.equal(await store.increment('agent:a', W0, HOUR), 1);
      assert.equal(await store.increment('agent:a', W0, HOUR), 2);
      assert.equal(await store.increment('agent:a', W1, HOUR), 1);
      // A caller whose clock lags one window behind still counts in its own window.
      assert.equal(await store.increment('agent:a', W0, HOUR), 3);
      assert.equal(await store.increment('agent:a', W1, HOUR), 2);
    });

    it('gives 50 concurrent increments exactly the counts 1 … 50', async () => {
      const counts = await Promise.all(Array.from({ length: 50 }, () => store.increment('agent:burst', W0, HOUR)));
      assert.deepEqual(
        counts.sort((a, b) => a - b),
        Array.from({ length: 50 }, (_, i) => i + 1),
      );
      assert.equal(await store.increment('agent:burst', W0, HOUR), 51);
    });

    it('keeps counting across concurrent keys without mixing them', async () => {
      const keys = ['agent:x', 'agent:y', 'agent:z'];
      const counts = await Promise.all(
        keys.flatMap((key) =>
          Array.from({ length: 10 }, async () => [key, await store.increment(key, W0, HOUR)] as const),
        ),
      );
      for (const key of keys) {
        const mine = counts.filter(([k]) => k === key).map(([, n]) => n);
        assert.deepEqual(
          mine.sort((a, b) => a - b),
          Array.from({ length: 10 }, (_, i) => i + 1),
        );
      }
    });

    it('rejects a window that is not a positive whole number of milliseconds', async () => {
      await assert.rejects(store.increment('agent:a', W0, 0), RangeError);
      await assert.rejects(store.increment('agent:a', Number.NaN, HOUR), RangeError);
      await assert.rejects(store.increment('agent:a', W0 + 0.5, HOUR), RangeError);
    });
  });
}
