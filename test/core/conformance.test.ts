/**
 * The conformance vectors (test/fixtures/conformance/, written by scripts/gen-conformance.ts) hold for the server's
 * own core: JCS, signed requests and job ids, and receipt verification with the expected failed check.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson } from '../../core/canonical-json.js';
import { requestSigningMessage, signRequestBody } from '../../core/gates/signature.js';
import { jobIdFromSignature, requestHash } from '../../core/job-hash.js';
import { verifyReceipt } from '../../core/receipt.js';
import { applyPatch, type PatchOp } from '../helpers/json-patch.js';

const DIR = join(import.meta.dirname, '../fixtures/conformance');
const load = <T>(name: string): T => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as T;

interface CanonicalCase {
  name: string;
  input: string;
  canonical: string;
}
interface SignedCase {
  name: string;
  secret_key: string;
  public_key: string;
  body: Record<string, unknown>;
  signing_message: string;
  signature: string;
  signed_body: Record<string, unknown>;
  job_id: string;
  request_hash: string;
}
interface ReceiptCase {
  name: string;
  base: string;
  patch: PatchOp[];
  options: { sealer_pk?: string; allow_pending?: boolean };
  expected: { ok: boolean; failed_check?: string };
}

describe('conformance vectors (test/fixtures/conformance)', () => {
  it('canonical JSON', () => {
    const cases = load<CanonicalCase[]>('canonical-json.json');
    assert.ok(cases.length >= 10);
    for (const c of cases) assert.equal(canonicalJson(JSON.parse(c.input)), c.canonical, c.name);
  });

  it('signed requests: message, signature, job id and request hash', () => {
    for (const c of load<SignedCase[]>('signed-requests.json')) {
      const signed = signRequestBody(c.secret_key, c.body);
      assert.equal(signed.signature, c.signature, c.name);
      assert.deepEqual(signed.body, c.signed_body, c.name);
      assert.equal(requestSigningMessage(c.signed_body), c.signing_message, c.name);
      assert.equal(jobIdFromSignature(c.signature), c.job_id, c.name);
      assert.equal(requestHash(c.signed_body), c.request_hash, c.name);
    }
  });

  it('receipts: every case verifies or fails the expected check', () => {
    const cases = load<ReceiptCase[]>('receipt-cases.json');
    assert.ok(cases.some((c) => c.expected.ok) && cases.some((c) => !c.expected.ok));
    for (const c of cases) {
      const receipt = applyPatch(load(`receipt-${c.base}.json`), c.patch);
      const verdict = verifyReceipt(receipt, {
        ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
        ...(c.options.allow_pending === undefined ? {} : { allowPending: c.options.allow_pending }),
      });
      assert.equal(verdict.ok, c.expected.ok, `${c.name}: ${JSON.stringify(verdict.checks.filter((x) => !x.ok))}`);
      assert.equal(verdict.failedCheck, c.expected.failed_check, c.name);
    }
  });
});
