import type { Context } from 'koa';
import { z } from 'zod';
import { fail, pass } from '../../core/check.js';
import { fromCreditUnits } from '../../core/credits.js';
import { ERROR_STATUS, ServiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/hash.js';
import { proofPurchaseEntries } from '../../core/ledger-entries.js';
import { anchorView, type AnchorView } from '../../core/anchor-view.js';
import type { KeyPair } from '../../core/identity.js';
import type { ProofBundle } from '../../core/proof-bundle.js';
import type { InclusionProof } from '../../core/proof-types.js';
import { sealHeadsFor, type ReceiptRecord } from '../../core/receipt.js';
import type { SealHead } from '../../core/seal-log.js';
import type { ProofIngest, Verdict } from '../../activities/proof/proof-ingest.js';
import { route, type RouteDocs } from '../route-spec.js';
import { recordIdParams } from '../schemas/param-docs.js';
import { epochsRequestSchema, storeQuerySchema, syncRequestSchema } from '../schemas/store-requests.js';
import {
  batchRejectionSchema,
  batchVerdictSchema,
  proofBundleSchema,
  proofPurchaseResponseSchema,
  recordPageSchema,
} from '../schemas/store-responses.js';
import { zodCheck } from '../schemas/zod-check.js';
import type { LedgerStore } from '../../store/ledger-store.js';
import type { ProofStore } from '../../store/proof-store.js';
import { loadSealLog } from '../../activities/proof/seal-log-keeper.js';

/**
 * A proof purchase (`POST /store/proof/:record_id`, gate 1). `created_at` is required: gate 1 then refuses a
 * copy older than 5 minutes, and within them a replay posts nothing new (its entries' ids come from the signature).
 */
export const proofPurchaseSchema = z.strictObject({
  requester_pk: z.string(),
  signature: z.string(),
  record_id: z.string().min(1).max(512),
  created_at: z.string(),
  nonce: z.string().max(128).optional(),
});
type ProofPurchase = z.infer<typeof proofPurchaseSchema>;

export interface StoreRouteDeps {
  proofs: ProofStore;
  ingest: ProofIngest;
  /** The credit ledger: epoch anchors, and the charges of bought proofs. */
  ledger: LedgerStore;
  /** This node: it seals the proofs it serves, so a bought proof pays it (docs/protocol.md §8 Merkle proof). */
  platformPk: string;
  /** The Stellar network anchors are written to, shown with each anchor so a verifier asks the right one. */
  networkPassphrase?: string | undefined;
  /** This node's key: it signs the head of the sealer's log a proof comes with (docs/protocol.md §15.4). */
  headSigner?: KeyPair | undefined;
}

/**
 * The proof store over HTTP (docs/protocol.md §4.1 `/store/*`): public reads, signed writes. A batch is processed
 * record by record (each is idempotent by id), so the answer lists every item's outcome; when any item
 * was rejected the status is that rejection's (409 `record_conflict` …) and the lists are still there.
 *
 * A proof (`/store/proof/:record_id`) carries `anchor`: where its epoch's Merkle root was written on the
 * external ledger, null until that transaction was submitted. Reading a proof is free; a signed
 * `POST` of the same path buys it (docs/protocol.md §8: 0.0001 credits, charged to the signer, once per signed request).
 */
export const storeRoutes = (deps: StoreRouteDeps) => [
  signedBatchRoute(
    '/store/sync',
    syncRequestSchema,
    (input) =>
      deps.ingest.ingestRecords(input.records, {
        pusher: input.requester_pk,
        ...(input.seals === undefined ? {} : { seals: input.seals }),
      }),
    {
      summary: 'Push proof records (a node or registered worker, signed)',
      description:
        'Each record is re-hashed and its writer signature checked; idempotent by id. Only node keys and registered ' +
        'workers push (a worker only its own records; compute/job records only from node keys), within an hourly ' +
        "bound per key. Records of the open epoch and the one before it; older ones only with their writer's seal " +
        "of that epoch in `seals`. The answer lists every record's outcome; any rejection sets the status (the " +
        "first rejection's) and the lists are still there.",
      errors: [
        'invalid_record',
        'record_conflict',
        'epoch_sealed',
        'seal_required',
        'writer_not_allowed',
        'quota_exceeded',
      ],
    },
  ),
  signedBatchRoute(
    '/store/epochs',
    epochsRequestSchema,
    (input) => deps.ingest.ingestSeals(input.seals, { pusher: input.requester_pk }),
    {
      summary: 'Push epoch seals (a node or registered worker, signed)',
      description:
        'A seal is accepted only over exactly the records held for its epoch (the root is recomputed), chained to ' +
        "the sealer's previous seal, and only once its epoch has ended (409 epoch_open names the end).",
      errors: ['invalid_seal', 'seal_mismatch', 'epoch_open', 'writer_not_allowed', 'quota_exceeded'],
    },
  ),
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
    docs: {
      summary: 'Query proof records',
      description:
        '`cell` matches by H3 containment; epochs inclusive; stable order (epoch, writer, seq); page with `cursor`.',
      tags: ['Proof store'],
      query: storeQuerySchema,
      responses: { 200: { description: 'One page of records', schema: recordPageSchema } },
      errors: ['invalid_request'],
    },
  }),
  route({
    method: 'GET',
    path: '/store/proof/:record_id',
    auth: 'public',
    facets: [],
    preflight: ({ params }) => pass(params.record_id ?? ''),
    handler: async (ctx, recordId) => {
      ctx.body = await anchoredProof(deps, recordId);
    },
    docs: {
      summary: "A record's Merkle proof",
      description:
        'The record, its seal and the RFC 9162 inclusion path, with the epoch anchor once written; `verified` is ' +
        'recomputed per call. Verify offline with `geofabric proof verify`. Free; a signed POST buys it.',
      tags: ['Proof store'],
      params: recordIdParams,
      responses: { 200: { description: 'The proof bundle (`pending` while unsealed)', schema: proofBundleSchema } },
      errors: ['record_not_found'],
    },
  }),
  route<ProofPurchase>({
    method: 'POST',
    path: '/store/proof/:record_id',
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body, params }) => {
      const purchase = zodCheck(proofPurchaseSchema, body);
      if (!purchase.ok) return purchase;
      // The signature covers the body, not the path: the record bought must be the one named in both.
      return purchase.value.record_id === params.record_id
        ? purchase
        : fail('invalid_request', 'record_id: the body names another record than the path');
    },
    handler: async (ctx, purchase) => {
      const bundle = await anchoredProof(deps, purchase.record_id);
      // A pending record has no proof yet: the answer shows that, and nothing is charged for it.
      if (bundle.proof === null) {
        ctx.body = { ...bundle, charge: { credits: 0, entry_ids: [] } };
        return;
      }
      const entries = proofPurchaseEntries({
        requesterPk: purchase.requester_pk,
        platformPk: deps.platformPk,
        recordId: purchase.record_id,
        // The signature names the purchase: a replayed request builds the same entries, which post once.
        requestId: sha256Hex(`geofabric/proof-purchase\n${purchase.signature}`),
        // Entry times come from the signed request, not the clock, so a replay builds identical entries.
        nowMs: Date.parse(purchase.created_at),
      });
      await deps.ledger.post(entries);
      const charged = entries.filter((e) => e.account_pk === purchase.requester_pk && e.amount_units < 0);
      ctx.body = {
        ...bundle,
        charge: {
          credits: fromCreditUnits(-charged.reduce((sum, e) => sum + e.amount_units, 0)),
          entry_ids: entries.map((e) => e.id),
        },
      };
    },
    docs: {
      summary: 'Buy a Merkle proof (signed)',
      description:
        'The same bundle, charged 0.0001 credits (docs/protocol.md §8) to the signer once per signed request; `created_at` is ' +
        'required and the body names the same record as the path. A pending record is not charged.',
      tags: ['Proof store'],
      params: recordIdParams,
      body: proofPurchaseSchema,
      responses: { 200: { description: 'The proof bundle and the charge', schema: proofPurchaseResponseSchema } },
      errors: ['invalid_request', 'record_not_found'],
    },
  }),
];

