/**
 * Faults: a worker killed mid-job, embedded runner. The gateway's own worker runtime
 * (WORKER_RUNTIME_URL) is a local OpenAI-compatible server that these tests kill at chosen moments: the
 * connection dropped as the request arrives, the answer cut after its headers (socket destroyed half-way
 * through the body, or closed short of its content-length), the whole server closed while the step runs.
 *
 * What must hold: the job completes on a retry or fails with a clean JSON error (the spec's code), and the
 * credit ledger is never half-charged: a completed job has exactly one charge to the requester and entries that
 * sum to 0; a job whose only step failed posts nothing at all; a job that failed after a step completed charges
 * exactly what ran (that step and the proof, docs/guide.md "Compound jobs": "charging only what ran"), balanced.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { generateKeyPair } from '../../core/identity.js';
import type { LedgerEntry } from '../../core/ledger-types.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { inferenceJob, signJob } from '../helpers/jobs.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

interface StepResult {
  id: string;
  status: 'complete' | 'failed' | 'skipped';
  cost: number;
  worker_pk: string | null;
  record_id: string | null;
  output: Record<string, unknown>;
  error?: { code: string; detail: string };
}
interface Job {
  job_id: string;
  status: 'complete' | 'failed';
  steps: StepResult[];
  settlement: { total_credits: number; breakdown: Record<string, number>; proof_credits: number };
  proof: { record_id: string };
}
interface Failure {
  error: string;
  detail: string;
  job_id: string;
  step_id: string | null;
  job: Job;
}

const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
// Independent arithmetic in integer units of 1e-8 credits.
const units = (credits: number) => Math.round(credits * 1e8);
const credits = (...amounts: number[]) => amounts.reduce((sum, c) => sum + units(c), 0) / 1e8;
const PROOF = 0.0001;
const PER_TOKEN = 0.00001;
/** Every answer of the runtime: 100 + 20 tokens, so a completed step costs 0.0012 credits. */
const USAGE = { prompt_tokens: 100, completion_tokens: 20 };
const STEP_COST = credits((USAGE.prompt_tokens + USAGE.completion_tokens) * PER_TOKEN);

/**
 * How the runtime treats one chat request:
 * - `ok`: a whole answer;
 * - `drop`: the connection is destroyed as soon as the request arrived (no status line);
 * - `cut`: 200 and its headers, half the body, then the socket is destroyed;
 * - `short`: 200 with a content-length longer than what is sent, then the connection ends cleanly;
 * - `kill`: 200, its headers and half the body, then the whole server dies (every connection closed, the port
 *   refuses from then on) until `restart()`;
 * - `stall`: 200, its headers and half the body, then nothing (a frozen machine: no FIN, no RST);
 * - `html`: 200 with an HTML page; `no-choices`: 200 with JSON that is no chat completion.
 */
type Fault = 'ok' | 'drop' | 'cut' | 'short' | 'kill' | 'stall' | 'html' | 'no-choices';

