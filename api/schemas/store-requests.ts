import { z } from 'zod';
import { COLLECTION_PAYLOAD_TYPES, type CollectionType } from '../../core/proof-types.js';

/** Largest batch a node may push at once; the sync agent sends smaller ones (and the body limit applies). */
export const MAX_SYNC_BATCH = 1000;
export const DEFAULT_QUERY_LIMIT = 100;
export const MAX_QUERY_LIMIT = 1000;

/** The fields of a signed push: gate 1 authenticates the pushing node; each item carries its writer's signature. */
const signedPush = {
  requester_pk: z.string(),
  signature: z.string(),
  created_at: z.string().optional(),
  nonce: z.string().max(128).optional(),
};
const batch = z.array(z.unknown()).min(1).max(MAX_SYNC_BATCH);

/** `seals`: the pusher's seals of the epochs of records older than the sync window (core/sync-window.ts). */
export const syncRequestSchema = z.strictObject({
  ...signedPush,
  records: batch,
  seals: z.array(z.unknown()).max(MAX_SYNC_BATCH).optional(),
});
export const epochsRequestSchema = z.strictObject({ ...signedPush, seals: batch });

const epochParam = z.coerce.number().int().min(0);

export const storeQuerySchema = z.strictObject({
  cell: z.string().optional(),
  epoch_start: epochParam.optional(),
  epoch_end: epochParam.optional(),
  collection: z.enum(Object.keys(COLLECTION_PAYLOAD_TYPES) as [CollectionType, ...CollectionType[]]).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_QUERY_LIMIT).default(DEFAULT_QUERY_LIMIT),
  cursor: z.string().max(512).optional(),
});
