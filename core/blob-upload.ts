/**
 * What the gateway checks of a blob a swarm worker uploads (`PUT /store/blobs/{sha256}`, docs/protocol.md §4.1;
 * core/output-blobs.ts): within the size bound, named by the SHA-256 of its text, and that text the canonical
 * JSON (RFC 8785) of a value, as `splitOutput` writes it. So an id can only ever hold the one text that hashes to
 * it (nobody can squat a hash), and `resolveOutput` can parse every stored blob.
 */
import { canonicalJson, MAX_CANONICAL_DEPTH } from './canonical-json.js';
import { fail, pass, type Check } from './check.js';
import { sha256Hex } from './hash.js';
import { parseStrictJson } from './strict-json.js';

/** Default largest blob text, in UTF-8 bytes: a step output field of a few MB fits with room to spare. */
export const MAX_BLOB_BYTES = 8 * 1024 * 1024;

/**
 * The request body bound for a blob of `maxBytes`: the text travels as a JSON string, where each byte of a
 * canonical JSON text takes at most two (JCS leaves no raw control character; `"` and `\` double), plus the
 * signed envelope.
 */
export const blobBodyLimit = (maxBytes: number): number => 2 * maxBytes + 4096;

export const isBlobId = (id: string): boolean => /^[0-9a-f]{64}$/.test(id);

/** `text` may be stored under `id`: its byte length when so. */
export function checkBlobText(id: string, text: string, maxBytes: number): Check<{ bytes: number }> {
  if (!isBlobId(id)) return fail('invalid_request', 'the blob id must be 64 lowercase hex (the SHA-256 of its text)');
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) {
    return fail('payload_too_large', `the blob is ${bytes} bytes; at most ${maxBytes} bytes are accepted`);
  }
  if (sha256Hex(text) !== id) return fail('invalid_request', 'text: its SHA-256 is not the id in the path');
  let canonical: string;
  try {
    canonical = canonicalJson(parseStrictJson(text, MAX_CANONICAL_DEPTH));
  } catch {
    return fail('invalid_request', 'text: not a JSON text');
  }
  if (canonical !== text) return fail('invalid_request', 'text: not canonical JSON (RFC 8785)');
  return pass({ bytes });
}
