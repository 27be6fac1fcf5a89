import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createMerkleTreeBuilder } from '../../core/merkle/tree-builder.js';
import { EMPTY_ROOT, HASH_BYTES, leafHash, merkleLevels, merkleRoot } from '../../core/merkle/tree.js';
import { sealTreePages } from '../../store/seal-tree-pages.js';

const recordHashHex = (i: number): string => createHash('sha256').update(`record ${i}`).digest('hex');

/** The builder's pages as `level/page` → hex, and its root. */
function build(n: number, pageNodes: number): { pages: Map<string, string>; root: Uint8Array } {
  const pages = new Map<string, string>();
  const builder = createMerkleTreeBuilder(pageNodes, (level, page, nodes) => {
    const key = `${level}/${page}`;
    assert.ok(!pages.has(key), `page ${key} handed out twice`);
    pages.set(key, Buffer.from(nodes).toString('hex'));
  });
  for (let i = 0; i < n; i++) builder.addRecordHashHex(recordHashHex(i));
  assert.equal(builder.count, n);
  return { pages, root: builder.finish() };
}

/** merkleLevels of the same leaves cut into pages of `pageNodes`. */
function expected(n: number, pageNodes: number): { pages: Map<string, string>; root: Uint8Array } {
  const leaves = Array.from({ length: n }, (_, i) => leafHash(Buffer.from(recordHashHex(i), 'hex')));
  const levels = merkleLevels(leaves);
  const pages = new Map<string, string>();
  levels.forEach((bytes, level) => {
    for (let page = 0; page * pageNodes * HASH_BYTES < bytes.length; page++) {
      const slice = bytes.subarray(page * pageNodes * HASH_BYTES, (page + 1) * pageNodes * HASH_BYTES);
      pages.set(`${level}/${page}`, Buffer.from(slice).toString('hex'));
    }
  });
  return { pages, root: merkleRoot(leaves) };
}

describe('createMerkleTreeBuilder (streamed tree levels)', () => {
  it('gives the pages and root of merkleLevels for every size up to 70, pages of 2, 4 and 6 nodes', () => {
    for (const pageNodes of [2, 4, 6]) {
      for (let n = 0; n <= 70; n++) {
        const got = build(n, pageNodes);
        const want = expected(n, pageNodes);
        assert.deepEqual(got.root, want.root, `root of ${n} leaves`);
        assert.deepEqual(got.pages, want.pages, `pages of ${n} leaves, ${pageNodes} per page`);
      }
    }
  });

  it('gives exactly the pages sealTreePages stores, around page boundaries of 256 nodes', () => {
    for (const n of [1, 255, 256, 257, 512, 513, 65_536 + 3]) {
      const leaves = Array.from({ length: n }, (_, i) => leafHash(Buffer.from(recordHashHex(i), 'hex')));
      const stored = new Map<string, string>();
      for (const { level, page, nodes } of sealTreePages(merkleLevels(leaves))) {
        stored.set(`${level}/${page}`, Buffer.from(nodes).toString('hex'));
      }
      assert.deepEqual(build(n, 256).pages, stored, `${n} leaves`);
    }
  });

  it('gives the empty tree as merkleLevels does: EMPTY_ROOT alone on level 1', () => {
    const got = build(0, 256);
    assert.deepEqual(got.root, EMPTY_ROOT);
    assert.deepEqual([...got.pages.keys()], ['1/0']);
  });

  it('refuses a malformed record hash, an odd page size and use after finish', () => {
    const builder = createMerkleTreeBuilder(4, () => undefined);
    assert.throws(() => builder.addRecordHashHex('AB'.repeat(32)), TypeError);
    assert.throws(() => createMerkleTreeBuilder(3, () => undefined), RangeError);
    builder.finish();
    assert.throws(() => builder.addRecordHashHex('ab'.repeat(32)), /finished/);
  });
});
