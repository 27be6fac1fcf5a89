/**
 * The client against the repository's conformance vectors (test/fixtures/conformance/) and the Ed25519 edge cases
 * of "Taming the many EdDSAs": the same canonical JSON, signatures, job ids and receipt verdicts as the server.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  canonicalize,
  jobIdFromSignature,
  RECEIPT_CHECKS,
  publicKeyOf,
  sha256Hex,
  sign,
  signingMessage,
  verify,
  verifyReceipt,
} from '../src/index.js';
import { hexToBytes } from '../src/crypto.js';

const FIXTURES = join(import.meta.dirname, '../../../test/fixtures');
const load = <T>(name: string): T => JSON.parse(readFileSync(join(FIXTURES, name), 'utf8')) as T;

type Obj = Record<string, unknown>;
interface PatchOp {
  op: 'replace' | 'add' | 'remove';
  path: string;
  value?: unknown;
}

function applyPatch<T>(document: T, patch: readonly PatchOp[]): T {
  const copy = structuredClone(document);
  for (const { op, path, value } of patch) {
    const keys = path
      .split('/')
      .slice(1)
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop() as string;
    let parent = copy as unknown as Obj;
    for (const key of keys) parent = parent[key] as Obj;
    if (op === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(last), 1);
      else delete parent[last];
    } else parent[last] = structuredClone(value);
  }
  return copy;
}

describe('@geofabric/client: conformance vectors', () => {
  it('canonical JSON', () => {
    for (const c of load<{ name: string; input: string; canonical: string }[]>('conformance/canonical-json.json')) {
      assert.equal(canonicalize(JSON.parse(c.input)), c.canonical, c.name);
    }
  });

  it('signed requests: message, signature, job id, request hash', () => {
    const cases = load<Obj[]>('conformance/signed-requests.json');
    for (const c of cases) {
      const name = String(c.name);
      assert.equal(publicKeyOf(c.secret_key as string), c.public_key, name);
      const withKey = { ...(c.body as Obj), requester_pk: c.public_key };
      assert.equal(signingMessage(withKey), c.signing_message, name);
      assert.equal(sign(c.secret_key as string, c.signing_message as string), c.signature, name);
      assert.ok(verify(c.public_key as string, c.signing_message as string, c.signature as string), name);
      assert.equal(jobIdFromSignature(c.signature as string), c.job_id, name);
      assert.equal(sha256Hex(canonicalize(c.signed_body)), c.request_hash, name);
    }
  });

  it('receipts: each case verifies or fails the expected check', () => {
    const cases = load<
      { name: string; base: string; patch: PatchOp[]; options: Obj; expected: { ok: boolean; failed_check?: string } }[]
    >('conformance/receipt-cases.json');
    assert.ok(cases.length > 20);
    for (const c of cases) {
      const receipt = applyPatch(load(`conformance/receipt-${c.base}.json`), c.patch);
      const verdict = verifyReceipt(receipt, {
        ...(typeof c.options.sealer_pk === 'string' ? { sealerPk: c.options.sealer_pk } : {}),
        ...(c.options.allow_pending === true ? { allowPending: true } : {}),
      });
      assert.equal(verdict.ok, c.expected.ok, `${c.name}: ${JSON.stringify(verdict.checks.filter((x) => !x.ok))}`);
      assert.equal(verdict.failedCheck, c.expected.failed_check, c.name);
    }
  });

  it('never throws on a malformed receipt: every part replaced by null or a value of another type', () => {
    const valid = load<Obj>('conformance/receipt-valid.json');
    const paths = (value: unknown, at: (string | number)[] = []): (string | number)[][] =>
      typeof value !== 'object' || value === null
        ? []
        : Object.entries(value).flatMap(([k, v]) => {
            const key = Array.isArray(value) ? Number(k) : k;
            return [[...at, key], ...paths(v, [...at, key])];
          });
    // Pure-JS Ed25519 is slow: every shallow part, and a sample of the deep ones.
    const sample = paths(valid).filter((path, i) => path.length <= 2 || i % 25 === 0);
    for (const path of sample) {
      for (const other of [null, 'other']) {
        const copy = structuredClone(valid);
        let parent = copy as Record<string | number, unknown>;
        for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
        const last = path.at(-1)!;
        parent[last] = other === 'other' && typeof parent[last] === 'string' ? 0 : other;
        const verdict = verifyReceipt(copy);
        assert.ok(
          verdict.checks.length === RECEIPT_CHECKS.length || (verdict.checks.length === 1 && !verdict.ok),
          path.join('/'),
        );
      }
    }
  });

  it('Ed25519 policy: of the twelve speccheck cases, accepts 2 and 3 only', () => {
    const cases = load<{ message: string; pub_key: string; signature: string }[]>(
      'vectors/ed25519/speccheck-cases.json',
    );
    const accepted = cases.flatMap((c, i) => (verify(c.pub_key, hexToBytes(c.message), c.signature) ? [i] : []));
    assert.deepEqual(accepted, [2, 3]);
  });
});
