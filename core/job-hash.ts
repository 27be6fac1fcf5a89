/**
 * Job identity and the job hash (docs/protocol.md §2.3 `job_id`, `proof.job_hash`; docs/protocol.md §10, gate 1).
 *
 * - `job_id` is a UUID derived from the request's signature: Ed25519 signatures are deterministic, so the
 *   same signed body always names the same job, and a replayed request finds it instead of running again.
 *   The UUID is version 8 (RFC 9562 "custom"): the first 128 bits of SHA-256("geofabric/job\n" + signature)
 *   with the version nibble and the two variant bits overwritten in place (122 bits of the hash remain).
 * - `job_hash` = SHA-256 hex of JCS({ request_hash, outputs }) where `request_hash` is SHA-256 hex of JCS of
 *   the signed request body (signature included) and `outputs` lists, in request order, each step's
 *   `{ id, status, output_hash }` with `output_hash` = SHA-256 hex of JCS of the step's output (null for a
 *   step that did not complete). Anyone holding the request and the response can recompute it.
 */
import { canonicalJson } from './canonical-json.js';
import { sha256Hex } from './hash.js';
import type { StepResult } from './job-record.js';

export function jobIdFromSignature(signature: string): string {
  const h = sha256Hex(`geofabric/job\n${signature}`);
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const requestHash = (signedBody: unknown): string => sha256Hex(canonicalJson(signedBody));

export const outputHash = (output: unknown): string => sha256Hex(canonicalJson(output));

export function jobHash(
  requestHashHex: string,
  steps: readonly Pick<StepResult, 'id' | 'status' | 'output'>[],
): string {
  const outputs = steps.map((s) => ({
    id: s.id,
    status: s.status,
    output_hash: s.status === 'complete' ? outputHash(s.output) : null,
  }));
  return sha256Hex(canonicalJson({ request_hash: requestHashHex, outputs }));
}
