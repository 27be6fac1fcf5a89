import { createSyncQuota, type SyncBounds } from '../../activities/proof/sync-writers.js';
import { blobBodyLimit, checkBlobText, isBlobId, MAX_BLOB_BYTES } from '../../core/blob-upload.js';
import { fail } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import type { JobRecord } from '../../core/job-record.js';
import type { BlobStore } from '../../store/blob-store.js';
import type { JobStore } from '../../store/job-store.js';
import type { RateLimitStore } from '../../store/types.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { route, type RouteSpec } from '../route-spec.js';
import {
  blobIdParams,
  blobStoredSchema,
  blobUploadRequestSchema,
  type BlobUploadRequest,
} from '../schemas/blob-requests.js';
import { zodCheck } from '../schemas/zod-check.js';

/** How large a blob may be, how many one step may keep, and how many and how many bytes one worker key may upload per hour. */
export interface BlobUploadLimits extends SyncBounds {
  /** Largest blob text in UTF-8 bytes (413 `payload_too_large` above). */
  maxBytes: number;
  /** Distinct blobs one step of a job may keep, over all its attempts (413 `payload_too_large` past it); default 8. */
  blobsPerStep?: number;
}

/**
 * Distinct blobs per job step: a step output has one or two fields that can pass 16 KiB (core/output-blobs.ts),
 * and each attempt of a retried step may upload its own.
 */
export const DEFAULT_BLOBS_PER_STEP = 8;

/** 8 MiB a blob, 8 a step; per worker key and hour one a second and 256 MiB (429 `quota_exceeded` past either). */
export const DEFAULT_BLOB_UPLOAD_LIMITS: BlobUploadLimits = {
  maxBytes: MAX_BLOB_BYTES,
  blobsPerStep: DEFAULT_BLOBS_PER_STEP,
  itemsPerHour: 3600,
  bytesPerHour: 256 * 1024 * 1024,
};

/** How long a step's blob count is kept: the longest a job may run (JOB_RUN_TIMEOUT_SECONDS at most 7 days). */
const STEP_COUNT_MS = 7 * 86_400_000;

/**
 * Large step outputs uploaded by swarm workers (docs/protocol.md §4.1 `/store/blobs`, docs/architecture.md
 * payload discipline): a worker's step activity returns a BlobRef in place of each large field (its result
 * stays far below Temporal's payload limit) once the gateway holds the field's text, where finishJob resolves it.
 *
 * Signed by the worker key (gate 1, like its heartbeats); only a registered worker may upload (403
 * `writer_not_allowed`), and only for a step it may be running: the upload names a job that is `running` in the
 * job store and one of its steps (403 `writer_not_allowed` otherwise; a job id is a capability a worker learns
 * from the step it was handed). Each step keeps at most `blobsPerStep` distinct blobs over all its attempts,
 * counted in the store so every gateway process shares the count (413 `payload_too_large` past it), within the
 * size bound and an hourly quota per key. The id is the SHA-256 of the text and the gateway recomputes it, so
 * nobody can place another text under a hash (400 `invalid_request`); the same upload again stores nothing new
 * (PUT is idempotent); the store writes a blob whole or not at all.
 */
