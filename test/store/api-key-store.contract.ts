import assert from 'node:assert/strict';
import { sha256Hex } from '../../core/hash.js';
import type { ApiKeyStore, ApiKeyTier } from '../../store/api-key-store.js';

/**
 * Opens a fresh, empty store. `stored` returns everything the adapter persisted (rows or documents) as text,
 * so the contract can check that no key is ever kept; `cleanup` runs after each test.
 */
export type ApiKeyStoreFactory = () => Promise<{
  store: ApiKeyStore;
  stored: () => Promise<string>;
  cleanup?: () => Promise<void>;
}>;

const T0 = Date.UTC(2026, 2, 1, 9, 30);
const KEY_SHAPE = /^gf_[A-Za-z0-9_-]{43}$/;

/** The behaviour every ApiKeyStore adapter must show; the api_key gate and the CLI rely on nothing else. */
export function describeApiKeyStoreContract(name: string, factory: ApiKeyStoreFactory): void {
  describe(`ApiKeyStore contract: ${name}`, () => {
    let store: ApiKeyStore;
    let stored: () => Promise<string>;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, stored, cleanup } = await factory());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('creates a gf_ key and a live record stamped with the given time', async () => {
      const { key, record } = await store.create('ci pipeline', 'free', T0);
      assert.match(key, KEY_SHAPE);
      assert.match(record.id, /^key_[0-9a-f]{16}$/);
      assert.deepEqual(record, {
        id: record.id,
        name: 'ci pipeline',
        tier: 'free',
        created_at: new Date(T0).toISOString(),
        revoked_at: null,
      });
    });

    it('verifies a key to its record, for every tier', async () => {
      for (const tier of ['free', 'pro', 'enterprise'] as const) {
        const { key, record } = await store.create(`${tier} user`, tier, T0);
        assert.deepEqual(await store.verify(key), record);
      }
    });

    it('stores only the SHA-256 of a key, never the key', async () => {
      const { key } = await store.create('alice', 'pro', T0);
      const raw = await stored();
      assert.ok(!raw.includes(key), 'the key is stored');
      assert.ok(!raw.includes(key.slice(3)), 'the key without its prefix is stored');
      assert.ok(raw.includes(sha256Hex(key)), 'the key hash is not where the contract expects it');
    });

    it('refuses unknown, altered and malformed keys', async () => {
      const { key } = await store.create('alice', 'free', T0);
      const flipped = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
      for (const wrong of [flipped, `gf_${'A'.repeat(43)}`, key.slice(3), `${key}x`, '', 'sk-test-one', ` ${key}`]) {
        assert.equal(await store.verify(wrong), null, JSON.stringify(wrong));
      }
    });

    it('gives each of 20 concurrently created keys its own secret and id', async () => {
      const created = await Promise.all(Array.from({ length: 20 }, (_, i) => store.create(`k${i}`, 'free', T0 + i)));
      assert.equal(new Set(created.map((c) => c.key)).size, 20);
      assert.equal(new Set(created.map((c) => c.record.id)).size, 20);
      for (const { key, record } of created) assert.equal((await store.verify(key))?.id, record.id);
    });

    it('lists keys oldest first, revoked ones included with their revocation time', async () => {
      const b = await store.create('second', 'pro', T0 + 1000);
      const a = await store.create('first', 'free', T0);
      assert.equal(await store.revoke(b.record.id, T0 + 5000), true);
      assert.deepEqual(await store.list(), [a.record, { ...b.record, revoked_at: new Date(T0 + 5000).toISOString() }]);
    });

    it('revokes a key once: it no longer verifies, and other keys still do', async () => {
      const a = await store.create('a', 'free', T0);
      const b = await store.create('b', 'free', T0);
      assert.equal(await store.revoke(a.record.id, T0 + 1), true);
      assert.equal(await store.verify(a.key), null);
      assert.deepEqual(await store.verify(b.key), b.record);
      assert.equal(await store.revoke(a.record.id, T0 + 2), false);
      assert.equal((await store.list()).find((r) => r.id === a.record.id)?.revoked_at, new Date(T0 + 1).toISOString());
    });

    it('reports false for revoking an unknown id', async () => {
      assert.equal(await store.revoke('key_0000000000000000', T0), false);
      assert.deepEqual(await store.list(), []);
    });

    it('lets exactly one of 10 concurrent revokes of a key succeed', async () => {
      const { key, record } = await store.create('raced', 'pro', T0);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => store.revoke(record.id, T0 + i)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await store.verify(key), null);
    });

    it('trims names and refuses an empty name, control characters and an unknown tier', async () => {
      assert.equal((await store.create('  padded  ', 'free', T0)).record.name, 'padded');
      await assert.rejects(store.create('   ', 'free', T0), RangeError);
      await assert.rejects(store.create('bell\u0007', 'free', T0), RangeError);
      await assert.rejects(store.create('x', 'gold' as ApiKeyTier, T0), RangeError);
      assert.equal((await store.list()).length, 1);
    });
  });
}
