import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { BlobStore } from '../../store/blob-store.js';

export type BlobStoreFactory = () => Promise<{ store: BlobStore; cleanup?: () => Promise<void> }>;

const id = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** store/blob-store.ts on any adapter. */
export function describeBlobStoreContract(name: string, open: BlobStoreFactory): void {
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
  });
}