export const blobRoutes = (deps: {
  blobs: Pick<BlobStore, 'put'>;
  workers: Pick<WorkerRegistry, 'get'>;
  jobs: Pick<JobStore, 'get'>;
  rateLimits: Pick<RateLimitStore, 'peek' | 'increment'>;
  clock: () => number;
  limits?: BlobUploadLimits | undefined;
}): RouteSpec<unknown>[] => {
  const limits = deps.limits ?? DEFAULT_BLOB_UPLOAD_LIMITS;
  const perStep = limits.blobsPerStep ?? DEFAULT_BLOBS_PER_STEP;
  const quota = createSyncQuota(limits, deps.clock);

  /** Where a step's blob count and its per-blob marks live: kept from the job's creation for as long as it may run. */
  const stepKeys = (job: JobRecord, stepId: string, id: string) => {
    const count = `blob-step:${job.job_id}:${stepId}`;
    return { count, mark: `${count}:${id}`, start: Date.parse(job.created_at) };
  };

  /**
   * Counts a blob against its step unless the step holds it already (a re-sent upload, a retried attempt with
   * the same output; marked once stored). False when it was counted before. Two first uploads of one blob racing
   * may both count (errs towards the bound).
   */
  async function countForStep(job: JobRecord, stepId: string, id: string): Promise<boolean> {
    const keys = stepKeys(job, stepId, id);
    if ((await deps.rateLimits.peek(keys.mark, keys.start)) > 0) return false;
    const count = await deps.rateLimits.increment(keys.count, keys.start, STEP_COUNT_MS);
    if (count > perStep) {
      throw new ServiceError(
        'payload_too_large',
        `step "${stepId}" of job ${job.job_id} already keeps ${perStep} blobs; a step may keep at most ${perStep}`,
      );
    }
    return true;
  }

  return [
    route<BlobUploadRequest & { id: string }>({
      method: 'PUT',
      path: '/store/blobs/:sha256',
      auth: 'signed',
      jsonBody: true,
      bodyLimitBytes: blobBodyLimit(limits.maxBytes),
      facets: [],
      preflight: ({ body, params }) => {
        const id = params.sha256 ?? '';
        if (!isBlobId(id)) return fail('invalid_request', 'sha256: must be 64 lowercase hex (the SHA-256 of the text)');
        const upload = zodCheck(blobUploadRequestSchema, body);
        return upload.ok ? { ok: true, value: { ...upload.value, id } } : upload;
      },
      handler: async (ctx, upload, gates) => {
        const pk = gates.requester?.pk;
        if (pk === undefined) throw new ServiceError('internal_error', 'signed route without a requester');
        // Who before what: an unknown key learns nothing about its text, and costs no hashing.
        if ((await deps.workers.get(pk)) === null) {
          throw new ServiceError('writer_not_allowed', 'only a registered worker may upload blobs');
        }
        const checked = checkBlobText(upload.id, upload.text, limits.maxBytes);
        if (!checked.ok) throw new ServiceError(checked.error, checked.detail);
        const job = await deps.jobs.get(upload.job_id);
        if (job === null || job.status !== 'running' || !hasStep(job, upload.step_id)) {
          throw new ServiceError(
            'writer_not_allowed',
            `no running job ${JSON.stringify(upload.job_id)} with a step ${JSON.stringify(upload.step_id)}: ` +
              'a worker uploads blobs only for a step it is running',
          );
        }
        quota.charge(pk, 1, checked.value.bytes);
        const counted = await countForStep(job, upload.step_id, upload.id);
        await deps.blobs.put(new Map([[upload.id, upload.text]]));
        if (counted) {
          const keys = stepKeys(job, upload.step_id, upload.id);
          await deps.rateLimits.increment(keys.mark, keys.start, STEP_COUNT_MS);
        }
        ctx.body = { sha256: upload.id, bytes: checked.value.bytes };
      },
      docs: {
        summary: 'Upload a large step output field (a registered worker, signed)',
        description:
          "A swarm worker's step keeps each output field larger than 16 KiB out of its activity result and uploads " +
          "it here first: `text` is the field's canonical JSON, the path its SHA-256 (recomputed: a mismatch is 400 " +
          '`invalid_request`), `job_id` and `step_id` the step whose output it is. Idempotent: the same blob again ' +
          'answers the same. Only registered workers, for a step of a running job (403 `writer_not_allowed`); at ' +
          `most ${DEFAULT_BLOB_UPLOAD_LIMITS.maxBytes / 1024 / 1024} MiB a blob and ${DEFAULT_BLOBS_PER_STEP} ` +
          'blobs a step by default (413 `payload_too_large`) and an hourly quota per worker key (429 ' +
          '`quota_exceeded`). `created_at` is required.',
        tags: ['Workers'],
        params: blobIdParams,
        body: blobUploadRequestSchema,
        responses: { 200: { description: 'Stored (or already there)', schema: blobStoredSchema } },
        errors: ['invalid_request', 'writer_not_allowed', 'payload_too_large', 'quota_exceeded', 'storage_full'],
      },
    }),
  ];
};

/** Whether the job's signed request has a step `stepId` (jobs stored before requests were kept have none). */
function hasStep(job: JobRecord, stepId: string): boolean {
  const steps = job.request?.body.steps;
  return Array.isArray(steps) && steps.some((step) => (step as { id?: unknown } | null)?.id === stepId);
}
