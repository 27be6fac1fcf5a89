import { createSyncQuota, type SyncBounds } from '../../activities/proof/sync-writers.js';
import { blobBodyLimit, checkBlobText, isBlobId, MAX_BLOB_BYTES } from '../../core/blob-upload.js';
import { fail } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import type { BlobStore } from '../../store/blob-store.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { route, type RouteSpec } from '../route-spec.js';
import {
  blobIdParams,
  blobStoredSchema,
  blobUploadRequestSchema,
  type BlobUploadRequest,
} from '../schemas/blob-requests.js';
import { zodCheck } from '../schemas/zod-check.js';

/** How large a blob may be, and how many and how many bytes one worker key may upload per hour. */
export interface BlobUploadLimits extends SyncBounds {
  /** Largest blob text in UTF-8 bytes (413 `payload_too_large` above). */
  maxBytes: number;
}

/** 8 MiB a blob; per worker key and hour one a second and 256 MiB (429 `quota_exceeded` past either). */
export const DEFAULT_BLOB_UPLOAD_LIMITS: BlobUploadLimits = {
  maxBytes: MAX_BLOB_BYTES,
  itemsPerHour: 3600,
  bytesPerHour: 256 * 1024 * 1024,
};

/**
 * Large step outputs uploaded by swarm workers (docs/protocol.md §4.1 `/store/blobs`, docs/architecture.md
 * payload discipline): a worker's step activity returns a BlobRef in place of each large field (its result
 * stays far below Temporal's payload limit) once the gateway holds the field's text, where finishJob resolves it.
 *
 * Signed by the worker key (gate 1, like its heartbeats); only a registered worker may upload (403
 * `writer_not_allowed`), within the size bound and an hourly quota per key. The id is the SHA-256 of the text and
 * the gateway recomputes it, so nobody can place another text under a hash (400 `invalid_request`); the same
 * upload again stores nothing new (PUT is idempotent); the store writes a blob whole or not at all.
 */
export const blobRoutes = (deps: {
  blobs: Pick<BlobStore, 'put'>;
  workers: Pick<WorkerRegistry, 'get'>;
  clock: () => number;
  limits?: BlobUploadLimits | undefined;
}): RouteSpec<unknown>[] => {
  const limits = deps.limits ?? DEFAULT_BLOB_UPLOAD_LIMITS;
  const quota = createSyncQuota(limits, deps.clock);
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
        quota.charge(pk, 1, checked.value.bytes);
        await deps.blobs.put(new Map([[upload.id, upload.text]]));
        ctx.body = { sha256: upload.id, bytes: checked.value.bytes };
      },
      docs: {
        summary: 'Upload a large step output field (a registered worker, signed)',
        description:
          "A swarm worker's step keeps each output field larger than 16 KiB out of its activity result and uploads " +
          "it here first: `text` is the field's canonical JSON, the path its SHA-256 (recomputed: a mismatch is 400 " +
          '`invalid_request`). Idempotent: the same blob again answers the same. Only registered workers ' +
          `(403 \`writer_not_allowed\`); at most ${DEFAULT_BLOB_UPLOAD_LIMITS.maxBytes / 1024 / 1024} MiB a blob by ` +
          'default (413 `payload_too_large`) and an hourly quota per worker key (429 `quota_exceeded`). ' +
          '`created_at` is required.',
        tags: ['Workers'],
        params: blobIdParams,
        body: blobUploadRequestSchema,
        responses: { 200: { description: 'Stored (or already there)', schema: blobStoredSchema } },
        errors: ['invalid_request', 'writer_not_allowed', 'payload_too_large', 'quota_exceeded', 'storage_full'],
      },
    }),
  ];
};
