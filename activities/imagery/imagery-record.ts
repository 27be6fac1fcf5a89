/**
 * The payload of `imagery` proof records (docs/protocol.md §2.6: written after every satellite image processing),
 * version 1, one payload type per operation (`imagery/ndvi`, `imagery/cloud_mask`, `imagery/scene_search`,
 * `imagery/atmospheric_correction`). It names what was asked (catalog, search), which STAC item answered,
 * how the value was made (method, baseline, offset) and the bytes it was made from: each asset read is
 * listed with its URL, the byte ranges read and the SHA-256 of those bytes (see asset-client.ts), so a
 * verifier can fetch the same ranges and recompute. `result` is the answer as served.
 */
import { z } from 'zod';
import { IMAGE_OPERATIONS } from '../../core/imagery-operations.js';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

export const assetReadSchema = z.looseObject({
  band: z.string(),
  href: z.string(),
  sha256: hex64,
  bytes_read: z.number().int().nonnegative(),
  requests: z.number().int().nonnegative(),
  ranges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])),
});

/** Common fields are checked; operation-specific ones (processing_baseline, offset_applied …) ride along. */
export const imageryPayloadSchema = z.looseObject({
  version: z.literal(1),
  operation: z.enum(IMAGE_OPERATIONS),
  h3_cell: z.string(),
  catalog: z.strictObject({ url: z.string(), collection: z.string() }),
  search: z.strictObject({ datetime: z.string(), cloud: z.number().nullable(), limit: z.number().int() }),
  /** The STAC item processed; null for a scene search. */
  item_id: z.string().nullable(),
  item_datetime: z.string().nullable(),
  method: z.enum(['pixels', 'metadata', 'catalog', 'model']),
  assets: z.array(assetReadSchema),
  megapixels: z.number().nonnegative(),
  cost: z.number().nonnegative(),
  /** Set by the `processImage` activity (compound jobs); null for HTTP serves. */
  job_id: z.string().nullable(),
  step_id: z.string().nullable(),
  result: z.record(z.string(), z.unknown()),
});
export type ImageryPayload = z.infer<typeof imageryPayloadSchema>;
