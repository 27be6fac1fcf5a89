import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { BlobRetention, BlobStore } from '../../store/blob-store.js';

export type BlobStoreFactory = (
  retention?: BlobRetention,
) => Promise<{ store: BlobStore; cleanup?: () => Promise<void> }>;

const id = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** store/blob-store.ts on any adapter. */
export function describeBlobStoreContract(name: string, open: BlobStoreFactory): void {
  const DAY = 86_400_000;
  const T0 = Date.UTC(2026, 2, 1, 12);
  describe(`blob store contract: ${name}`, () => {
    let store: BlobStore;
    let cleanup: (() => Promise<void>) | undefined;
    beforeEach(async () => {
      ({ store, cleanup } = await open());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('returns each stored text exactly, 3 MB and non-ASCII included, and nothing for unknown ids', async () => {
      const big = JSON.stringify('é🌍x'.repeat(800_000));
      const small = '{"a":1}';
      await store.put(
        new Map([
          [id(big), big],
          [id(small), small],
        ]),
      );
      const found = await store.get([id(big), id(small), 'f'.repeat(64), id(big)]);
      assert.equal(found.size, 2);
      assert.equal(found.get(id(big)), big);
      assert.equal(found.get(id(small)), small);
    });

    it('stores a blob put twice, or by two callers at once, once', async () => {
      const text = '"same"';
      await Promise.all([store.put(new Map([[id(text), text]])), store.put(new Map([[id(text), text]]))]);
      await store.put(
        new Map([
          [id(text), text],
          [id('"other"'), '"other"'],
        ]),
      );
      const found = await store.get([id(text), id('"other"')]);
      assert.deepEqual([...found.values()].sort(), ['"other"', '"same"']);
      await store.put(new Map());
    });

    describe('retention', () => {
      let now = T0;
      let kept: BlobStore;
      let keptCleanup: (() => Promise<void>) | undefined;
      beforeEach(async () => {
        now = T0;
        ({ store: kept, cleanup: keptCleanup } = await open({ blobRetentionMs: 8 * DAY, clock: () => now }));
      });
      afterEach(async () => {
        await kept.close();
        await keptCleanup?.();
      });
      const one = (text: string) => new Map([[id(text), text]]);

      it('prunes blobs last stored before the window at a later put, and keeps those stored inside it', async () => {
        await kept.put(one('"old"'));
        now = T0 + 5 * DAY;
        await kept.put(one('"newer"'));
        now = T0 + 8 * DAY - 3_600_000; // a store prunes at most hourly
        await kept.put(one('"edge"'));
        assert.equal((await kept.get([id('"old"')])).size, 1, 'nothing is pruned inside the window');
        now = T0 + 8 * DAY + 1;
        await kept.put(one('"fresh"')); // prunes
        const found = await kept.get(['"old"', '"newer"', '"edge"', '"fresh"'].map(id));
        assert.deepEqual([...found.values()].sort(), ['"edge"', '"fresh"', '"newer"']);
      });

      it('keeps a blob another job stored before the window when it is stored again inside it', async () => {
        await kept.put(one('"shared"'));
        now = T0 + 7 * DAY; // a later job's step stores the same output: the dedupe hit stamps it afresh
        await kept.put(one('"shared"'));
        now = T0 + 8 * DAY + 1;
        await kept.put(one('"fresh"')); // prunes
        assert.equal((await kept.get([id('"shared"')])).get(id('"shared"')), '"shared"');
        now = T0 + 15 * DAY + 1;
        await kept.put(one('"later"')); // prunes: eight days after its last store
        assert.equal((await kept.get([id('"shared"')])).size, 0);
      });
    });
  });
}
