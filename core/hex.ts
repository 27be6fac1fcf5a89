import { bytesToHex as toHex, hexToBytes as fromHex } from '@noble/hashes/utils.js';

/** Strict lowercase-hex codecs: Geofabric's wire encodings for keys, signatures and hashes. */
const HEX = /^(?:[0-9a-f]{2})*$/;

export function isHex(value: unknown, bytes?: number): value is string {
  return typeof value === 'string' && HEX.test(value) && (bytes === undefined || value.length === bytes * 2);
}

export function hexToBytes(hex: string): Uint8Array {
  if (!isHex(hex)) throw new TypeError('expected lowercase hex of even length');
  return fromHex(hex);
}

export const bytesToHex = (bytes: Uint8Array): string => toHex(bytes);
