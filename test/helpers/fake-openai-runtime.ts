/**
 * A local model runtime that speaks the OpenAI chat completions protocol (as Ollama, llama.cpp server and
 * the fast-inference backbone do): `POST /v1/chat/completions`, streaming (SSE, `data: [DONE]`) and not,
 * with usage, tool calls, and `GET /v1/models`. Tests steer each answer with `reply`, and can delay, fail,
 * hang or cut a stream half-way; every request is logged.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface FakeToolCall {
  id?: string;
  name: string;
  arguments: string;
}

export interface FakeReply {
  content?: string;
  tool_calls?: FakeToolCall[];
  /** Default: prompt = characters / 4 of the messages, completion = words of the content. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
  delayMs?: number;
  /** Answer this HTTP status with an OpenAI error body instead. */
  status?: number;
  /** Accept the request and never answer. */
  hang?: boolean;
  /** Streaming only: send the first content chunk, then an in-stream error event. */
  failMidStream?: boolean;
  /** Streaming only: pause between content chunks. */
  chunkDelayMs?: number;
}

export interface FakeRuntime {
  /** Base URL as an OpenAI client takes it (ends in /v1). */
  url: string;
  requests: FakeRequest[];
  /** Requests whose client went away before the answer was complete. */
  aborted: number;
  /** Chat completion requests only. */
  chats(): FakeRequest[];
  reply: (request: FakeRequest) => FakeReply;
  close(): Promise<void>;
}

type Message = { role: string; content?: unknown };

const lastUser = (body: Record<string, unknown>): string => {
  const messages = (body.messages ?? []) as Message[];
  const user = [...messages].reverse().find((m) => m.role === 'user');
  return typeof user?.content === 'string' ? user.content : '';
};

const defaultUsage = (body: Record<string, unknown>, content: string) => ({
  prompt_tokens: Math.ceil(JSON.stringify(body.messages ?? []).length / 4),
  completion_tokens: content.split(/\s+/).filter(Boolean).length,
});

export async function startFakeRuntime(
  name: string,
  reply?: (request: FakeRequest) => FakeReply,
): Promise<FakeRuntime> {
  const runtime: FakeRuntime = {
    url: '',
    requests: [],
    aborted: 0,
    chats: () => runtime.requests.filter((r) => r.path.endsWith('/chat/completions')),
    reply: reply ?? ((request) => ({ content: `${name} says: ${lastUser(request.body)}` })),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
  const server: Server = createServer((req, res) => {
    void handle(runtime, name, req, res).catch(() => res.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  runtime.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return runtime;
}

async function handle(runtime: FakeRuntime, name: string, req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const body = (text ? JSON.parse(text) : {}) as Record<string, unknown>;
  const request: FakeRequest = { path: req.url ?? '', headers: req.headers, body };
  runtime.requests.push(request);
  res.once('close', () => {
    if (!res.writableFinished) runtime.aborted++;
  });

  if (req.method === 'GET' && request.path === '/v1/models') {
    return json(res, 200, { object: 'list', data: [{ id: name, object: 'model', created: 0, owned_by: name }] });
  }
  if (req.method !== 'POST' || request.path !== '/v1/chat/completions') {
    return json(res, 404, { error: { message: 'not found', type: 'invalid_request_error' } });
  }
  const answer = runtime.reply(request);
  if (answer.hang) return; // the client's timeout (or abort) ends it
  if (answer.delayMs) await new Promise((r) => setTimeout(r, answer.delayMs));
  if (answer.status) {
    return json(res, answer.status, { error: { message: `${name} failed`, type: 'server_error', code: null } });
  }
  const content = answer.content ?? '';
  const usage = answer.usage === undefined ? defaultUsage(body, content) : answer.usage;
  const model = typeof body.model === 'string' ? body.model : name;
  const id = `chatcmpl-${name}-${runtime.requests.length}`;
  const toolCalls = answer.tool_calls?.map((call, index) => ({
    index,
    id: call.id ?? `call_${index}`,
    type: 'function' as const,
    function: { name: call.name, arguments: call.arguments },
  }));
  const finish = toolCalls?.length ? 'tool_calls' : 'stop';
  const usageBody = usage && { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens };

  if (body.stream !== true) {
    return json(res, 200, {
      id,
      object: 'chat.completion',
      created: 1,
      model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: toolCalls?.length ? null : content, tool_calls: toolCalls },
          finish_reason: finish,
        },
      ],
      ...(usageBody ? { usage: usageBody } : {}),
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (data: unknown) => res.write(`data: ${JSON.stringify(data)}\n\n`);
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) =>
    send({ id, object: 'chat.completion.chunk', created: 1, model, choices: [{ index: 0, delta, finish_reason }] });
  chunk({ role: 'assistant', content: '' });
  const words = content.split(/(?<= )/);
  for (const [i, word] of words.entries()) {
    if (res.destroyed) return;
    if (answer.chunkDelayMs && i > 0) await new Promise((r) => setTimeout(r, answer.chunkDelayMs));
    chunk({ content: word });
    if (answer.failMidStream && i === 0) {
      send({ error: { message: `${name} broke mid-stream`, type: 'server_error' } });
      return res.end();
    }
  }
  if (toolCalls?.length) chunk({ tool_calls: toolCalls });
  chunk({}, finish);
  const streamOptions = body.stream_options as { include_usage?: boolean } | undefined;
  if (streamOptions?.include_usage && usageBody) {
    send({ id, object: 'chat.completion.chunk', created: 1, model, choices: [], usage: usageBody });
  }
  res.end('data: [DONE]\n\n');
}

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}
