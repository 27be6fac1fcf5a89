/**
 * The dashboard's receipt checker lists only what verified (docs/protocol.md §15.2): the checks after the first that
 * failed are not shown as passed, and their details (which quote the receipt's values) are withheld.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { JobReceipt } from '../../core/receipt.js';
import { flip } from '../helpers/receipt-tampers.js';

type Verdict = { ok: boolean; failedCheck?: string; checks: { name: string; ok: boolean; detail: string }[] };
type Row = { name: string; state: string; detail: string };
const dashboard = (file: string) => pathToFileURL(resolve(import.meta.dirname, '../../dashboard', file)).href;
const valid = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../fixtures/conformance/receipt-valid.json'), 'utf8'),
) as JobReceipt;

describe('dashboard receipt checker rows (dashboard/receipt-view.js)', () => {
  it('shows no check after the first failure as passed, nor its detail', async () => {
    const { verifyReceipt } = (await import(dashboard('receipt-verify.js'))) as {
      verifyReceipt: (r: unknown) => Promise<Verdict>;
    };
    const { receiptRows } = (await import(dashboard('receipt-view.js'))) as {
      receiptRows: (v: Verdict) => Row[];
    };
    // The job record's signature broken: the answer still equals the (unproven) record, so job_answer passes.
    const tampered = structuredClone(valid);
    tampered.records[0]!.record!.signature = flip(tampered.records[0]!.record!.signature);
    const verdict = await verifyReceipt(tampered);
    assert.equal(verdict.failedCheck, 'job_record');
    assert.equal(verdict.checks.find((c) => c.name === 'job_answer')?.ok, true);
    const rows = receiptRows(verdict);
    const failed = rows.findIndex((r) => r.state === 'fail');
    assert.equal(rows[failed]?.name, 'job_record');
    assert.ok(rows.slice(0, failed).every((r) => r.state === 'pass'));
    for (const row of rows.slice(failed + 1)) {
      assert.equal(row.state, 'unverified', row.name);
      assert.equal(row.detail, 'not counted: the job_record check failed');
    }
    const passed = receiptRows(await verifyReceipt(valid));
    assert.ok(passed.every((r) => r.state === 'pass'));
  });
});
