import assert from 'node:assert/strict';
import { noneMatchFails, parseEntityTags } from '../../core/etag.js';

const ours = '"abc123"';

describe('If-None-Match (RFC 9110 §13.1.2)', () => {
  it('matches our tag strongly or weakly, alone or in a list, and *', () => {
    assert.equal(noneMatchFails('"abc123"', ours), true);
    assert.equal(noneMatchFails('W/"abc123"', ours), true);
    assert.equal(noneMatchFails('"x", W/"abc123" ,"y"', ours), true);
    assert.equal(noneMatchFails('*', ours), true);
    assert.equal(noneMatchFails(' * ', ours), true);
  });

  it('does not match other tags, an absent field, or a malformed one', () => {
    assert.equal(noneMatchFails(undefined, ours), false);
    assert.equal(noneMatchFails('', ours), false);
    assert.equal(noneMatchFails('"abc"', ours), false);
    assert.equal(noneMatchFails('abc123', ours), false); // unquoted: malformed, ignored
    assert.equal(noneMatchFails('"abc123', ours), false);
    assert.equal(noneMatchFails('"x" "abc123"', ours), false); // missing comma
  });

  it('parses commas inside quotes and empty list elements', () => {
    assert.deepEqual(parseEntityTags('"a,b", ,W/"c"'), ['"a,b"', '"c"']);
    assert.equal(parseEntityTags('"a",*'), null);
  });
});