interface DyingRuntime {
  /** Base URL as an OpenAI client takes it (ends in /v1). */
  url: string;
  /** Chat requests received, whatever became of them. */
  chats: { prompt: string; fault: Fault }[];
  /** Chooses the fault of the n-th chat request (1-based) from its last user message. */
  plan: (n: number, prompt: string) => Fault;
  alive(): boolean;
  /** A killed runtime listens again right away (as under a supervisor); default false: it stays down. */
  restartWhenKilled: boolean;
  kill(): Promise<void>;
  /** Listens again on the same port (the gateway's worker URL stays valid). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

async function startDyingRuntime(plan: DyingRuntime['plan']): Promise<DyingRuntime> {
  let server: Server;
  let port = 0;
  const sockets = new Set<Socket>();
  const listen = async () => {
    server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  };
  let up = false;
  const kill = async () => {
    if (!up) return;
    up = false;
    const closed = once(server, 'close');
    server.close();
    for (const socket of sockets) socket.destroy();
    await closed;
  };

  const runtime: DyingRuntime = {
    url: '',
    chats: [],
    plan,
    alive: () => up,
    restartWhenKilled: false,
    kill,
    restart: async () => {
      await listen();
      up = true;
    },
    close: kill,
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { model?: string; messages: Message[] };
    const prompt = [...body.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    const fault = runtime.plan(runtime.chats.length + 1, prompt);
    runtime.chats.push({ prompt, fault });
    if (fault === 'drop') return void req.socket.destroy();
    if (fault === 'html') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>502</html>');
    if (fault === 'no-choices') {
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"object":"chat.completion"}');
    }
    const answer = JSON.stringify({
      id: `chatcmpl-${runtime.chats.length}`,
      object: 'chat.completion',
      created: 1,
      model: body.model ?? WORKER_MODEL,
      choices: [{ index: 0, message: { role: 'assistant', content: `answer to ${prompt}` }, finish_reason: 'stop' }],
      usage: { ...USAGE, total_tokens: USAGE.prompt_tokens + USAGE.completion_tokens },
    });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(answer)) });
    if (fault === 'ok') return void res.end(answer);
    res.write(answer.slice(0, answer.length >> 1));
    if (fault === 'stall') return;
    // Let the half body reach the client first: it has the headers and is reading the body when it dies.
    await new Promise((resolve) => setTimeout(resolve, 30));
    if (fault === 'cut') res.destroy();
    else if (fault === 'short') req.socket.end();
    else {
      await kill();
      if (runtime.restartWhenKilled) await runtime.restart();
    }
  }

  await runtime.restart();
  runtime.url = `http://127.0.0.1:${port}/v1`;
  return runtime;
}
type Message = { role: string; content: string };

const sum = (entries: readonly LedgerEntry[]) => entries.reduce((total, e) => total + e.amount_units, 0);

describe('faults: a worker killed mid-job (embedded runner)', function () {
  this.timeout(20_000);
  const gateways: Gateway[] = [];
  const runtimes: DyingRuntime[] = [];

  afterEach(async () => {
    for (const gw of gateways.splice(0)) await gw.close();
    for (const runtime of runtimes.splice(0)) await runtime.close();
  });

  /** A gateway whose own worker is a runtime killed as `plan` says (runtime timeout 2 s, job wait 10 s). */
  async function setup(plan: DyingRuntime['plan'], options: { timeoutMs?: number; jobWaitMs?: number } = {}) {
    const runtime = await startDyingRuntime(plan);
    runtimes.push(runtime);
    const gw = await startGateway({
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL], timeoutMs: options.timeoutMs ?? 2000 },
      ...(options.jobWaitMs ? { jobWaitMs: options.jobWaitMs } : {}),
    });
    gateways.push(gw);
    return { gw, runtime, requester: generateKeyPair() };
  }

  const submit = (gw: Gateway, signed: ReturnType<typeof signJob>) =>
    gw.post('/v1/compute', signed.body, signed.headers);

  const jsonError = (res: TestResponse): Failure => {
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/, res.text);
    return res.body as Failure;
  };

  /** The job's entries: balanced, with the requester's charges netting to `total` credits. */
  async function assertCharged(gw: Gateway, jobId: string, requesterPk: string, total: number) {
    const entries = await gw.ledger.jobEntries(jobId);
    assert.equal(sum(entries), 0, 'the entries of a job sum to 0');
    const charges = entries.filter((e) => e.kind === 'job_charge');
    assert.ok(
      charges.every((e) => e.account_pk === requesterPk),
      'only the requester is charged',
    );
    assert.equal(sum(charges), -units(total), `the requester paid ${total} credits`);
    assert.equal(await gw.ledger.balance(requesterPk), -units(total));
    return entries;
  }

  /** What GET /svc/workers/:pk/earnings says the gateway's own worker (also the platform) holds. */
  const nodeBalance = async (gw: Gateway) => {
    const res = await gw.get(`/svc/workers/${gw.node.publicKey}/earnings`);
    assert.equal(res.status, 200, res.text);
    return (res.body as { balance_credits: number }).balance_credits;
  };

  describe('the worker dies during an attempt, then answers the retry', () => {
    for (const fault of ['drop', 'cut', 'short', 'kill'] as const) {
      it(`completes on the retry after "${fault}", with exactly one charge and balanced entries`, async () => {
        const { gw, runtime, requester } = await setup((n) => (n === 1 ? fault : 'ok'));
        // A killed runtime comes back at once (a supervisor restarts it), before the runner retries.
        runtime.restartWhenKilled = true;
        const res = await submit(gw, signJob(requester, inferenceJob('a park in Rome')));
        assert.equal(res.status, 200, res.text);
        const job = res.body as Job;
        assert.equal(job.status, 'complete');
        assert.deepEqual(
          runtime.chats.map((c) => c.fault),
          [fault, 'ok'],
        );
        const [step] = job.steps as [StepResult];
        assert.equal(step.output.text, 'answer to a park in Rome');
        assert.equal(step.worker_pk, gw.node.publicKey);
        assert.equal(step.cost, STEP_COST);
        assert.equal(job.settlement.total_credits, credits(STEP_COST, PROOF));

        const entries = await assertCharged(gw, job.job_id, requester.publicKey, job.settlement.total_credits);
        assert.deepEqual(entries.map((e) => [e.id, e.amount_units]).sort(), [
          [`job:${job.job_id}:charge`, -units(credits(STEP_COST, PROOF))],
          [`job:${job.job_id}:earning:${gw.node.publicKey}`, units(STEP_COST)],
          [`job:${job.job_id}:proof`, units(PROOF)],
        ]);
        assert.equal(await nodeBalance(gw), credits(STEP_COST, PROOF));
        // The step has one proof record, written by the attempt that completed.
        const record = await gw.get(`/store/proof/${encodeURIComponent(step.record_id!)}`);
        assert.equal(record.status, 200, record.text);

        // A replay is the same finished job: nothing runs or is posted again.
        const again = await submit(gw, signJob(requester, inferenceJob('a park in Rome')));
        assert.deepEqual(again.body, job);
        assert.equal(runtime.chats.length, 2);
        assert.deepEqual(await gw.ledger.jobEntries(job.job_id), entries);
      });
    }
  });

  describe('the worker is killed while the step runs and stays down', () => {
    it('fails cleanly with 502 runtime_unavailable and charges nothing; back up, a replay completes, charged once', async () => {
      const { gw, runtime, requester } = await setup(() => 'kill');
      const signed = signJob(requester, inferenceJob('a fountain in Rome'));
      const res = await submit(gw, signed);
      assert.equal(res.status, 502, res.text);
      const failure = jsonError(res);
      assert.equal(failure.error, 'runtime_unavailable');
      assert.equal(failure.step_id, 'ask');
      assert.equal(failure.job.status, 'failed');
      assert.equal(failure.job.steps[0]!.status, 'failed');
      assert.equal(failure.job.steps[0]!.cost, 0);
      assert.equal(failure.job.settlement.total_credits, 0);
      assert.equal(failure.job.settlement.proof_credits, 0);
      // One request reached the runtime before it died; the retries found the port closed.
      assert.equal(runtime.chats.length, 1);
      assert.equal(runtime.alive(), false);

      // Not half-charged: a job that ran no step posts nothing, and no record accounts for the step.
      assert.deepEqual(await gw.ledger.jobEntries(failure.job_id), []);
      assert.equal(await gw.ledger.balance(requester.publicKey), 0);
      assert.equal(await nodeBalance(gw), 0);
      const stepRecord = await gw.get(`/store/proof/${encodeURIComponent(`inference:${failure.job_id}:ask`)}`);
      assert.equal(stepRecord.status, 404);
      const stored = await gw.get(`/v1/compute/${failure.job_id}`);
      assert.equal(stored.status, 200);
      assert.deepEqual(stored.body, failure.job);

      // The worker is back: the transient failure runs again on replay, and is charged once.
      runtime.plan = () => 'ok';
      await runtime.restart();
      const up = await submit(gw, signed);
      assert.equal(up.status, 200, up.text);
      const job = up.body as Job;
      assert.equal(job.job_id, failure.job_id);
      assert.equal(job.proof.record_id, `compute:${job.job_id}:run-2`);
      assert.equal(job.settlement.total_credits, credits(STEP_COST, PROOF));
      const entries = await assertCharged(gw, job.job_id, requester.publicKey, job.settlement.total_credits);
      assert.deepEqual(
        entries.filter((e) => e.kind === 'job_charge').map((e) => e.id),
        [`job:${job.job_id}:run-2:charge`],
      );
      assert.equal(await nodeBalance(gw), credits(STEP_COST, PROOF));
    });
  });

  describe('the worker answers garbage, or stalls mid-answer', () => {
    // A 200 that is no chat completion is the runtime's failure, named as such (not a TypeError of ours).
    for (const [fault, code] of [
      ['html', 'runtime_unavailable'],
      ['no-choices', 'runtime_unavailable'],
    ] as const) {
      it(`fails cleanly with 502 ${code} when every attempt answers "${fault}", charging nothing`, async () => {
        const { gw, runtime, requester } = await setup(() => fault);
        const signed = signJob(requester, inferenceJob('a square in Rome'));
        const res = await submit(gw, signed);
        assert.equal(res.status, 502, res.text);
        const failure = jsonError(res);
        assert.equal(failure.error, code);
        assert.match(failure.detail ?? '', /answered 200 without a chat completion/);
        assert.equal(failure.step_id, 'ask');
        assert.equal(failure.job.settlement.total_credits, 0);
        assert.equal(runtime.chats.length, 3, 'the runner tried 3 times');
        assert.deepEqual(await gw.ledger.jobEntries(failure.job_id), []);
        assert.equal(await gw.ledger.balance(requester.publicKey), 0);

        // A sane worker again: the replay completes, charged once.
        runtime.plan = () => 'ok';
        const up = await submit(gw, signed);
        assert.equal(up.status, 200, up.text);
        const job = up.body as Job;
        const entries = await assertCharged(gw, job.job_id, requester.publicKey, credits(STEP_COST, PROOF));
        assert.equal(entries.filter((e) => e.kind === 'job_charge').length, 1);
      });
    }

    it('answers 504 job_timeout while a stalled worker holds the step, charges nothing, and fails cleanly when it dies', async () => {
      const { gw, runtime, requester } = await setup(() => 'stall', { jobWaitMs: 400 });
      try {
        const res = await submit(gw, signJob(requester, inferenceJob('a bridge in Rome')));
        assert.equal(res.status, 504, res.text);
        const body = res.body as { error: string; job_id: string };
        assert.equal(body.error, 'job_timeout');
        const running = await gw.get(`/v1/compute/${body.job_id}`);
        assert.equal((running.body as { status: string }).status, 'running');
        assert.deepEqual(await gw.ledger.jobEntries(body.job_id), []);

        // The frozen machine is finally gone (its connection reset, its port closed): the step fails, the job
        // with it, and still nothing is charged.
        await runtime.kill();
        const until = Date.now() + 5000;
        let stored: { status?: string; steps?: StepResult[]; error?: { code: string } } = {};
        while (stored.status !== 'failed' && Date.now() < until) {
          await new Promise((resolve) => setTimeout(resolve, 25));
          stored = (await gw.get(`/v1/compute/${body.job_id}`)).body as typeof stored;
        }
        assert.equal(stored.status, 'failed');
        assert.equal(stored.error?.code, 'runtime_unavailable');
        assert.deepEqual(await gw.ledger.jobEntries(body.job_id), []);
        assert.equal(await gw.ledger.balance(requester.publicKey), 0);
      } finally {
        await runtime.kill(); // a hung step would hold the gateway's close
      }
    });

    // The OpenAI client's timeout ends with the headers; runtime-client.ts bounds the whole answer.
    it('bounds a worker that stalls mid-answer by INFERENCE_TIMEOUT_MS, then completes on the retry', async () => {
      const { gw, runtime, requester } = await setup((n) => (n === 1 ? 'stall' : 'ok'), {
        timeoutMs: 300,
        jobWaitMs: 5000,
      });
      try {
        const started = Date.now();
        const res = await submit(gw, signJob(requester, inferenceJob('a church in Rome')));
        assert.equal(res.status, 200, res.text);
        assert.ok(Date.now() - started < 2000, `answered after ${Date.now() - started} ms`);
        assert.deepEqual(
          runtime.chats.map((c) => c.fault),
          ['stall', 'ok'],
        );
        const job = res.body as Job;
        const entries = await assertCharged(gw, job.job_id, requester.publicKey, credits(STEP_COST, PROOF));
        assert.equal(entries.filter((e) => e.kind === 'job_charge').length, 1);
      } finally {
        await runtime.kill(); // a hung step would hold the gateway's close
      }
    });
  });

  describe('a multi-step job whose later step loses its worker', () => {
    const twoSteps = (nonce: string) => ({
      steps: [
        { id: 'first', type: 'inference', messages: [{ role: 'user', content: 'one' }] },
        { id: 'second', type: 'inference', depends_on: 'first', messages: [{ role: 'user', content: 'two' }] },
      ],
      budget_credits: 0.1,
      nonce,
    });

    it('charges exactly the completed step and the proof, balanced; a replay runs only the lost step', async () => {
      const { gw, runtime, requester } = await setup((_n, prompt) => (prompt === 'two' ? 'kill' : 'ok'));
      const signed = signJob(requester, twoSteps('later step dies'));
      const res = await submit(gw, signed);
      assert.equal(res.status, 502, res.text);
      const failure = jsonError(res);
      assert.equal(failure.error, 'runtime_unavailable');
      assert.equal(failure.step_id, 'second');
      const [first, second] = failure.job.steps as [StepResult, StepResult];
      assert.deepEqual([first.status, second.status], ['complete', 'failed']);
      assert.deepEqual(failure.job.settlement.breakdown, { first: STEP_COST, second: 0 });
      assert.equal(failure.job.settlement.total_credits, credits(STEP_COST, PROOF));
      assert.deepEqual(
        runtime.chats.map((c) => [c.prompt, c.fault]),
        [
          ['one', 'ok'],
          ['two', 'kill'],
        ],
      );

      const entries = await assertCharged(gw, failure.job_id, requester.publicKey, credits(STEP_COST, PROOF));
      assert.equal(entries.filter((e) => e.kind === 'job_charge').length, 1);
      const earning = entries.find((e) => e.kind === 'step_earning')!;
      assert.deepEqual(
        [earning.account_pk, earning.amount_units, earning.step_ids],
        [gw.node.publicKey, units(STEP_COST), ['first']],
      );
      assert.ok(!entries.some((e) => e.step_ids.includes('second')), 'nothing is paid for the step that failed');
      assert.equal(await nodeBalance(gw), credits(STEP_COST, PROOF));

      // Back up: the replay reuses the completed step and runs only the lost one; the job's entries then net to
      // the one settlement of the completed job (run 2 posts only the difference).
      runtime.plan = () => 'ok';
      await runtime.restart();
      const up = await submit(gw, signed);
      assert.equal(up.status, 200, up.text);
      const job = up.body as Job;
      assert.deepEqual(job.steps[0], first);
      assert.deepEqual(
        runtime.chats.map((c) => c.prompt),
        ['one', 'two', 'two'],
      );
      assert.equal(job.settlement.total_credits, credits(STEP_COST, STEP_COST, PROOF));
      const after = await assertCharged(gw, job.job_id, requester.publicKey, job.settlement.total_credits);
      assert.deepEqual(
        after.filter((e) => e.kind === 'job_charge').map((e) => [e.id, e.amount_units]),
        [
          [`job:${job.job_id}:charge`, -units(credits(STEP_COST, PROOF))],
          [`job:${job.job_id}:run-2:charge`, -units(STEP_COST)],
        ],
      );
      assert.equal(await nodeBalance(gw), credits(STEP_COST, STEP_COST, PROOF));
    });

    it('of two parallel steps, charges only the one whose worker answered', async () => {
      // Independent steps share a level and run together; every answer to "b" is cut mid-body.
      const { gw, runtime, requester } = await setup((_n, prompt) => (prompt === 'b' ? 'cut' : 'ok'));
      const res = await submit(
        gw,
        signJob(requester, {
          steps: [
            { id: 'a', type: 'inference', messages: [{ role: 'user', content: 'a' }] },
            { id: 'b', type: 'inference', messages: [{ role: 'user', content: 'b' }] },
          ],
          nonce: 'parallel',
        }),
      );
      assert.equal(res.status, 502, res.text);
      const failure = jsonError(res);
      assert.equal(failure.error, 'runtime_unavailable');
      assert.equal(failure.step_id, 'b');
      assert.deepEqual(
        failure.job.steps.map((s) => [s.id, s.status, s.cost]),
        [
          ['a', 'complete', STEP_COST],
          ['b', 'failed', 0],
        ],
      );
      // "a" once, "b" on each of the runner's 3 attempts.
      assert.deepEqual(runtime.chats.map((c) => c.prompt).sort(), ['a', 'b', 'b', 'b']);
      const entries = await assertCharged(gw, failure.job_id, requester.publicKey, credits(STEP_COST, PROOF));
      assert.equal(entries.filter((e) => e.kind === 'job_charge').length, 1);
      assert.deepEqual(entries.find((e) => e.kind === 'step_earning')?.step_ids, ['a']);
    });
  });
});
