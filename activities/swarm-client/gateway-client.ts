/**
 * A swarm worker's client of its gateway's worker registry (the server is
 * api/routes/svc-workers.ts): `POST /svc/workers/register` and `POST /svc/workers/heartbeat`, and of its blob
 * store (`PUT /store/blobs/{sha256}`, api/routes/store-blobs.ts), all signed by the worker key (gate 1:
 * Ed25519 over JCS of the body, the signature also in `X-Idn-Signature`).
 *
 * Heartbeat sequence numbers must strictly increase for a worker key, across restarts too (the server
 * refuses a replay with 401 `stale_request`). The client continues from the `heartbeat_seq` the server
 * returns on registration, so a restarted worker (which always registers first) never reuses a number.
 * A heartbeat whose answer was lost leaves the server one ahead: the next one is then `stale_request`, and
 * registering again resynchronises (the worker's heartbeat loop does that).
 */
import { signRequestBody } from '../../core/gates/signature.js';
import type { KeyPair } from '../../core/identity.js';
import type { WorkerTier } from '../../core/tiers.js';
import type { WorkerRegistration } from '../../store/worker-registry.js';
import type { BlobOwner } from '../../store/blob-store.js';

export interface GatewayClientOptions {
  /** The gateway's base URL, e.g. http://gateway:8080 (paths are resolved against its origin). */
  gatewayUrl: string;
  /** The worker key: its public key is the worker's identity in the registry. */
  signer: KeyPair;
  fetch?: typeof fetch;
  /** Per request. */
  timeoutMs: number;
  /** For `created_at` (the server accepts ±5 minutes); default Date.now. */
  clock?: () => number;
}

/** What the worker declares: the registry's registration without `pk` (the signer is the identity). */
export type WorkerDeclaration = Omit<WorkerRegistration, 'pk'>;

/** The register answer: the worker as anyone sees it, plus its hardware and last accepted heartbeat seq. */
export interface RegisteredWorker extends WorkerDeclaration {
  pk: string;
  trust_tier: WorkerTier;
  jobs_completed: number;
  jobs_failed: number;
  registered_at: string;
  last_seen: string;
  online: boolean;
  heartbeat_seq: number;
}

export interface LeaveAnswer {
  pk: string;
  seq: number;
  online: false;
  left_at: string;
}

export interface HeartbeatAnswer {
  pk: string;
  seq: number;
  trust_tier: WorkerTier;
  online: boolean;
  next_heartbeat_within_s: number;
}

/**
 * A refusal or failure of the gateway. `code` is the server's `error` (docs/protocol.md §7 codes such as
 * `invalid_signature`, `stale_request`, `worker_not_found`), or `gateway_unreachable` (no answer; status 0)
 * or `invalid_response` (an answer that is not the expected JSON).
 */
export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly path: string,
    readonly status: number,
    readonly code: string,
    readonly detail: string | undefined,
    /** The answer's `retry-after`, in milliseconds, when it had one (429, 503). */
    readonly retryAfterMs?: number,
  ) {
    super(`${path}: ${status === 0 ? 'no answer' : `HTTP ${status}`} ${code}${detail ? `: ${detail}` : ''}`);
  }
}

export function createGatewayClient(options: GatewayClientOptions) {
  const doFetch = options.fetch ?? fetch;
  const clock = options.clock ?? Date.now;
  let lastSeq = 0;

  async function post<T>(
    path: string,
    unsigned: Record<string, unknown>,
    timeoutMs = options.timeoutMs,
    method: 'POST' | 'PUT' = 'POST',
  ): Promise<T> {
    const { body, signature } = signRequestBody(options.signer.secretKey, unsigned);
    let res: Response;
    try {
      res = await doFetch(new URL(path, options.gatewayUrl), {
        method,
        headers: { 'content-type': 'application/json', 'x-idn-signature': signature },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      // fetch's own message is "fetch failed"; the reason (ECONNREFUSED, a timeout …) is its cause.
      const reason = (error as { cause?: { message?: unknown } }).cause?.message;
      const detail = typeof reason === 'string' ? reason : (error as Error).message;
      throw new GatewayError(path, 0, 'gateway_unreachable', detail);
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const err = (parsed ?? {}) as { error?: unknown; detail?: unknown };
      const retryAfterS = Number(res.headers.get('retry-after') ?? NaN);
      throw new GatewayError(
        path,
        res.status,
        typeof err.error === 'string' ? err.error : 'invalid_response',
        typeof err.detail === 'string' ? err.detail : text.slice(0, 200) || undefined,
        Number.isFinite(retryAfterS) && retryAfterS >= 0 ? retryAfterS * 1000 : undefined,
      );
    }
    if (typeof parsed !== 'object' || parsed === null) {
      throw new GatewayError(path, res.status, 'invalid_response', `not a JSON object: ${text.slice(0, 200)}`);
    }
    return parsed as T;
  }

  const createdAt = () => new Date(clock()).toISOString();

  return {
    pk: options.signer.publicKey,
    /** Registers (201) or re-registers (200) this worker; heartbeats continue from the server's seq. */
    async register(declaration: WorkerDeclaration): Promise<RegisteredWorker> {
      const answer = await post<RegisteredWorker>('/svc/workers/register', {
        ...declaration,
        created_at: createdAt(),
      });
      if (!Number.isSafeInteger(answer.heartbeat_seq) || answer.heartbeat_seq < 0) {
        throw new GatewayError('/svc/workers/register', 200, 'invalid_response', 'no heartbeat_seq in the answer');
      }
      lastSeq = Math.max(lastSeq, answer.heartbeat_seq);
      return answer;
    },
    /** One heartbeat: `seq` (default: one above the last accepted) must exceed every seq sent before. */
    async heartbeat(seq: number = lastSeq + 1): Promise<HeartbeatAnswer> {
      const answer = await post<HeartbeatAnswer>('/svc/workers/heartbeat', { seq, created_at: createdAt() });
      lastSeq = Math.max(lastSeq, seq);
      return answer;
    },
    /**
     * Announces a graceful stop (`POST /svc/workers/leave`): the gateway counts this worker offline from its
     * answer on. Sequenced like a heartbeat, so no earlier heartbeat can bring it back. `timeoutMs` bounds it
     * (a stopping worker does not wait long for a gateway that does not answer).
     */
    async leave(timeoutMs = options.timeoutMs): Promise<LeaveAnswer> {
      const seq = lastSeq + 1;
      const answer = await post<LeaveAnswer>('/svc/workers/leave', { seq, created_at: createdAt() }, timeoutMs);
      lastSeq = Math.max(lastSeq, seq);
      return answer;
    },
    /**
     * Uploads one large step output field (`PUT /store/blobs/{sha256}`, api/routes/store-blobs.ts): `text` is its
     * canonical JSON, `id` the SHA-256 of it, `step` the job step whose output it is (the gateway takes blobs only
     * for a step of a running job). Idempotent; resolves once the gateway holds it.
     */
    putBlob: (
      id: string,
      text: string,
      step: BlobOwner,
      timeoutMs = options.timeoutMs,
    ): Promise<{ sha256: string; bytes: number }> =>
      post(
        `/store/blobs/${id}`,
        { text, job_id: step.job_id, step_id: step.step_id, created_at: createdAt() },
        timeoutMs,
        'PUT',
      ),
    /** The highest seq the gateway is known to have accepted. */
    lastSeq: (): number => lastSeq,
  };
}

export type GatewayClient = ReturnType<typeof createGatewayClient>;
