/**
 * The dashboard's in-page receipt checker (dashboard/receipt-verify.js) against the conformance vectors
 * (test/fixtures/conformance): every case verifies or fails the expected check, as in the server's core and both
 * clients, and its check list is the server's (core/receipt.ts RECEIPT_CHECKS). It runs on Node's WebCrypto,
 * the API the browser gives it.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RECEIPT_CHECKS, verifyReceipt as serverVerify } from '../../core/receipt.js';
import { applyPatch, type PatchOp } from '../helpers/json-patch.js';

interface Verdict {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
  failedCheck?: string;
}
interface ReceiptVerify {
  RECEIPT_CHECKS: string[];
  verifyReceipt(receipt: unknown, options?: { sealerPk?: string; allowPending?: boolean }): Promise<Verdict>;
}
interface ReceiptCase {
  name: string;
  base: string;
  patch: PatchOp[];
  options: { sealer_pk?: string; allow_pending?: boolean };
  expected: { ok: boolean; failed_check?: string };
}

// A plain browser module, loaded as the page loads it.
const modulePath = pathToFileURL(resolve(import.meta.dirname, '../../dashboard/receipt-verify.js')).href;
const page = (await import(modulePath)) as ReceiptVerify;
const DIR = join(import.meta.dirname, '../fixtures/conformance');
const load = <T>(name: string): T => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as T;

describe('dashboard receipt checker (dashboard/receipt-verify.js) on the conformance vectors', () => {
  it('runs the server’s checks, in its order', async () => {
    assert.deepEqual(page.RECEIPT_CHECKS, [...RECEIPT_CHECKS]);
    const verdict = await page.verifyReceipt(load('receipt-valid.json'));
    assert.deepEqual(
      verdict.checks.map((c) => c.name),
      [...RECEIPT_CHECKS],
    );
  });

  it('every receipt case verifies or fails the expected check', async () => {
    for (const c of load<ReceiptCase[]>('receipt-cases.json')) {
      const receipt = applyPatch(load(`receipt-${c.base}.json`), c.patch);
      const options = {
        ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
        ...(c.options.allow_pending === undefined ? {} : { allowPending: c.options.allow_pending }),
      };
      const verdict = await page.verifyReceipt(receipt, options);
      const failing = verdict.checks.filter((x) => !x.ok).map((x) => `${x.name}: ${x.detail}`);
      assert.equal(verdict.ok, c.expected.ok, `${c.name}: ${failing.join('; ')}`);
      assert.equal(verdict.failedCheck, c.expected.failed_check, c.name);
    }
  });

  it('never throws on a malformed receipt, and agrees with the server on it', async () => {
    const valid = load<Record<string, unknown>>('receipt-valid.json');
    for (const value of [null, 3, 'x', [], {}, { ...valid, records: [null] }, { ...valid, job: { steps: 'no' } }]) {
      const verdict = await page.verifyReceipt(value);
      assert.equal(verdict.ok, false);
      assert.equal(verdict.failedCheck, serverVerify(value).failedCheck);
    }
    const broken = structuredClone(valid) as { records: { record: unknown }[] };
    broken.records[0]!.record = { version: 1, id: 5 };
    assert.equal((await page.verifyReceipt(broken)).failedCheck, serverVerify(broken).failedCheck);
  });
});
