/**
 * Sealed receipts of a `sensor_fusion` job built from core alone (docs/protocol.md §2.10, §15), for the receipt
 * verifiers' tests: the conformance fusion receipt's request and readings, its inputs written again as version-2
 * telemetry records (each reading signed by its device, core/telemetry.ts), the step output fused again from them
 * (core/sensor-fusion.ts), the job record, seals, proofs and seal chains made again to match. The keys are the
 * conformance generator's public ones (scripts/gen-conformance.ts): never for real use.
 */
import { canonicalJson } from '../../core/canonical-json.js';
import { epochWindow } from '../../core/epoch.js';
import { sha256Hex } from '../../core/hash.js';
import { bytesToHex } from '../../core/hex.js';
import { keyPairFromSecret, type KeyPair } from '../../core/identity.js';
import { outputHash } from '../../core/job-hash.js';
import { inclusionProofFromLevels } from '../../core/merkle/inclusion.js';
import { signRecord } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal } from '../../core/proof-types.js';
import { sealHeadsFor, type JobReceipt, type ReceiptRecord } from '../../core/receipt.js';
import { createSealWithLevels } from '../../core/seal.js';
import { FUSION_METHOD, fuseReadings } from '../../core/sensor-fusion.js';
import { signReading, telemetryRecordId, type ReadingFields } from '../../core/telemetry.js';

type Obj = Record<string, unknown>;

/** The node key of the conformance vectors: it wrote and sealed every record of their receipts. */
export const CONFORMANCE_NODE: KeyPair = keyPairFromSecret(
  sha256Hex('geofabric conformance node key (public, never use)'),
);
/** The conformance fusion receipt's devices, a to f. */
export const conformanceDevice = (name: string): KeyPair =>
  keyPairFromSecret(sha256Hex(`geofabric conformance device ${name}`));
const DEVICES = new Map(
  ['a', 'b', 'c', 'd', 'e', 'f'].map((n) => [conformanceDevice(n).publicKey, conformanceDevice(n)]),
);

/** What the device says in a version-2 reading, and the principal its writer attests. */
export interface FusionInput extends ReadingFields {
  principal_pk: string;
  /** The device's signature over the reading; the device's own when absent. */
  device_signature?: string;
}

/** The readings of a fusion receipt's inputs (version 1 or 2 payloads), each its own principal. */
export function fusionInputsOf(receipt: JobReceipt): FusionInput[] {
  return receipt.records
    .filter((e) => e.role === 'input')
    .map((e) => {
      const p = e.record!.payload as Obj;
      return {
        device_pk: p.device_pk as string,
        h3_cell: p.h3_cell as string,
        quantity: p.quantity as string,
        value: p.value as number,
        unit: p.unit as string,
        observed_at: p.observed_at as string,
        principal_pk: typeof p.principal_pk === 'string' ? p.principal_pk : (p.device_pk as string),
      };
    });
}

/** A version-2 telemetry payload: signed by its conformance device unless the input brings a signature. */
export function readingPayload(input: FusionInput): Obj {
  const fields: ReadingFields = {
    device_pk: input.device_pk,
    h3_cell: input.h3_cell,
    quantity: input.quantity,
    value: input.value,
    unit: input.unit,
    observed_at: input.observed_at,
  };
  const device = DEVICES.get(input.device_pk);
  const signature = input.device_signature ?? (device ? signReading(device.secretKey, fields) : undefined);
  if (signature === undefined) throw new TypeError(`no key for device ${input.device_pk}`);
  return { ...fields, device_signature: signature, principal_pk: input.principal_pk };
}

export interface FusionReceiptOptions {
  /** Another writer key for some inputs (their records sealed by that key in its own chain); the node's else. */
  writerOf?: (input: FusionInput, i: number) => KeyPair;
  /** Another payload for some inputs (a version-1 one …); readingPayload else. */
  payloadOf?: (input: FusionInput, i: number) => Obj;
  /** The output's `trusted_writers` (docs/protocol.md §2.10), as given; the base's (if any) else. */
  trustedWriters?: unknown;
}

/**
 * `base` (a sealed receipt of a one-step sensor_fusion job whose records the conformance node key wrote) with its
 * inputs replaced by `inputs` as version-2 records written by the node, the step output fused again from them (all
 * of them, as given), the job record made again to match, and everything sealed again: a receipt that verifies,
 * unless an input is not one a verifier may count.
 */
