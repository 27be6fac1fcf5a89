/**
 * The corpus on which the four receipt verifiers must give one verdict (docs/protocol.md §15.3): the conformance
 * receipts (the fusion one rebuilt with version-2 inputs, test/helpers/fusion-receipt.ts) under the tampers of
 * receipt-tampers.ts, under signed changes a shape check alone can refuse (a field too many in a record, a seal or
 * a certificate, an invalid H3 cell, a timestamp with an offset where UTC is required, fusion inputs written or
 * signed by the wrong key …), and under seeded random mutations (receipt-fuzz.ts). Used by
 * test/core/receipt-agreement.test.ts for the JavaScript verifiers and, through scripts/receipt-corpus.ts, by the
 * Python client's tests.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cellToChildren, cellToParent, getPentagons, getRes0Cells, getResolution, latLngToCell } from 'h3-js';
import { canonicalJson } from '../../core/canonical-json.js';
import { certificateSigningString } from '../../core/delegation-cert.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { sha256Hex } from '../../core/hash.js';
import { isCell } from '../../core/h3-cell.js';
import { keyPairFromSecret, signMessage } from '../../core/identity.js';
import type { ProofRecord, Seal } from '../../core/proof-types.js';
import { FUSION_RECOMPUTED, timestampMs, verifyReceipt, type JobReceipt } from '../../core/receipt.js';
import { sealHash } from '../../core/seal.js';
import { fuseReadings, type FusionReading } from '../../core/sensor-fusion.js';
import { signReading } from '../../core/telemetry.js';
import {
  CONFORMANCE_NODE,
  conformanceDevice,
  fusionInputsOf,
  fusionReceipt,
  readingPayload,
  resealed,
  type FusionInput,
} from './fusion-receipt.js';
import { receiptMutations, seededRandom, type FuzzOptions, type Json } from './receipt-fuzz.js';
import { RECEIPT_TAMPERS } from './receipt-tampers.js';

type Obj = Record<string, unknown>;

/** The seed and size of the corpus the unit suite and the Python client's tests run (bounded: a few seconds). */
export const AGREEMENT_SEED = 20261129;
export const AGREEMENT_MUTATIONS = 100;

/** RFC 8032 §7.1 test 1 (the human principal of the conformance receipts) and test 2 (their requester). */
const HUMAN = keyPairFromSecret('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60');
const AGENT = keyPairFromSecret('4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb');
/** Public test keys (never for real use): a worker that writes telemetry, and a key that is no device's. */
const WORKER = keyPairFromSecret(sha256Hex('geofabric agreement worker key (public, never use)'));
/** Another gateway of the deployment: a peer node key (docs/protocol.md §2.10 rule 3). */
const PEER = keyPairFromSecret(sha256Hex('geofabric agreement peer node key (public, never use)'));
const ROGUE = keyPairFromSecret(sha256Hex('geofabric agreement rogue device key (public, never use)'));

export interface AgreementCase {
  name: string;
  receipt: Json;
  options: FuzzOptions;
  /** The verdict the case is built for (the tampers and the signed cases); random mutations have none. */
  intended?: { ok: boolean; failed_check?: string };
}

const DIR = join(import.meta.dirname, '../fixtures/conformance');
const load = (name: string): JobReceipt => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as JobReceipt;

/** The receipts the corpus starts from. */
export function agreementBases(): Record<string, JobReceipt> {
  return {
    valid: load('receipt-valid.json'),
    pending: load('receipt-pending.json'),
    'created-at': load('receipt-created-at.json'),
    custodial: load('receipt-custodial.json'),
    // Version 1 (every seal since the sealer's first) still verifies in all four (docs/protocol.md §15.4).
    v1: load('receipt-v1.json'),
    fusion: fusionReceipt(load('receipt-fusion.json')),
  };
}

const json = (value: unknown): Json => JSON.parse(JSON.stringify(value)) as Json;
const failing = (check: string) => ({ ok: false, failed_check: check });

