import { blake3 } from '@noble/hashes/blake3.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';

type Data = string | Uint8Array;
const bytes = (data: Data): Uint8Array => (typeof data === 'string' ? utf8ToBytes(data) : data);

/** SHA-256 as 64 lowercase hex; strings are hashed as their UTF-8 bytes. */
export const sha256Hex = (data: Data): string => bytesToHex(sha256(bytes(data)));
export const sha256Bytes = (data: Data): Uint8Array => sha256(bytes(data));

/** Blake3-256 as 64 lowercase hex (the `idn_delegation_cert` token claim, SPEC 2.9). */
export const blake3Hex = (data: Data): string => bytesToHex(blake3(bytes(data)));
