/**
 * One verdict from four receipt verifiers (docs/protocol.md §15.3): the server's core (the reference, run by the
 * CLI), the TypeScript client and the dashboard's checker give the same `ok` and the same first failed check on
 * the agreement corpus (test/helpers/receipt-agreement.ts): the tampers, signed changes only a shape or fusion rule
 * refuses, and a differential fuzz of seeded mutations of the conformance receipts. The Python client runs the same
 * corpus (clients/python/tests/test_agreement.py, through scripts/receipt-corpus.ts). RECEIPT_FUZZ_COUNT and
 * RECEIPT_FUZZ_SEED run a longer or another fuzz.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { timestampMs as clientTimestampMs, isCell as clientIsCell } from '../../clients/typescript/src/shapes.js';
import { verifyReceipt as clientVerify } from '../../clients/typescript/src/receipt.js';
import {
  fuse as clientFuse,
  readingStatement as clientReadingStatement,
  signReading as clientSignReading,
} from '../../clients/typescript/src/telemetry.js';
import { keyPairFromSecret, signMessage } from '../../core/identity.js';
import { verifyReceipt } from '../../core/receipt.js';
import type { FusionReading } from '../../core/sensor-fusion.js';
import { readingStatement, signReading } from '../../core/telemetry.js';
import { fusionInputsOf } from '../helpers/fusion-receipt.js';
import {
  AGREEMENT_MUTATIONS,
  AGREEMENT_SEED,
  agreementBases,
  agreementCorpus,
  cellSamples,
  coreVerdict,
  fusionSamples,
  timestampSamples,
  type AgreementCase,
} from '../helpers/receipt-agreement.js';

interface PageVerdict {
  ok: boolean;
  failedCheck?: string;
}
interface Page {
  verifyReceipt(receipt: unknown, options?: { sealerPk?: string; allowPending?: boolean }): Promise<PageVerdict>;
}
interface PageShapes {
  isCell(value: unknown): boolean;
  timestampMs(value: unknown): number;
  fuse(readings: FusionReading[], merkleRoot: (hashes: string[]) => Promise<string>): Promise<Record<string, unknown>>;
}

// The dashboard's plain browser modules, loaded as the page loads them.
const dashboard = (file: string) => pathToFileURL(resolve(import.meta.dirname, '../../dashboard', file)).href;
const page = (await import(dashboard('receipt-verify.js'))) as Page;
const pageShapes = (await import(dashboard('receipt-shapes.js'))) as PageShapes;

/** RFC 8032 §7.1 test 2, the conformance receipts' requester (public). */
const AGENT = keyPairFromSecret('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb');
const seed = Number(process.env.RECEIPT_FUZZ_SEED ?? AGREEMENT_SEED);
const count = Number(process.env.RECEIPT_FUZZ_COUNT ?? AGREEMENT_MUTATIONS);
/** Record hashes in record-id order (a stable sort), as the fusion binds them. */
const sortedHashes = (readings: FusionReading[]) =>
  [...readings]
    .sort((a, b) => (a.record_id < b.record_id ? -1 : a.record_id > b.record_id ? 1 : 0))
    .map((r) => r.record_hash);
const shown = (v: { ok: boolean; failed_check?: string | undefined }) => (v.ok ? 'ok' : `fails ${v.failed_check}`);

