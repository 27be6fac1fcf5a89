/**
 * openEO batch jobs (docs/protocol.md §16.11–16.12): create, list, describe, update and delete jobs, start and
 * cancel their processing, their results as a STAC Item whose assets are proof records, their logs, their cost
 * estimate, and their receipt. A job belongs to the API key that created it: another key gets JobNotFound, as for
 * a job that does not exist, so ids reveal nothing. A job's graph passes the same checks and gates as a
 * synchronous request (§16.4, §16.5) when it is created and again when it is updated; it runs on the job engine
 * (api/openeo/batch-runner.ts) under the batch pixel budget.
 */
import { randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import { z } from 'zod';
import type { ImageryActivities } from '../../activities/imagery/index.js';
import { BATCH_MAX_SAMPLES } from '../../activities/imagery/openeo-batch.js';
import { estimateOpenEoGraph } from '../../activities/imagery/openeo-run.js';
import { buildOpenEoReceipt, type OpenEoReceiptSources } from '../../activities/proof/openeo-receipt.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { pass } from '../../core/check.js';
import { sha256Hex } from '../../core/hash.js';
import { ServiceError } from '../../core/errors.js';
import { OpenEoError } from '../../core/openeo/errors.js';
import { extentRecordCell } from '../../core/openeo/extent.js';
import { checkProcessGraph } from '../../core/openeo/graph.js';
import { imageCost } from '../../core/pricing.js';
import type { RequestParts } from '../../core/gates/request-scope.js';
import type { OpenEoJob, OpenEoJobStore } from '../../store/openeo-job-store.js';
import { serviceOrigin } from '../proxy-trust.js';
import type { GateState, RouteSpec } from '../route-spec.js';
import type { OpenEoBatchRunner } from './batch-runner.js';
import { OPENEO_BASE, OPENEO_TAG, openEoRoute } from './discovery.js';
import { REGISTRY, graphExtents, resultCells } from './result.js';
import { authenticationOf, openEoSignature, type OpenEoSignature } from './signed.js';

export interface OpenEoJobDeps {
  jobs: () => OpenEoJobStore;
  runner: () => OpenEoBatchRunner;
  imagery: () => ImageryActivities;
  receipts: () => OpenEoReceiptSources;
  clock: () => number;
}

const jobBodySchema = z.looseObject({
  title: z.string().max(1000).nullable().optional(),
  description: z.string().max(10_000).nullable().optional(),
  process: z.looseObject({
    id: z.string().optional(),
    process_graph: z.record(z.string(), z.unknown()).describe('The process graph (openEO API 1.2.0)'),
  }),
  plan: z.string().nullable().optional(),
  budget: z.number().positive().nullable().optional().describe('The most the job may cost, in credits'),
  log_level: z.string().optional(),
});
const patchBodySchema = jobBodySchema.partial({ process: true });

const jobParams = z.object({ job_id: z.string().describe('The batch job id') });
const linkSchema = z.looseObject({ href: z.string(), rel: z.string() });
const jobSchema = z.looseObject({
  id: z.string(),
  status: z.enum(['created', 'queued', 'running', 'canceled', 'finished', 'error']),
  created: z.string(),
});
const jobsSchema = z.object({ jobs: z.array(jobSchema), links: z.array(linkSchema) });
const itemSchema = z.looseObject({
  stac_version: z.string(),
  type: z.literal('Feature'),
  id: z.string(),
  assets: z.record(z.string(), z.looseObject({ href: z.string() })),
  links: z.array(linkSchema),
});
const logsSchema = z.object({
  level: z.string(),
  logs: z.array(z.looseObject({ id: z.string() })),
  links: z.array(linkSchema),
});
const estimateSchema = z.object({ costs: z.number(), downloads_included: z.null() });

/** Jobs one API key may have queued or running at once: each run holds a share of the gateway's reads and memory. */
export const MAX_ACTIVE_JOBS_PER_KEY = 4;

const JOB_ERRORS = ['AuthenticationRequired', 'AuthenticationSchemeInvalid', 'TokenInvalid', 'JobNotFound'];
const GRAPH_ERRORS = [
  'ProcessGraphMissing',
  'ProcessGraphInvalid',
  'ProcessUnsupported',
  'ProcessParameterRequired',
  'ProcessParameterUnsupported',
  'BudgetInvalid',
];

interface CheckedBody {
  body: Record<string, unknown>;
  graphHash: string | null;
  signed: OpenEoSignature | null;
}

/** A job body's checks (gate 4): the signature when sent, the schema, the process graph (when there is one). */
function checkBody(parts: RequestParts, nowMs: number, partial: boolean) {
  // An update is not signed: it changes part of a request whose signature covered the whole (see PATCH).
  const signed = partial ? pass(null) : openEoSignature(parts, nowMs);
  if (!signed.ok) return signed;
  const parsed = (partial ? patchBodySchema : jobBodySchema).safeParse(parts.body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.path[0] === 'budget') throw new OpenEoError('BudgetInvalid', 'The specified budget is invalid.');
    if (issue?.path[0] === 'process' || !partial) {
      throw new OpenEoError(
        'ProcessGraphMissing',
        `Invalid process specified. It doesn't contain a process graph (${issue?.path.join('.') || 'body'}: ${issue?.message}).`,
      );
    }
    throw new OpenEoError('ProcessParameterInvalid', `${issue?.path.join('.') || 'body'}: ${issue?.message}`);
  }
  const graph = parsed.data.process?.process_graph;
  if (graph !== undefined) checkProcessGraph(graph, REGISTRY);
  return pass<CheckedBody>({
    body: parts.body as Record<string, unknown>,
    graphHash: graph === undefined ? null : sha256Hex(canonicalJson(graph)),
    signed: signed.value,
  });
}

