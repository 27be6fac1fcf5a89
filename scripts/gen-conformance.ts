/**
 * Writes the conformance vectors of test/fixtures/conformance/ (see its README.md): canonical JSON cases, signed
 * requests with their job ids and request hashes, and job receipts (docs/protocol.md §15) — a valid one from a real
 * job run on a local gateway, a pending one, one of a sensor_fusion job with its signed inputs, and tampered
 * variants as JSON patches with the check that must fail.
 * Every value comes from this repository's own code; keys are the RFC 8032 test keys, never real ones.
 *
 *   npx tsx scripts/gen-conformance.ts
 *   npx tsx scripts/gen-conformance.ts --custodial-only   (derives receipt-custodial.json and its cases from the
 *                                                          receipt-valid.json on disk; nothing else is rewritten)
 *   npx tsx scripts/gen-conformance.ts --peer-heads-only  (derives receipt-peer-heads.json and its cases from the
 *                                                          receipt-valid.json on disk; nothing else is rewritten)
 *
 * Regenerating changes the receipts' latencies and seal times, nothing a verifier depends on.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { cellToChildren, gridDisk } from 'h3-js';
import { canonicalJson } from '../core/canonical-json.js';
import { epochAt, epochWindow } from '../core/epoch.js';
import { requestSigningMessage, signRequestBody } from '../core/gates/signature.js';
import { DEFAULT_JOB_CELL } from '../core/h3-cell.js';
import { bytesToHex } from '../core/hex.js';
import { keyPairFromSecret, signMessage } from '../core/identity.js';
import { jobIdFromSignature, requestHash } from '../core/job-hash.js';
import { sha256Hex } from '../core/hash.js';
import { inclusionProofFromLevels } from '../core/merkle/inclusion.js';
import { signRecord } from '../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord } from '../core/proof-types.js';
import { sealHeadsFor, verifyReceipt, type JobReceipt } from '../core/receipt.js';
import { sealHeadHash, type SealHead, type UnsignedSealHead } from '../core/seal-log.js';
import { createSealWithLevels } from '../core/seal.js';
import { startGateway } from '../test/helpers/gateway.js';
import { certFor, signJob } from '../test/helpers/jobs.js';
import { sealThrough } from '../test/helpers/proofs.js';
import { signedReadings } from '../test/helpers/telemetry.js';
import { runReceiptJob, twoStepJob } from '../test/helpers/receipt-job.js';
import { applyPatch } from '../test/helpers/json-patch.js';
import { fusionInputsOf, fusionReceipt as rebuiltFusion, resealed } from '../test/helpers/fusion-receipt.js';
import { RECEIPT_TAMPERS } from '../test/helpers/receipt-tampers.js';

const OUT = resolve(import.meta.dirname, '../test/fixtures/conformance');
/** RFC 8032 §7.1 test 1 (the human principal) and test 2 (the requester, an agent). */
const HUMAN = keyPairFromSecret('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
const AGENT = keyPairFromSecret('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb');
/** A fixed node key, so the receipt's sealer is the same on every run. */
const NODE = keyPairFromSecret(sha256Hex('geofabric conformance node key (public, never use)'));
const NOW = Date.parse('2026-11-26T10:00:30.000Z');

/** Input texts (numbers and escapes as written) and their JCS. */
const CANONICAL_INPUTS: [string, string][] = [
  ['literals', '[null, true, false]'],
  ['empty containers', '{"a": {}, "b": []}'],
  ['RFC 8785 numbers', '[333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001]'],
  ['negative zero', '[-0, -0.0]'],
  ['exponent thresholds', '[1e20, 1e21, 1e-6, 1e-7, 123456789012345680000]'],
  ['integers and fractions', '[0.1, 100, -1.5, 9007199254740991, 5e-324]'],
  ['string escapes', '"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/"'],
  ['control characters', '"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\\u007f"'],
  ['non-ASCII stays literal', '{"city": "Zürich", "emoji": "😀", "han": "漢字"}'],
  [
    'keys sorted by UTF-16 code units',
    '{"\\u20ac": "Euro", "\\r": "CR", "\\ufb33": "Dalet", "1": "One", "\\ud83d\\ude00": "Emoji", "\\u0080": "Control", "\\u00f6": "o-umlaut"}',
  ],
  ['nested objects sorted at every level', '{"b": {"z": 1, "a": [{"y": 2, "x": 1}]}, "a": null}'],
  ['whitespace removed', ' { "a" : [ 1 , 2 ] ,\n "b" : "c d" } '],
  ['uppercase and lowercase keys', '{"b": 1, "B": 2, "a": 3, "A": 4, "_": 5}'],
];

function canonicalCases() {
  return CANONICAL_INPUTS.map(([name, input]) => ({
    name,
    input,
    canonical: canonicalJson(JSON.parse(input)),
  }));
}

/** Unsigned bodies; the requester key is added and signed by signRequestBody. */
const REQUESTS: { name: string; key: typeof HUMAN; body: Record<string, unknown> }[] = [
  {
    name: 'docs/protocol.md §14.1',
    key: HUMAN,
    body: {
      h3_cell: '861e8050fffffff',
      steps: [
        {
          id: 'ask',
          type: 'inference',
          messages: [{ role: 'user', content: 'Three parks in Rome' }],
          max_tokens: 256,
        },
      ],
      budget_credits: 0.1,
      created_at: '2026-11-26T10:00:00.000Z',
      nonce: 'a1',
    },
  },
  {
    name: 'a chain of three steps, no created_at',
    key: AGENT,
    body: {
      h3_cell: '861e8050fffffff',
      steps: [
        { id: 'ndvi', type: 'image_process', operation: 'ndvi', context: { h3_cell: '861e8050fffffff' } },
        {
          id: 'explain',
          type: 'inference',
          depends_on: 'ndvi',
          messages: [{ role: 'user', content: 'Où est-ce vert ?' }],
        },
        { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12, style: 'osm-bright' },
      ],
      budget_credits: 1e-3,
    },
  },
  {
    name: 'the same body with a nonce is another job',
    key: AGENT,
    body: {
      h3_cell: '861e8050fffffff',
      steps: [{ id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'Zürich 😀' }] }],
      budget_credits: 0.05,
      nonce: 'second',
    },
  },
];

