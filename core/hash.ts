import { createHash, hash } from 'node:crypto';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

type Data = string | Uint8Array;
const bytes = (data: Data): Uint8Array => (typeof data === 'string' ? utf8ToBytes(data) : data);

// SHA-256 runs on every record, seal and proof: node:crypto (OpenSSL) is about 50x faster here than a
// pure-JS hash. Temporal workflow code must not import this module (it uses a Node built-in).

/** SHA-256 as 64 lowercase hex; strings are hashed as their UTF-8 bytes. */
// One-shot `hash` (Node ≥ 20.12): the same digest at about half the cost per call of createHash.
export const sha256Hex = (data: Data): string => hash('sha256', data, 'hex');
export const sha256Bytes = (data: Data): Uint8Array => new Uint8Array(createHash('sha256').update(data).digest());

/** Blake3-256 as 64 lowercase hex (the `idn_delegation_cert` token claim, docs/protocol.md §2.9). */
export const blake3Hex = (data: Data): string => bytesToHex(blake3(bytes(data)));
