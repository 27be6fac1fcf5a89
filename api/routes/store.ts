import type { Context } from 'koa';
import type { z } from 'zod';
import { pass } from '../../core/check.js';
import { ERROR_STATUS, ServiceError } from '../../core/errors.js';
import type { ProofIngest, Verdict } from '../../activities/proof/proof-ingest.js';
import { route } from '../route-spec.js';
import { epochsRequestSchema, storeQuerySchema, syncRequestSchema } from '../schemas/store-requests.js';
import { zodCheck } from '../schemas/zod-check.js';
import type { ProofStore } from '../../store/proof-store.js';

/**
 * The proof store over HTTP (SPEC 4.1 `/store/*`): public reads, signed writes. A batch is processed
 * record by record (each is idempotent by id), so the answer lists every item's outcome; when any item
 * was rejected the status is that rejection's (409 `record_conflict` …) and the lists are still there.
 */
export const storeRoutes = (deps: { proofs: ProofStore; ingest: ProofIngest }) => [
  signedBatchRoute('/store/sync', syncRequestSchema, (input) => deps.ingest.ingestRecords(input.records)),
  signedBatchRoute('/store/epochs', epochsRequestSchema, (input) => deps.ingest.ingestSeals(input.seals)),
  route({
    method: 'GET',
    path: '/store/query',
    auth: 'public',
    facets: [],
    preflight: ({ query }) => zodCheck(storeQuerySchema, query, 'query'),
    handler: async (ctx, q) => {
      if (q.epoch_start !== undefined && q.epoch_end !== undefined && q.epoch_start > q.epoch_end) {
        throw new ServiceError('invalid_request', 'epoch_start is after epoch_end');
      }
      const page = await deps.proofs.queryRecords({
        limit: q.limit,
        ...(q.cell === undefined ? {} : { cell: q.cell }),
        ...(q.epoch_start === undefined ? {} : { epochStart: q.epoch_start }),
        ...(q.epoch_end === undefined ? {} : { epochEnd: q.epoch_end }),
        ...(q.collection === undefined ? {} : { collection: q.collection }),
        ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
      });
      ctx.body = { records: page.records, next_cursor: page.nextCursor };
    },
  }),
  route({
    method: 'GET',
    path: '/store/proof/:record_id',
    auth: 'public',
    facets: [],
    preflight: ({ params }) => pass(params.record_id ?? ''),
    handler: async (ctx, recordId) => {
      const bundle = await deps.ingest.proofOf(recordId);
      if (!bundle) throw new ServiceError('record_not_found', `no record with id ${JSON.stringify(recordId)}`);
      ctx.body = bundle;
    },
  }),
];

/** A push of records or seals by a node: signed (gate 1), no delegation facet, per-item verdicts. */
function signedBatchRoute<T>(path: string, schema: z.ZodType<T>, ingest: (input: T) => Promise<Verdict[]>) {
  return route<T>({
    method: 'POST',
    path,
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => zodCheck(schema, body),
    handler: async (ctx, input) => respondWithVerdicts(ctx, await ingest(input)),
  });
}

function respondWithVerdicts(ctx: Context, verdicts: Verdict[]): void {
  const accepted: string[] = [];
  const duplicates: string[] = [];
  const rejected: { id: string; error: string; detail: string }[] = [];
  for (const v of verdicts) {
    if (v.status === 'rejected') rejected.push({ id: v.id, error: v.error, detail: v.detail });
    else if (v.status === 'inserted') accepted.push(v.id);
    else duplicates.push(v.id);
  }
  const first = verdicts.find((v) => v.status === 'rejected');
  if (first?.status === 'rejected') {
    ctx.status = ERROR_STATUS[first.error];
    ctx.body = {
      error: first.error,
      detail: `${rejected.length} of ${verdicts.length} rejected`,
      accepted,
      duplicates,
      rejected,
    };
  } else {
    ctx.body = { accepted, duplicates, rejected };
  }
}