const jobNotFound = (id: string) =>
  new OpenEoError('JobNotFound', `The batch job '${id.slice(0, 64)}' does not exist.`);

/** The job of the path, if the caller's key owns it; JobNotFound otherwise (whether it exists or not). */
async function ownJob(deps: OpenEoJobDeps, id: string, gates: GateState): Promise<OpenEoJob> {
  const job = /^[\w\-.~]{1,64}$/.test(id) ? await deps.jobs().get(id) : null;
  if (job === null || job.owner !== gates.apiKey?.id) throw jobNotFound(id);
  return job;
}

const jobUrl = (ctx: Context, id: string, tail = '') =>
  `${serviceOrigin(ctx)}${OPENEO_BASE}/jobs/${encodeURIComponent(id)}${tail}`;

/** openEO's batch job metadata (`GET /jobs/{job_id}`; without `process` in the list). */
function describe(job: OpenEoJob, full: boolean) {
  return {
    id: job.id,
    title: job.title,
    description: job.description,
    ...(full ? { process: job.request.process } : {}),
    status: job.status,
    ...(job.status === 'finished' ? { progress: 100 } : {}),
    created: job.created,
    updated: job.updated,
    ...(job.plan === null ? {} : { plan: job.plan }),
    costs: job.costs,
    budget: job.budget,
  };
}

/** The box's polygon, for the results Item's geometry. */
const boxPolygon = ([w, s, e, n]: number[]) => ({
  type: 'Polygon',
  coordinates: [
    [
      [w, s],
      [e, s],
      [e, n],
      [w, n],
      [w, s],
    ],
  ],
});

const jobRoute = <Input>(spec: Omit<RouteSpec<Input>, 'errorStyle' | 'auth'>) =>
  openEoRoute<Input>({ auth: 'openeo', ...spec });

const byPath = ({ params }: RequestParts) => pass(params.job_id ?? '');

