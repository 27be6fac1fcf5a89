import assert from 'node:assert/strict';
import { getEventListeners, once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI, { APIConnectionTimeoutError } from 'openai';
import type { ChatCompletion } from 'openai/resources/chat/completions';
import {
  createRuntimeClient,
  upstreamError,
  type CompletionParams,
  type Provider,
} from '../../../activities/inference/runtime-client.js';
import { safeFetch, sameOriginOnly } from '../../../activities/safe-fetch.js';
import { ServiceError } from '../../../core/errors.js';

/**
 * The whole completion left the `openai` client for runtime-http.ts (a keep-alive node:http poster). What a
 * caller sees must not change: each upstream behaviour below is answered to the new client and to the old code
 * path (the `openai` client over safeFetch, as runtime-client.ts used it), and both must give the same result,
 * error code and detail included, after sending the upstream the same request.
 */

const TIMEOUT_MS = 400;
const params: CompletionParams = { model: 'tinyllama', messages: [{ role: 'user', content: 'one park in Rome' }] };
const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 1,
  model: 'tinyllama',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Villa Borghese' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
};
const COMPLETION = JSON.stringify(completion);

type Behaviour = (req: IncomingMessage, res: ServerResponse, rest: string) => void;

const json =
  (status: number, body: string, type = 'application/json') =>
  (_q: IncomingMessage, res: ServerResponse) => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };

const behaviours: Record<string, Behaviour> = {
  ok: json(200, COMPLETION, 'application/json; charset=utf-8'),
  'plus-json': json(200, COMPLETION, 'application/vnd.runtime+json'),
  bom: json(200, `\ufeff${COMPLETION}`),
  html: json(200, '<html>hello</html>', 'text/html'),
  'not-json': json(200, '{"choices": [', 'application/json'),
  'no-choices': json(200, '{"object":"list"}'),
  empty: json(200, '', 'application/json'),
  'no-content': (_q, res) => res.writeHead(204).end(),
  'openai-error': json(500, JSON.stringify({ error: { message: 'model exploded', type: 'server_error' } })),
  'text-error': json(502, 'Bad gateway', 'text/plain'),
  'json-error-without-error': json(429, JSON.stringify({ detail: 'slow down' })),
  'empty-error': (_q, res) => res.writeHead(401).end(),
  'not-modified-ish': (_q, res) => res.writeHead(300).end('choose'),
  'same-origin-307': (req, res, rest) =>
    rest.startsWith('/moved/')
      ? json(200, COMPLETION)(req, res)
      : res.writeHead(307, { location: `/same-origin-307/moved/v1/chat/completions` }).end(),
  'same-origin-303': (req, res, rest) =>
    rest.startsWith('/answer')
      ? json(200, COMPLETION)(req, res)
      : res.writeHead(303, { location: '/same-origin-303/answer' }).end('see other'),
  'other-origin': (_q, res) => res.writeHead(307, { location: 'http://127.0.0.2:9/v1/chat/completions' }).end(),
  'redirect-loop': (_q, res, rest) => res.writeHead(302, { location: `/redirect-loop${rest}x` }).end(),
  'bad-location': (_q, res) => res.writeHead(301, { location: 'http://[::1' }).end(),
  'hang-before-headers': () => undefined,
  'stall-mid-body': (_q, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length) });
    res.write(COMPLETION.slice(0, 10));
  },
  'cut-mid-body': (_q, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(COMPLETION.length) });
    res.write(COMPLETION.slice(0, 10), () => res.socket?.destroy());
  },
};

interface Seen {
  method: string;
  path: string;
  authorization: string | undefined;
  contentType: string | undefined;
  body: string;
}