/** RECEIPT_TAMPERS on the valid receipt, each with the check it must fail. */
function tamperCases(valid: JobReceipt): AgreementCase[] {
  return RECEIPT_TAMPERS.filter((t) => t.appliesTo?.(valid) !== false).map((tamper) => {
    const copy = structuredClone(valid);
    tamper.apply(copy);
    return {
      name: `tamper: ${tamper.name}`,
      receipt: json(copy),
      options: tamper.options ?? {},
      intended: failing(tamper.expected),
    };
  });
}

/** The check that binds a leaf of the answer (docs/protocol.md §15.2): what a change to it must fail. */
function bindingCheck(path: (string | number)[]): string {
  const [head, , field] = path;
  if (head === 'job_id') return 'job_id';
  if (head === 'proof')
    return path[1] === 'job_hash' ? 'job_hash' : path[1] === 'record_id' ? 'job_record' : 'job_answer';
  if (head === 'steps' && (field === 'output' || field === 'id' || field === 'status' || field === 'record_id')) {
    return 'step_outputs';
  }
  return 'job_answer';
}

/** Every leaf of `value` with its path, and a field added beside each object's own. */
function leaves(value: Json, path: (string | number)[] = []): { path: (string | number)[]; value: Json }[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, [...path, i]));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k]));
  }
  return [{ path, value }];
}

const changed = (value: Json): Json =>
  typeof value === 'number'
    ? value + 1
    : typeof value === 'string'
      ? `${value}0`
      : typeof value === 'boolean'
        ? !value
        : 'set';

/**
 * The answer of the valid receipt changed at each leaf in turn, and with an unknown field added to the answer, its
 * proof and each step: every case must fail the check that binds it, in all four verifiers.
 */
export function answerLeafCases(valid: JobReceipt): AgreementCase[] {
  const job = json(valid.job) as { [key: string]: Json };
  const at = (root: Json, path: (string | number)[]) =>
    path.slice(0, -1).reduce((node, key) => (node as Record<string, Json>)[key]!, root) as Record<string, Json>;
  const cases = leaves(job).map(({ path, value }) => {
    const copy = json(valid) as { job: Json };
    at(copy.job, path)[path.at(-1)!] = changed(value);
    return {
      name: `answer leaf: job.${path.join('.')} changed`,
      receipt: copy as Json,
      options: {},
      intended: failing(bindingCheck(path)),
    };
  });
  const added = [[], ['proof'], ...(valid.job?.steps ?? []).map((_, i) => ['steps', i])] as (string | number)[][];
  for (const path of added) {
    const copy = json(valid) as { job: Json };
    at(copy.job, [...path, 'x'])['unbound_note'] = 'shown but signed by nobody';
    cases.push({
      name: `answer field added: job${path.map((p) => `.${p}`).join('')}.unbound_note`,
      receipt: copy as Json,
      options: {},
      intended: failing('job_answer'),
    });
  }
  return cases;
}

/** A step record of the valid receipt changed by `edit`, signed again by its writer (the node) and sealed again. */
function withStepRecord(valid: JobReceipt, edit: (record: Obj) => void): JobReceipt {
  const copy = structuredClone(valid);
  const entry = copy.records.find((e) => e.role === 'step')!;
  const { record_hash: _h, signature: _s, ...unsigned } = entry.record!;
  edit(unsigned as Obj);
  entry.record = { ...unsigned, ...signedHash(unsigned as Obj) } as ProofRecord;
  return resealed(copy, new Map([[CONFORMANCE_NODE.publicKey, CONFORMANCE_NODE]]));
}

/** record_hash and signature of any unsigned record (even one signRecord would refuse to sign). */
function signedHash(unsigned: Obj): { record_hash: string; signature: string } {
  const record_hash = sha256Hex(canonicalJson(unsigned));
  return { record_hash, signature: signMessage(CONFORMANCE_NODE.secretKey, record_hash) };
}

