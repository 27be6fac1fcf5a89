import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { createStepActivities, type StepActivities } from '../../activities/compute/step-activities.js';
import { createGatewayBlobStore } from '../../activities/swarm-client/gateway-blob-store.js';
import {
  createGatewayClient,
  type GatewayError,
  type WorkerDeclaration,
} from '../../activities/swarm-client/gateway-client.js';
import { createEmbeddedJobRunner } from '../../api/job-runner.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import type { JobRecord } from '../../core/job-record.js';
import type { BlobOwner } from '../../store/blob-store.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { DEFAULT_BLOB_UPLOAD_LIMITS } from '../../api/routes/store-blobs.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteBlobStore } from '../../store/sqlite/blob-store.js';
import { createSqliteJobStore } from '../../store/sqlite/job-store.js';
import { createSqliteRateLimitStore } from '../../store/sqlite/rate-limit-store.js';
import { signJob } from '../helpers/jobs.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
interface ErrorBody {
  error: string;
  detail?: string;
}

// Independent of core/: SHA-256 of the UTF-8 text, and a field's canonical JSON for plain strings.
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const CELL = '861e8050fffffff';
const MB3 = 3 * 1024 * 1024;

const declaration: WorkerDeclaration = {
  h3_cell: CELL,
  models: [WORKER_MODEL],
  tools: [],
  hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 },
  hardware_tier: 1,
  relay: false,
  version: '0.1.0',
};

const errorOf = (res: { body: unknown }) => (res.body as ErrorBody).error;