export function jobRoutes(deps: OpenEoJobDeps): RouteSpec<unknown>[] {
  const now = () => new Date(deps.clock()).toISOString();
  /** Saves a change to a job; JobLocked-free retries are the caller's: a lost race answers as the store now is. */
  async function change(job: OpenEoJob, next: (job: OpenEoJob) => OpenEoJob | null): Promise<OpenEoJob> {
    let current: OpenEoJob | null = job;
    for (let attempt = 0; attempt < 8 && current !== null; attempt++) {
      const wanted = next(current);
      if (wanted === null) return current;
      const saved = await deps.jobs().save({ ...wanted, updated: now() });
      if (saved !== null) return saved;
      current = await deps.jobs().get(job.id);
    }
    if (current === null) throw jobNotFound(job.id);
    throw new OpenEoError('Internal', 'The job kept changing; try again.', 500);
  }

  return [
    jobRoute<CheckedBody>({
      method: 'POST',
      path: `${OPENEO_BASE}/jobs`,
      jsonBody: true,
      cells: resultCells,
      preflight: (parts) => checkBody(parts, deps.clock(), false),
      handler: async (ctx, input, gates) => {
        const body = jobBodySchema.parse(input.body);
        const id = `j-${randomUUID()}`;
        const [box] = graphExtents(input.body);
        const created = now();
        const job: OpenEoJob = {
          id,
          owner: gates.apiKey!.id,
          request: input.body,
          authenticated_by: { ...authenticationOf(gates, input.signed), api_key_id: gates.apiKey!.id },
          process_graph_sha256: input.graphHash!,
          title: body.title ?? null,
          description: body.description ?? null,
          plan: body.plan ?? null,
          budget: body.budget ?? null,
          status: 'created',
          created,
          updated: created,
          run: 0,
          h3_cell: box ? extentRecordCell(box) : gates.place!.jobCell,
          bbox: box ?? null,
          costs: null,
          assets: [],
          logs: [],
          version: 1,
        };
        await deps.jobs().create(job);
        ctx.status = 201;
        ctx.set({ location: jobUrl(ctx, id), 'openeo-identifier': id });
      },
      docs: {
        summary: 'openEO: create a batch job',
        description:
          'Stores the process graph (checked as for `POST /result`) as a job of the API key, status `created`. ' +
          'A body signed with an Ed25519 key (`X-Idn-Signature`, `requester_pk` and `signature` in the body) ' +
          'has its signature carried into the results’ proof records and the job’s receipt.',
        tags: [OPENEO_TAG],
        body: jobBodySchema,
        responses: {
          201: {
            description: 'Created',
            headers: { Location: 'The job’s URL', 'OpenEO-Identifier': 'The job id' },
          },
        },
        openEoErrors: [...GRAPH_ERRORS, 'AuthenticationRequired', 'AuthenticationSchemeInvalid', 'TokenInvalid'],
      },
    }),
    jobRoute<undefined>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs`,
      facets: [],
      preflight: () => pass(undefined),
      handler: async (ctx, _input, gates) => {
        const jobs = await deps.jobs().list(gates.apiKey!.id, 100);
        ctx.body = { jobs: jobs.map((job) => describe(job, false)), links: [] };
      },
      docs: {
        summary: 'openEO: the batch jobs of the API key',
        description: 'Newest first, at most 100.',
        tags: [OPENEO_TAG],
        responses: { 200: { description: 'The jobs', schema: jobsSchema } },
        openEoErrors: ['AuthenticationRequired', 'AuthenticationSchemeInvalid', 'TokenInvalid'],
      },
    }),
    jobRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        ctx.body = describe(await ownJob(deps, id, gates), true);
      },
      docs: {
        summary: 'openEO: a batch job',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 200: { description: 'The job', schema: jobSchema } },
        openEoErrors: JOB_ERRORS,
      },
    }),
    jobRoute<CheckedBody & { id: string }>({
      method: 'PATCH',
      path: `${OPENEO_BASE}/jobs/:job_id`,
      jsonBody: true,
      cells: resultCells,
      preflight: (parts) => {
        const checked = checkBody(parts, deps.clock(), true);
        return checked.ok ? pass({ ...checked.value, id: parts.params.job_id ?? '' }) : checked;
      },
      handler: async (ctx, input, gates) => {
        const body = patchBodySchema.parse(input.body);
        const fields = Object.keys(body).filter((k) => k !== 'requester_pk' && k !== 'signature');
        if (fields.length === 0) throw new OpenEoError('NoDataForUpdate', 'No data specified to be updated.');
        const job = await ownJob(deps, input.id, gates);
        await change(job, (current) => {
          if (current.status === 'queued' || current.status === 'running') {
            throw new OpenEoError('JobLocked', 'Batch job is locked due to a queued or running batch computation.');
          }
          // The signature of the created job covered its whole body: an update leaves it unsigned, by its key.
          const request = withoutSignature({ ...current.request, ...input.body });
          const [box] = graphExtents(request);
          return {
            ...current,
            request,
            authenticated_by: { api_key_id: gates.apiKey!.id },
            process_graph_sha256: input.graphHash ?? current.process_graph_sha256,
            ...(box ? { h3_cell: extentRecordCell(box), bbox: box } : {}),
            ...('title' in body ? { title: body.title ?? null } : {}),
            ...('description' in body ? { description: body.description ?? null } : {}),
            ...('plan' in body ? { plan: body.plan ?? null } : {}),
            ...('budget' in body ? { budget: body.budget ?? null } : {}),
          };
        });
        ctx.status = 204;
      },
      docs: {
        summary: 'openEO: update a batch job',
        description:
          'Title, description, process, plan or budget; not while queued or running (JobLocked). The next start ' +
          'runs the updated job; its earlier results stay until then.',
        tags: [OPENEO_TAG],
        params: jobParams,
        body: patchBodySchema,
        responses: { 204: { description: 'Updated' } },
        openEoErrors: [...JOB_ERRORS, ...GRAPH_ERRORS, 'JobLocked', 'NoDataForUpdate'],
      },
    }),
    jobRoute<string>({
      method: 'DELETE',
      path: `${OPENEO_BASE}/jobs/:job_id`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        if (job.status === 'queued' || job.status === 'running') {
          await deps.runner().cancel({ job_id: job.id, run: job.run, h3_cell: job.h3_cell });
        }
        await deps.jobs().delete(job.id);
        ctx.status = 204;
      },
      docs: {
        summary: 'openEO: delete a batch job',
        description: 'Cancels its processing and deletes it and its result files; its proof records stay.',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 204: { description: 'Deleted' } },
        openEoErrors: JOB_ERRORS,
      },
    }),
    jobRoute<string>({
      method: 'POST',
      path: `${OPENEO_BASE}/jobs/:job_id/results`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        const active = (await deps.jobs().list(job.owner, 100)).filter(
          (other) => other.id !== job.id && (other.status === 'queued' || other.status === 'running'),
        );
        if (active.length >= MAX_ACTIVE_JOBS_PER_KEY && job.status !== 'queued' && job.status !== 'running') {
          throw new ServiceError(
            'rate_limit',
            `${active.length} jobs of this key are queued or running, the most at once; start this one when one ends.`,
          );
        }
        let queued = false;
        const started = await change(job, (current) => {
          queued = current.status !== 'queued' && current.status !== 'running';
          return !queued
            ? null
            : {
                ...current,
                status: 'queued',
                run: current.run + 1,
                costs: null,
                assets: [],
                logs: [
                  ...current.logs,
                  {
                    id: String(current.logs.length + 1),
                    level: 'info',
                    message: `run ${current.run + 1} queued`,
                    time: now(),
                  },
                ],
              };
        });
        if (queued) {
          await deps.runner().start({ job_id: started.id, run: started.run, h3_cell: started.h3_cell });
        }
        ctx.status = 202;
      },
      docs: {
        summary: 'openEO: start a batch job',
        description:
          'Queues the job and starts its run on the job engine (one `openEoBatchJob` workflow per start under ' +
          'Temporal). A job already queued or running is left as it is. A finished job runs again. At most ' +
          `${MAX_ACTIVE_JOBS_PER_KEY} jobs of a key are queued or running at once (429 \`rate_limit\` beyond).`,
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 202: { description: 'Queued' } },
        errors: ['rate_limit'],
        openEoErrors: JOB_ERRORS,
      },
    }),
    jobRoute<string>({
      method: 'DELETE',
      path: `${OPENEO_BASE}/jobs/:job_id/results`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        let canceled = false;
        const stored = await change(job, (current) => {
          canceled = current.status === 'queued' || current.status === 'running';
          return canceled
            ? {
                ...current,
                status: 'canceled',
                logs: [
                  ...current.logs,
                  { id: String(current.logs.length + 1), level: 'info', message: 'canceled', time: now() },
                ],
              }
            : null;
        });
        if (canceled) await deps.runner().cancel({ job_id: stored.id, run: stored.run, h3_cell: stored.h3_cell });
        ctx.status = 204;
      },
      docs: {
        summary: 'openEO: cancel a batch job',
        description: 'A queued or running job becomes `canceled`; its run’s result, if it comes, is discarded.',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 204: { description: 'Canceled' } },
        openEoErrors: JOB_ERRORS,
      },
    }),
    jobRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id/results`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        if (job.status !== 'finished') {
          throw new OpenEoError(
            'JobNotFinished',
            `Batch job has not finished computing the results yet (status ${job.status}).`,
          );
        }
        const origin = serviceOrigin(ctx);
        ctx.set('openeo-costs', String(job.costs ?? 0));
        ctx.body = {
          stac_version: '1.0.0',
          stac_extensions: [],
          type: 'Feature',
          id: job.id,
          geometry: job.bbox ? boxPolygon(job.bbox) : null,
          ...(job.bbox ? { bbox: job.bbox } : {}),
          properties: {
            datetime: job.updated,
            created: job.created,
            updated: job.updated,
            title: job.title,
            description: job.description,
            'openeo:status': 'finished',
            'geofabric:costs': job.costs,
            'geofabric:process_graph_sha256': job.process_graph_sha256,
          },
          assets: Object.fromEntries(
            job.assets.map((asset) => [
              asset.name,
              {
                href: jobUrl(ctx, job.id, `/results/assets/${encodeURIComponent(asset.name)}`),
                type: asset.media_type,
                roles: ['data'],
                title: `${asset.format} result`,
                'file:size': asset.bytes,
                'geofabric:sha256': asset.sha256,
                'geofabric:record_id': asset.record_id,
                'geofabric:proof': `${origin}/store/proof/${encodeURIComponent(asset.record_id)}`,
              },
            ]),
          ),
          links: [
            { rel: 'self', href: jobUrl(ctx, job.id, '/results'), type: 'application/json' },
            ...job.assets.map((asset) => ({
              rel: 'proof',
              href: `${origin}/store/proof/${encodeURIComponent(asset.record_id)}`,
              type: 'application/json',
              title: `The proof record of ${asset.name}`,
            })),
            {
              rel: 'receipt',
              href: jobUrl(ctx, job.id, '/receipt'),
              type: 'application/json',
              title: 'The job’s receipt (geofabric receipt verify)',
            },
          ],
        };
      },
      docs: {
        summary: 'openEO: a batch job’s results (STAC Item)',
        description:
          'A STAC Item: each asset a result file with its SHA-256 and the id and link of its proof record; links ' +
          'to each proof record (`rel: proof`) and to the job’s receipt (`rel: receipt`).',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: {
          200: { description: 'The results', schema: itemSchema, headers: { 'OpenEO-Costs': 'The job’s cost' } },
        },
        openEoErrors: [...JOB_ERRORS, 'JobNotFinished'],
      },
    }),
    jobRoute<{ id: string; name: string }>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id/results/assets/:name`,
      facets: [],
      preflight: ({ params }) => pass({ id: params.job_id ?? '', name: params.name ?? '' }),
      handler: async (ctx, { id, name }, gates) => {
        const job = await ownJob(deps, id, gates);
        const asset = job.status === 'finished' ? job.assets.find((a) => a.name === name) : undefined;
        const bytes = asset ? await deps.jobs().getAsset(job.id, asset.name) : null;
        if (!asset || bytes === null) throw new OpenEoError('NotFound', `No result file '${name.slice(0, 64)}'.`);
        ctx.set({ 'x-svc-record': asset.record_id, 'x-svc-proof': asset.sha256 });
        ctx.type = asset.media_type;
        ctx.body = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      docs: {
        summary: 'openEO: a batch job’s result file',
        tags: [OPENEO_TAG],
        params: jobParams.extend({ name: z.string().describe('The asset name') }),
        responses: {
          200: {
            description: 'The file',
            contentTypes: ['image/tiff; application=geotiff', 'image/png', 'application/json'],
            headers: { 'x-svc-record': 'Its proof record', 'x-svc-proof': 'SHA-256 (hex) of the file' },
          },
        },
        openEoErrors: [...JOB_ERRORS, 'NotFound'],
      },
    }),
    jobRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id/logs`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        const offset = typeof ctx.query.offset === 'string' ? ctx.query.offset : undefined;
        const from = offset === undefined ? 0 : job.logs.findIndex((entry) => entry.id === offset) + 1;
        ctx.body = { level: 'info', logs: job.logs.slice(from), links: [] };
      },
      docs: {
        summary: 'openEO: a batch job’s logs',
        description: 'Its starts, its result (bytes, credits, record id) or the error that ended it.',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 200: { description: 'The logs', schema: logsSchema } },
        openEoErrors: JOB_ERRORS,
      },
    }),
    jobRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id/estimate`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        const graph = checkProcessGraph(
          (job.request.process as { process_graph: Record<string, unknown> }).process_graph,
          REGISTRY,
        );
        const samples = await estimateOpenEoGraph({ imagery: deps.imagery(), registry: REGISTRY }, graph);
        if (samples > BATCH_MAX_SAMPLES) {
          throw new OpenEoError(
            'ProcessGraphComplexity',
            `The job would load about ${samples.toLocaleString('en')} values, above the ` +
              `${BATCH_MAX_SAMPLES.toLocaleString('en')} a batch job may load.`,
          );
        }
        ctx.body = { costs: imageCost(samples / 1e6), downloads_included: null };
      },
      docs: {
        summary: 'openEO: a batch job’s estimated cost',
        description:
          'In credits: the imagery price of the values its first `load_collection` would load, from its extent, ' +
          'bands and the scenes the catalog finds (the catalog is asked; no pixel is read).',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 200: { description: 'The estimate', schema: estimateSchema } },
        openEoErrors: [...JOB_ERRORS, 'ProcessGraphComplexity', 'NoDataAvailable', 'CollectionNotFound'],
      },
    }),
    jobRoute<string>({
      method: 'GET',
      path: `${OPENEO_BASE}/jobs/:job_id/receipt`,
      facets: [],
      preflight: byPath,
      handler: async (ctx, id, gates) => {
        const job = await ownJob(deps, id, gates);
        ctx.body = await buildOpenEoReceipt(deps.receipts(), job);
      },
      docs: {
        summary: 'openEO: a batch job’s receipt',
        description:
          'The request as sent and who authenticated (or signed) it, the finished job’s assets, each asset’s ' +
          'proof record with its seal, audit path and anchor, and the seal chains (docs/protocol.md §16.12): ' +
          'check it offline with `geofabric receipt verify`. `status` is `pending` until every record is sealed.',
        tags: [OPENEO_TAG],
        params: jobParams,
        responses: { 200: { description: 'The receipt' } },
        openEoErrors: JOB_ERRORS,
      },
    }),
  ];
}

/** The request without a signature that no longer covers it. */
function withoutSignature(request: Record<string, unknown>): Record<string, unknown> {
  const { signature: _signature, requester_pk: _pk, ...rest } = request;
  return rest;
}
