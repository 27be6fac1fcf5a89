import assert from 'node:assert/strict';
import { BoundedSet } from '../../core/bounded-set.js';

describe('BoundedSet', () => {
  it('keeps at most `limit` entries, forgetting the oldest first', () => {
    const set = new BoundedSet(3);
    for (const v of ['a', 'b', 'c', 'd']) set.add(v);
    assert.deepEqual([...set], ['b', 'c', 'd']);
  });

  it('does not evict when an entry already present is added again', () => {
    const set = new BoundedSet(2);
    set.add('a').add('b').add('a');
    assert.deepEqual([...set], ['a', 'b']);
  });

  it('refuses a limit that is not a positive integer', () => {
    assert.throws(() => new BoundedSet(0), RangeError);
    assert.throws(() => new BoundedSet(1.5), RangeError);
  });
});
