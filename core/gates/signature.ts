import { canonicalJson, CanonicalJsonError } from '../canonical-json.js';
import { fail, pass, type Check } from '../check.js';
import { isHex } from '../hex.js';
import { checkPublicKey, keyPairFromSecret, signMessage, verifySignature, verifySignatureAsync } from '../identity.js';

/** Gate 1. A signed body: any JSON object carrying the requester's key and the signature. */
export interface Requester {
  pk: string;
  /** The verified signature, normalised (lower-case hex): one request has exactly one. */
  signature: string;
}

/** How far a request's optional `created_at` may be from the server clock. */
export const CREATED_AT_SKEW_MS = 5 * 60_000;

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

/** What gate 1 checks before the curve check: the normalised header signature, the key, the signed message. */
interface SignatureCheckInputs {
  pk: string;
  message: string;
  signature: string;
  createdAt: unknown;
}

/**
 * The signed message is the UTF-8 of JCS(body without `signature`). The header and the body carry the
 * same hex signature; the header lets a proxy reject unsigned traffic without parsing the body.
 */
export function checkRequestSignature(body: unknown, header: string | undefined, nowMs: number): Check<Requester> {
  const inputs = signatureInputs(body, header);
  if (!inputs.ok) return inputs;
  const { pk, message, signature } = inputs.value;
  return signatureOutcome(inputs.value, verifySignature(pk, message, signature), nowMs);
}

/**
 * checkRequestSignature with the Ed25519 check off the event loop (by default on the libuv pool, core/identity.ts
 * verifySignatureAsync), so it serves other requests meanwhile: the same checks, in the same order, with the
 * same answers.
 */
export function checkRequestSignatureAsync(
  body: unknown,
  header: string | undefined,
  nowMs: number,
  verify: AsyncVerifier = verifySignatureAsync,
): Check<Requester> | Promise<Check<Requester>> {
  const inputs = signatureInputs(body, header);
  if (!inputs.ok) return inputs;
  const { pk, message, signature } = inputs.value;
  return verify(pk, message, signature).then((ok) => signatureOutcome(inputs.value, ok, nowMs));
}

/** An Ed25519 check under core/identity.ts's policy, made off the caller's thread; never rejects. */
export type AsyncVerifier = (pk: string, message: string, signature: string) => Promise<boolean>;

function signatureInputs(body: unknown, header: string | undefined): Check<SignatureCheckInputs> {
  if (header === undefined || header === '') {
    return fail('signature_required', 'X-Idn-Signature header is required');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return fail('invalid_signature', 'a signed request needs a JSON object body');
  }
  const { signature, ...unsigned } = body as Record<string, unknown>;
  const headerSignature = header.trim().toLowerCase();
  if (!isHex(headerSignature, 64)) {
    return fail('invalid_signature', 'X-Idn-Signature must be 128 hex characters (an Ed25519 signature)');
  }
  if (signature !== headerSignature) {
    return fail('invalid_signature', 'the body signature field and the X-Idn-Signature header differ');
  }
  const key = checkPublicKey(unsigned.requester_pk);
  if (!key.ok) return fail('invalid_public_key', `requester_pk: ${key.detail}`);

  let message: string;
  try {
    message = canonicalJson(unsigned);
  } catch (error) {
    if (error instanceof CanonicalJsonError) return fail('invalid_signature', error.message);
    throw error;
  }
  return pass({ pk: key.value, message, signature: headerSignature, createdAt: unsigned.created_at });
}

function signatureOutcome(inputs: SignatureCheckInputs, verified: boolean, nowMs: number): Check<Requester> {
  if (!verified) return fail('invalid_signature', 'signature does not match the canonical request');
  const { createdAt } = inputs;
  if (createdAt !== undefined) {
    const at = typeof createdAt === 'string' && ISO_8601.test(createdAt) ? Date.parse(createdAt) : NaN;
    if (Number.isNaN(at)) return fail('stale_request', 'created_at must be an ISO 8601 timestamp');
    if (Math.abs(nowMs - at) > CREATED_AT_SKEW_MS) {
      return fail('stale_request', 'created_at is more than 5 minutes away from the server clock');
    }
  }
  return pass({ pk: inputs.pk, signature: inputs.signature });
}

/** The exact signed message: JCS of the body without its `signature` field. */
export function requestSigningMessage(body: Record<string, unknown>): string {
  const { signature: _ignored, ...unsigned } = body;
  return canonicalJson(unsigned);
}

/**
 * Client side of gate 1: sets `requester_pk` from the key (or checks it), signs, and returns the body
 * with its `signature` and the value for the X-Idn-Signature header.
 */
export function signRequestBody<B extends Record<string, unknown>>(
  secretKey: string,
  body: B,
): { body: B & { requester_pk: string; signature: string }; signature: string } {
  const { publicKey } = keyPairFromSecret(secretKey);
  if (body.requester_pk !== undefined && body.requester_pk !== publicKey) {
    throw new TypeError('requester_pk in the body is not the public key of the signing key');
  }
  const withKey = { ...body, requester_pk: publicKey };
  const signature = signMessage(secretKey, requestSigningMessage(withKey));
  return { body: { ...withKey, signature }, signature };
}
