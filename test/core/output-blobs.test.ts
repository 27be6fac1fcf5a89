import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { hasBlobRefs, isBlobRef } from '../../core/blob-ref.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { BLOB_HEAD_CHARS, INLINE_FIELD_BYTES, resolveOutput, splitOutput } from '../../core/output-blobs.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('step outputs out of line (core/output-blobs.ts)', () => {
  it('leaves an output of small fields as it is, the same object', () => {
    const output = { text: 'x'.repeat(INLINE_FIELD_BYTES / 6), n: 1, ok: true, none: null, list: [1, 2] };
    const split = splitOutput(output);
    assert.equal(split.output, output);
    assert.equal(split.blobs.size, 0);
  });

  it('replaces each field over the limit by a reference to the SHA-256 of its canonical JSON, with a head', () => {
    const text = 'é'.repeat(3_000_000);
    const list = Array.from({ length: 5000 }, (_, i) => ({ name: `place ${i}` }));
    const output = { text, locations: list, model: 'm' };
    const { output: compact, blobs } = splitOutput(output);
    const textJson = canonicalJson(text);
    assert.deepEqual(compact.text, {
      $blob: sha256(textJson),
      bytes: Buffer.byteLength(textJson),
      head: text.slice(0, BLOB_HEAD_CHARS),
    });
    assert.ok(isBlobRef(compact.locations) && !('head' in compact.locations));
    assert.equal(compact.model, 'm');
    assert.equal(blobs.get(sha256(textJson)), textJson);
    assert.ok(JSON.stringify(compact).length < 2 * BLOB_HEAD_CHARS + 500, 'the compact output is small');
    assert.equal(hasBlobRefs([{ output: compact }]), true);
    assert.equal(hasBlobRefs([{ output }]), false);
    assert.deepEqual(resolveOutput(compact, blobs), output);
    // Splitting again changes nothing: references stay as they are.
    assert.deepEqual(splitOutput(compact).output, compact);
  });

  it('refuses to resolve a missing or altered blob', () => {
    const { output, blobs } = splitOutput({ text: 'y'.repeat(INLINE_FIELD_BYTES + 1) });
    assert.throws(() => resolveOutput(output, new Map()), RangeError);
    const [id] = [...blobs.keys()];
    assert.throws(() => resolveOutput(output, new Map([[id!, '"z"']])), /missing or altered/);
  });
});