function signedRequests() {
  return REQUESTS.map(({ name, key, body }) => {
    const signed = signRequestBody(key.secretKey, body);
    return {
      name,
      secret_key: key.secretKey,
      public_key: key.publicKey,
      body,
      signing_message: requestSigningMessage(signed.body),
      signature: signed.signature,
      signed_body: signed.body,
      job_id: jobIdFromSignature(signed.signature),
      request_hash: requestHash(signed.body),
    };
  });
}

type Patch = { op: 'replace' | 'add' | 'remove'; path: string; value?: unknown };
interface ReceiptCase {
  name: string;
  base: string;
  patch: Patch[];
  options: { sealer_pk?: string; allow_pending?: boolean };
  expected: { ok: boolean; failed_check?: string };
}
const pointer = (parts: (string | number)[]) =>
  parts.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** RFC 6902 operations (replace, add, remove) turning `a` into `b`. */
function diff(a: unknown, b: unknown, at: (string | number)[] = []): Patch[] {
  if (canonicalJson(a) === canonicalJson(b)) return [];
  const isObj = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(a) && isObj(b)) {
    const x = a as Record<string, unknown>;
    const y = b as Record<string, unknown>;
    const ops: Patch[] = [];
    for (const k of Object.keys(x)) {
      if (!(k in y)) ops.push({ op: 'remove', path: pointer([...at, k]) });
      else ops.push(...diff(x[k], y[k], [...at, k]));
    }
    for (const k of Object.keys(y)) if (!(k in x)) ops.push({ op: 'add', path: pointer([...at, k]), value: y[k] });
    return ops;
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    return a.flatMap((item, i) => diff(item, b[i], [...at, i]));
  }
  return [{ op: 'replace', path: pointer(at), value: b }];
}

async function receipts() {
  const chain = [certFor(HUMAN, AGENT.publicKey, {}, NOW)];
  const job = await runReceiptJob({ requester: AGENT, node: NODE, nowMs: NOW, nonce: 'conformance', chain });
  try {
    const pending = job.pending;
    await job.seal();
    // The job record's epoch root as if anchored on a ledger (a made-up transaction: nothing is looked up).
    const seal = (await job.receipt()).records[0]!.seal!;
    // Later epochs sealed too, so the receipt's head is later than the record's seal: the seal's inclusion proof
    // and the consistency proof from the anchored head have nodes to tamper with (docs/protocol.md §15.4).
    await sealThrough(job.gateway.proofs, NODE, job.epoch + LATER_SEALS);
    await job.gateway.ledger.recordAnchor({
      version: 1,
      sealer_pk: seal.sealer_pk,
      epoch: seal.epoch,
      root: seal.merkle_root,
      status: 'submitted',
      tx_hash: sha256Hex('conformance anchor'),
      envelope_xdr: null,
      ledger: 1,
      attempts: 1,
      error: null,
      at: new Date(NOW + 3_600_000).toISOString(),
    });
    const valid = await job.receipt();
    const check = (receipt: JobReceipt, options = {}) => verifyReceipt(receipt, options);
    if (!check(valid, { sealerPk: NODE.publicKey }).ok) throw new Error('the generated receipt does not verify');
    const cases: ReceiptCase[] = [
      { name: 'valid', base: 'valid', patch: [], options: {}, expected: { ok: true } },
      {
        name: 'valid, node pinned',
        base: 'valid',
        patch: [],
        options: { sealer_pk: NODE.publicKey },
        expected: { ok: true },
      },
      {
        name: 'another node pinned',
        base: 'valid',
        patch: [],
        options: { sealer_pk: HUMAN.publicKey },
        expected: { ok: false, failed_check: 'sealer' },
      },
      { name: 'pending', base: 'pending', patch: [], options: {}, expected: { ok: false, failed_check: 'sealed' } },
      {
        name: 'pending, allowed',
        base: 'pending',
        patch: [],
        options: { allow_pending: true },
        expected: { ok: true },
      },
      {
        name: 'delegation certificate signature',
        base: 'valid',
        patch: diff(
          valid,
          withChain(valid, (c) => ({ ...c, principal_signature: flip(c.principal_signature) })),
        ),
        options: {},
        expected: { ok: false, failed_check: 'delegation_chain' },
      },
      {
        name: 'delegation chain expired before the job (signed, but not valid at the job record time)',
        base: 'valid',
        patch: diff(valid, replaceChain(valid, [certFor(HUMAN, AGENT.publicKey, pastWindow, NOW)])),
        options: {},
        expected: { ok: false, failed_check: 'delegation_chain' },
      },
      {
        name: 'delegation chain not yet valid at the job',
        base: 'valid',
        patch: diff(valid, replaceChain(valid, [certFor(HUMAN, AGENT.publicKey, futureWindow, NOW)])),
        options: {},
        expected: { ok: false, failed_check: 'delegation_chain' },
      },
      {
        name: 'anchor root',
        base: 'valid',
        patch: [{ op: 'replace', path: '/records/0/anchor/root', value: flip(seal.merkle_root) }],
        options: {},
        expected: { ok: false, failed_check: 'anchor' },
      },
      ...RECEIPT_TAMPERS.filter((t) => t.appliesTo?.(valid) !== false).map((tamper) => {
        const copy = structuredClone(valid);
        tamper.apply(copy);
        const verdict = check(copy, { allowPending: tamper.options?.allow_pending === true });
        if (verdict.failedCheck !== tamper.expected) throw new Error(`${tamper.name}: fails ${verdict.failedCheck}`);
        return {
          name: tamper.name,
          base: 'valid',
          patch: diff(valid, copy),
          options: tamper.options ?? {},
          expected: { ok: false, failed_check: tamper.expected },
        };
      }),
    ];
    cases.push(...signedHeadCases(valid), ...v1Cases());
    const createdAt = await createdAtReceipt(chain);
    cases.push(
      { name: 'signed created_at: valid', base: 'created-at', patch: [], options: {}, expected: { ok: true } },
      {
        // Valid when the job record was written, not at the signed created_at: the job's time is created_at.
        name: 'signed created_at: certificate not yet valid then, though valid when the record was written',
        base: 'created-at',
        patch: diff(createdAt, replaceChain(createdAt, [certFor(HUMAN, AGENT.publicKey, afterCreatedAt, NOW)])),
        options: {},
        expected: { ok: false, failed_check: 'delegation_chain' },
      },
    );
    const fusion = await fusionReceipt();
    cases.push(...fusionCases(fusion));
    return { valid, pending, createdAt, fusion, cases };
  } finally {
    await job.close();
  }
}

