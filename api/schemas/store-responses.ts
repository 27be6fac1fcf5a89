/**
 * Answers of `/store/*` (docs/protocol.md §2.6, §4.1) for the API reference, built on the record and seal schemas the store
 * checks with (core/proof-record.ts, core/seal.ts).
 */
import { z } from 'zod';
import { proofRecordSchema } from '../../core/proof-record.js';
import { sealSchema } from '../../core/seal.js';

/** Per-item outcomes of a signed push (`/store/sync`, `/store/epochs`). */
export const batchVerdictSchema = z.object({
  accepted: z.array(z.string()).describe('Ids stored now'),
  duplicates: z.array(z.string()).describe('Ids already stored identically'),
  rejected: z.array(z.object({ id: z.string(), error: z.string(), detail: z.string() })),
});

/** With any rejection the status is the first rejection's, and the lists are still there. */
export const batchRejectionSchema = batchVerdictSchema.extend({ error: z.string(), detail: z.string() });

export const recordPageSchema = z.object({
  records: z.array(proofRecordSchema),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last one'),
});

const inclusionProofSchema = z.object({
  leaf_index: z.int(),
  tree_size: z.int(),
  hashes: z.array(z.string()).describe('Audit path, hex, leaf level first (RFC 9162)'),
});

export const anchorSchema = z.object({
  tx_hash: z.string(),
  ledger: z.int().nullable(),
  epoch: z.int(),
  root: z.string().describe("The Merkle root written on the ledger; compare with the seal's merkle_root"),
  network_passphrase: z.string().optional(),
});

export const proofBundleSchema = z.object({
  record: proofRecordSchema,
  seal: sealSchema.nullable().describe('Null while the epoch is not sealed'),
  proof: inclusionProofSchema.nullable(),
  verified: z.boolean().describe('Recomputed by the server per call; verify offline with `geofabric proof verify`'),
  pending: z.literal(true).optional().describe('The epoch is not sealed yet'),
  anchor: anchorSchema.nullable().describe("Where the epoch's root was written on the ledger, once submitted"),
  seal_head: z
    .record(z.string(), z.unknown())
    .nullable()
    .optional()
    .describe("A signed head of the sealer's seal log (docs/protocol.md §15.4); null while unsealed"),
  seal_proof: inclusionProofSchema
    .nullable()
    .optional()
    .describe("The seal's inclusion proof in `seal_head` (docs/protocol.md §15.4)"),
});

export const proofPurchaseResponseSchema = proofBundleSchema.extend({
  charge: z.object({ credits: z.number(), entry_ids: z.array(z.string()) }),
});