/** The node's seal of the job record's epoch changed by `edit` and signed again, in the entry and in the chain. */
function withJobSeal(valid: JobReceipt, edit: (seal: Obj) => void): JobReceipt {
  const copy = resealed(valid, new Map([[CONFORMANCE_NODE.publicKey, CONFORMANCE_NODE]]));
  const old = copy.records.find((e) => e.role === 'job')!.seal!;
  const { seal_hash: _h, signature: _s, ...unsigned } = old;
  edit(unsigned as Obj);
  const hash = sealHash(unsigned as Seal);
  const seal = { ...unsigned, seal_hash: hash, signature: signMessage(CONFORMANCE_NODE.secretKey, hash) } as Seal;
  for (const e of copy.records) if (e.seal?.seal_hash === old.seal_hash) e.seal = seal;
  for (const c of copy.seal_chains ?? []) c.seals = c.seals.map((s) => (s.seal_hash === old.seal_hash ? seal : s));
  return copy;
}

/** The valid receipt's certificate changed by `edit` and signed again by the human principal. */
function withCertificate(valid: JobReceipt, edit: (cert: Obj) => void): JobReceipt {
  const copy = structuredClone(valid);
  const cert = structuredClone(copy.request.delegation_chain![0]) as Obj;
  delete cert.principal_signature;
  edit(cert);
  const signingString = certificateSigningString(cert as unknown as Parameters<typeof certificateSigningString>[0]);
  copy.request.delegation_chain = [{ ...cert, principal_signature: signMessage(HUMAN.secretKey, signingString) }];
  return copy;
}

/** The fusion receipt rebuilt with `edit` applied to its inputs (fused again from them, sealed again). */
function withInputs(
  base: JobReceipt,
  edit: (inputs: FusionInput[]) => FusionInput[],
  options: Parameters<typeof fusionReceipt>[2] = {},
): JobReceipt {
  return fusionReceipt(base, edit(fusionInputsOf(base)), options);
}

const device = (name: string) => conformanceDevice(name).publicKey;
const onDevice = (name: string, change: (i: FusionInput) => FusionInput) => (inputs: FusionInput[]) =>
  inputs.map((i) => (i.device_pk === device(name) ? change(i) : i));