/** The proof bundle of a record with its epoch's anchor; 404 when there is no such record. */
async function anchoredProof(
  deps: StoreRouteDeps,
  recordId: string,
): Promise<
  ProofBundle & { anchor: AnchorView | null; seal_head?: SealHead | null; seal_proof?: InclusionProof | null }
> {
  const bundle = await deps.ingest.proofOf(recordId);
  if (!bundle) throw new ServiceError('record_not_found', `no record with id ${JSON.stringify(recordId)}`);
  const anchor = bundle.seal ? await deps.ledger.anchor(bundle.seal.sealer_pk, bundle.seal.epoch) : null;
  const anchored = { ...bundle, anchor: anchorView(anchor, deps.networkPassphrase) };
  if (deps.headSigner === undefined) return anchored;
  // The seal's inclusion in a head of its sealer's log, as a receipt carries it (docs/protocol.md §15.4).
  const entry: ReceiptRecord = {
    role: 'job',
    step_id: null,
    record_id: recordId,
    record: bundle.record,
    seal: bundle.seal,
    proof: bundle.proof,
    anchor: null,
  };
  const stored = bundle.seal ? await loadSealLog(deps.proofs, deps.headSigner, bundle.seal.sealer_pk, [entry]) : null;
  const logs = new Map(bundle.seal && stored ? [[bundle.seal.sealer_pk, stored]] : []);
  const [log] = sealHeadsFor([entry], logs, deps.headSigner.secretKey);
  return { ...anchored, seal_head: entry.seal_proof == null ? null : log!.head, seal_proof: entry.seal_proof ?? null };
}

/** A push of records or seals by a node: signed (gate 1), no delegation facet, per-item verdicts. */
function signedBatchRoute<T extends { requester_pk: string }>(
  path: string,
  schema: z.ZodType<T>,
  ingest: (input: T) => Promise<Verdict[]>,
  docs: Pick<RouteDocs, 'summary' | 'description' | 'errors'>,
) {
  return route<T>({
    method: 'POST',
    path,
    auth: 'signed',
    jsonBody: true,
    facets: [],
    preflight: ({ body }) => zodCheck(schema, body),
    handler: async (ctx, input) => respondWithVerdicts(ctx, await ingest(input)),
    docs: {
      ...docs,
      tags: ['Proof store'],
      body: schema,
      responses: {
        200: { description: 'Every item stored or already there', schema: batchVerdictSchema },
        409: { description: 'Some items rejected: the lists and the first rejection', schema: batchRejectionSchema },
      },
      errors: ['invalid_request', ...(docs.errors ?? [])],
    },
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
