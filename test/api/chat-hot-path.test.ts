import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson } from '../../core/canonical-json.js';
import { DEFAULT_EPOCH_GENESIS_MS, EPOCH_MS } from '../../core/epoch.js';
import { sha256Hex } from '../../core/hash.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteWorkerRegistry } from '../../store/sqlite/worker-registry.js';
import type { WorkerRegistry } from '../../store/worker-registry.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/**
 * What the chat hot path keeps while getting cheaper (docs/benchmarks.md, chat): one kept-alive connection to
 * the runtime for consecutive completions; the worker's outcome counted in memory before any later request is
 * read, and written to the store in a batch after the answer (store/outcome-batch.ts), all of it by a graceful
 * shutdown; the completion's proof record queued and its recent-inference entry listed once the answer is written.
 */
describe('chat completions: the hot path (connection reuse, outcome order)', () => {
  let runtime: Server;
  let connections = 0;
  let answered = 0;
  let gw: Gateway;
  /** The registry under the gateway's batching one: what is written to the store. */
  let stored: WorkerRegistry;

  before(async () => {
    // A runtime that counts its TCP connections and answers every completion at once.
    runtime = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        answered++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            id: 'x',
            object: 'chat.completion',
            created: 1,
            model: 'tinyllama',
            choices: [{ index: 0, message: { role: 'assistant', content: 'A park.' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
          }),
        );
      });
    });
    runtime.on('connection', () => connections++);
    runtime.listen(0, '127.0.0.1');
    await once(runtime, 'listening');
    stored = createSqliteWorkerRegistry(openSqlite(':memory:'));
    gw = await startGateway({
      workers: stored,
      // No batch is written on its own during a test: only flush() and close() write (no timing in assertions).
      outcomeBatch: { delayMs: 3_600_000 },
      config: { apiKeys: ['sk-hot'], operatorToken: 'op-hot' },
      swarm: {
        workerRuntimeUrl: runtimeUrl(),
        workerModels: ['tinyllama'],
        prewarmModels: ['tinyllama'],
      },
    });
    await gw.swarm.prewarmed();
  });
  after(async () => {
    await gw.close();
    runtime.closeAllConnections();
    runtime.close();
    await once(runtime, 'close');
  });

  function runtimeUrl(): string {
    return `http://127.0.0.1:${(runtime.address() as AddressInfo).port}/v1`;
  }

  const complete = () =>
    gw.post(
      '/v1/chat/completions',
      { model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] },
      { authorization: 'Bearer sk-hot' },
    );

  it('sends consecutive completions (and the pre-warm) to the runtime over one kept-alive connection', async () => {
    const before = answered;
    for (let i = 0; i < 5; i++) assert.equal((await complete()).status, 200);
    assert.equal(answered - before, 5);
    assert.equal(connections, 1);
  });

  const completed = async (g: Gateway) => {
    const res = await g.get('/svc/workers');
    const workers = (res.body as { workers: { pk: string; jobs_completed: number }[] }).workers;
    return workers.find((w) => w.pk === g.node.publicKey)?.jobs_completed;
  };

  it("counts the worker's outcome of a completion before the next request is answered, and writes it in a batch", async () => {
    await gw.workers.flush();
    const first = await completed(gw);
    assert.equal(typeof first, 'number');
    assert.equal((await stored.get(gw.node.publicKey))?.jobs_completed, first);
    for (let i = 1; i <= 3; i++) {
      assert.equal((await complete()).status, 200);
      // Every read of the worker counts it: GET /svc/workers and the registry dispatch reads.
      assert.equal(await completed(gw), first! + i);
      assert.equal((await gw.workers.get(gw.node.publicKey))?.jobs_completed, first! + i);
    }
    // Not written on the answer's path: the store still holds the count from before, until the batch is written.
    assert.equal((await stored.get(gw.node.publicKey))?.jobs_completed, first);
    await gw.workers.flush();
    assert.equal((await stored.get(gw.node.publicKey))?.jobs_completed, first! + 3);
    assert.equal(await completed(gw), first! + 3, 'counted once when written');
  });

  it("dispatches on its own worker's record read at most once a second: this process's writes count at once, another's within that second", async () => {
    const pk = gw.node.publicKey;
    const read = stored.get.bind(stored);
    let reads = 0;
    stored.get = (key) => {
      if (key === pk) reads++;
      return read(key);
    };
    const served = async () => {
      const res = await complete();
      return res.status === 200 ? 'worker' : (res.body as { error: { code: string } }).error.code;
    };
    const seq = async () => (await stored.get(pk))!.heartbeat_seq + 1;
    try {
      assert.equal(await served(), 'worker');
      reads = 0;
      for (let i = 0; i < 5; i++) assert.equal(await served(), 'worker');
      assert.ok(reads <= 1, `${reads} reads of the worker's row for 5 completions within a second`);

      // This process leaves and comes back (through the gateway's registry): the next completion knows at once.
      await gw.workers.leave(pk, await seq(), Date.now());
      assert.equal(await served(), 'no_workers');
      await gw.swarm.heartbeat();
      assert.equal(await served(), 'worker');

      // Another process sharing the store makes the worker leave: within a second of the last read it is seen.
      await stored.leave(pk, await seq(), Date.now());
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      assert.equal(await served(), 'no_workers');
    } finally {
      stored.get = read;
      await gw.swarm.heartbeat();
    }
    assert.equal(await served(), 'worker');
  });

  it('writes every counted outcome when the gateway shuts down gracefully', async () => {
    const kept = createSqliteWorkerRegistry(openSqlite(':memory:'));
    const other = await startGateway({
      workers: kept,
      outcomeBatch: { delayMs: 3_600_000 },
      config: { apiKeys: ['sk-hot'] },
      swarm: { workerRuntimeUrl: runtimeUrl(), workerModels: ['tinyllama'] },
    });
    let open = true;
    try {
      assert.equal((await kept.get(other.node.publicKey))?.jobs_completed, 0);
      for (let i = 0; i < 4; i++) {
        const res = await other.post(
          '/v1/chat/completions',
          { model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] },
          { authorization: 'Bearer sk-hot' },
        );
        assert.equal(res.status, 200, res.text);
      }
      assert.equal((await kept.get(other.node.publicKey))?.jobs_completed, 0);
      open = false;
      await other.close();
      assert.equal((await kept.get(other.node.publicKey))?.jobs_completed, 4);
    } finally {
      if (open) await other.close();
    }
  });
  it("queues a completion's proof record and lists it in the recent inferences before the next request is answered", async () => {
    const messages = [{ role: 'user', content: 'one park in Rome' }];
    for (let i = 0; i < 3; i++) {
      const res = await complete();
      assert.equal(res.status, 200);
      const svc = (res.body as { svc: { job_id: string; proof_record_id: string; epoch: number; cost: number } }).svc;
      const recent = await gw.get('/svc/inference/recent?limit=1', { authorization: 'Bearer op-hot' });
      const [entry] = (recent.body as { entries: Record<string, unknown>[] }).entries;
      assert.equal(entry?.record_id, svc.proof_record_id);
      assert.equal(entry?.job_id, svc.job_id);
      assert.equal(entry?.epoch, svc.epoch);
      assert.equal(entry?.cost, svc.cost);
      await gw.writer.flush(); // writes what is queued: the record must be queued by now
      const record = await gw.proofs.getRecord(svc.proof_record_id);
      assert.ok(record, 'the record was queued with the answer');
      assert.equal(record.address.epoch, svc.epoch);
      const payload = record.payload as Record<string, unknown>;
      assert.equal(payload.job_id, svc.job_id);
      assert.equal(payload.cost, svc.cost);
      assert.equal(payload.prompt_sha256, sha256Hex(canonicalJson(messages)));
      assert.equal(payload.answer_sha256, sha256Hex('A park.'));
      assert.equal(payload.job_hash, entry?.job_hash);
      // The payload's fields in the order records always had (the hashes between tool_calls and cost).
      assert.deepEqual(Object.keys(payload), [
        'version',
        'job_id',
        'step_id',
        'provider',
        'model',
        'requested_model',
        'worker_pk',
        'tokens_in',
        'tokens_out',
        'usage_estimated',
        'latency_ms',
        'cold_start',
        'fallback_reason',
        'tool_calls',
        'prompt_sha256',
        'answer_sha256',
        'job_hash',
        'cost',
        'epoch',
        'h3_cell',
        'api_key_id',
      ]);
    }
  });

  it('files a completion whose record is queued after an hour boundary in the epoch its answer reported', async () => {
    // The clock moves one epoch as each answer leaves: after the answer, before its deferred record is queued.
    let now = DEFAULT_EPOCH_GENESIS_MS + 4000 * EPOCH_MS + 30 * 60_000;
    const edge = await startGateway({
      clock: () => now,
      config: { apiKeys: ['sk-edge'] },
      swarm: { workerRuntimeUrl: runtimeUrl(), workerModels: ['tinyllama'] },
    });
    edge.server.on('request', (_req, res: ServerResponse) => res.on('finish', () => (now += EPOCH_MS)));
    try {
      const res = await edge.post(
        '/v1/chat/completions',
        { model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] },
        { authorization: 'Bearer sk-edge' },
      );
      assert.equal(res.status, 200, res.text);
      const svc = (res.body as { svc: { proof_record_id: string; epoch: number } }).svc;
      assert.equal(svc.epoch, 4000);
      await edge.writer.flush();
      const record = await edge.proofs.getRecord(svc.proof_record_id);
      assert.equal(record?.address.epoch, 4000);
      assert.equal((record?.payload as { epoch: number }).epoch, 4000);
    } finally {
      await edge.close();
    }
  });

  it('answers JSON with its type and exact length, as Koa did', async () => {
    const res = await complete();
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(res.text)));
    assert.deepEqual(res.body, JSON.parse(res.text));
    assert.equal((res.body as { object: string }).object, 'chat.completion');
  });
  it('hashes the normalized request into job_hash, and the conversation as sent into prompt_sha256', async () => {
    const res = await gw.post(
      '/v1/chat/completions',
      {
        model: 'tinyllama',
        messages: [
          { role: 'system', content: 'be brief' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'one park' },
              { type: 'text', text: 'in Rome "é"' },
            ],
          },
        ],
        temperature: 0.5,
        max_tokens: 40,
        seed: 7,
        response_format: { type: 'json_object' },
        tools: [
          { type: 'function', function: { name: 'zeta', parameters: { type: 'object' } } },
          { type: 'function', function: { name: 'alpha' } },
        ],
      },
      { authorization: 'Bearer sk-hot' },
    );
    assert.equal(res.status, 200);
    const svc = (res.body as { svc: { job_id: string; proof_record_id: string; h3_cell: string } }).svc;
    await gw.writer.flush();
    const payload = (await gw.proofs.getRecord(svc.proof_record_id))?.payload as Record<string, unknown>;
    const messages = [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'one park\nin Rome "é"' },
    ];
    assert.equal(payload.prompt_sha256, sha256Hex(canonicalJson(messages)));
    const request = {
      job_id: svc.job_id,
      step_id: null,
      model: 'tinyllama',
      messages,
      sampling: { max_tokens: 40, temperature: 0.5, seed: 7 },
      tools: ['alpha', 'zeta'],
      response_format: { type: 'json_object' },
      want_locations: false,
      h3_cell: svc.h3_cell,
    };
    assert.equal(payload.job_hash, sha256Hex(canonicalJson(request)));
  });
});
