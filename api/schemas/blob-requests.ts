import { z } from 'zod';

/**
 * `PUT /store/blobs/{sha256}`: a step output field a swarm worker keeps out of its activity result
 * (core/output-blobs.ts), signed by the worker key (gate 1). `text` is the field's canonical JSON, `job_id` and
 * `step_id` name the step it comes from; `created_at` is required, so gate 1 refuses a copy older than 5 minutes
 * (a replay within them stores nothing new).
 */
export const blobUploadRequestSchema = z.strictObject({
  requester_pk: z.string(),
  text: z.string().describe("The blob: a step output field's canonical JSON (RFC 8785), whose SHA-256 is the path id"),
  job_id: z.string().max(64).describe('The running job whose step output the blob is'),
  step_id: z.string().max(64).describe('That step (its `id` in the job request)'),
  created_at: z.string({ error: 'required: an ISO 8601 time within 5 minutes of the server clock' }),
  nonce: z.string().max(128).optional(),
  signature: z.string(),
});
export type BlobUploadRequest = z.infer<typeof blobUploadRequestSchema>;

export const blobIdParams = z.object({
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .describe('SHA-256 of the blob text, 64 lowercase hex'),
});

export const blobStoredSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** UTF-8 bytes of the stored text (a BlobRef's `bytes`). */
  bytes: z.int().min(0),
});
