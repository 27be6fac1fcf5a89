/**
 * A small HTTP client for a Geofabric gateway: signs compute requests (RFC 8785 + Ed25519, docs/protocol.md §10.3),
 * submits them, reads jobs and their receipts (§15), and verifies receipts offline.
 */
import { publicKeyOf, sign } from './crypto.js';
import { signingMessage, verifyReceipt, type ReceiptVerdict, type VerifyReceiptOptions } from './receipt.js';

export interface ClientOptions {
  /** The gateway, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** 64-hex Ed25519 seed of the requester (needed to submit). */
  secretKey?: string;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface SubmitOptions {
  /** After a 504 `job_timeout`, poll the job until it finishes (true: up to 10 minutes; or a number of ms). */
  wait?: boolean | number;
  /** `x-svc-delegation-cert`: a certificate, a chain (root first), or the base64 header value. */
  delegation?: unknown;
}

/** An error answer of the gateway: `{ error, detail }` with its HTTP status (and the body, e.g. a failed job). */
export class GeofabricError extends Error {
  override name = 'GeofabricError';

  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly body: unknown,
  ) {
    super(`${status} ${code}: ${detail}`);
  }
}

type Json = Record<string, unknown>;
const POLL_MS = 1000;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class GeofabricClient {
  readonly baseUrl: string;
  readonly publicKey: string | undefined;
  readonly #secretKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#secretKey = options.secretKey;
    this.publicKey = options.secretKey === undefined ? undefined : publicKeyOf(options.secretKey);
    this.#fetch = options.fetch ?? fetch;
  }

  /** The body with `requester_pk` and `signature`, and the `X-Idn-Signature` header value. */
  signRequest<B extends Json>(body: B): { body: B & { requester_pk: string; signature: string }; signature: string } {
    if (this.#secretKey === undefined || this.publicKey === undefined) throw new TypeError('no secretKey to sign with');
    if (body.requester_pk !== undefined && body.requester_pk !== this.publicKey) {
      throw new TypeError('requester_pk in the body is not this client key');
    }
    const withKey = { ...body, requester_pk: this.publicKey };
    const signature = sign(this.#secretKey, signingMessage(withKey));
    return { body: { ...withKey, signature }, signature };
  }

  /**
   * Signs and submits a compute job (§2.1); answers the finished job. A failed job throws GeofabricError with the job
   * in `body.job`. The job id derives from the signature, so submitting the same signed body again is safe.
   */
  async submitJob(request: Json, options: SubmitOptions = {}): Promise<Json> {
    const signed = this.signRequest(request);
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-idn-signature': signed.signature };
    if (options.delegation !== undefined) headers['x-svc-delegation-cert'] = delegationHeader(options.delegation);
    const res = await this.#fetch(`${this.baseUrl}/v1/compute`, {
      method: 'POST',
      headers,
      body: JSON.stringify(signed.body),
    });
    const body = await readJson(res);
    if (res.ok) return body;
    if (res.status === 504 && body.error === 'job_timeout' && options.wait && typeof body.job_id === 'string') {
      return this.#waitForJob(body.job_id, options.wait === true ? 600_000 : options.wait);
    }
    throw errorOf(res.status, body);
  }

  /** The job (§2.3), or its summary while it runs (`status: "running"`). */
  async getJob(jobId: string): Promise<Json> {
    return this.#get(`/v1/compute/${encodeURIComponent(jobId)}`);
  }

  /** The job's receipt (§15); with `waitSealedMs`, asks again until it is no longer pending or the time is up. */
  async getReceipt(jobId: string, options: { waitSealedMs?: number } = {}): Promise<Json> {
    const deadline = Date.now() + (options.waitSealedMs ?? 0);
    for (;;) {
      const receipt = await this.#get(`/v1/compute/${encodeURIComponent(jobId)}/receipt`);
      if (receipt.status !== 'pending' || Date.now() >= deadline) return receipt;
      await sleep(Math.min(POLL_MS * 5, Math.max(0, deadline - Date.now())));
    }
  }

  /** Offline: see verifyReceipt. */
  verifyReceipt(receipt: unknown, options: VerifyReceiptOptions = {}): ReceiptVerdict {
    return verifyReceipt(receipt, options);
  }

  async #waitForJob(jobId: string, ms: number): Promise<Json> {
    const deadline = Date.now() + ms;
    for (;;) {
      const job = await this.getJob(jobId);
      if (job.status === 'complete') return job;
      if (job.status === 'failed') {
        const error = (job.error ?? {}) as Json;
        throw new GeofabricError(502, String(error.code ?? 'step_failed'), String(error.detail ?? 'the job failed'), {
          job,
        });
      }
      if (Date.now() >= deadline) throw new GeofabricError(504, 'job_timeout', `job ${jobId} still running`, job);
      await sleep(POLL_MS);
    }
  }

  async #get(path: string): Promise<Json> {
    const res = await this.#fetch(`${this.baseUrl}${path}`);
    const body = await readJson(res);
    if (!res.ok) throw errorOf(res.status, body);
    return body;
  }
}

function delegationHeader(delegation: unknown): string {
  if (typeof delegation === 'string') return delegation;
  const bytes = new TextEncoder().encode(JSON.stringify(delegation));
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

async function readJson(res: Response): Promise<Json> {
  const text = await res.text();
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : { value };
  } catch {
    return { error: 'invalid_response', detail: text.slice(0, 200) };
  }
}

const errorOf = (status: number, body: Json) =>
  new GeofabricError(status, String(body.error ?? 'http_error'), String(body.detail ?? ''), body);
