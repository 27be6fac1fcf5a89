import { z } from 'zod';
import { pass } from '../../core/check.js';
import { ServiceError } from '../../core/errors.js';
import { buildJobReceipt, type ReceiptSources } from '../../activities/proof/job-receipt.js';
import { route } from '../route-spec.js';
import { noJobDetail } from './compute.js';
import { jobIdParams } from '../schemas/param-docs.js';

const receiptSchema = z.looseObject({
  receipt_version: z.union([z.literal(1), z.literal(2)]),
  status: z.enum(['complete', 'pending']),
  job_id: z.string(),
  pending: z.array(z.string()),
  request: z.looseObject({
    body: z.record(z.string(), z.unknown()),
    delegation_chain: z.array(z.unknown()).nullable(),
  }),
  job: z.record(z.string(), z.unknown()).nullable(),
  records: z.array(z.record(z.string(), z.unknown())),
  // Version 1: every seal since each sealer's first; version 2: a signed head per sealer (docs/protocol.md §15.4).
  seal_chains: z.array(z.looseObject({ sealer_pk: z.string(), seals: z.array(z.unknown()) })).optional(),
  seal_heads: z
    .array(z.looseObject({ head: z.record(z.string(), z.unknown()), anchored: z.unknown().nullable() }))
    .optional(),
});

/**
 * `GET /v1/compute/:jobId/receipt` (docs/protocol.md §15): everything a verifier needs to check the job offline
 * in one document. Public like the job itself (its id is the capability). `status: "pending"` until every
 * record the job names is in the store and sealed: fetch it again later.
 */
export const receiptRoutes = (sources: ReceiptSources) => [
  route<string>({
    method: 'GET',
    path: '/v1/compute/:jobId/receipt',
    auth: 'public',
    facets: [],
    preflight: ({ params }) => pass(params.jobId ?? ''),
    handler: async (ctx, jobId) => {
      const shown = JSON.stringify(jobId.slice(0, 64));
      const found = /^[0-9a-f-]{36}$/.test(jobId) ? await buildJobReceipt(sources, jobId) : null;
      if (found === null || (!found.found && found.reason === 'no_job')) {
        throw new ServiceError('job_not_found', noJobDetail(jobId));
      }
      if (!found.found) {
        throw new ServiceError('receipt_unavailable', `job ${shown} was stored without its signed request`);
      }
      ctx.body = found.receipt;
    },
    docs: {
      summary: "A job's receipt",
      description:
        'The signed request, its delegation chain, the job answer, the `compute/job` record and every step record ' +
        "with inclusion proofs, seals, anchors and a signed head of each sealer's seal log: check it offline with " +
        '`geofabric receipt verify`. `status` is `pending` until every record is sealed. A job is kept ' +
        'JOB_RETENTION_DAYS after its last write, then 404 `job_not_found`.',
      tags: ['Compute'],
      params: jobIdParams,
      responses: { 200: { description: 'The receipt (docs/protocol.md §15)', schema: receiptSchema } },
      errors: ['job_not_found', 'receipt_unavailable'],
    },
  }),
];