/** Signed changes: every signature and hash still holds, only the rules of a shape or of a fusion input refuse. */
function signedCases(bases: Record<string, JobReceipt>): AgreementCase[] {
  const { valid, fusion } = bases as { valid: JobReceipt; fusion: JobReceipt };
  const invalidCell = '861e8057fffffff';
  const step = (name: string, edit: (r: Obj) => void, check = 'step_records'): AgreementCase => ({
    name: `signed step record: ${name}`,
    receipt: json(withStepRecord(valid, edit)),
    options: {},
    intended: check === 'ok' ? { ok: true } : failing(check),
  });
  const cert = (name: string, edit: (c: Obj) => void, check = 'delegation_chain'): AgreementCase => ({
    name: `signed certificate: ${name}`,
    receipt: json(withCertificate(valid, edit)),
    options: {},
    intended: check === 'ok' ? { ok: true } : failing(check),
  });
  const seal = (name: string, edit: (s: Obj) => void): AgreementCase => ({
    name: `signed seal: ${name}`,
    receipt: json(withJobSeal(valid, edit)),
    options: {},
    intended: failing('inclusion'),
  });
  const input = (name: string, receipt: JobReceipt, check = 'fusion_inputs'): AgreementCase => ({
    name: `fusion input: ${name}`,
    receipt: json(receipt),
    options: {},
    intended: check === 'ok' ? { ok: true } : failing(check),
  });
  const cd = device('c');
  const statementOf = (i: FusionInput) => {
    const { principal_pk: _p, device_signature: _d, ...fields } = i;
    return fields;
  };
  // A body with a `__proto__` field, as JSON.parse makes it: an own field, signed like any other.
  const protoBody = JSON.parse(JSON.stringify(valid.request.body).replace('{', '{"__proto__":{"x":1},')) as Obj;
  delete protoBody.signature;
  const withProto = structuredClone(valid);
  withProto.request.body = signRequestBody(AGENT.secretKey, protoBody).body;
  return [
    step('resealed unchanged', () => undefined, 'ok'),
    step('a field too many', (r) => void (r.note = 'signed, but not a record field')),
    step('an invalid H3 cell', (r) => void ((r.address as Obj).h3_cell = invalidCell)),
    step('written_at with an offset', (r) => void (r.written_at = String(r.written_at).replace('Z', '+00:00'))),
    step('a payload type outside its collection', (r) => void (r.collection_type = 'tile')),
    step('written_at on a day that does not exist', (r) => void (r.written_at = '2026-02-30T10:00:00.000Z')),
    seal('a field too many', (s) => void (s.note = 'signed, but not a seal field')),
    seal('sealed_at with an offset', (s) => void (s.sealed_at = String(s.sealed_at).replace('Z', '+00:00'))),
    seal('custodian_pk null', (s) => void (s.custodian_pk = null)),
    cert('constraints absent (signed as null)', (c) => void delete c.constraints, 'ok'),
    cert('a field too many', (c) => void (c.note = 'signed, but not a certificate field')),
    cert('an invalid H3 cell', (c) => void (c.h3_cells = [invalidCell])),
    cert('an empty facet', (c) => void (c.facets = [''])),
    cert('not_before without a zone', (c) => void (c.not_before = String(c.not_before).replace('Z', ''))),
    cert('max_depth beyond 2^53', (c) => void (c.max_depth = 2 ** 60)),
    cert('constraints with an unknown field', (c) => void (c.constraints = { max_ops_per_hour: 5, note: 1 })),
    cert('constraints with a negative rate', (c) => void (c.constraints = { max_ops_per_hour: -1 })),
    {
      name: 'signed request: a __proto__ field',
      receipt: json(withProto),
      options: {},
      intended: failing('job_id'),
    },
    input('version 2, valid', fusion, 'ok'),
    input(
      'two devices of one principal (one vote)',
      withInputs(
        fusion,
        onDevice('d', (i) => ({ ...i, principal_pk: cd })),
      ),
      'ok',
    ),
    input(
      'written by a worker, not the node that wrote the job record',
      withInputs(fusion, (x) => x, { writerOf: (i) => (i.device_pk === device('b') ? WORKER : CONFORMANCE_NODE) }),
    ),
    input(
      "written by a peer node listed in the output's trusted_writers",
      withInputs(fusion, (x) => x, {
        writerOf: (i) => (i.device_pk === device('b') ? PEER : CONFORMANCE_NODE),
        trustedWriters: [CONFORMANCE_NODE.publicKey, PEER.publicKey].sort(),
      }),
      'ok',
    ),
    input(
      'all written by a peer node, the job-record writer not in trusted_writers',
      withInputs(fusion, (x) => x, { writerOf: () => PEER, trustedWriters: [PEER.publicKey] }),
      'ok',
    ),
    input(
      "written by a key not in the output's trusted_writers",
      withInputs(fusion, (x) => x, {
        writerOf: (i) => (i.device_pk === device('b') ? WORKER : CONFORMANCE_NODE),
        trustedWriters: [CONFORMANCE_NODE.publicKey, PEER.publicKey].sort(),
      }),
    ),
    input(
      'trusted_writers not ascending',
      withInputs(fusion, (x) => x, {
        trustedWriters: [CONFORMANCE_NODE.publicKey, PEER.publicKey].sort().reverse(),
      }),
    ),
    input(
      'trusted_writers empty',
      withInputs(fusion, (x) => x, { trustedWriters: [] }),
    ),
    input(
      'trusted_writers a string',
      withInputs(fusion, (x) => x, { trustedWriters: CONFORMANCE_NODE.publicKey }),
    ),
    input(
      'signed by a key that is not its device',
      withInputs(
        fusion,
        onDevice('b', (i) => ({ ...i, device_signature: signReading(ROGUE.secretKey, statementOf(i)) })),
      ),
    ),
    input(
      'signed by its device over another value',
      withInputs(
        fusion,
        onDevice('b', (i) => ({
          ...i,
          device_signature: signReading(conformanceDevice('b').secretKey, { ...statementOf(i), value: 999 }),
        })),
      ),
    ),
    input(
      'a principal that is no key',
      withInputs(
        fusion,
        onDevice('b', (i) => ({ ...i, principal_pk: 'b' })),
      ),
    ),
    input(
      'out of its quantity range',
      withInputs(
        fusion,
        onDevice('b', (i) => ({ ...i, value: 1000.5 })),
      ),
    ),
    input(
      'in another unit',
      withInputs(
        fusion,
        onDevice('b', (i) => ({ ...i, unit: 'mg/m3' })),
      ),
    ),
    input(
      'observed_at not normalised',
      withInputs(
        fusion,
        onDevice('b', (i) => ({ ...i, observed_at: i.observed_at.replace('.000Z', 'Z') })),
      ),
    ),
    input(
      'addressed by another cell than the one its device signed',
      withInputs(fusion, (x) => x, {
        payloadOf: (i) => readingPayload(i.device_pk === device('b') ? { ...i, h3_cell: sibling(i.h3_cell) } : i),
      }),
    ),
    input(
      'a version-1 reading (the batch, not the reading, signed)',
      withInputs(fusion, (x) => x, {
        payloadOf: (i) => {
          const { device_signature: _d, principal_pk: _p, ...fields } = readingPayload(i);
          return i.device_pk === device('b')
            ? { ...fields, batch: { request_hash: '0'.repeat(64), signature: '0'.repeat(128) } }
            : readingPayload(i);
        },
      }),
    ),
    input(
      'one device and instant twice',
      withInputs(fusion, (inputs) => [...inputs, { ...inputs.find((i) => i.device_pk === device('a'))!, value: 10.2 }]),
    ),
  ];
}