/** Epochs the node seals after the job's, before the receipt is fetched: its head is of 1 + this many seals. */
const LATER_SEALS = 4;

/** A head re-signed by `key` after `edit` (any signer: the check is who may sign, not whether it signed). */
function resignedHead(head: SealHead, key: typeof NODE, edit: (h: Record<string, unknown>) => void): SealHead {
  const { head_hash: _h, signature: _s, ...unsigned } = structuredClone(head) as SealHead;
  edit(unsigned as unknown as Record<string, unknown>);
  const hash = sealHeadHash(unsigned as UnsignedSealHead);
  return { ...(unsigned as UnsignedSealHead), head_hash: hash, signature: signMessage(key.secretKey, hash) };
}

/**
 * Version 2 attacks that need a signature (docs/protocol.md §15.4): heads re-signed by the node or by another key.
 * Each must fail the named check in every verifier.
 */
function signedHeadCases(valid: JobReceipt): ReceiptCase[] {
  const entry = valid.seal_heads![0]!;
  const head = entry.head;
  const variant = (name: string, expected: string, edit: (r: JobReceipt) => void): ReceiptCase => {
    const copy = structuredClone(valid);
    edit(copy);
    const verdict = verifyReceipt(copy);
    if (verdict.failedCheck !== expected) throw new Error(`${name}: fails ${verdict.failedCheck ?? 'nothing'}`);
    return {
      name,
      base: 'valid',
      patch: diff(valid, copy),
      options: {},
      expected: { ok: false, failed_check: expected },
    };
  };
  const otherRoot = sha256Hex('another history');
  return [
    variant('head signed by a key neither the sealer nor the node', 'seal_chain', (r) => {
      r.seal_heads![0]!.head = resignedHead(head, ROGUE, (h) => void (h.signer_pk = ROGUE.publicKey));
    }),
    variant('head of another sealer, signed by the node', 'seal_chain', (r) => {
      r.seal_heads![0]!.head = resignedHead(head, NODE, (h) => void (h.sealer_pk = WORKER.publicKey));
    }),
    variant('head over a log with a seal omitted (first_epoch shifted), signed by the node', 'seal_chain', (r) => {
      r.seal_heads![0]!.head = resignedHead(head, NODE, (h) => void (h.first_epoch = (h.first_epoch as number) - 1));
    }),
    variant('head of another size and root, signed by the node, proof unchanged', 'seal_chain', (r) => {
      r.seal_heads![0]!.head = resignedHead(head, NODE, (h) => {
        h.tree_size = (h.tree_size as number) + 1;
        h.root_hash = otherRoot;
      });
    }),
    variant('equivocation: an anchored head of the same size, another root, signed by the node', 'anchor', (r) => {
      r.seal_heads![0]!.anchored = {
        head: resignedHead(head, NODE, (h) => void (h.root_hash = otherRoot)),
        consistency: [],
      };
    }),
    variant('anchored head of another size than the anchored epoch, signed by the node', 'anchor', (r) => {
      const anchored = r.seal_heads![0]!.anchored!;
      anchored.head = resignedHead(anchored.head, NODE, (h) => void (h.tree_size = (h.tree_size as number) + 1));
    }),
    variant('anchored head signed by another key', 'anchor', (r) => {
      const anchored = r.seal_heads![0]!.anchored!;
      anchored.head = resignedHead(anchored.head, ROGUE, (h) => void (h.signer_pk = ROGUE.publicKey));
    }),
  ];
}