describe('worker blob uploads over HTTP (PUT /store/blobs/{sha256})', function () {
  this.timeout(20_000);
  const gateways: Gateway[] = [];
  const runtimes: FakeRuntime[] = [];
  let worker: KeyPair;

  const gateway = async (options: Parameters<typeof startGateway>[0] = {}) => {
    const gw = await startGateway(options);
    gateways.push(gw);
    return gw;
  };
  const clientOf = (gw: Gateway, key: KeyPair) =>
    createGatewayClient({ gatewayUrl: gw.url, signer: key, timeoutMs: 10_000 });
  const register = (gw: Gateway, key: KeyPair) => clientOf(gw, key).register(declaration);
  /** A job step running on `gw` (claimed in its job store as POST /v1/compute claims it): what a worker holds. */
  const runningStep = async (gw: Gateway, stepId = 'big'): Promise<BlobOwner> => {
    const at = new Date().toISOString();
    const job: JobRecord = {
      version: 1,
      job_id: randomUUID(),
      status: 'running',
      requester_pk: generateKeyPair().publicKey,
      h3_cell: CELL,
      epoch: 1,
      step_types: ['inference'],
      request_hash: sha256('request'),
      created_at: at,
      updated_at: at,
      response: null,
      request: { body: { steps: [{ id: stepId, type: 'inference' }] }, delegation_chain: null },
    };
    await gw.jobs.claim(job);
    return { job_id: job.job_id, step_id: stepId };
  };
  /** A signed upload of `text` under `id` for `step`, as the worker's client sends it. */
  const upload = (
    gw: Gateway,
    key: KeyPair,
    id: string,
    text: string,
    step: BlobOwner,
    extra: Record<string, unknown> = {},
  ) => {
    const signed = signJob(key, { text, ...step, created_at: new Date().toISOString(), ...extra });
    return {
      signed,
      send: () => gw.request('PUT', `/store/blobs/${id}`, { body: signed.body, headers: signed.headers }),
    };
  };

  beforeEach(() => {
    worker = generateKeyPair();
  });
  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
    for (const rt of runtimes.splice(0)) await rt.close();
  });

  describe('the route', () => {
    it("stores a registered worker's blob once under its SHA-256; the same upload again answers the same", async () => {
      const gw = await gateway();
      await register(gw, worker);
      const step = await runningStep(gw);
      const text = canonicalJson({ rows: Array.from({ length: 2000 }, (_, i) => ({ i, name: `row ${i}` })) });
      const id = sha256(text);
      const first = upload(gw, worker, id, text, step);
      const res = await first.send();
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { sha256: id, bytes: Buffer.byteLength(text) });
      assert.equal((await gw.blobs.get([id])).get(id), text);

      // A replay of the very same signed request, and a fresh upload of the same blob: both harmless.
      const replay = await first.send();
      assert.equal(replay.status, 200, replay.text);
      const again = await upload(gw, worker, id, text, step).send();
      assert.equal(again.status, 200, again.text);
      assert.deepEqual(again.body, res.body);
      assert.equal((await gw.blobs.get([id])).get(id), text);
    });

    it('refuses a text whose SHA-256 is not the path id with 400 invalid_request, storing nothing', async () => {
      const gw = await gateway();
      await register(gw, worker);
      const step = await runningStep(gw);
      const text = canonicalJson('the real text');
      const squatted = sha256(canonicalJson('another text'));
      const res = await upload(gw, worker, squatted, text, step).send();
      assert.equal(res.status, 400, res.text);
      assert.equal(errorOf(res), 'invalid_request');
      assert.match((res.body as ErrorBody).detail ?? '', /SHA-256/);
      assert.equal((await gw.blobs.get([squatted, sha256(text)])).size, 0);
    });

    it('refuses a text that is not canonical JSON, and a path that is not a SHA-256, with 400', async () => {
      const gw = await gateway();
      await register(gw, worker);
      const step = await runningStep(gw);
      const loose = '{ "b": 1, "a": 2 }';
      const notCanonical = await upload(gw, worker, sha256(loose), loose, step).send();
      assert.equal(notCanonical.status, 400, notCanonical.text);
      assert.equal(errorOf(notCanonical), 'invalid_request');
      assert.match((notCanonical.body as ErrorBody).detail ?? '', /canonical/);
      const badId = await upload(gw, worker, 'ABC', canonicalJson('x'), step).send();
      assert.equal(badId.status, 400, badId.text);
      assert.equal(errorOf(badId), 'invalid_request');
      assert.equal((await gw.blobs.get([sha256(loose)])).size, 0);
    });

    it('refuses an unregistered key (403 writer_not_allowed) and a bad or missing signature (401)', async () => {
      const gw = await gateway();
      const step = await runningStep(gw);
      const text = canonicalJson('some output');
      const id = sha256(text);
      const stranger = await upload(gw, worker, id, text, step).send();
      assert.equal(stranger.status, 403, stranger.text);
      assert.equal(errorOf(stranger), 'writer_not_allowed');

      await register(gw, worker);
      const { signed } = upload(gw, worker, id, text, step);
      const tampered = await gw.request('PUT', `/store/blobs/${id}`, {
        body: { ...signed.body, text: canonicalJson('other') },
        headers: signed.headers,
      });
      assert.equal(tampered.status, 401, tampered.text);
      assert.equal(errorOf(tampered), 'invalid_signature');
      const unsigned = await gw.request('PUT', `/store/blobs/${id}`, { body: signed.body });
      assert.equal(unsigned.status, 401, unsigned.text);
      assert.equal(errorOf(unsigned), 'signature_required');
      const stale = await upload(gw, worker, id, text, step, {
        created_at: new Date(Date.now() - 600_000).toISOString(),
      }).send();
      assert.equal(stale.status, 401, stale.text);
      assert.equal(errorOf(stale), 'stale_request');
      assert.equal((await gw.blobs.get([id])).size, 0, 'nothing stored by any of them');
    });

    it('refuses an upload for no step the worker may be running: no job named (400), no running job or step (403)', async () => {
      const gw = await gateway();
      await register(gw, worker);
      const text = canonicalJson({ junk: 'y'.repeat(20_000) });
      const id = sha256(text);
      // A registered key storing a blob nothing refers to, as any key could until now.
      const bare = signJob(worker, { text, created_at: new Date().toISOString() });
      const unreferenced = await gw.request('PUT', `/store/blobs/${id}`, { body: bare.body, headers: bare.headers });
      assert.equal(unreferenced.status, 400, unreferenced.text);
      assert.equal(errorOf(unreferenced), 'invalid_request');

      const running = await runningStep(gw, 'big');
      const finished = await runningStep(gw, 'done');
      const stored = (await gw.jobs.get(finished.job_id))!;
      await gw.jobs.finish({
        ...stored,
        status: 'failed',
        response: { job_id: stored.job_id, status: 'failed' } as unknown as JobRecord['response'],
      });
      for (const step of [
        { job_id: randomUUID(), step_id: 'big' }, // no such job
        { job_id: running.job_id, step_id: 'other' }, // no such step
        finished, // the job is over
      ]) {
        const res = await upload(gw, worker, id, text, step).send();
        assert.equal(res.status, 403, res.text);
        assert.equal(errorOf(res), 'writer_not_allowed');
      }
      assert.equal((await gw.blobs.get([id])).size, 0, 'nothing stored');
      assert.equal((await upload(gw, worker, id, text, running).send()).status, 200, 'its own running step: stored');
    });

    it('keeps at most blobsPerStep distinct blobs per step, counted once over two gateways (413 past it)', async () => {
      const db = openSqlite(':memory:');
      const shared = {
        jobs: createSqliteJobStore(db),
        blobs: createSqliteBlobStore(db),
        rateLimits: createSqliteRateLimitStore(db),
        config: { blobUploads: { ...DEFAULT_BLOB_UPLOAD_LIMITS, blobsPerStep: 2 } },
      };
      try {
        const [one, two] = [await gateway(shared), await gateway(shared)];
        await register(one!, worker);
        await register(two!, worker);
        const step = await runningStep(one!);
        const [a, b, c] = ['a', 'b', 'c'].map((x) => canonicalJson(x.repeat(20_000)));
        assert.equal((await upload(one!, worker, sha256(a!), a!, step).send()).status, 200);
        assert.equal((await upload(two!, worker, sha256(b!), b!, step).send()).status, 200);
        // A retried attempt sends its blobs again: no new blob, nothing counted.
        assert.equal((await upload(two!, worker, sha256(a!), a!, step).send()).status, 200);
        const third = await upload(one!, worker, sha256(c!), c!, step).send();
        assert.equal(third.status, 413, third.text);
        assert.equal(errorOf(third), 'payload_too_large');
        assert.equal((await one!.blobs.get([sha256(c!)])).size, 0);
        // Another step has its own bound.
        const other = await runningStep(two!, 'next');
        assert.equal((await upload(two!, worker, sha256(c!), c!, other).send()).status, 200);
      } finally {
        for (const gw of gateways.splice(0)) await gw.close();
        db.close();
      }
    });

    it('refuses a blob over the bound, and a body over its bound, with 413 payload_too_large', async () => {
      const maxBytes = 64 * 1024;
      const gw = await gateway({
        config: { blobUploads: { maxBytes, itemsPerHour: 100, bytesPerHour: 1024 * 1024 * 1024 } },
      });
      await register(gw, worker);
      const step = await runningStep(gw);
      // Within the body bound (a JSON string of it), over the blob bound.
      const over = canonicalJson('x'.repeat(maxBytes));
      const res = await upload(gw, worker, sha256(over), over, step).send();
      assert.equal(res.status, 413, res.text);
      assert.equal(errorOf(res), 'payload_too_large');
      assert.match((res.body as ErrorBody).detail ?? '', /the blob is \d+ bytes/);
      // Over the body bound itself: refused before the body is read whole.
      const huge = canonicalJson('"'.repeat(maxBytes * 2));
      const body = await upload(gw, worker, sha256(huge), huge, step).send();
      assert.equal(body.status, 413, body.text);
      assert.equal(errorOf(body), 'payload_too_large');
      assert.match((body.body as ErrorBody).detail ?? '', /the request body exceeds/);
      assert.equal((await gw.blobs.get([sha256(over), sha256(huge)])).size, 0);
      // Exactly at the bound passes.
      const fits = canonicalJson('y'.repeat(maxBytes - 2));
      const ok = await upload(gw, worker, sha256(fits), fits, step).send();
      assert.equal(ok.status, 200, ok.text);
    });

    it('bounds the uploads of one worker key per hour (429 quota_exceeded with retry-after)', async () => {
      const gw = await gateway({
        config: { blobUploads: { maxBytes: 1024 * 1024, itemsPerHour: 2, bytesPerHour: 1024 * 1024 } },
      });
      await register(gw, worker);
      const step = await runningStep(gw);
      for (const n of [1, 2]) {
        const text = canonicalJson(`blob ${n}`);
        assert.equal((await upload(gw, worker, sha256(text), text, step).send()).status, 200);
      }
      const third = canonicalJson('blob 3');
      const res = await upload(gw, worker, sha256(third), third, step).send();
      assert.equal(res.status, 429, res.text);
      assert.equal(errorOf(res), 'quota_exceeded');
      assert.ok(Number(res.headers.get('retry-after')) >= 1);
      // Another worker has its own quota.
      const other = generateKeyPair();
      await register(gw, other);
      assert.equal((await upload(gw, other, sha256(third), third, step).send()).status, 200);
    });

    it('is in the API reference, signed, with its documented codes', async () => {
      const gw = await gateway();
      const doc = (await gw.get('/openapi.json')).body as {
        paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown }>>;
      };
      const op = doc.paths['/store/blobs/{sha256}']?.put;
      assert.ok(op, 'PUT /store/blobs/{sha256} is documented');
      for (const status of ['200', '400', '401', '403', '413', '429']) assert.ok(op.responses[status], status);
    });
  });

  describe("a worker's step with the HTTP blob store (activities/swarm-client/gateway-blob-store.ts)", () => {
    /**
     * A gateway whose inference steps run as a swarm worker runs them: the worker-side step activities with the
     * gateway blob store, signed by `key` (registered or not). What crosses "Temporal" is measured.
     */
    async function workerJobGateway(key: KeyPair, reply: string, options: { gatewayDown?: { value: boolean } } = {}) {
      const runtime = await startFakeRuntime(WORKER_MODEL, () => ({
        content: reply,
        usage: { prompt_tokens: 10, completion_tokens: 10 },
      }));
      runtimes.push(runtime);
      // Built once the gateway listens (its client needs the URL); the runner calls it only later.
      const side: { steps?: StepActivities } = {};
      const results: unknown[] = [];
      const thrown: unknown[] = [];
      const gw = await gateway({
        swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
        jobRunner: (compute, jobs) =>
          createEmbeddedJobRunner({
            steps: {
              ...compute.steps,
              inferenceStep: async (input) => {
                try {
                  const run = await side.steps!.inferenceStep(input);
                  results.push(run);
                  return run;
                } catch (error) {
                  thrown.push(error);
                  throw error;
                }
              },
            },
            jobs: compute.jobs,
            store: jobs,
            waitMs: 10_000,
            retryDelayMs: 10,
          }),
      });
      side.steps = createStepActivities({
        swarm: gw.swarm,
        tiles: { renderTile: () => Promise.reject(new Error('no tiles here')) },
        imagery: { processImage: () => Promise.reject(new Error('no imagery here')) },
        nodePk: key.publicKey,
        blobs: options.gatewayDown
          ? {
              // The worker's gateway out of reach while `gatewayDown.value` (a gateway killed or restarting).
              put: (blobs, step) =>
                createGatewayBlobStore(
                  options.gatewayDown!.value
                    ? createGatewayClient({ gatewayUrl: 'http://127.0.0.1:1', signer: key, timeoutMs: 2_000 })
                    : clientOf(gw, key),
                  { outageWaitMs: 0 }, // down for longer than the upload waits
                ).put(blobs, step),
            }
          : createGatewayBlobStore(clientOf(gw, key)),
      });
      return { gw, results, thrown };
    }

    const askJob = (requester: KeyPair) =>
      signJob(requester, {
        h3_cell: CELL,
        steps: [{ id: 'big', type: 'inference', messages: [{ role: 'user', content: 'big' }] }],
        budget_credits: 0.1,
      });

    it("uploads a 3 MB output to the gateway: the step's result stays small, the job answers the whole output", async () => {
      const big = `BEGIN ${'geo'.repeat(MB3 / 3)}`;
      const { gw, results } = await workerJobGateway(worker, big);
      await register(gw, worker);
      const signed = askJob(generateKeyPair());
      const answer = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(answer.status, 200, answer.text.slice(0, 500));
      const job = answer.body as { job_id: string; steps: { output: { text: string } }[] };
      assert.equal(job.steps[0]!.output.text, big, 'finishJob resolved the whole output from the blob store');
      const stored = await gw.get(`/v1/compute/${job.job_id}`);
      assert.equal((stored.body as typeof job).steps[0]!.output.text, big);

      // What the worker's activity returned: a reference, not 3 MB.
      assert.ok(results.length >= 1);
      const largest = Math.max(...results.map((r) => JSON.stringify(r).length));
      assert.ok(largest < 64 * 1024, `largest step result ${largest} bytes`);
      const ref = (results[0] as { output: { text: { $blob: string; bytes: number } } }).output.text;
      const text = JSON.stringify(big);
      assert.equal(ref.$blob, sha256(text));
      assert.equal(ref.bytes, Buffer.byteLength(text));
      assert.equal((await gw.blobs.get([ref.$blob])).get(ref.$blob), text, 'the gateway holds the blob');
    });

    it("answers 503 store_unavailable with retry-after when the worker's gateway cannot be reached, and the same request then completes", async () => {
      const big = 'q'.repeat(100 * 1024);
      const gatewayDown = { value: true };
      const { gw } = await workerJobGateway(worker, big, { gatewayDown });
      await register(gw, worker);
      const signed = askJob(generateKeyPair());
      const failed = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(failed.status, 503, failed.text.slice(0, 300));
      assert.equal((failed.body as { error: string }).error, 'store_unavailable');
      assert.equal(failed.headers.get('retry-after'), '5');
      gatewayDown.value = false;
      const retried = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.equal(retried.status, 200, retried.text.slice(0, 300));
      assert.equal((retried.body as { steps: { output: { text: string } }[] }).steps[0]!.output.text, big);
    });

    it('fails the step attempt retryably when the upload is refused, never returning a reference', async () => {
      const big = 'z'.repeat(100 * 1024);
      // Not registered: the gateway refuses the upload (403 writer_not_allowed).
      const { gw, results, thrown } = await workerJobGateway(worker, big);
      const signed = askJob(generateKeyPair());
      const answer = await gw.post('/v1/compute', signed.body, signed.headers);
      assert.notEqual(answer.status, 200, answer.text.slice(0, 300));
      assert.equal(results.length, 0, 'no step result (no reference) was returned');
      assert.ok(thrown.length >= 1);
      const failure = thrown[0] as ApplicationFailure;
      assert.ok(failure instanceof ApplicationFailure, String(failure));
      assert.equal(failure.type, 'writer_not_allowed');
      assert.equal(failure.nonRetryable, false, 'Temporal retries it');
      assert.equal((await gw.blobs.get([sha256(JSON.stringify(big))])).size, 0);
    });
  });

  describe('createGatewayBlobStore.put', () => {
    it("waits out the per-address body budget (429 rate_limit's retry-after) instead of failing the step", async () => {
      // 600 KiB a minute: a bucket of 20 KiB, so a second 30 KiB blob right after the first waits ~2 s.
      const gw = await gateway({
        config: {
          httpLimits: {
            ipPerMinute: 0,
            principalPerMinute: 0,
            ipBodyBytesPerMinute: 600 * 1024,
            burstSeconds: 5,
            trustProxy: false,
            requestTimeoutMs: 30_000,
            headersTimeoutMs: 20_000,
          },
        },
      });
      await register(gw, worker);
      const step = await runningStep(gw);
      const texts = ['a', 'b'].map((c) => canonicalJson(c.repeat(30 * 1024)));
      const client = clientOf(gw, worker);
      const refusals: string[] = [];
      const store = createGatewayBlobStore({
        putBlob: async (...args) => {
          try {
            return await client.putBlob(...args);
          } catch (error) {
            refusals.push((error as GatewayError).code);
            throw error;
          }
        },
      });
      await store.put(new Map(texts.map((t) => [sha256(t), t])), step);
      assert.ok(refusals.length >= 1, 'the budget was spent at least once');
      assert.ok(
        refusals.every((code) => code === 'rate_limit'),
        refusals.join(),
      );
      const held = await gw.blobs.get(texts.map(sha256));
      assert.deepEqual([...held.values()].sort(), [...texts].sort());
    });

    it('fails retryably when the gateway is unreachable, and for good when the blob is too large', async () => {
      const gw = await gateway({
        config: { blobUploads: { maxBytes: 1024, itemsPerHour: 100, bytesPerHour: 1024 * 1024 } },
      });
      await register(gw, worker);
      const step = await runningStep(gw);
      const store = createGatewayBlobStore(clientOf(gw, worker));
      const small = canonicalJson('fits');
      await store.put(new Map([[sha256(small), small]]), step);
      assert.equal((await gw.blobs.get([sha256(small)])).get(sha256(small)), small);

      const large = canonicalJson('L'.repeat(2000));
      await assert.rejects(store.put(new Map([[sha256(large), large]]), step), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure);
        assert.equal(error.type, 'payload_too_large');
        assert.equal(error.nonRetryable, true);
        return true;
      });

      const down = createGatewayBlobStore(
        createGatewayClient({ gatewayUrl: 'http://127.0.0.1:1', signer: worker, timeoutMs: 2_000 }),
        { outageWaitMs: 1_200 },
      );
      const started = Date.now();
      await assert.rejects(down.put(new Map([[sha256(small), small]]), step), (error: unknown) => {
        assert.ok(error instanceof ApplicationFailure);
        assert.equal(error.type, 'store_unavailable');
        assert.equal(error.nonRetryable, false);
        return true;
      });
      assert.ok(Date.now() - started >= 400, 'it waited for the gateway before failing the attempt');
    });

    it('waits out a gateway that does not answer for a while (killed and restarting), then uploads', async () => {
      const gw = await gateway();
      await register(gw, worker);
      const step = await runningStep(gw);
      const unreachable = createGatewayClient({ gatewayUrl: 'http://127.0.0.1:1', signer: worker, timeoutMs: 2_000 });
      const up = clientOf(gw, worker);
      const calls: string[] = [];
      // The first three sends find no gateway listening; the fourth finds it back.
      const store = createGatewayBlobStore({
        putBlob: (...args) => {
          calls.push(calls.length < 3 ? 'down' : 'up');
          return (calls.length <= 3 ? unreachable : up).putBlob(...args);
        },
      });
      const text = canonicalJson('after the restart');
      await store.put(new Map([[sha256(text), text]]), step);
      assert.deepEqual(calls, ['down', 'down', 'down', 'up']);
      assert.equal((await gw.blobs.get([sha256(text)])).get(sha256(text)), text);
    });
  });
});