/** Another cell of the same parent. */
const sibling = (cell: string): string => cellToChildren(cellToParent(cell, 8), 9).find((c) => c !== cell)!;

/** Leaves a verifier cannot bind offline: the ledger transaction an anchor points at, which `--anchor` looks up. */
const ONLINE_ONLY = /^records\.\d+\.anchor\.(tx_hash|ledger|network_passphrase)$/;

/**
 * Every other leaf of the receipt changed in turn (the answer's are answerLeafCases'): each must fail a check, and
 * the four verifiers must name the same one (docs/protocol.md §15.5 says which check binds what).
 */
export function receiptLeafCases(valid: JobReceipt): AgreementCase[] {
  const whole = json(valid) as { [key: string]: Json };
  const at = (root: Json, path: (string | number)[]) =>
    path.slice(0, -1).reduce((node, key) => (node as Record<string, Json>)[key]!, root) as Record<string, Json>;
  return leaves(whole)
    .filter(({ path }) => path[0] !== 'job' && !ONLINE_ONLY.test(path.join('.')))
    .map(({ path, value }) => {
      const copy = json(valid);
      at(copy, path)[path.at(-1)!] = changed(value);
      return { name: `receipt leaf: ${path.join('.')} changed`, receipt: copy, options: {}, intended: { ok: false } };
    });
}

/** The whole corpus: tampers, signed cases, then `count` seeded mutations of the bases. */
export function agreementCorpus(seed = AGREEMENT_SEED, count = AGREEMENT_MUTATIONS): AgreementCase[] {
  const bases = agreementBases();
  const node = CONFORMANCE_NODE.publicKey;
  return [
    ...tamperCases(bases.valid!),
    ...answerLeafCases(bases.valid!),
    ...receiptLeafCases(bases.valid!),
    ...signedCases(bases),
    ...receiptMutations(bases as unknown as Record<string, Json>, seed, count, node),
  ];
}

/** Core's verdict on a case, in the conformance vectors' spelling. */
export function coreVerdict(c: AgreementCase): { ok: boolean; failed_check?: string } {
  const verdict = verifyReceipt(c.receipt, {
    ...(c.options.sealer_pk === undefined ? {} : { sealerPk: c.options.sealer_pk }),
    ...(c.options.allow_pending === true ? { allowPending: true } : {}),
  });
  return verdict.ok ? { ok: true } : { ok: false, failed_check: verdict.failedCheck! };
}

/**
 * Strings for the H3 cell check: valid cells of every resolution (pentagons and their children among them) and
 * each with one hex digit changed (which often makes the deleted k-axis subsequence of a pentagon).
 */
