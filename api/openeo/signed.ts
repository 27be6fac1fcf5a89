/**
 * Signed openEO requests (docs/protocol.md §16.2): a client may sign the JSON body with its Ed25519 key exactly as
 * for `/v1/compute` (`requester_pk` and `signature` in the body, the signature in `X-Idn-Signature`, docs/protocol.md
 * §10.3). The API key still authenticates the request; the signature, checked as gate 1 checks it, is carried into
 * the result's proof record and the job's receipt, so a third party can see who asked for exactly this graph.
 * Without the header the body is not read for a signature and the record names only the API key.
 */
import { pass, type Check } from '../../core/check.js';
import { checkRequestSignature } from '../../core/gates/signature.js';
import type { RequestParts } from '../../core/gates/request-scope.js';
import type { OpenEoAuthentication } from '../../activities/imagery/openeo-run.js';
import type { GateState } from '../route-spec.js';

export interface OpenEoSignature {
  requester_pk: string;
  request_signature: string;
}

/** The request's signature when it carries `X-Idn-Signature` (refused as gate 1 refuses a bad one), else null. */
export function openEoSignature(parts: RequestParts, nowMs: number): Check<OpenEoSignature | null> {
  const header = parts.header('x-idn-signature');
  if (header === undefined || header === '') return pass(null);
  const checked = checkRequestSignature(parts.body, header, nowMs);
  if (!checked.ok) return checked;
  return pass({ requester_pk: checked.value.pk, request_signature: checked.value.signature });
}

/** Who asked, as the proof record states it: the API key, and the signature when there was one. */
export const authenticationOf = (gates: GateState, signed: OpenEoSignature | null): OpenEoAuthentication => ({
  api_key_id: gates.apiKey?.id ?? null,
  ...(signed ?? {}),
});
