/**
 * Compound jobs end to end over HTTP, embedded runner (docs/protocol.md §2.1–2.3, 4.1 note 4, 7, 8):
 * POST /v1/compute against local fake upstreams speaking the real protocols (an OpenAI-compatible runtime
 * as backbone or local worker, a STAC API with COGs, an XYZ tile server). Each test starts its own gateway.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TileConfig } from '../../activities/tiles/index.js';
import { LOCATIONS_INSTRUCTION } from '../../activities/inference/locations.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { DEFAULT_EPOCH_GENESIS_MS, epochAt } from '../../core/epoch.js';
import { signRequestBody } from '../../core/gates/signature.js';
import { generateKeyPair } from '../../core/identity.js';
import { jobIdFromSignature } from '../../core/job-hash.js';
import { verifyProofBundle } from '../../core/proof-bundle.js';
import type { ProofRecord } from '../../core/proof-types.js';
import { TILE_STYLES } from '../../core/tile-styles.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import { ROME_CELL } from '../helpers/cog-fixture.js';
import {
  startFakeRuntime,
  type FakeReply,
  type FakeRequest,
  type FakeRuntime,
} from '../helpers/fake-openai-runtime.js';
import { createEmbeddedJobRunner } from '../../api/job-runner.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { TEST_NOW, startImageryCatalog, type ImageryCatalog } from '../helpers/imagery-fixtures.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';
import { sealThrough } from '../helpers/proofs.js';
import { startXyzServer, type XyzServer } from '../helpers/xyz-server.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type GatewayOptions = NonNullable<Parameters<typeof startGateway>[0]>;

interface StepResult {
  id: string;
  type: string;
  status: 'complete' | 'failed' | 'skipped';
  output: Record<string, unknown>;
  latency_ms: number;
  worker_pk: string | null;
  cost: number;
  record_id: string | null;
  error?: { code: string; detail: string };
}
interface Job {
  job_id: string;
  status: 'complete' | 'failed';
  worker_pk: string | null;
  h3_cell: string;
  epoch: number;
  steps: StepResult[];
  settlement: {
    stellar_tx: string | null;
    total_credits: number;
    breakdown: Record<string, number>;
    proof_credits: number;
  };
  proof: { job_hash: string; verify_url: string; record_id: string };
  error?: { code: string; detail: string; step_id: string | null };
}
interface FailedBody {
  error: string;
  detail: string;
  job_id: string;
  step_id: string | null;
  job: Job;
}
interface InferenceOutput {
  text: string;
  locations: { name: string; address: string }[];
  model: string;
  provider: string;
  tokens_in: number;
  tokens_out: number;
  latency_ms: number;
  proof_job_id: string;
}

const BACKBONE_MODEL = 'llama-3.3-70b-versatile';
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const CELL = '861e8050fffffff';
const alice = generateKeyPair();
const OPERATOR = 'operator-token-for-tests';

// Independent arithmetic: SHA-256 and JCS straight, credits in integer units of 1e-8 (docs/protocol.md §8 prices).
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const units = (credits: number) => Math.round(credits * 1e8);
const credits = (...amounts: number[]) => amounts.reduce((sum, c) => sum + units(c), 0) / 1e8;
const WORKER_PER_TOKEN = 0.00001;
const TILE_MISS = 0.0001;
const PROOF = 0.0001;
const PER_MEGAPIXEL = 0.001;

/** docs/protocol.md §2.3 `job_id`: UUIDv8 from the first 122 bits of SHA-256("geofabric/job\n" + signature). */
function expectedJobId(signature: string): string {
  const h = sha256(`geofabric/job\n${signature}`);
  const variant = ((parseInt(h[16]!, 16) & 3) | 8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** core/job-hash.ts's documented rule, recomputed from the signed body and the answered outputs. */
function expectedJobHash(signedBody: unknown, steps: readonly StepResult[]): string {
  const outputs = steps.map((s) => ({
    id: s.id,
    status: s.status,
    output_hash: s.status === 'complete' ? sha256(canonicalJson(s.output)) : null,
  }));
  return sha256(canonicalJson({ request_hash: sha256(canonicalJson(signedBody)), outputs }));
}

const isLatency = (value: unknown) => Number.isSafeInteger(value) && (value as number) >= 0;
const errorOf = (res: TestResponse) => (res.body as { error: string }).error;
const failed = (res: TestResponse) => res.body as FailedBody;
const waitFor = async (what: string, check: () => Promise<boolean>, ms = 3000) => {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

/** The system message carrying a dependency's output (core/job-steps.ts), if any. */
const contextOf = (request: FakeRequest) =>
  (request.body.messages as { role: string; content: string }[]).find(
    (m) => m.role === 'system' && m.content.startsWith(`Output of the job's step`),
  );

describe('compound jobs over HTTP (embedded runner, fake upstreams)', function () {
  this.timeout(10_000);
  let now = TEST_NOW + 60_000;
  const gateways: Gateway[] = [];
  const runtimes: FakeRuntime[] = [];
  let catalog: ImageryCatalog;
  let xyz: XyzServer;

  before(async () => {
    catalog = await startImageryCatalog();
    catalog.stac.items = [catalog.item('S2A_rome', 10, catalog.romeAssets())];
    xyz = await startXyzServer();
  });
  after(async () => {
    await catalog.stac.close();
    await xyz.close();
  });
  beforeEach(() => {
    now = TEST_NOW + 60_000;
    xyz.failWith = null;
  });
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });

  async function runtime(name: string, reply?: (request: FakeRequest) => FakeReply): Promise<FakeRuntime> {
    const started = await startFakeRuntime(name, reply);
    runtimes.push(started);
    return started;
  }

  /** A gateway on the test clock with the STAC catalog and the XYZ server as its upstreams. */
  async function gateway(options: { backbone?: FakeRuntime; worker?: FakeRuntime } & GatewayOptions = {}) {
    const { backbone, worker, ...rest } = options;
    const gw = await startGateway({
      clock: () => now,
      imagery: { stacUrl: catalog.stac.url },
      tiles: {
        templates: Object.fromEntries(TILE_STYLES.map((s) => [s, xyz.template('png')])) as TileConfig['templates'],
        timeoutMs: 1000,
      },
      swarm: {
        ...(backbone ? { backboneUrl: backbone.url } : {}),
        ...(worker ? { workerRuntimeUrl: worker.url, workerModels: [WORKER_MODEL] } : {}),
      },
      ...rest,
    });
    gateways.push(gw);
    return gw;
  }

  const submit = (gw: Gateway, signed: ReturnType<typeof signJob>) =>
    gw.post('/v1/compute', signed.body, signed.headers);

  /** The satellite → AI → map chain of docs/protocol.md §4.1 note 4. */
  const chainJob = (extra: Record<string, unknown> = {}) => ({
    h3_cell: CELL,
    steps: [
      {
        id: 'ndvi',
        type: 'image_process',
        operation: 'ndvi',
        context: { h3_cell: ROME_CELL, date_from: '2026-02-01', date_to: '2026-02-28' },
      },
      {
        id: 'explain',
        type: 'inference',
        depends_on: 'ndvi',
        messages: [{ role: 'user', content: 'where is it green?' }],
      },
      { id: 'map', type: 'tile_render', depends_on: 'explain', zoom: 12, style: 'osm-bright' },
    ],
    budget_credits: 0.1,
    ...extra,
  });
  const LOCATED = {
    text: 'Villa Borghese is the greenest part of the cell.',
    locations: [
      { name: 'Villa Borghese', address: 'Piazzale Napoleone I, Roma' },
      { name: 'Circo Massimo', address: '' },
    ],
  };
  const locatedReply = (): FakeReply => ({
    content: `Sure: ${JSON.stringify(LOCATED)}`,
    usage: { prompt_tokens: 200, completion_tokens: 40 },
  });

  describe('the inference-only job (docs/protocol.md §4.1 note 4)', () => {
    it('on the backbone: every field of docs/protocol.md §2.3, job_hash recomputed, backbone tokens free, total = proof', async () => {
      const backbone = await runtime('backbone', () => ({
        content: 'Villa Borghese, Villa Ada and Villa Pamphili.',
        usage: { prompt_tokens: 31, completion_tokens: 9 },
      }));
      const gw = await gateway({ backbone });
      const signed = signJob(alice, inferenceJob('three parks in Rome'));
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text);
      const job = res.body as Job;
      const jobId = expectedJobId(signed.headers['x-idn-signature']);
      assert.equal(jobId, jobIdFromSignature(signed.body.signature as string));
      assert.match(job.job_id, /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

      const step = job.steps[0]!;
      const output = step.output as unknown as InferenceOutput;
      assert.ok(isLatency(step.latency_ms) && isLatency(output.latency_ms), JSON.stringify(step));
      const recordId = `compute:${jobId}`;
      assert.deepEqual(job, {
        job_id: jobId,
        status: 'complete',
        worker_pk: 'backbone',
        h3_cell: CELL,
        epoch: epochAt(now, DEFAULT_EPOCH_GENESIS_MS),
        steps: [
          {
            id: 'ask',
            type: 'inference',
            status: 'complete',
            output: {
              text: 'Villa Borghese, Villa Ada and Villa Pamphili.',
              locations: [],
              model: BACKBONE_MODEL,
              provider: 'backbone',
              tokens_in: 31,
              tokens_out: 9,
              latency_ms: output.latency_ms,
              proof_job_id: `inference:${jobId}:ask`,
            },
            latency_ms: step.latency_ms,
            worker_pk: 'backbone',
            cost: 0,
            record_id: `inference:${jobId}:ask`,
          },
        ],
        settlement: { stellar_tx: null, total_credits: PROOF, breakdown: { ask: 0 }, proof_credits: PROOF },
        proof: {
          job_hash: expectedJobHash(signed.body, job.steps),
          verify_url: `${gw.url}/store/proof/${encodeURIComponent(recordId)}`,
          record_id: recordId,
        },
      });
      // The backbone saw the request's messages under its own model, once.
      assert.equal(backbone.chats().length, 1);
      assert.equal(backbone.chats()[0]!.body.model, BACKBONE_MODEL);
      assert.deepEqual(backbone.chats()[0]!.body.messages, [{ role: 'user', content: 'three parks in Rome' }]);
    });

    it('on the local worker: worker_pk is the node key, cost = (tokens_in + tokens_out) × 0.00001 + proof', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({
        content: 'Villa Borghese.',
        usage: { prompt_tokens: 120, completion_tokens: 30 },
      }));
      const gw = await gateway({ worker });
      const signed = signJob(alice, inferenceJob('one park in Rome'));
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text);
      const job = res.body as Job;
      const jobId = expectedJobId(signed.headers['x-idn-signature']);
      const step = job.steps[0]!;
      const output = step.output as unknown as InferenceOutput;
      const cost = credits(150 * WORKER_PER_TOKEN);
      assert.equal(cost, 0.0015);
      assert.deepEqual(job, {
        job_id: jobId,
        status: 'complete',
        worker_pk: gw.node.publicKey,
        h3_cell: CELL,
        epoch: epochAt(now, DEFAULT_EPOCH_GENESIS_MS),
        steps: [
          {
            id: 'ask',
            type: 'inference',
            status: 'complete',
            output: {
              text: 'Villa Borghese.',
              locations: [],
              model: WORKER_MODEL,
              provider: 'worker',
              tokens_in: 120,
              tokens_out: 30,
              latency_ms: output.latency_ms,
              proof_job_id: `inference:${jobId}:ask`,
            },
            latency_ms: step.latency_ms,
            worker_pk: gw.node.publicKey,
            cost,
            record_id: `inference:${jobId}:ask`,
          },
        ],
        settlement: {
          stellar_tx: null,
          total_credits: credits(cost, PROOF),
          breakdown: { ask: cost },
          proof_credits: PROOF,
        },
        proof: {
          job_hash: expectedJobHash(signed.body, job.steps),
          verify_url: `${gw.url}/store/proof/${encodeURIComponent(`compute:${jobId}`)}`,
          record_id: `compute:${jobId}`,
        },
      });
      assert.ok(isLatency(step.latency_ms) && isLatency(output.latency_ms));
      assert.equal(worker.chats().length, 1);
      assert.equal(worker.chats()[0]!.body.model, WORKER_MODEL);
    });

    it('writes the compute/job proof record at verify_url, and once its epoch is sealed the inclusion proof verifies', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({
        content: 'Villa Ada.',
        usage: { prompt_tokens: 10, completion_tokens: 2 },
      }));
      const gw = await gateway({ worker });
      const signed = signJob(alice, inferenceJob('a park in the north of Rome'));
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text);
      const job = res.body as Job;
      const verifyPath = new URL(job.proof.verify_url).pathname;

      const pending = await gw.get(verifyPath);
      assert.equal(pending.status, 200, pending.text);
      const bundle = pending.body as { record: ProofRecord; seal: unknown; verified: boolean; pending?: boolean };
      assert.equal(bundle.verified, false);
      assert.equal(bundle.pending, true);
      const { record } = bundle;
      assert.equal(record.id, `compute:${job.job_id}`);
      assert.equal(record.collection_type, 'compute_job');
      assert.equal(record.payload_type, 'compute/job');
      assert.deepEqual(record.address, { h3_cell: CELL, epoch: job.epoch, pk: gw.node.publicKey });
      const step = job.steps[0]!;
      assert.deepEqual(record.payload, {
        version: 2,
        job_id: job.job_id,
        job_hash: expectedJobHash(signed.body, job.steps),
        request_hash: sha256(canonicalJson(signed.body)),
        requester_pk: alice.publicKey,
        status: 'complete',
        h3_cell: CELL,
        epoch: job.epoch,
        worker_pk: gw.node.publicKey,
        steps: [
          {
            id: 'ask',
            type: 'inference',
            status: 'complete',
            worker_pk: gw.node.publicKey,
            relay_pk: null,
            cost: step.cost,
            record_id: `inference:${job.job_id}:ask`,
            latency_ms: step.latency_ms,
            output_hash: sha256(canonicalJson(step.output)),
            error: null,
          },
        ],
        settlement: job.settlement,
        error: null,
      });
      assert.equal((record.payload as { job_hash: string }).job_hash, job.proof.job_hash);
      // The step's own record is there too (the inference's proof_job_id).
      const stepRecord = await gw.get(`/store/proof/${encodeURIComponent(step.record_id!)}`);
      assert.equal((stepRecord.body as { record: ProofRecord }).record.payload_type, 'hive/inference');

      await sealThrough(gw.proofs, gw.node, job.epoch);
      const sealed = await gw.get(verifyPath);
      assert.equal(sealed.status, 200);
      const proven = sealed.body as { record: ProofRecord; seal: unknown; proof: unknown; verified: boolean };
      assert.equal(proven.verified, true);
      assert.deepEqual(proven.record, record);
      assert.deepEqual(verifyProofBundle(proven, record.id), {
        verified: true,
        problems: [],
        seal_kind: 'writer',
        sealed_by: gw.node.publicKey,
      });
      // A tampered payload does not verify.
      const forged = { ...proven, record: { ...record, payload: { ...(record.payload as object), status: 'failed' } } };
      assert.equal(verifyProofBundle(forged, record.id).verified, false);
    });
  });

  describe('the satellite → AI → map chain (docs/protocol.md §4.1 note 4)', () => {
    it('runs ndvi → inference → tile in order, feeding each step, with per-step costs and one proof', async () => {
      const worker = await runtime(WORKER_MODEL, locatedReply);
      const gw = await gateway({ worker });
      const tilesBefore = xyz.count();
      const signed = signJob(alice, chainJob());
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text);
      const job = res.body as Job;
      assert.equal(job.status, 'complete');
      assert.deepEqual(
        job.steps.map((s) => [s.id, s.type, s.status]),
        [
          ['ndvi', 'image_process', 'complete'],
          ['explain', 'inference', 'complete'],
          ['map', 'tile_render', 'complete'],
        ],
      );
      const [ndvi, explain, map] = job.steps as [StepResult, StepResult, StepResult];

      // 1. NDVI over the Rome scene, priced per megapixel as recorded.
      const ndviResult = ndvi.output.result as { meanNdvi: number; megapixels: number; cost: number; method: string };
      assert.equal(ndvi.output.operation, 'ndvi');
      assert.equal(ndviResult.method, 'pixels');
      assert.ok(Math.abs(ndviResult.meanNdvi - 0.6) < 1e-3, String(ndviResult.meanNdvi));
      const ndviCost = Math.round(ndviResult.megapixels * PER_MEGAPIXEL * 1e8) / 1e8;
      assert.ok(ndviCost > 0);
      assert.equal(ndvi.cost, ndviCost);
      assert.equal(ndvi.record_id, `imagery:${job.job_id}:ndvi`);
      assert.equal(ndvi.worker_pk, gw.node.publicKey);

      // 2. The model saw the NDVI output and was asked for locations (a tile step depends on it).
      assert.equal(worker.chats().length, 1);
      const messages = worker.chats()[0]!.body.messages as { role: string; content: string }[];
      assert.equal(messages[0]!.content, LOCATIONS_INSTRUCTION);
      const context = contextOf(worker.chats()[0]!)!;
      assert.ok(context, JSON.stringify(messages));
      assert.ok(context.content.includes(JSON.stringify(ndvi.output)), context.content);
      assert.deepEqual(messages.at(-1), { role: 'user', content: 'where is it green?' });
      const answer = explain.output as unknown as InferenceOutput;
      assert.equal(answer.text, LOCATED.text);
      assert.deepEqual(answer.locations, LOCATED.locations);
      assert.equal(answer.provider, 'worker');
      const explainCost = credits(240 * WORKER_PER_TOKEN);
      assert.equal(explain.cost, explainCost);

      // 3. The tile of the job cell, annotated from the locations (names and addresses only: unplaced).
      assert.equal(xyz.count() - tilesBefore, 1);
      assert.equal(map.output.cell, CELL);
      assert.equal(map.output.zoom, 12);
      assert.equal(map.output.style, 'osm-bright');
      assert.equal(map.output.cache, 'MISS');
      assert.deepEqual(map.output.annotations, [
        { ...LOCATED.locations[0], cell: null, pixel: null, placed: false, reason: 'no_coordinates' },
        { ...LOCATED.locations[1], cell: null, pixel: null, placed: false, reason: 'no_coordinates' },
      ]);
      assert.equal(map.cost, TILE_MISS);
      assert.equal(map.record_id, `tile:${job.job_id}:map`);

      // One settlement, one proof.
      assert.deepEqual(job.settlement, {
        stellar_tx: null,
        total_credits: credits(ndviCost, explainCost, TILE_MISS, PROOF),
        breakdown: { ndvi: ndviCost, explain: explainCost, map: TILE_MISS },
        proof_credits: PROOF,
      });
      assert.equal(job.worker_pk, gw.node.publicKey);
      assert.equal(job.proof.job_hash, expectedJobHash(signed.body, job.steps));
      const stored = await gw.get(`/v1/compute/${job.job_id}`);
      assert.deepEqual(stored.body, job);
    });
  });

  describe('critical-path scheduling and fan-in (docs/protocol.md §2.2 rules 1, 2)', () => {
    const ask = (id: string, extra: Record<string, unknown> = {}) => ({
      id,
      type: 'inference',
      messages: [{ role: 'user', content: `step ${id}` }],
      ...extra,
    });
    /** Steps a and d take 2 s on the runtime, the others answer at once. */
    const slowAD = (request: FakeRequest): FakeReply => {
      const messages = request.body.messages as { role: string; content: string }[];
      const step = messages.at(-1)!.content.slice('step '.length);
      return { content: `answer of ${step}`, delayMs: step === 'a' || step === 'd' ? 2000 : 0 };
    };

    it('finishes a → b beside c → d (a and d 2 s each) in under 3 s: b does not wait for c, d not for b', async () => {
      const worker = await runtime(WORKER_MODEL, slowAD);
      const gw = await gateway({ worker });
      const signed = signJob(alice, {
        h3_cell: CELL,
        steps: [ask('a'), ask('b', { depends_on: 'a' }), ask('c'), ask('d', { depends_on: 'c' })],
        budget_credits: 0.1,
      });
      const started = Date.now();
      const res = await submit(gw, signed);
      const elapsed = Date.now() - started;
      assert.equal(res.status, 200, res.text);
      const job = res.body as Job;
      assert.deepEqual(
        job.steps.map((s) => [s.id, s.status]),
        [
          ['a', 'complete'],
          ['b', 'complete'],
          ['c', 'complete'],
          ['d', 'complete'],
        ],
      );
      // Level by level it takes 4 s (a and c, then b and d); its critical path is 2 s.
      assert.ok(elapsed >= 2000 && elapsed < 3000, `the job took ${elapsed} ms`);
      assert.equal(job.proof.job_hash, expectedJobHash(signed.body, job.steps));
    });

    it('feeds a step that lists several dependencies all their outputs, in the listed order', async () => {
      const worker = await runtime(WORKER_MODEL, slowAD);
      const gw = await gateway({ worker });
      const signed = signJob(alice, {
        h3_cell: CELL,
        steps: [ask('x'), ask('y'), ask('merge', { depends_on: ['y', 'x'] })],
        budget_credits: 0.1,
      });
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text);
      const merge = worker.chats().find((c) => JSON.stringify(c.body.messages).includes('step merge'))!;
      const contexts = (merge.body.messages as { role: string; content: string }[]).filter(
        (m) => m.role === 'system' && m.content.startsWith(`Output of the job's step`),
      );
      assert.deepEqual(
        contexts.map((m) => m.content.split('\n')[0]),
        [
          `Output of the job's step "y" (JSON), for use in your answer:`,
          `Output of the job's step "x" (JSON), for use in your answer:`,
        ],
      );
      assert.match(contexts[0]!.content, /answer of y/);
      assert.match(contexts[1]!.content, /answer of x/);
    });

    it('refuses a depends_on list with an unknown step or an empty list with 400 invalid_request', async () => {
      const gw = await gateway();
      const unknown = await submit(gw, signJob(alice, { steps: [ask('a'), ask('b', { depends_on: ['a', 'zz'] })] }));
      assert.equal(unknown.status, 400, unknown.text);
      assert.equal(errorOf(unknown), 'invalid_request');
      assert.match((unknown.body as { detail: string }).detail, /"b" depends on unknown step "zz"/);
      const empty = await submit(gw, signJob(alice, { steps: [ask('a', { depends_on: [] })] }));
      assert.equal(empty.status, 400, empty.text);
      assert.equal(errorOf(empty), 'invalid_request');
    });
  });

  describe('payload discipline: a 3 MB step output (core/output-blobs.ts)', () => {
    const MB3 = 3 * 1024 * 1024;

    it('answers the whole output while every activity input and result stays small, and feeds the head on', async () => {
      const big = `BEGIN ${'geo'.repeat(MB3 / 3)}`;
      const worker = await runtime(WORKER_MODEL, (request) => {
        const last = (request.body.messages as { content: string }[]).at(-1)!.content;
        return { content: last === 'big' ? big : 'short answer', usage: { prompt_tokens: 10, completion_tokens: 10 } };
      });
      // What would cross Temporal: every step activity's result and finishJob's argument and result.
      const sizes: number[] = [];
      const measured = <T extends object>(activities: T): T =>
        Object.fromEntries(
          Object.entries(activities).map(([name, fn]) => [
            name,
            async (...args: unknown[]) => {
              sizes.push(JSON.stringify(args).length);
              const out = await (fn as (...a: unknown[]) => Promise<unknown>)(...args);
              sizes.push(JSON.stringify(out).length);
              return out;
            },
          ]),
        ) as T;
      const gw = await gateway({
        worker,
        jobRunner: (compute, jobs) =>
          createEmbeddedJobRunner({
            steps: measured(compute.steps),
            jobs: measured(compute.jobs),
            store: jobs,
            waitMs: 10_000,
          }),
      });
      const signed = signJob(alice, {
        h3_cell: CELL,
        steps: [
          { id: 'big', type: 'inference', messages: [{ role: 'user', content: 'big' }] },
          { id: 'after', type: 'inference', depends_on: 'big', messages: [{ role: 'user', content: 'next' }] },
        ],
        budget_credits: 0.1,
      });
      const res = await submit(gw, signed);
      assert.equal(res.status, 200, res.text.slice(0, 500));
      const job = res.body as Job;
      assert.equal(job.steps[0]!.output.text, big);
      assert.equal(job.proof.job_hash, expectedJobHash(signed.body, job.steps), 'hashed over the whole output');
      const stored = await gw.get(`/v1/compute/${job.job_id}`);
      assert.equal((stored.body as Job).steps[0]!.output.text, big);

      assert.ok(sizes.length >= 6, String(sizes.length));
      assert.ok(Math.max(...sizes) < 64 * 1024, `largest activity payload ${Math.max(...sizes)} bytes`);
      // The dependent step saw the output's beginning, not 3 MB.
      const context = contextOf(worker.chats()[1]!)!;
      assert.match(context.content, /BEGIN geogeo/);
      assert.ok(context.content.length < 9000);
    });
  });

  describe('budget (docs/protocol.md §2.1 budget_credits, 2.2 rule 3)', () => {
    it('answers 402 budget_exceeded before anything runs when the worst-case estimate exceeds the budget', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker });
      const signed = signJob(alice, inferenceJob('hi', { budget_credits: 0.001 }));
      const res = await submit(gw, signed);
      assert.equal(res.status, 402, res.text);
      assert.equal(errorOf(res), 'budget_exceeded');
      assert.match((res.body as { detail: string }).detail, /exceeds budget_credits 0\.001/);
      assert.equal(worker.chats().length, 0);
      const lookup = await gw.get(`/v1/compute/${expectedJobId(signed.headers['x-idn-signature'])}`);
      assert.equal(lookup.status, 404, 'a refused job is not stored');
      assert.equal(((await gw.get('/v1/compute/recent')).body as { count: number }).count, 0);
    });

    it('does not start the next step once a step cost more than its estimate: only what ran is charged', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({
        content: 'a long answer',
        usage: { prompt_tokens: 1_000_000, completion_tokens: 0 },
      }));
      const gw = await gateway({ worker });
      const tilesBefore = xyz.count();
      const signed = signJob(alice, {
        h3_cell: CELL,
        steps: [
          { id: 'ask', type: 'inference', max_tokens: 10, messages: [{ role: 'user', content: 'parks?' }] },
          { id: 'map', type: 'tile_render', depends_on: 'ask' },
        ],
        budget_credits: 0.001,
      });
      const res = await submit(gw, signed);
      assert.equal(res.status, 402, res.text);
      const body = failed(res);
      assert.equal(body.error, 'budget_exceeded');
      assert.equal(body.step_id, 'map');
      assert.equal(body.job_id, body.job.job_id);
      assert.match(body.detail, /step "map" may cost up to 0\.0001 credits/);
      const [ask, map] = body.job.steps as [StepResult, StepResult];
      assert.equal(ask.status, 'complete');
      assert.equal(map.status, 'skipped');
      assert.equal(map.error?.code, 'budget_exceeded');
      assert.equal(xyz.count(), tilesBefore, 'the tile step never ran');
      // The inference cost 10 credits; it is charged only what the budget had left after the proof.
      assert.equal(ask.cost, credits(0.001, -PROOF));
      assert.deepEqual(body.job.settlement.breakdown, { ask: credits(0.001, -PROOF), map: 0 });
      assert.equal(body.job.settlement.total_credits, 0.001);
      assert.ok(body.job.settlement.total_credits <= 0.001);
      assert.equal(body.job.status, 'failed');
      assert.deepEqual(body.job.error, { code: 'budget_exceeded', detail: body.detail, step_id: 'map' });
      assert.equal(body.job.proof.job_hash, expectedJobHash(signed.body, body.job.steps));
    });
  });

  describe('a failing step', () => {
    it('stops the chain at a runtime error: its code and status, later steps skipped, earlier ones keep record and charge', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({ status: 400 }));
      const gw = await gateway({ worker });
      const tilesBefore = xyz.count();
      const signed = signJob(alice, chainJob());
      const res = await submit(gw, signed);
      assert.equal(res.status, 502, res.text);
      const body = failed(res);
      assert.equal(body.error, 'runtime_unavailable');
      assert.equal(body.step_id, 'explain');
      assert.match(body.detail, /HTTP 400/);
      const [ndvi, explain, map] = body.job.steps as [StepResult, StepResult, StepResult];
      assert.deepEqual([ndvi.status, explain.status, map.status], ['complete', 'failed', 'skipped']);
      assert.equal(explain.error?.code, 'runtime_unavailable');
      assert.equal(map.error?.code, 'runtime_unavailable');
      assert.equal(xyz.count(), tilesBefore);
      // Upstream trouble is retried (3 attempts), then the job fails.
      assert.equal(worker.chats().length, 3);

      const ndviCost = (ndvi.output.result as { cost: number }).cost;
      assert.ok(ndviCost > 0);
      assert.deepEqual(body.job.settlement.breakdown, { ndvi: ndviCost, explain: 0, map: 0 });
      assert.equal(body.job.settlement.total_credits, credits(ndviCost, PROOF));
      const ndviRecord = await gw.get(`/store/proof/${encodeURIComponent(ndvi.record_id!)}`);
      assert.equal(ndviRecord.status, 200);
      assert.equal((ndviRecord.body as { record: ProofRecord }).record.payload_type, 'imagery/ndvi');
      assert.equal(body.job.proof.job_hash, expectedJobHash(signed.body, body.job.steps));

      const stored = await gw.get(`/v1/compute/${body.job_id}`);
      assert.equal(stored.status, 200);
      assert.deepEqual(stored.body, body.job);
    });

    it('fails a tile step whose upstream answers 500 with 502 upstream_unavailable, the inference kept', async () => {
      const backbone = await runtime('backbone', locatedReply);
      const gw = await gateway({ backbone });
      xyz.failWith = 500;
      const res = await submit(
        gw,
        signJob(alice, {
          h3_cell: CELL,
          steps: [
            { id: 'ask', type: 'inference', messages: [{ role: 'user', content: 'green places?' }] },
            { id: 'map', type: 'tile_render', depends_on: 'ask', zoom: 13 },
          ],
        }),
      );
      assert.equal(res.status, 502, res.text);
      const body = failed(res);
      assert.equal(body.error, 'upstream_unavailable');
      assert.equal(body.step_id, 'map');
      assert.deepEqual(
        body.job.steps.map((s) => s.status),
        ['complete', 'failed'],
      );
      assert.equal(body.job.steps[0]!.record_id, `inference:${body.job_id}:ask`);
      assert.equal(body.job.worker_pk, 'backbone');
      assert.equal(body.job.settlement.total_credits, PROOF);
    });
  });

  describe('plans that cannot run', () => {
    it('rejects a cycle with 400 cyclic_dependency naming it', async () => {
      const gw = await gateway();
      const res = await submit(
        gw,
        signJob(alice, {
          steps: [
            { id: 'a', type: 'inference', depends_on: 'c', messages: [{ role: 'user', content: 'x' }] },
            { id: 'b', type: 'inference', depends_on: 'a', messages: [{ role: 'user', content: 'y' }] },
            { id: 'c', type: 'tile_render', depends_on: 'b' },
          ],
        }),
      );
      assert.equal(res.status, 400, res.text);
      assert.equal(errorOf(res), 'cyclic_dependency');
      assert.equal((res.body as { detail: string }).detail, 'steps form a cycle: a -> b -> c -> a');
    });

    it('rejects a dependency on an unknown step with 400 invalid_request', async () => {
      const gw = await gateway();
      const res = await submit(
        gw,
        signJob(alice, { steps: [{ id: 'map', type: 'tile_render', depends_on: 'nowhere' }] }),
      );
      assert.equal(res.status, 400, res.text);
      assert.equal(errorOf(res), 'invalid_request');
      assert.match((res.body as { detail: string }).detail, /"map" depends on unknown step "nowhere"/);
    });
  });

  describe('unknown tools (docs/protocol.md §2.7)', () => {
    it('refuses a step requiring a tool the registry does not have with 400 invalid_request naming it and the tools', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker, config: { operatorToken: OPERATOR } });
      const tools = ((await gw.get('/v1/tools')).body as { data: { id: string }[] }).data.map((t) => t.id);
      assert.equal(tools.length, 5);
      const res = await submit(
        gw,
        signJob(alice, {
          steps: [
            { id: 'fine', type: 'inference', tools: ['web-search'], messages: [{ role: 'user', content: 'x' }] },
            {
              id: 'run',
              type: 'inference',
              tools: ['web-search', 'code-exec'],
              messages: [{ role: 'user', content: 'y' }],
            },
          ],
        }),
      );
      assert.equal(res.status, 400, res.text);
      assert.equal(errorOf(res), 'invalid_request');
      const detail = (res.body as { detail: string }).detail;
      assert.equal(
        detail,
        `step "run" requires the unknown tool "code-exec"; the registry's tools are ${tools.join(', ')}`,
      );
      assert.equal(worker.chats().length, 0, 'nothing ran');
      const recent = await gw.get('/v1/compute/recent', { authorization: `Bearer ${OPERATOR}` });
      assert.equal((recent.body as { count?: number }).count ?? 0, 0, 'no job was stored');
    });
  });

  describe('replay (the job id derives from the signature)', () => {
    it('answers the same signed body twice with the same job, running it once', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker });
      const signed = signJob(alice, inferenceJob('replay me'));
      const first = await submit(gw, signed);
      assert.equal(first.status, 200, first.text);
      now += 5000;
      const second = await submit(gw, signed);
      assert.equal(second.status, 200);
      assert.deepEqual(second.body, first.body);
      assert.equal(worker.chats().length, 1);
    });

    it('runs concurrent identical requests once', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({ content: 'slowly', delayMs: 150 }));
      const gw = await gateway({ worker });
      const signed = signJob(alice, inferenceJob('at the same time'));
      const answers = await Promise.all([submit(gw, signed), submit(gw, signed), submit(gw, signed)]);
      for (const res of answers) assert.equal(res.status, 200, res.text);
      assert.deepEqual(answers[1]!.body, answers[0]!.body);
      assert.deepEqual(answers[2]!.body, answers[0]!.body);
      assert.equal(worker.chats().length, 1);
    });

    it('runs a job sent at once to two gateways on one SQLite file once, every answer the same (WEB_CONCURRENCY)', async () => {
      // Two gateway processes: each its own connection to one database file, its own runner and in-flight map.
      const dir = mkdtempSync(join(tmpdir(), 'geofabric-claims-'));
      const file = join(dir, 'geofabric.db');
      const dbs = [openSqlite(file), openSqlite(file)];
      const worker = await runtime(WORKER_MODEL, () => ({ content: 'once', delayMs: 300 }));
      const node = generateKeyPair(); // WEB_CONCURRENCY: every process writes as the one node key
      try {
        const processes: Gateway[] = [];
        for (const db of dbs) {
          processes.push(
            await gateway({
              worker,
              node,
              jobs: createSqliteJobStore(db),
              proofs: createSqliteProofStore(db),
              rateLimits: createSqliteRateLimitStore(db),
            }),
          );
        }
        const signed = signJob(alice, inferenceJob('six at once'));
        const answers = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => submit(processes[i % 2]!, signed)));
        for (const res of answers) assert.equal(res.status, 200, res.text);
        assert.equal(worker.chats().length, 1, 'one runtime completion for the one job');
        // The same body everywhere, up to the origin of verify_url (each gateway names its own).
        const bodies = answers.map((res, i) => {
          const job = res.body as Job;
          const origin = processes[i % 2]!.url;
          return { ...job, proof: { ...job.proof, verify_url: job.proof.verify_url.replace(origin, '') } };
        });
        for (const body of bodies) assert.deepEqual(body, bodies[0]);
        assert.equal(bodies[0]!.status, 'complete');
      } finally {
        for (const gw of gateways.splice(0)) await gw.close();
        for (const db of dbs) db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('answers 504 job_timeout on the gateway that did not claim the job when it outlasts the wait, never running it', async () => {
      const db = openSqlite(':memory:');
      const jobs = createSqliteJobStore(db);
      const worker = await runtime(WORKER_MODEL, () => ({ content: 'slow', delayMs: 800 }));
      try {
        const claimer = await gateway({ worker, jobs });
        const other = await gateway({ worker, jobs, jobWaitMs: 200 });
        const signed = signJob(alice, inferenceJob('who runs me?'));
        const first = submit(claimer, signed);
        await waitFor(
          'the claim',
          async () => (await jobs.get(expectedJobId(signed.headers['x-idn-signature']))) !== null,
        );
        const waited = await submit(other, signed);
        assert.equal(waited.status, 504, waited.text);
        assert.equal(errorOf(waited), 'job_timeout');
        assert.equal((waited.body as { job_id: string }).job_id, expectedJobId(signed.headers['x-idn-signature']));
        assert.equal((await first).status, 200);
        assert.equal(worker.chats().length, 1);
      } finally {
        for (const gw of gateways.splice(0)) await gw.close();
        db.close();
      }
    });

    it('takes a job over when its run lapsed (its process died): a replay runs it once no lease was renewed for two leases', async () => {
      const db = openSqlite(':memory:');
      const jobs = createSqliteJobStore(db);
      const rateLimits = createSqliteRateLimitStore(db);
      let calls = 0;
      const worker = await runtime(WORKER_MODEL, () =>
        ++calls === 1 ? { content: 'lost with its process', delayMs: 1500 } : { content: 'taken over' },
      );
      const start = Date.now();
      let later = start;
      try {
        // The claimer's clock stands still, as if its process had died: it renews no lease after its claim's window.
        const claimer = await gateway({ worker, jobs, rateLimits, clock: () => start, jobLeaseMs: 1000 });
        const other = await gateway({ worker, jobs, rateLimits, clock: () => later, jobLeaseMs: 1000 });
        const signed = signJob(alice, inferenceJob('who finishes me?'));
        const jobId = expectedJobId(signed.headers['x-idn-signature']);
        const first = submit(claimer, signed);
        await waitFor('the claimed run', async () => calls === 1 && (await jobs.get(jobId)) !== null);
        later = start + 5000; // five leases on
        const taken = await submit(other, signed);
        assert.equal(taken.status, 200, taken.text);
        assert.equal((taken.body as Job).steps[0]!.output.text, 'taken over');
        assert.equal(calls, 2, 'run once more, by the replay that took it over');
        // The lapsed run ends later and finds the job finished: the first finish stands.
        await first;
        const stored = await other.get(`/v1/compute/${jobId}`);
        assert.equal((stored.body as Job).steps[0]!.output.text, 'taken over');
      } finally {
        for (const gw of gateways.splice(0)) await gw.close();
        db.close();
      }
    });

    it('runs a job failed for a transient reason again on replay, without re-running its completed steps', async () => {
      let broken = true;
      const worker = await runtime(WORKER_MODEL, (request) =>
        contextOf(request)
          ? broken
            ? { status: 503 }
            : { content: 'second answer', usage: { prompt_tokens: 50, completion_tokens: 5 } }
          : { content: 'first answer', usage: { prompt_tokens: 20, completion_tokens: 4 } },
      );
      const gw = await gateway({ worker });
      const signed = signJob(alice, {
        h3_cell: CELL,
        steps: [
          { id: 'first', type: 'inference', messages: [{ role: 'user', content: 'one' }] },
          { id: 'second', type: 'inference', depends_on: 'first', messages: [{ role: 'user', content: 'two' }] },
        ],
      });
      const down = await submit(gw, signed);
      assert.equal(down.status, 502, down.text);
      assert.equal(failed(down).error, 'runtime_unavailable');
      assert.equal(failed(down).step_id, 'second');
      const firstCalls = () => worker.chats().filter((r) => !contextOf(r)).length;
      assert.equal(firstCalls(), 1);
      const firstRun = failed(down).job.steps[0]!;

      broken = false;
      now += 5000;
      const up = await submit(gw, signed);
      assert.equal(up.status, 200, up.text);
      const job = up.body as Job;
      assert.equal(job.job_id, failed(down).job_id);
      assert.deepEqual(
        job.steps.map((s) => [s.id, s.status]),
        [
          ['first', 'complete'],
          ['second', 'complete'],
        ],
      );
      assert.equal(firstCalls(), 1, 'the completed step did not run again');
      assert.deepEqual(job.steps[0], firstRun);
      assert.equal((job.steps[1]!.output as unknown as InferenceOutput).text, 'second answer');
      const cost = credits(24 * WORKER_PER_TOKEN, 55 * WORKER_PER_TOKEN);
      assert.equal(job.settlement.total_credits, credits(cost, PROOF));
      // The answer, the stored job and the proof record all describe the run that completed.
      assert.equal(job.proof.job_hash, expectedJobHash(signed.body, job.steps));
      assert.deepEqual((await gw.get(`/v1/compute/${job.job_id}`)).body, job);
      // Proof records never change: each run that finished has its own, the job names the latest.
      assert.equal(failed(down).job.proof.record_id, `compute:${job.job_id}`);
      assert.equal(job.proof.record_id, `compute:${job.job_id}:run-2`);
      for (const [run, status, hash] of [
        [failed(down).job, 'failed', failed(down).job.proof.job_hash],
        [job, 'complete', job.proof.job_hash],
      ] as const) {
        const proof = await gw.get(new URL(run.proof.verify_url).pathname);
        const payload = (proof.body as { record: ProofRecord }).record.payload as { status: string; job_hash: string };
        assert.deepEqual([payload.status, payload.job_hash], [status, hash]);
      }

      // Finished now: a further replay changes nothing.
      const again = await submit(gw, signed);
      assert.deepEqual(again.body, job);
      // first once; second 3 attempts while broken, then once.
      assert.equal(worker.chats().length, 5);
    });

    it('runs again once a backbone is there, after 503 no_workers (another gateway on the same stores)', async () => {
      const db = openSqlite(':memory:');
      const shared = { jobs: createSqliteJobStore(db), proofs: createSqliteProofStore(db) };
      try {
        const alone = await gateway(shared);
        const signed = signJob(alice, inferenceJob('anyone there?'));
        const down = await submit(alone, signed);
        assert.equal(down.status, 503, down.text);
        assert.equal(failed(down).error, 'no_workers');
        assert.equal(down.headers.get('retry-after'), '30');
        assert.equal(failed(down).step_id, 'ask');

        const backbone = await runtime('backbone', () => ({
          content: 'yes',
          usage: { prompt_tokens: 3, completion_tokens: 1 },
        }));
        const served = await gateway({ ...shared, backbone });
        now += 5000;
        const up = await submit(served, signed);
        assert.equal(up.status, 200, up.text);
        const job = up.body as Job;
        assert.equal(job.job_id, failed(down).job_id);
        assert.equal(job.worker_pk, 'backbone');
        assert.equal((job.steps[0]!.output as unknown as InferenceOutput).text, 'yes');
        assert.equal(job.proof.job_hash, expectedJobHash(signed.body, job.steps));
        assert.equal(backbone.chats().length, 1);
        const replayed = await submit(alone, signed);
        assert.deepEqual(replayed.body, {
          ...job,
          proof: { ...job.proof, verify_url: job.proof.verify_url.replace(served.url, alone.url) },
        });
      } finally {
        for (const gw of gateways.splice(0)) await gw.close();
        db.close();
      }
    });
  });

  describe('job_timeout', () => {
    it('answers 504 job_timeout with the job id after the wait; the job completes and GET returns it', async () => {
      const worker = await runtime(WORKER_MODEL, () => ({ content: 'eventually', delayMs: 1000 }));
      const gw = await gateway({ worker, jobWaitMs: 200 });
      const signed = signJob(alice, inferenceJob('take your time'));
      const jobId = expectedJobId(signed.headers['x-idn-signature']);
      const started = Date.now();
      const res = await submit(gw, signed);
      assert.ok(Date.now() - started < 900, 'answered before the step finished');
      assert.equal(res.status, 504, res.text);
      assert.equal(errorOf(res), 'job_timeout');
      assert.equal((res.body as { job_id: string }).job_id, jobId);
      const running = await gw.get(`/v1/compute/${jobId}`);
      assert.equal((running.body as { status: string }).status, 'running');

      let done: Job | undefined;
      await waitFor('the job to complete', async () => {
        const body = (await gw.get(`/v1/compute/${jobId}`)).body as { status: string };
        done = body as Job;
        return body.status !== 'running';
      });
      assert.equal(done!.status, 'complete');
      assert.equal(done!.job_id, jobId);
      assert.equal((done!.steps[0]!.output as unknown as InferenceOutput).text, 'eventually');
      assert.equal(done!.proof.job_hash, expectedJobHash(signed.body, done!.steps));
      assert.equal(worker.chats().length, 1);
    });
  });

  describe('GET /v1/compute/recent and /v1/compute/:jobId', () => {
    it('lists jobs newest first without step outputs to the operator (OPERATOR_TOKEN), limit 1..100', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker, config: { operatorToken: OPERATOR } });
      const ids: string[] = [];
      for (const prompt of ['one', 'two', 'three']) {
        now += 1000;
        const res = await submit(gw, signJob(alice, inferenceJob(prompt)));
        assert.equal(res.status, 200, res.text);
        ids.push((res.body as Job).job_id);
      }
      const operator = { authorization: `Bearer ${OPERATOR}` };
      const res = await gw.get('/v1/compute/recent?limit=2', operator);
      assert.equal(res.status, 200, res.text);
      const list = res.body as { view: string; limit: number; count: number; jobs: Record<string, unknown>[] };
      assert.equal(list.view, 'operator');
      assert.equal(list.limit, 2);
      assert.equal(list.count, 2);
      assert.deepEqual(
        list.jobs.map((j) => j.job_id),
        [ids[2], ids[1]],
      );
      for (const summary of list.jobs) {
        assert.equal(summary.status, 'complete');
        assert.equal('steps' in summary, false);
        assert.equal(JSON.stringify(summary).includes('output'), false);
        assert.deepEqual(summary.step_types, ['inference']);
      }
      const all = (await gw.get('/v1/compute/recent', operator)).body as { count: number };
      assert.equal(all.count, 3);
      assert.equal(((await gw.get('/v1/compute/recent?limit=100', operator)).body as { count: number }).count, 3);
      for (const limit of ['0', '101', 'abc']) {
        const bad = await gw.get(`/v1/compute/recent?limit=${limit}`);
        assert.equal(bad.status, 400, limit);
        assert.equal(errorOf(bad), 'invalid_limit', limit);
      }
      // Another credential is refused, not quietly shown the public view.
      const wrong = await gw.get('/v1/compute/recent', { authorization: 'Bearer not-the-operator' });
      assert.equal(wrong.status, 401);
      assert.equal(errorOf(wrong), 'unauthorized');
    });

    it('shows the public counts by status and step type, never a job id or a requester', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker });
      const ids: string[] = [];
      for (const prompt of ['one', 'two']) {
        now += 1000;
        const res = await submit(gw, signJob(alice, inferenceJob(prompt)));
        ids.push((res.body as Job).job_id);
      }
      const res = await gw.get('/v1/compute/recent');
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, {
        view: 'public',
        limit: 20,
        count: 2,
        by_status: { complete: 2 },
        by_step_type: { inference: 2 },
      });
      for (const id of ids) assert.equal(res.text.includes(id), false);
      assert.equal(res.text.includes(alice.publicKey), false);
      // Without OPERATOR_TOKEN nobody is the operator.
      const guess = await gw.get('/v1/compute/recent', { authorization: 'Bearer anything' });
      assert.equal(guess.status, 401);
    });

    it('lists a signed requester its own jobs only (gate 1 over requester_pk, created_at, nonce)', async () => {
      const worker = await runtime(WORKER_MODEL);
      const gw = await gateway({ worker });
      const bob = generateKeyPair();
      const mine: string[] = [];
      for (const [who, prompt] of [
        [alice, 'one'],
        [bob, 'two'],
        [alice, 'three'],
      ] as const) {
        now += 1000;
        const res = await submit(gw, signJob(who, inferenceJob(prompt)));
        if (who === alice) mine.push((res.body as Job).job_id);
      }
      const listing = (key = alice, fields: Record<string, string> = {}) => {
        const { body, signature } = signRequestBody(key.secretKey, {
          created_at: new Date(now).toISOString(),
          nonce: 'n-1',
          ...fields,
        });
        const query = new URLSearchParams({
          requester_pk: body.requester_pk,
          created_at: body.created_at,
          nonce: body.nonce,
        });
        return { query, signature };
      };
      const { query, signature } = listing();
      const res = await gw.get(`/v1/compute/recent?${query}`, { 'x-idn-signature': signature });
      assert.equal(res.status, 200, res.text);
      const list = res.body as { view: string; requester_pk: string; jobs: { job_id: string; requester_pk: string }[] };
      assert.equal(list.view, 'requester');
      assert.equal(list.requester_pk, alice.publicKey);
      assert.deepEqual(
        list.jobs.map((j) => j.job_id),
        [mine[1], mine[0]],
      );
      // Bob's key cannot list Alice's jobs: the signature covers requester_pk.
      const forged = new URLSearchParams(listing(bob).query);
      forged.set('requester_pk', alice.publicKey);
      const stolen = await gw.get(`/v1/compute/recent?${forged}`, { 'x-idn-signature': listing(bob).signature });
      assert.equal(stolen.status, 401);
      assert.equal(errorOf(stolen), 'invalid_signature');
      // created_at is required and must be fresh.
      const noTime = new URLSearchParams(query);
      noTime.delete('created_at');
      const undated = await gw.get(`/v1/compute/recent?${noTime}`, { 'x-idn-signature': signature });
      assert.equal(errorOf(undated), 'stale_request');
      const old = listing(alice, { created_at: new Date(now - 600_000).toISOString() });
      const stale = await gw.get(`/v1/compute/recent?${old.query}`, { 'x-idn-signature': old.signature });
      assert.equal(stale.status, 401);
      assert.equal(errorOf(stale), 'stale_request');
    });

    it('answers 404 job_not_found for an unknown job id', async () => {
      const gw = await gateway();
      for (const id of ['6f1c2a4e-0b7d-8c3e-9a1f-2b3c4d5e6f70', 'not-a-uuid']) {
        const res = await gw.get(`/v1/compute/${id}`);
        assert.equal(res.status, 404, id);
        assert.equal(errorOf(res), 'job_not_found');
      }
    });
  });
});