/**
 * Version 1 (every seal since the sealer's first, docs/protocol.md §15.1) still verifies: `receipt-v1.json` is the
 * valid receipt as this repository made it before version 2, kept as it was, with its tampered cases.
 */
function v1Cases(): ReceiptCase[] {
  const v1 = read<JobReceipt>('receipt-v1.json');
  if (!verifyReceipt(v1, { sealerPk: NODE.publicKey }).ok) throw new Error('the version 1 receipt fails');
  return [
    { name: 'v1: valid', base: 'v1', patch: [], options: {}, expected: { ok: true } },
    {
      name: 'v1: valid, node pinned',
      base: 'v1',
      patch: [],
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    ...RECEIPT_TAMPERS.filter((t) => t.appliesTo?.(v1) !== false).map((tamper) => {
      const copy = structuredClone(v1);
      tamper.apply(copy);
      const verdict = verifyReceipt(copy, { allowPending: tamper.options?.allow_pending === true });
      if (verdict.failedCheck !== tamper.expected) throw new Error(`v1: ${tamper.name}: fails ${verdict.failedCheck}`);
      return {
        name: `v1: ${tamper.name}`,
        base: 'v1',
        patch: diff(v1, copy),
        options: tamper.options ?? {},
        expected: { ok: false, failed_check: tamper.expected },
      };
    }),
  ];
}

/** Six devices (fixed keys) report PM2.5 in the epoch before NOW's: decimals, a chatty device, an outlier. */
const FUSION_DEVICES: [string, number[]][] = [
  ['a', [10.1]],
  ['b', [12.3]],
  ['c', [11.7, 13.2, 14.9, 30.4, 9.6]],
  ['d', [13.9, 14.2]],
  ['e', [15.4]],
  ['f', [80.2]],
];
const deviceKey = (name: string) => keyPairFromSecret(sha256Hex(`geofabric conformance device ${name}`));
const FUSION_EPOCH = epochAt(NOW) - 1;
const FUSION_START = epochWindow(FUSION_EPOCH).start;

/**
 * A sealed receipt of a one-step sensor_fusion job (docs/protocol.md §2.10): the devices' signed batches are
 * ingested in FUSION_EPOCH, the job runs at NOW and fuses that epoch, and both epochs are sealed.
 */
async function fusionReceipt(): Promise<JobReceipt> {
  let now = FUSION_START + 30 * 60_000;
  const gw = await startGateway({ clock: () => now, node: NODE });
  try {
    const cells = cellToChildren(DEFAULT_JOB_CELL, 9).sort();
    for (const [i, [name, values]] of FUSION_DEVICES.entries()) {
      const readings = values.map((value, k) => ({
        quantity: 'pm2_5',
        value,
        unit: 'ug/m3',
        observed_at: new Date(FUSION_START + (5 + k) * 60_000).toISOString(),
      }));
      const device = deviceKey(name);
      const signed = signRequestBody(device.secretKey, {
        h3_cell: cells[i],
        // Each reading signed by its device over its statement (docs/protocol.md §2.10).
        readings: signedReadings(device, cells[i]!, readings),
        created_at: new Date(now).toISOString(),
      });
      const res = await gw.post('/v1/telemetry', signed.body, { 'x-idn-signature': signed.signature });
      if (res.status !== 200) throw new Error(`telemetry of device ${name}: ${res.text}`);
    }
    now = NOW;
    const job = signJob(AGENT, {
      h3_cell: DEFAULT_JOB_CELL,
      steps: [{ id: 'fuse', type: 'sensor_fusion', quantity: 'pm2_5' }],
      budget_credits: 0.1,
      nonce: 'conformance-fusion',
    });
    const res = await gw.post('/v1/compute', job.body, job.headers);
    if (res.status !== 200) throw new Error(`fusion job: ${res.text}`);
    const jobId = (res.body as { job_id: string }).job_id;
    await gw.writer.flush();
    await sealThrough(gw.proofs, gw.node, FUSION_EPOCH + 1);
    const receipt = (await gw.get(`/v1/compute/${jobId}/receipt`)).body as JobReceipt;
    if (!verifyReceipt(receipt, { sealerPk: NODE.publicKey }).ok) throw new Error('the fusion receipt fails');
    if (!receipt.records.some((r) => r.role === 'input')) throw new Error('the fusion receipt has no inputs');
    return receipt;
  } finally {
    await gw.close();
  }
}

type Obj = Record<string, unknown>;
const inputIndexes = (r: JobReceipt) => r.records.flatMap((e, i) => (e.role === 'input' ? [i] : []));
/** The input entry of the device `name`'s first reading. */
const inputOf = (r: JobReceipt, name: string) =>
  r.records.find((e) => e.role === 'input' && (e.record!.payload as Obj).device_pk === deviceKey(name).publicKey)!;
/** Changes an input's record and signs it again with the (public) node key: a well-signed reading that lies. */
function resign(r: JobReceipt, name: string, edit: (record: ProofRecord) => void) {
  const entry = inputOf(r, name);
  edit(entry.record!);
  entry.record = signRecord(NODE.secretKey, entry.record!);
}

/** An input not synced yet in a receipt marked pending: verifies with pending allowed (nothing recomputed). */
function pendingInput(fusion: JobReceipt) {
  const i = inputIndexes(fusion)[0]!;
  const patch: Patch[] = [
    { op: 'replace', path: '/status', value: 'pending' },
    { op: 'replace', path: `/records/${i}/record`, value: null },
  ];
  const copy = structuredClone(fusion);
  copy.status = 'pending';
  copy.records[i]!.record = null;
  if (!verifyReceipt(copy, { allowPending: true }).ok) throw new Error('the pending fusion receipt fails');
  return {
    name: 'fusion: an input not in the store yet, receipt pending, allowed',
    base: 'fusion',
    patch,
    options: { allow_pending: true },
    expected: { ok: true },
  };
}

/** The fusion receipt's tampered variants, each with the check that must fail first. */
function fusionCases(fusion: JobReceipt) {
  const neighbour = gridDisk(DEFAULT_JOB_CELL, 1).find((c) => c !== DEFAULT_JOB_CELL)!;
  const outside = cellToChildren(neighbour, 9).sort()[0]!;
  const tampers: { name: string; expected: string; apply: (r: JobReceipt) => void; patch?: Patch[] }[] = [
    {
      name: 'an input dropped',
      expected: 'fusion_inputs',
      patch: [{ op: 'remove', path: `/records/${inputIndexes(fusion)[0]!}` }],
      apply: (r) => void r.records.splice(inputIndexes(r)[0]!, 1),
    },
    {
      name: 'two inputs swapped',
      expected: 'fusion_inputs',
      apply: (r) => {
        const [i, j] = inputIndexes(r);
        [r.records[i!], r.records[j!]] = [r.records[j!]!, r.records[i!]!];
      },
    },
    {
      name: 'an input of no fusion step (its step_id changed)',
      expected: 'fusion_inputs',
      apply: (r) => void (r.records[inputIndexes(r).at(-1)!]!.step_id = 'other'),
    },
    {
      name: 'an input named twice (in place of the last)',
      expected: 'fusion_inputs',
      apply: (r) => void (r.records[inputIndexes(r).at(-1)!] = structuredClone(r.records[inputIndexes(r)[0]!]!)),
    },
    {
      name: "an input's value changed, not signed again",
      expected: 'fusion_inputs',
      apply: (r) => void ((inputOf(r, 'b').record!.payload as Obj).value = 12.4),
    },
    {
      name: "an input's value changed and the record signed again by the node: its device signed another value",
      expected: 'fusion_inputs',
      apply: (r) => resign(r, 'b', (rec) => void ((rec.payload as Obj).value = 12.4)),
    },
    {
      name: "the outlier's value changed and the record signed again by the node: its device signed another value",
      expected: 'fusion_inputs',
      apply: (r) => resign(r, 'f', (rec) => void ((rec.payload as Obj).value = 90)),
    },
    {
      name: 'an input signed again as another quantity',
      expected: 'fusion_inputs',
      apply: (r) => resign(r, 'a', (rec) => Object.assign(rec.payload as Obj, { quantity: 'pm10', unit: 'ug/m3' })),
    },
    {
      name: 'an input signed again observed at the end of the window (excluded)',
      expected: 'fusion_inputs',
      apply: (r) =>
        resign(r, 'a', (rec) => {
          const window = (r.job!.steps[0]!.output as { window: { to: string } }).window;
          (rec.payload as Obj).observed_at = window.to;
        }),
    },
    {
      name: "an input signed again in a cell outside the step's cells",
      expected: 'fusion_inputs',
      apply: (r) =>
        resign(r, 'a', (rec) => {
          rec.address.h3_cell = outside;
          (rec.payload as Obj).h3_cell = outside;
        }),
    },
    {
      name: 'an input not in the store in a receipt marked complete',
      expected: 'fusion_inputs',
      apply: (r) => void (inputOf(r, 'c').record = null),
    },
    {
      name: "the fusion output's value changed",
      expected: 'step_outputs',
      apply: (r) => void ((r.job!.steps[0]!.output as Obj).value = 13),
    },
  ];
  return [
    { name: 'fusion: valid', base: 'fusion', patch: [], options: {}, expected: { ok: true } },
    {
      name: 'fusion: valid, node pinned',
      base: 'fusion',
      patch: [],
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    pendingInput(fusion),
    ...tampers.map((tamper) => {
      const copy = structuredClone(fusion);
      tamper.apply(copy);
      const verdict = verifyReceipt(copy);
      if (verdict.failedCheck !== tamper.expected) throw new Error(`${tamper.name}: fails ${verdict.failedCheck}`);
      return {
        name: `fusion: ${tamper.name}`,
        base: 'fusion',
        patch: tamper.patch ?? diff(fusion, copy),
        options: {},
        expected: { ok: false, failed_check: tamper.expected },
      };
    }),
  ];
}

/** Signed 4 minutes before the gateway's clock (the gate allows 5): the job's time is this created_at. */
const CREATED_AT = NOW - 240_000;
/** From 6 minutes after created_at: more than the 5-minute tolerance after it, within it before the record. */
const afterCreatedAt = {
  not_before: new Date(CREATED_AT + 360_000).toISOString(),
  not_after: new Date(NOW + 86_400_000).toISOString(),
};

/** A second delegated job whose request signs `created_at`, sealed. */
async function createdAtReceipt(chain: unknown[]): Promise<JobReceipt> {
  const job = await runReceiptJob({
    requester: AGENT,
    node: NODE,
    nowMs: NOW,
    nonce: 'conformance-created-at',
    chain: chain as Parameters<typeof runReceiptJob>[0]['chain'],
    job: (nonce) => ({ ...twoStepJob(nonce), created_at: new Date(CREATED_AT).toISOString() }),
  });
  try {
    await job.seal();
    const receipt = await job.receipt();
    if (!verifyReceipt(receipt, { sealerPk: NODE.publicKey }).ok) throw new Error('the created_at receipt fails');
    return receipt;
  } finally {
    await job.close();
  }
}

/** Windows that miss the job's time (NOW) by more than the 5-minute tolerance of docs/protocol.md §15.2. */
const pastWindow = {
  not_before: new Date(NOW - 2 * 86_400_000).toISOString(),
  not_after: new Date(NOW - 600_000).toISOString(),
};
const futureWindow = {
  not_before: new Date(NOW + 600_000).toISOString(),
  not_after: new Date(NOW + 86_400_000).toISOString(),
};

function replaceChain(receipt: JobReceipt, chain: unknown[]): JobReceipt {
  const copy = structuredClone(receipt);
  copy.request.delegation_chain = chain;
  return copy;
}

const flip = (text: string) => text.slice(0, -1) + (text.endsWith('0') ? '1' : '0');

function withChain(receipt: JobReceipt, edit: (cert: { principal_signature: string }) => unknown): JobReceipt {
  const copy = structuredClone(receipt);
  copy.request.delegation_chain = copy.request.delegation_chain!.map((c) => edit(c as { principal_signature: string }));
  return copy;
}

/** A fixed worker key (public, never for real use): its records are sealed by the node in custody. */
const WORKER = keyPairFromSecret(sha256Hex('geofabric conformance worker key (public, never use)'));
/** Any key can sign a seal naming itself custodian: this one is not the node. */
const ROGUE = keyPairFromSecret(sha256Hex('geofabric conformance rogue custodian (public, never use)'));

/**
 * The valid receipt with its step records written by WORKER instead, and WORKER's epoch sealed by `custodian` as a
 * custodial seal (docs/protocol.md §12.3), as when a worker left for good before sealing it. The job record, its
 * seal and anchor are the node's, untouched; the step records carry no anchor.
 */
function withCustodialSteps(valid: JobReceipt, custodian: typeof NODE, headSigner = custodian): JobReceipt {
  const copy = structuredClone(valid);
  const steps = copy.records.filter((r) => r.role === 'step');
  const records = steps.map((entry, i) => {
    const { record_hash: _h, signature: _s, ...unsigned } = entry.record!;
    return signRecord(WORKER.secretKey, {
      ...unsigned,
      address: { ...unsigned.address, pk: WORKER.publicKey },
      seq: i + 1,
    });
  });
  const epoch = records[0]!.address.epoch;
  const nodeSeal = copy.records.find((r) => r.role === 'job')!.seal!;
  const { seal, levels } = createSealWithLevels(custodian.secretKey, {
    writerPk: WORKER.publicKey,
    epoch,
    records,
    prevSealHash: GENESIS_PREV_HASH,
    // After the custody grace (a day) past the node's own seal of the epoch.
    sealedAt: new Date(Date.parse(nodeSeal.sealed_at) + 86_400_000).toISOString(),
  });
  steps.forEach((entry, i) => {
    entry.record = records[i]!;
    entry.seal = seal;
    entry.proof = {
      leaf_index: i,
      tree_size: records.length,
      hashes: inclusionProofFromLevels(levels, i).map(bytesToHex),
    };
    entry.anchor = null;
  });
  // The worker's log is this one custodial seal; its head is signed by the custodian, the node keeping the log.
  copy.seal_heads!.push(...sealHeadsFor(steps, new Map([[WORKER.publicKey, [seal]]]), headSigner.secretKey));
  return copy;
}

/** The custodial receipt and its cases: the node's custodial seal verifies, another key's fails `inclusion`. */
function custodialVectors(valid: JobReceipt) {
  const custodial = withCustodialSteps(valid, NODE);
  if (!verifyReceipt(custodial, { sealerPk: NODE.publicKey }).ok) throw new Error('the custodial receipt fails');
  const rogue = diff(custodial, withCustodialSteps(valid, ROGUE));
  const rogueHead = diff(custodial, withCustodialSteps(valid, NODE, ROGUE));
  const cases: ReceiptCase[] = [
    { name: 'custodial: steps sealed by the node', base: 'custodial', patch: [], options: {}, expected: { ok: true } },
    {
      name: 'custodial: steps sealed by the node, node pinned',
      base: 'custodial',
      patch: [],
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    {
      name: 'custodial: another node pinned than the custodian',
      base: 'custodial',
      patch: [],
      options: { sealer_pk: HUMAN.publicKey },
      expected: { ok: false, failed_check: 'inclusion' },
    },
    {
      name: 'custodial: steps sealed by another key as custodian',
      base: 'custodial',
      patch: rogue,
      options: {},
      expected: { ok: false, failed_check: 'inclusion' },
    },
    {
      name: "custodial: the node's custodial seal, the worker's log head signed by another key",
      base: 'custodial',
      patch: rogueHead,
      options: {},
      expected: { ok: false, failed_check: 'seal_chain' },
    },
    {
      name: 'custodial: steps sealed by another key as custodian, that key pinned',
      base: 'custodial',
      patch: rogue,
      options: { sealer_pk: ROGUE.publicKey },
      expected: { ok: false, failed_check: 'inclusion' },
    },
  ];
  for (const c of cases) {
    const verdict = verifyReceipt(applyPatch(custodial, c.patch), {
      ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
    });
    if (verdict.ok !== c.expected.ok || verdict.failedCheck !== c.expected.failed_check) {
      throw new Error(`${c.name}: ${verdict.failedCheck ?? 'ok'}`);
    }
  }
  return { custodial, cases };
}

/** Another gateway of the deployment (public, never for real use): a peer node key (docs/protocol.md §2.10). */
const PEER = keyPairFromSecret(sha256Hex('geofabric conformance peer node key (public, never use)'));

/**
 * The fusion receipt rebuilt with the inputs of devices b and d written by a peer node and its output naming both
 * node keys as `trusted_writers` (docs/protocol.md §2.10 rule 3): valid. Its cases: an input written by a key the
 * output does not list (fails `fusion_inputs`), and `trusted_writers` changed without the job record signed again
 * (fails `step_outputs`: the job record binds the output, so only its writer states the set).
 */
function fusionPeerVectors(fusion: JobReceipt) {
  const peerDevices = new Set(['b', 'd'].map((n) => deviceKey(n).publicKey));
  const trusted = [NODE.publicKey, PEER.publicKey].sort();
  const fusionPeer = rebuiltFusion(fusion, fusionInputsOf(fusion), {
    writerOf: (i) => (peerDevices.has(i.device_pk) ? PEER : NODE),
    trustedWriters: trusted,
  });
  const unlisted = rebuiltFusion(fusion, fusionInputsOf(fusion), {
    writerOf: (i) => (peerDevices.has(i.device_pk) ? PEER : i.device_pk === deviceKey('e').publicKey ? ROGUE : NODE),
    trustedWriters: trusted,
  });
  const output = (r: JobReceipt) => r.job!.steps[0]!.output as Obj;
  const widened = structuredClone(fusionPeer);
  output(widened).trusted_writers = [...trusted, ROGUE.publicKey].sort();
  const dropped = structuredClone(fusionPeer);
  delete output(dropped).trusted_writers;
  const cases: ReceiptCase[] = [
    {
      name: 'fusion, peer: inputs written by a peer node the output lists in trusted_writers, valid',
      base: 'fusion-peer',
      patch: [],
      options: {},
      expected: { ok: true },
    },
    {
      name: 'fusion, peer: valid, node pinned',
      base: 'fusion-peer',
      patch: [],
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    {
      name: 'fusion, peer: an input written by a key not in trusted_writers',
      base: 'fusion-peer',
      patch: diff(fusionPeer, unlisted),
      options: {},
      expected: { ok: false, failed_check: 'fusion_inputs' },
    },
    {
      name: 'fusion, peer: trusted_writers widened to another key, the job record not signed again',
      base: 'fusion-peer',
      patch: diff(fusionPeer, widened),
      options: {},
      expected: { ok: false, failed_check: 'step_outputs' },
    },
    {
      name: 'fusion, peer: trusted_writers removed, the job record not signed again',
      base: 'fusion-peer',
      patch: diff(fusionPeer, dropped),
      options: {},
      expected: { ok: false, failed_check: 'step_outputs' },
    },
  ];
  for (const c of cases) {
    const verdict = verifyReceipt(applyPatch(fusionPeer, c.patch), {
      ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
    });
    if (verdict.ok !== c.expected.ok || verdict.failedCheck !== c.expected.failed_check) {
      throw new Error(`${c.name}: ${verdict.failedCheck ?? 'ok'}`);
    }
  }
  return { fusionPeer, cases };
}

/**
 * The valid receipt with its job record naming the node and PEER as its `node_keys` (docs/protocol.md §15.4), signed
 * again by the node, its records sealed again, and the heads of the node's log signed by PEER, as when the other
 * gateway of the deployment serves the receipt: valid, also pinned to the node. Its cases: the heads signed by a key
 * not listed (fails `seal_chain`), the steps sealed in custody by the peer (valid) or by a key not listed (fails
 * `inclusion`), `node_keys` widened without the job record signed again, or signed but not
 * naming the writer, or not ascending (each fails `job_record`).
 */
function peerHeadsVectors(valid: JobReceipt) {
  const keys = [NODE.publicKey, PEER.publicKey].sort();
  const build = (nodeKeys: unknown, headSigner: typeof NODE): JobReceipt => {
    const copy = structuredClone(valid);
    const jobEntry = copy.records.find((r) => r.role === 'job')!;
    const { record_hash: _h, signature: _s, ...unsigned } = jobEntry.record!;
    const payload = { ...(unsigned.payload as Obj), node_keys: nodeKeys };
    jobEntry.record = signRecord(NODE.secretKey, { ...unsigned, payload });
    return resealed(copy, new Map([[NODE.publicKey, NODE]]), headSigner);
  };
  // As read from its file: records of one epoch share no seal object, so a patch of one leaves the others.
  const peerHeads = JSON.parse(JSON.stringify(build(keys, PEER))) as JobReceipt;
  const widened = structuredClone(peerHeads);
  const widenedPayload = widened.records.find((r) => r.role === 'job')!.record!.payload as Obj;
  widenedPayload.node_keys = [...keys, ROGUE.publicKey].sort();
  const cases: ReceiptCase[] = [
    {
      name: 'peer heads: the heads signed by a peer node the job record lists in node_keys, valid',
      base: 'peer-heads',
      patch: [],
      options: {},
      expected: { ok: true },
    },
    {
      name: 'peer heads: valid, node pinned',
      base: 'peer-heads',
      patch: [],
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    {
      name: 'peer heads: the peer pinned, not the writer of the job record',
      base: 'peer-heads',
      patch: [],
      options: { sealer_pk: PEER.publicKey },
      expected: { ok: false, failed_check: 'sealer' },
    },
    {
      name: 'peer heads: the heads signed by a key not in node_keys',
      base: 'peer-heads',
      patch: diff(peerHeads, build(keys, ROGUE)),
      options: {},
      expected: { ok: false, failed_check: 'seal_chain' },
    },
    {
      name: 'peer heads: the heads signed by a key not in node_keys, node pinned',
      base: 'peer-heads',
      patch: diff(peerHeads, build(keys, ROGUE)),
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: false, failed_check: 'seal_chain' },
    },
    {
      name: 'peer heads: the steps sealed in custody by the peer, node pinned',
      base: 'peer-heads',
      patch: diff(peerHeads, withCustodialSteps(peerHeads, PEER)),
      options: { sealer_pk: NODE.publicKey },
      expected: { ok: true },
    },
    {
      name: 'peer heads: the steps sealed in custody by a key not in node_keys',
      base: 'peer-heads',
      patch: diff(peerHeads, withCustodialSteps(peerHeads, ROGUE, PEER)),
      options: {},
      expected: { ok: false, failed_check: 'inclusion' },
    },
    {
      name: 'peer heads: node_keys widened to another key, the job record not signed again',
      base: 'peer-heads',
      patch: diff(peerHeads, widened),
      options: {},
      expected: { ok: false, failed_check: 'job_record' },
    },
    {
      name: 'peer heads: node_keys not naming the writer of the job record',
      base: 'peer-heads',
      patch: diff(peerHeads, build([PEER.publicKey], PEER)),
      options: {},
      expected: { ok: false, failed_check: 'job_record' },
    },
    {
      name: 'peer heads: node_keys not ascending',
      base: 'peer-heads',
      patch: diff(peerHeads, build([...keys].reverse(), PEER)),
      options: {},
      expected: { ok: false, failed_check: 'job_record' },
    },
  ];
  for (const c of cases) {
    const verdict = verifyReceipt(applyPatch(peerHeads, c.patch), {
      ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
    });
    if (verdict.ok !== c.expected.ok || verdict.failedCheck !== c.expected.failed_check) {
      throw new Error(`${c.name}: ${verdict.failedCheck ?? 'ok'}`);
    }
  }
  return { peerHeads, cases };
}

const write = (name: string, value: unknown) =>
  writeFileSync(join(OUT, name), `${JSON.stringify(value, null, 2)}\n`, 'utf8');
const read = <T>(name: string): T => JSON.parse(readFileSync(join(OUT, name), 'utf8')) as T;

mkdirSync(OUT, { recursive: true });
if (process.argv.includes('--custodial-only')) {
  // Adds the custodial vectors to the ones on disk without regenerating (and so changing) the others.
  const { custodial, cases } = custodialVectors(read<JobReceipt>('receipt-valid.json'));
  write('receipt-custodial.json', custodial);
  const others = read<ReceiptCase[]>('receipt-cases.json').filter((c) => c.base !== 'custodial');
  write('receipt-cases.json', [...others, ...cases]);
} else if (process.argv.includes('--fusion-peer-only')) {
  // Adds the peer-written fusion vectors to the ones on disk without regenerating (and so changing) the others.
  const { fusionPeer, cases } = fusionPeerVectors(read<JobReceipt>('receipt-fusion.json'));
  write('receipt-fusion-peer.json', fusionPeer);
  const others = read<ReceiptCase[]>('receipt-cases.json').filter((c) => c.base !== 'fusion-peer');
  write('receipt-cases.json', [...others, ...cases]);
} else if (process.argv.includes('--peer-heads-only')) {
  // Adds the peer-signed heads vectors to the ones on disk without regenerating (and so changing) the others.
  const { peerHeads, cases } = peerHeadsVectors(read<JobReceipt>('receipt-valid.json'));
  write('receipt-peer-heads.json', peerHeads);
  const others = read<ReceiptCase[]>('receipt-cases.json').filter((c) => c.base !== 'peer-heads');
  write('receipt-cases.json', [...others, ...cases]);
} else {
  write('canonical-json.json', canonicalCases());
  write('signed-requests.json', signedRequests());
  const { valid, pending, createdAt, fusion, cases } = await receipts();
  const custodial = custodialVectors(valid);
  const peer = fusionPeerVectors(fusion);
  const peerHeads = peerHeadsVectors(valid);
  write('receipt-valid.json', valid);
  write('receipt-pending.json', pending);
  write('receipt-created-at.json', createdAt);
  write('receipt-fusion.json', fusion);
  write('receipt-custodial.json', custodial.custodial);
  write('receipt-fusion-peer.json', peer.fusionPeer);
  write('receipt-peer-heads.json', peerHeads.peerHeads);
  write('receipt-cases.json', [...cases, ...custodial.cases, ...peer.cases, ...peerHeads.cases]);
}
process.stdout.write(`conformance vectors written to ${OUT}\n`);
