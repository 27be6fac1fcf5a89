/**
 * What counts as a reading's evidence (core/telemetry.ts provenReadingOf, docs/protocol.md §2.10): the one rule
 * fusion and the receipt verifiers apply to a stored telemetry record.
 */
import assert from 'node:assert/strict';
import { generateKeyPair } from '../../core/identity.js';
import { signRecord } from '../../core/proof-record.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { provenReadingOf, signReading, telemetryRecordId, type ReadingFields } from '../../core/telemetry.js';

const node = generateKeyPair();
const device = generateKeyPair();
const principal = generateKeyPair();
const cell = '8928308280fffff';

/** A reading record as a node writes it, with `change` applied to the payload after the device signed. */
function recordOf(
  change: (payload: Record<string, unknown>) => void = () => {},
  writer = node,
  fields: Partial<ReadingFields> = {},
): ProofRecord {
  const reading: ReadingFields = {
    device_pk: device.publicKey,
    h3_cell: cell,
    quantity: 'no2',
    value: 21.5,
    unit: 'ug/m3',
    observed_at: '2026-11-29T01:00:00.000Z',
    ...fields,
  };
  const payload: Record<string, unknown> = {
    ...reading,
    device_signature: signReading(device.secretKey, reading),
    principal_pk: principal.publicKey,
  };
  change(payload);
  return signRecord(writer.secretKey, {
    version: 1,
    id: telemetryRecordId(reading.device_pk, reading.quantity, reading.observed_at),
    address: { h3_cell: cell, epoch: 7, pk: writer.publicKey },
    collection_type: 'telemetry',
    payload_type: 'iot/telemetry',
    payload,
    seq: 1,
    written_at: '2026-11-29T01:00:01.000Z',
  });
}

const reasonOf = (record: ProofRecord, writerPk = node.publicKey) => {
  const out = provenReadingOf(record, [writerPk]);
  return out.ok ? 'proven' : out.detail;
};

describe('telemetry evidence (core/telemetry.ts provenReadingOf)', () => {
  it('accepts a node-written reading its device signed, and gives the principal the node attests', () => {
    const out = provenReadingOf(recordOf(), [node.publicKey]);
    assert.ok(out.ok);
    assert.equal(out.value.principal_pk, principal.publicKey);
  });

  it('refuses a record written by any key but the trusted node, however well signed', () => {
    const worker = generateKeyPair();
    assert.match(reasonOf(recordOf(undefined, worker)), /was written by .* not the node/);
  });

  it('refuses a reading its device did not sign: changed value, a signature by another key, none', () => {
    assert.match(reasonOf(recordOf((p) => (p.value = 999))), /device signature/);
    const other = generateKeyPair();
    assert.match(
      reasonOf(
        recordOf((p) => {
          const { device_signature: _s, principal_pk: _p, ...fields } = p;
          p.device_signature = signReading(other.secretKey, fields as unknown as ReadingFields);
        }),
      ),
      /device signature/,
    );
    assert.match(
      reasonOf(
        recordOf((p) => {
          delete p.device_signature;
          p.batch = { request_hash: '00'.repeat(32), signature: '00'.repeat(64) };
        }),
      ),
      /version-1/,
    );
  });

  it('refuses readings that are implausible, not normalised, mis-addressed or mis-named, even when signed', () => {
    assert.match(reasonOf(recordOf(undefined, node, { value: 1.7e308 })), /plausible range/);
    assert.match(reasonOf(recordOf(undefined, node, { unit: 'mg/m3' })), /reported in/);
    assert.match(reasonOf(recordOf(undefined, node, { observed_at: '2026-11-29T01:00:00Z' })), /normalised/);
    assert.match(reasonOf(recordOf(undefined, node, { h3_cell: '8928308280bffff' })), /device's cell/);
    assert.match(reasonOf(recordOf((p) => (p.principal_pk = 'nobody'))), /principal/);
  });
});
