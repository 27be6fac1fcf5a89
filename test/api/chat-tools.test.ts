import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { ToolExecutor } from '../../activities/tools/execute-tool.js';
import {
  startFakeRuntime,
  type FakeReply,
  type FakeRequest,
  type FakeRuntime,
} from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Svc = { tool_calls: number; provider: string; locations?: { name: string; address: string }[] };
const svcOf = (value: unknown) => (value as { svc: Svc }).svc;
type Message = { role: string; content?: string; tool_call_id?: string };
const messagesOf = (r: FakeRequest) => r.body.messages as Message[];

describe('chat completions with tools and locations', () => {
  let worker: FakeRuntime;
  let gw: Gateway;
  let client: OpenAI;
  let reply: (r: FakeRequest) => FakeReply;
  const executed: { toolId: string; args: unknown }[] = [];
  const tools: ToolExecutor = {
    async execute(toolId, args) {
      executed.push({ toolId, args });
      return { ok: true, output: { results: [{ title: 'Villa Borghese', url: 'https://example.org/vb' }] } };
    },
  };

  /** The model searches first, then answers from the tool message. */
  const searchThenAnswer = (r: FakeRequest): FakeReply =>
    messagesOf(r).some((m) => m.role === 'tool')
      ? { content: 'Villa Borghese is a large park.' }
      : { tool_calls: [{ id: 'call_1', name: 'web-search', arguments: '{"query":"parks in Rome"}' }] };

  before(async () => {
    worker = await startFakeRuntime('worker', (r) => reply(r));
    gw = await startGateway({
      config: { apiKeys: ['sk-ops'] },
      swarm: { workerRuntimeUrl: worker.url, workerModels: ['tinyllama'] },
      swarmTools: tools,
    });
    client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'sk-ops', maxRetries: 0 });
  });
  beforeEach(() => {
    executed.length = 0;
    reply = searchThenAnswer;
  });
  after(async () => {
    await gw.close();
    await worker.close();
  });

  it('runs a registry tool the model calls and answers with its result (svc.tools)', async () => {
    const before = worker.chats().length;
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'a park in Rome?' }],
      svc: { tools: ['web-search'] },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.choices[0]?.message.content, 'Villa Borghese is a large park.');
    assert.deepEqual(executed, [{ toolId: 'web-search', args: { query: 'parks in Rome' } }]);
    const [first, second] = worker.chats().slice(before);
    const offered = first!.body.tools as { function: { name: string; parameters: unknown } }[];
    assert.equal(offered[0]?.function.name, 'web-search');
    assert.ok(offered[0]?.function.parameters);
    const toolMessage = messagesOf(second!).find((m) => m.role === 'tool')!;
    assert.equal(toolMessage.tool_call_id, 'call_1');
    assert.match(toolMessage.content ?? '', /Villa Borghese/);
    assert.equal(svcOf(completion).tool_calls, 1);
    assert.equal(svcOf(completion).provider, 'worker');
  });

  it('treats a function tool named by a registry id as that registry tool, also when streaming', async () => {
    const stream = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'a park in Rome?' }],
      tools: [{ type: 'function', function: { name: 'web-search' } }],
      stream: true,
    });
    let text = '';
    let last: unknown;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      last = chunk;
    }
    assert.equal(text, 'Villa Borghese is a large park.');
    assert.equal(executed.length, 1);
    assert.equal(svcOf(last).tool_calls, 1);
  });

  it('bounds tool rounds: after 3 the model must answer (tool_choice none)', async () => {
    reply = () => ({ content: 'still searching', tool_calls: [{ name: 'web-search', arguments: '{"query":"more"}' }] });
    const before = worker.chats().length;
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'loop' }],
      svc: { tools: ['web-search'] },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const calls = worker.chats().slice(before);
    assert.equal(calls.length, 4);
    assert.equal(calls[3]?.body.tool_choice, 'none');
    assert.equal(executed.length, 3);
    assert.equal(completion.choices[0]?.message.tool_calls, undefined);
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
  });

  it("returns a client's own function tool calls to the client, as OpenAI does", async () => {
    reply = () => ({ tool_calls: [{ id: 'call_w', name: 'get_weather', arguments: '{"city":"Rome"}' }] });
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } }],
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    assert.equal(completion.choices[0]?.finish_reason, 'tool_calls');
    assert.equal(call?.type === 'function' && call.function.name, 'get_weather');
    assert.equal(executed.length, 0);
  });

  it('503 no_workers when a required tool needs a trust tier or tool no worker has', async () => {
    const res = await gw.post(
      '/v1/chat/completions',
      { model: 'tinyllama', messages: [{ role: 'user', content: 'x' }], svc: { tools: ['file-ops'] } },
      { authorization: 'Bearer sk-ops' },
    );
    assert.equal(res.status, 503);
    assert.equal((res.body as { error: { code: string } }).error.code, 'no_workers');
  });

  it('asks for JSON when svc.locations is set and returns the places the model named', async () => {
    reply = () => ({
      content:
        '```json\n{"text": "Visit Villa Borghese.", "locations": [{"name": "Villa Borghese", ' +
        '"address": "Piazzale Napoleone I, Rome"}, {"name": ""}]}\n```',
    });
    const before = worker.chats().length;
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'one park' }],
      svc: { locations: true },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.choices[0]?.message.content, 'Visit Villa Borghese.');
    assert.deepEqual(svcOf(completion).locations, [{ name: 'Villa Borghese', address: 'Piazzale Napoleone I, Rome' }]);
    const sent = worker.chats()[before]!;
    assert.deepEqual(sent.body.response_format, { type: 'json_object' });
    assert.equal(messagesOf(sent)[0]?.role, 'system');
  });

  it('never invents locations: an answer that is not JSON gives its text and none', async () => {
    reply = () => ({ content: 'I would suggest the Pincio gardens.' });
    const completion = await client.chat.completions.create({
      model: 'tinyllama',
      messages: [{ role: 'user', content: 'one park' }],
      svc: { locations: true },
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    assert.equal(completion.choices[0]?.message.content, 'I would suggest the Pincio gardens.');
    assert.deepEqual(svcOf(completion).locations, []);
  });
});
