/**
 * Readings as a device sends them (docs/protocol.md §2.10): each carries the device's signature over its reading
 * statement (core/telemetry.ts signReading), `observed_at` normalised as the server stores and checks it.
 */
import type { KeyPair } from '../../core/identity.js';
import { normaliseObservedAt, signReading } from '../../core/telemetry.js';

export interface UnsignedReading {
  quantity: string;
  value: number;
  unit: string;
  observed_at: string;
}

/** One reading signed by `device` for its `cell`; an observed_at that is no timestamp is signed as sent. */
export function signedReading<R extends UnsignedReading>(device: KeyPair, cell: string, reading: R) {
  const observedAt = normaliseObservedAt(reading.observed_at) ?? reading.observed_at;
  const signature = signReading(device.secretKey, {
    device_pk: device.publicKey,
    h3_cell: cell,
    quantity: reading.quantity,
    value: reading.value,
    unit: reading.unit,
    observed_at: observedAt,
  });
  return { ...reading, signature };
}

/** Every reading of a batch signed by its device. */
export const signedReadings = <R extends UnsignedReading>(device: KeyPair, cell: string, readings: readonly R[]) =>
  readings.map((r) => signedReading(device, cell, r));