describe('receipt verifiers agree: core, the TypeScript client, the dashboard', () => {
  let corpus: AgreementCase[];
  before(() => {
    corpus = agreementCorpus(seed, count);
  });

  it('the tampers and the signed cases fail where they are meant to, in core', () => {
    const built = corpus.filter((c) => c.intended !== undefined);
    assert.ok(built.length > 40, String(built.length));
    const off = built.flatMap((c) => {
      const verdict = coreVerdict(c);
      // A case built to fail without naming the check (receiptLeafCases) only has to fail; the next test holds the
      // four verifiers to one check for it.
      const met =
        c.intended!.failed_check === undefined && !c.intended!.ok ? !verdict.ok : shown(verdict) === shown(c.intended!);
      return met ? [] : [`${c.name}: ${shown(verdict)}, built to ${shown(c.intended!)}`];
    });
    assert.deepEqual(off, []);
  });

  it('every case of the corpus, the fuzz included: the same ok and the same first failed check', async function () {
    this.timeout(300_000); // some 20 s on two idle cores (the leaf sweep is most of it); the client's pure-JavaScript Ed25519 dominates
    assert.ok(corpus.length >= count);
    const disagreements: string[] = [];
    for (const c of corpus) {
      const options = {
        ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
        ...(c.options.allow_pending === true ? { allowPending: true } : {}),
      };
      const core = shown(coreVerdict(c));
      const client = clientVerify(c.receipt, options);
      const inPage = await page.verifyReceipt(c.receipt, options);
      const clientShown = shown({ ok: client.ok, failed_check: client.failedCheck });
      const pageShown = shown({ ok: inPage.ok, failed_check: inPage.failedCheck });
      if (clientShown !== core) disagreements.push(`${c.name}: core ${core}, TypeScript client ${clientShown}`);
      if (pageShown !== core) disagreements.push(`${c.name}: core ${core}, dashboard ${pageShown}`);
    }
    assert.deepEqual(disagreements, []);
  });

  it('a request signed over nesting deeper than canonical JSON allows fails request_signature in all three', async () => {
    // Not in the shared corpus: Python's own JSON parser stops near this depth. The JCS of this body is its
    // JSON.stringify (keys in order, nothing to escape), so the requester can sign what core refuses to serialise.
    let nest: unknown = [];
    for (let i = 0; i < 1000; i++) nest = [nest];
    const receipt = structuredClone(agreementBases().valid) as unknown as {
      request: { body: Record<string, unknown> };
    };
    const body = { nest, requester_pk: AGENT.publicKey };
    receipt.request.body = { ...body, signature: signMessage(AGENT.secretKey, JSON.stringify(body)) };
    const verdicts = [
      verifyReceipt(receipt).failedCheck,
      clientVerify(receipt).failedCheck,
      (await page.verifyReceipt(receipt)).failedCheck,
    ];
    assert.deepEqual(verdicts, ['request_signature', 'request_signature', 'request_signature']);
  });

  it('a device signs the same reading statement with the TypeScript client as with core', () => {
    for (const input of fusionInputsOf(agreementBases().fusion!)) {
      const { principal_pk: _p, ...reading } = input;
      assert.equal(clientReadingStatement(reading), readingStatement(reading));
      assert.equal(clientSignReading(AGENT.secretKey, reading), signReading(AGENT.secretKey, reading));
    }
  });

  it('the fusion arithmetic: the same numbers, bit for bit, and the inputs in the same order', async () => {
    for (const { readings, fused } of fusionSamples(seed)) {
      // The Merkle root stands for the order of the record hashes it is built over (checked whole above).
      const order = (hashes: string[]) => hashes.join(',');
      const expected = { ...fused, merkle_root: order(sortedHashes(readings)) };
      assert.deepEqual(clientFuse(readings, order), expected, 'TypeScript client');
      assert.deepEqual(await pageShapes.fuse(readings, async (h) => order(h)), expected, 'dashboard');
    }
  });

  it('H3 cells and timestamps read as core reads them', () => {
    for (const { text, valid } of cellSamples(seed)) {
      assert.equal(clientIsCell(text), valid, `TypeScript client: ${text}`);
      assert.equal(pageShapes.isCell(text), valid, `dashboard: ${text}`);
    }
    const samples = timestampSamples(seed);
    assert.ok(samples.filter((s) => s.ms !== null).length > samples.length / 2);
    for (const { text, ms } of samples) {
      for (const [who, read] of [
        ['TypeScript client', clientTimestampMs],
        ['dashboard', pageShapes.timestampMs],
      ] as const) {
        const got = read(text);
        assert.equal(Number.isFinite(got) ? got : null, ms, `${who}: ${text}`);
      }
    }
  });
});
