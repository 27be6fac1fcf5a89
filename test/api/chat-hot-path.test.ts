import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/**
 * What the chat hot path keeps while getting cheaper (docs/benchmarks.md, chat): one kept-alive connection to
 * the runtime for consecutive completions, and the worker's outcome counted before any later request is read,
 * although it is now written after the answer.
 */
describe('chat completions: the hot path (connection reuse, outcome order)', () => {
  let runtime: Server;
  let connections = 0;
  let answered = 0;
  let gw: Gateway;

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
    gw = await startGateway({
      config: { apiKeys: ['sk-hot'] },
      swarm: {
        workerRuntimeUrl: `http://127.0.0.1:${(runtime.address() as AddressInfo).port}/v1`,
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

  it("counts the worker's outcome of a completion before the next request is answered", async () => {
    const completed = async () => {
      const res = await gw.get('/svc/workers');
      const workers = (res.body as { workers: { pk: string; jobs_completed: number }[] }).workers;
      return workers.find((w) => w.pk === gw.node.publicKey)?.jobs_completed;
    };
    const first = await completed();
    assert.equal(typeof first, 'number');
    for (let i = 1; i <= 3; i++) {
      assert.equal((await complete()).status, 200);
      assert.equal(await completed(), first! + i);
    }
  });
});
