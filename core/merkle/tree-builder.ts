/**
 * The tree of `merkleLevels` built leaf by leaf, in O(log n) memory: each level keeps only a pending left
 * node and the page it is filling, and hands every page to `onPage` as soon as it is complete. Sealing a
 * 10M-record epoch so costs a few hundred KiB instead of the 640 MB of its levels, and the pages are exactly
 * those `sealTreePages(merkleLevels(leaves))` gives (same level, page and bytes), so the root and the seal
 * are byte-identical.
 *
 * Shape (as reduceLevel in tree.ts): pairs are hashed left to right as they complete; at `finish`, each
 * level's odd last node is promoted unchanged to the end of the level above (RFC 9162, no duplication).
 */
import { HASH_BYTES, EMPTY_ROOT, hashPairInto, writeLeafHashFromHex } from './tree.js';

export interface MerkleTreeBuilder {
  /** Adds the leaf hash of the next record, given its record_hash as 64 lowercase hex (in leaf order). */
  addRecordHashHex(recordHashHex: string): void;
  /** Leaves added so far. */
  readonly count: number;
  /**
   * Flushes every level's last (partial) page and returns the root: EMPTY_ROOT (as level 1, page 0, like
   * merkleLevels' empty tree) when no leaf was added. The builder is spent afterwards.
   */
  finish(): Uint8Array;
}

/**
 * `onPage(level, page, nodes)` gets each page once, in no particular level order; `nodes` is reused after
 * the call returns (copy it to keep it). `pageNodes` must be even so a pair never straddles two pages.
 */
export function createMerkleTreeBuilder(
  pageNodes: number,
  onPage: (level: number, page: number, nodes: Uint8Array) => void,
): MerkleTreeBuilder {
  if (!Number.isSafeInteger(pageNodes) || pageNodes < 2 || pageNodes % 2 !== 0) {
    throw new RangeError(`pageNodes must be an even integer ≥ 2, got ${pageNodes}`);
  }
  const pageBytes = pageNodes * HASH_BYTES;
  interface Level {
    page: Uint8Array;
    /** Nodes in `page`. */
    filled: number;
    /** Pages already handed out. */
    pages: number;
    /** Nodes added to the level in all. */
    nodes: number;
  }
  const levels: Level[] = [];
  const level = (at: number): Level => {
    let found = levels[at];
    if (found === undefined) levels[at] = found = { page: new Uint8Array(pageBytes), filled: 0, pages: 0, nodes: 0 };
    return found;
  };
  let finished = false;

  /** Appends the node just written at `level.page[filled]`; hashes it with its left sibling when it has one. */
  function commit(at: number, current: Level): void {
    const offset = current.filled * HASH_BYTES;
    current.filled++;
    current.nodes++;
    if (current.nodes % 2 === 0) {
      // Its left sibling is the node before it on the same page (pageNodes is even).
      const up = level(at + 1);
      hashPairInto(current.page, offset - HASH_BYTES, up.page, up.filled * HASH_BYTES);
      commit(at + 1, up);
    }
    if (current.filled === pageNodes) {
      onPage(at, current.pages++, current.page);
      current.filled = 0;
    }
  }

  return {
    get count() {
      return levels[0]?.nodes ?? 0;
    },
    addRecordHashHex(recordHashHex) {
      if (finished) throw new Error('the tree is finished');
      const leaves = level(0);
      writeLeafHashFromHex(recordHashHex, leaves.page, leaves.filled * HASH_BYTES);
      commit(0, leaves);
    },
    finish() {
      if (finished) throw new Error('the tree is finished');
      finished = true;
      if ((levels[0]?.nodes ?? 0) === 0) {
        onPage(1, 0, EMPTY_ROOT.slice());
        return EMPTY_ROOT.slice();
      }
      for (let at = 0; ; at++) {
        const current = levels[at] as Level;
        // The last node of the level: the page always holds it, as a full page is flushed only after its pair.
        const last =
          current.filled === 0
            ? null
            : current.page.slice((current.filled - 1) * HASH_BYTES, current.filled * HASH_BYTES);
        if (current.nodes === 1) {
          if (current.filled > 0) onPage(at, current.pages, current.page.subarray(0, current.filled * HASH_BYTES));
          return last as Uint8Array;
        }
        if (current.nodes % 2 === 1) {
          // The odd last node rises unchanged (it may complete a pair on the level above).
          const up = level(at + 1);
          up.page.set(last as Uint8Array, up.filled * HASH_BYTES);
          commit(at + 1, up);
        }
        if (current.filled > 0) onPage(at, current.pages, current.page.subarray(0, current.filled * HASH_BYTES));
      }
    },
  };
}