export function cellSamples(seed = AGREEMENT_SEED, count = 400): { text: string; valid: boolean }[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const cells: string[] = [...getRes0Cells().slice(0, 8)];
  for (let res = 1; res <= 15; res += 2) cells.push(...getPentagons(res).slice(0, 3));
  while (cells.length < count / 2) {
    const base =
      random() < 0.3
        ? getPentagons(int(16))[int(12)]!
        : latLngToCell(random() * 170 - 85, random() * 360 - 180, int(16));
    cells.push(
      getResolution(base) < 15 && random() < 0.5 ? cellToChildren(base, getResolution(base) + 1)[int(5)]! : base,
    );
  }
  const edited = cells.map((cell) => {
    const i = int(15);
    return cell.slice(0, i) + '0123456789abcdef'[int(16)] + cell.slice(i + 1);
  });
  return [...cells, ...edited].map((text) => ({ text, valid: isCell(text) }));
}

/** Strings for the timestamp readers: RFC 3339 texts, a third with one edge value, and what core makes of them. */
export function timestampSamples(seed = AGREEMENT_SEED, count = 400): { text: string; ms: number | null }[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const out: string[] = [];
  for (let n = 0; n < count; n++) {
    const parts = {
      year: pad(pick([int(10_000), 0, 1969, 1970, 2000, 2024, 2100, 9999]), 4),
      month: pad(1 + int(12)),
      day: pad(1 + int(31)),
      hour: pad(int(24)),
      minute: pad(int(60)),
      second: pad(int(60)),
      fraction: pick(['', '.5', '.05', '.123', '.9999', '.0000001', '.123456789012']),
      zone: pick(['Z', '+00:00', '-23:59', '+05:30', '-00:00', '+14:00']),
    };
    if (random() < 0.35) {
      const edges: Record<keyof typeof parts, string[]> = {
        year: ['+02026', '26', '-0001'],
        month: ['00', '13'],
        day: ['00', '29', '30', '31', '32'],
        hour: ['24', '25'],
        minute: ['60'],
        second: ['60', '61'],
        fraction: ['.', ',5', '.5e3'],
        zone: ['', 'z', '+24:00', '+0530', '+05:60', ' Z'],
      };
      const key = pick(Object.keys(edges) as (keyof typeof parts)[]);
      parts[key] = pick(edges[key]);
    }
    const { year, month, day, hour, minute, second, fraction, zone } = parts;
    out.push(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction}${zone}`);
  }
  return out.map((text) => {
    const ms = timestampMs(text);
    return { text, ms: Number.isFinite(ms) ? ms : null };
  });
}

/**
 * Reading sets for the fusion arithmetic (core/sensor-fusion.ts), with core's numbers: up to 40 readings of up to
 * 9 devices of up to 5 principals, decimal values with ties, duplicates and outliers, so every verifier's
 * recomputation must agree bit for bit (value, mean, stderr, counts, Merkle root).
 */
export function fusionSamples(
  seed = AGREEMENT_SEED,
  count = 200,
): { readings: FusionReading[]; fused: Record<string, unknown> }[] {
  const random = seededRandom(seed);
  const int = (n: number) => Math.floor(random() * n);
  const hex = (n: number) => Array.from({ length: n }, () => '0123456789abcdef'[int(16)]).join('');
  const keys = Array.from({ length: 9 }, () => hex(64));
  const samples = [];
  for (let n = 0; n < count; n++) {
    const devices = 1 + int(9);
    const principals = 1 + int(5);
    const readings: FusionReading[] = Array.from({ length: 1 + int(40) }, () => {
      const d = int(devices);
      const digits = int(4);
      const value =
        random() < 0.1
          ? int(2001)
          : Math.round((random() * (random() < 0.1 ? 2000 : 40) + 5) * 10 ** digits) / 10 ** digits;
      return {
        device_pk: keys[d]!,
        principal_pk: keys[d % principals]!,
        value: random() < 0.05 ? 0 : value,
        record_id: `telemetry:${hex(64)}`,
        record_hash: hex(64),
      };
    });
    const result = fuseReadings(readings) as unknown as Record<string, unknown>;
    samples.push({ readings, fused: Object.fromEntries(FUSION_RECOMPUTED.map((k) => [k, result[k]])) });
  }
  return samples;
}
