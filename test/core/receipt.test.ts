/**
 * verifyReceipt (core/receipt.ts) on hostile input: any part of a valid receipt replaced by a value of another
 * type gives a verdict that lists every check, never an exception.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECEIPT_CHECKS, verifyReceipt } from '../../core/receipt.js';

const VALID = JSON.parse(
  readFileSync(join(import.meta.dirname, '../fixtures/conformance/receipt-valid.json'), 'utf8'),
) as unknown;

/** Every path into `value` (objects and arrays), the root excluded. */
function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...at, k], ...paths(v, [...at, k])]);
}

/** The receipt with the value at `path` replaced by null, and by a value of another type. */
function replaced(path: (string | number)[]): unknown[] {
  return [null, 'other'].map((replacement) => {
    const copy = structuredClone(VALID) as Record<string | number, unknown>;
    let parent = copy;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    const last = path.at(-1)!;
    parent[last] = replacement === 'other' && typeof parent[last] === 'string' ? 0 : replacement;
    return copy;
  });
}

describe('verifyReceipt on malformed receipts (core/receipt.ts)', () => {
  it('never throws: every part replaced by null and by a value of another type', () => {
    assert.equal(verifyReceipt(VALID).ok, true);
    const all = paths(VALID);
    assert.ok(all.length > 100, String(all.length));
    for (const path of all) {
      for (const receipt of replaced(path)) {
        const verdict = verifyReceipt(receipt);
        const names = verdict.checks.map((c) => c.name);
        assert.ok(names.length === RECEIPT_CHECKS.length || (names.length === 1 && !verdict.ok), path.join('/'));
      }
    }
    for (const junk of [null, 1, 'receipt', [], {}]) assert.equal(verifyReceipt(junk).failedCheck, 'receipt_format');
  });
});