describe('runtime client: whole completions over runtime-http.ts', () => {
  let server: Server;
  let origin: string;
  let seen: Seen[];
  let connections: number;

  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const path = req.url ?? '';
        seen.push({
          method: req.method ?? '',
          path,
          authorization: req.headers.authorization,
          contentType: req.headers['content-type'],
          body,
        });
        const [, name = '', ...rest] = path.split('/');
        const behaviour = behaviours[name];
        if (behaviour) behaviour(req, res, `/${rest.join('/')}`);
        else res.writeHead(404).end();
      });
    });
    server.on('connection', () => connections++);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    seen = [];
    connections = 0;
  });
  after(async () => {
    server.closeAllConnections();
    server.close();
    await once(server, 'close');
  });

  /** What the code before runtime-http.ts did: the openai client over safeFetch, one deadline. */
  async function before_(provider: Provider, baseURL: string, signal?: AbortSignal): Promise<ChatCompletion> {
    const client = new OpenAI({
      baseURL,
      apiKey: 'key-1',
      organization: null,
      project: null,
      timeout: TIMEOUT_MS,
      maxRetries: 0,
      logLevel: 'off',
      fetch: (url, init) => safeFetch(url as string | URL, init, sameOriginOnly(baseURL)),
    });
    const deadline = AbortSignal.timeout(TIMEOUT_MS);
    try {
      const answer = await client.chat.completions.create(
        { ...params, stream: false },
        { signal: signal ? AbortSignal.any([signal, deadline]) : deadline },
      );
      const choice = (answer as Partial<ChatCompletion> | null)?.choices?.[0];
      if (typeof choice?.message !== 'object' || choice.message === null) {
        throw new ServiceError('runtime_unavailable', 'the worker runtime answered 200 without a chat completion');
      }
      return answer;
    } catch (error) {
      throw upstreamError(
        deadline.aborted && !signal?.aborted ? new APIConnectionTimeoutError() : error,
        provider,
        TIMEOUT_MS,
      );
    }
  }

  const outcome = async (run: () => Promise<ChatCompletion>) => {
    try {
      return { answer: JSON.parse(JSON.stringify(await run())) as unknown };
    } catch (error) {
      return error instanceof ServiceError
        ? { code: error.code, status: error.status, detail: error.detail }
        : { thrown: (error as Error).name };
    }
  };
  const requests = () =>
    seen.splice(0).map(({ method, path, authorization, contentType, body }) => ({
      method,
      path,
      authorization,
      contentType,
      body,
    }));

  for (const name of Object.keys(behaviours)) {
    it(`answers as the openai client did: ${name}`, async () => {
      const baseURL = `${origin}/${name}/v1`;
      const client = createRuntimeClient({ provider: 'worker', baseURL, apiKey: 'key-1', timeoutMs: TIMEOUT_MS });
      const now = await outcome(() => client.complete(params));
      const sentNow = requests();
      const then = await outcome(() => before_('worker', baseURL));
      const sentThen = requests();
      assert.deepEqual(now, then);
      assert.deepEqual(sentNow, sentThen);
      assert.ok(sentNow.length > 0);
    });
  }

  it('refuses a runtime that does not listen as the openai client did', async () => {
    const baseURL = 'http://127.0.0.1:9/v1';
    const client = createRuntimeClient({ provider: 'backbone', baseURL, apiKey: 'key-1', timeoutMs: TIMEOUT_MS });
    const now = await outcome(() => client.complete(params));
    assert.deepEqual(now, await outcome(() => before_('backbone', baseURL)));
    assert.equal((now as { code?: string }).code, 'backbone_unavailable');
  });

  it("stops when the caller's signal aborts, as the openai client did (InferenceAborted)", async () => {
    const baseURL = `${origin}/hang-before-headers/v1`;
    const client = createRuntimeClient({ provider: 'worker', baseURL, apiKey: 'key-1', timeoutMs: 5000 });
    const now = await outcome(() => client.complete(params, AbortSignal.timeout(50)));
    const then = await outcome(() => before_('worker', baseURL, AbortSignal.timeout(50)));
    assert.deepEqual(now, { thrown: 'InferenceAborted' });
    assert.deepEqual(now, then);
  });

  it('follows one caller signal through many calls with one listener, and stops the call in flight when it aborts', async () => {
    const answered = createRuntimeClient({
      provider: 'worker',
      baseURL: `${origin}/ok/v1`,
      apiKey: 'k',
      timeoutMs: 5000,
    });
    const hanging = createRuntimeClient({
      provider: 'worker',
      baseURL: `${origin}/hang-before-headers/v1`,
      apiKey: 'k',
      timeoutMs: 5000,
    });
    const caller = new AbortController(); // a connection's signal (api/chat-lane.ts): it outlives its completions
    for (let i = 0; i < 5; i++) await answered.complete(params, caller.signal);
    assert.equal(getEventListeners(caller.signal, 'abort').length, 1);
    const inFlight = outcome(() => hanging.complete(params, caller.signal));
    await new Promise((resolve) => setTimeout(resolve, 50));
    caller.abort();
    assert.deepEqual(await inFlight, { thrown: 'InferenceAborted' });
  });

  it('sends consecutive completions over one kept-alive connection', async () => {
    const client = createRuntimeClient({
      provider: 'worker',
      baseURL: `${origin}/ok/v1`,
      apiKey: undefined,
      timeoutMs: TIMEOUT_MS,
    });
    for (let i = 0; i < 5; i++)
      assert.equal((await client.complete(params)).choices[0]?.message.content, 'Villa Borghese');
    assert.equal(seen.length, 5);
    assert.equal(seen[0]?.authorization, 'Bearer none'); // what the openai client sent without a key
    assert.equal(connections, 1);
  });
});