export function fusionReceipt(
  base: JobReceipt,
  inputs: readonly FusionInput[] = fusionInputsOf(base),
  { writerOf = () => CONFORMANCE_NODE, payloadOf = readingPayload, trustedWriters }: FusionReceiptOptions = {},
): JobReceipt {
  const receipt = structuredClone(base);
  const template = receipt.records.find((e) => e.role === 'input')!;
  const step = receipt.job!.steps.find((s) => s.type === 'sensor_fusion')!;
  const writers = new Map<string, KeyPair>([[CONFORMANCE_NODE.publicKey, CONFORMANCE_NODE]]);
  // Each writer's inputs take its seqs from 1 in record-id order (the receipt's), so sealing keeps their hashes.
  const ids = inputs.map((input) => telemetryRecordId(input.device_pk, input.quantity, input.observed_at));
  const order = inputs.map((_, i) => i).sort((i, j) => (ids[i]! < ids[j]! ? -1 : ids[i]! > ids[j]! ? 1 : 0));
  const seqs = new Map<number, number>();
  const counts = new Map<string, number>();
  for (const i of order) {
    const writer = writerOf(inputs[i]!, i);
    writers.set(writer.publicKey, writer);
    counts.set(writer.publicKey, (counts.get(writer.publicKey) ?? 0) + 1);
    seqs.set(i, counts.get(writer.publicKey)!);
  }
  const entries: ReceiptRecord[] = inputs.map((input, i) => {
    const writer = writerOf(input, i);
    const { record_hash: _h, signature: _s, ...unsigned } = template.record!;
    const record = signRecord(writer.secretKey, {
      ...unsigned,
      id: ids[i]!,
      seq: seqs.get(i)!,
      address: { ...unsigned.address, h3_cell: input.h3_cell, pk: writer.publicKey },
      payload: payloadOf(input, i),
    });
    return { role: 'input', step_id: step.id, record_id: ids[i]!, record, seal: null, proof: null, anchor: null };
  });
  const fused = fuseReadings(
    entries.map((e, i) => ({
      device_pk: inputs[i]!.device_pk,
      principal_pk: inputs[i]!.principal_pk,
      value: inputs[i]!.value,
      record_id: e.record_id,
      record_hash: e.record!.record_hash,
    })),
  );
  const { cell_epochs, ...out } = step.output as Obj;
  step.output = {
    ...out,
    method: FUSION_METHOD,
    ...fused,
    cell_epochs,
    ...(trustedWriters === undefined ? {} : { trusted_writers: trustedWriters }),
  };
  // In the output's order (record ids ascending, a stable sort as fuseReadings makes it).
  receipt.records = [...receipt.records.filter((e) => e.role !== 'input'), ...order.map((i) => entries[i]!)];
  // The job record names the new output hash and job hash; the node signs it again.
  const jobEntry = receipt.records.find((e) => e.role === 'job')!;
  const payload = structuredClone(jobEntry.record!.payload) as Obj & { steps: Obj[] };
  for (const recorded of payload.steps) {
    const answered = receipt.job!.steps.find((s) => s.id === recorded.id)!;
    recorded.output_hash = answered.status === 'complete' ? outputHash(answered.output) : null;
  }
  const outputs = payload.steps.map((s) => ({ id: s.id, status: s.status, output_hash: s.output_hash ?? null }));
  payload.job_hash = sha256Hex(canonicalJson({ request_hash: payload.request_hash, outputs }));
  const nodeSeq = (counts.get(CONFORMANCE_NODE.publicKey) ?? 0) + 1;
  jobEntry.record = signRecord(CONFORMANCE_NODE.secretKey, { ...jobEntry.record!, payload, seq: nodeSeq });
  receipt.job!.proof!.job_hash = payload.job_hash as string;
  return resealed(receipt, writers);
}

/**
 * Every record of `receipt` written by one of `writers` given gapless seqs from 1 (in epoch, then seq order; a
 * record whose seq changes is signed again), each writer's epochs sealed again from its first (empty ones too),
 * the proofs and seal chains to match, anchors dropped: what a store holding exactly these records would give.
 * Each log's head is signed by its writer, or by `headSigner` when given (another node keeping the log).
 */
export function resealed(receipt: JobReceipt, writers: ReadonlyMap<string, KeyPair>, headSigner?: KeyPair): JobReceipt {
  const copy = structuredClone(receipt);
  for (const [pk, writer] of writers) {
    const entries = copy.records
      .filter((e) => e.record !== null && e.record.address.pk === pk)
      .sort((a, b) => a.record!.address.epoch - b.record!.address.epoch || a.record!.seq - b.record!.seq);
    if (entries.length === 0) continue;
    entries.forEach((e, i) => {
      if (e.record!.seq === i + 1) return;
      const { record_hash: _h, signature: _s, ...unsigned } = e.record!;
      e.record = signRecord(writer.secretKey, { ...unsigned, seq: i + 1 });
    });
    const first = entries[0]!.record!.address.epoch;
    const last = entries.at(-1)!.record!.address.epoch;
    const seals: Seal[] = [];
    let prev = GENESIS_PREV_HASH;
    for (let epoch = first; epoch <= last; epoch++) {
      const inEpoch = entries.filter((e) => e.record!.address.epoch === epoch);
      const records: ProofRecord[] = inEpoch.map((e) => e.record!);
      const { seal, levels } = createSealWithLevels(writer.secretKey, {
        epoch,
        records,
        prevSealHash: prev,
        sealedAt: new Date(epochWindow(epoch).end + 60_000).toISOString(),
      });
      inEpoch.forEach((e, i) => {
        e.seal = seal;
        e.proof = {
          leaf_index: i,
          tree_size: records.length,
          hashes: inclusionProofFromLevels(levels, i).map(bytesToHex),
        };
        e.anchor = null;
      });
      seals.push(seal);
      prev = seal.seal_hash;
    }
    if (copy.receipt_version === 1) {
      copy.seal_chains = [...copy.seal_chains!.filter((c) => c.sealer_pk !== pk), { sealer_pk: pk, seals }];
      continue;
    }
    // Version 2: the writer's log is these seals; its head, signed by the writer, replaces the old one.
    const mine = copy.records.filter((e) => e.seal?.sealer_pk === pk);
    const heads = sealHeadsFor(mine, new Map([[pk, seals]]), (headSigner ?? writer).secretKey);
    copy.seal_heads = [...copy.seal_heads!.filter((h) => h.head.sealer_pk !== pk), ...heads];
  }
  return copy;
}
