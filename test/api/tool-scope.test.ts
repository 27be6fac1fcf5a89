/**
 * Gate 5 over every entry point (docs/security.md "The fifth gate"): the tools a chat completion can cause to run
 * (`svc.tools` and the names of its function tools) are judged like a compute step's, at entry, and again when
 * the gateway's embedded worker takes a completion or step up. A cell is judged by every jurisdiction it touches.
 * The search upstream is a local DuckDuckGo stand-in, so a refused search is one it never receives.
 */
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { createToolExecutor } from '../../activities/tools/execute-tool.js';
import { createWebSearch } from '../../activities/tools/web-search.js';
import { generateKeyPair } from '../../core/identity.js';
import {
  startFakeRuntime,
  type FakeReply,
  type FakeRequest,
  type FakeRuntime,
} from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { signJob } from '../helpers/jobs.js';
import { startDuckDuckGoServer, type DuckDuckGoServer } from '../helpers/search-servers.js';
import { examplePolicy } from '../helpers/tool-policy.js';

const ROME = '861e8050fffffff';
const BEIJING = '8631aa42fffffff';
/** Resolution 2 over the Yalu: its centroid lies in North Korea, and it covers Dandong, China. */
const DANDONG_R2 = '82302ffffffffff';
const AUTH = { authorization: 'Bearer sk-ops' };

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type OpenAiError = { error: { code: string; message: string } };

/** The model searches first, then answers from the tool message. */
const searchThenAnswer = (r: FakeRequest): FakeReply =>
  (r.body.messages as { role: string }[]).some((m) => m.role === 'tool')
    ? { content: 'Found it.' }
    : { tool_calls: [{ id: 'call_1', name: 'web-search', arguments: '{"query":"news"}' }] };

describe('gate 5 over every entry point: chat completions and the embedded worker', () => {
  let search: DuckDuckGoServer;
  let runtime: FakeRuntime;
  let gw: Gateway | undefined;

  beforeEach(async () => {
    search = await startDuckDuckGoServer();
    runtime = await startFakeRuntime('worker', searchThenAnswer);
  });
  afterEach(async () => {
    await gw?.close();
    gw = undefined;
    await runtime.close();
    await search.close();
  });

  /** A gateway whose embedded worker (in `workerCell`) searches through the local DuckDuckGo stand-in. */
  const start = async (workerCell = ROME) => {
    gw = await startGateway({
      config: { apiKeys: ['sk-ops'], toolPolicy: examplePolicy() },
      swarm: { workerRuntimeUrl: runtime.url, workerModels: ['tinyllama'], workerCell },
      swarmTools: createToolExecutor({
        webSearch: createWebSearch({
          braveUrl: 'http://127.0.0.1:9',
          braveApiKey: undefined,
          duckDuckGoUrl: search.url,
          timeoutMs: 2000,
          userAgent: 'geofabric-test',
        }),
      }),
    });
    return gw;
  };

  const chat = (g: Gateway, body: Record<string, unknown>) =>
    g.post(
      '/v1/chat/completions',
      { model: 'tinyllama', messages: [{ role: 'user', content: 'news?' }], ...body },
      AUTH,
    );

  const assertRefused = (res: { status: number; body: unknown; text: string }, place: RegExp) => {
    assert.equal(res.status, 403, res.text);
    const { error } = res.body as OpenAiError;
    assert.equal(error.code, 'tool_not_permitted');
    assert.match(error.message, /tool web-search/);
    assert.match(error.message, place);
    assert.match(error.message, /cn-no-web-search/);
  };

  it('searches for a Rome cell (the upstream is wired: a refusal below is the policy, not a dead upstream)', async () => {
    const g = await start();
    const res = await chat(g, { h3_cell: ROME, svc: { tools: ['web-search'] } });
    assert.equal(res.status, 200, res.text);
    assert.equal(search.requests.length, 1);
  });

  it('refuses svc.tools web-search at a Beijing cell at entry: 403, no search, no model call', async () => {
    const g = await start();
    for (const stream of [false, true]) {
      const res = await chat(g, { h3_cell: BEIJING, svc: { tools: ['web-search'] }, stream });
      assertRefused(res, new RegExp(`cell ${BEIJING} \\(CN, jurisdiction CN\\)`));
    }
    assert.equal(search.requests.length, 0);
    assert.equal(runtime.chats().length, 0);
  });

  it('refuses a function tool named web-search, and its case variants (the client would run those)', async () => {
    const g = await start();
    const tool = (name: string) => [{ type: 'function', function: { name, parameters: { type: 'object' } } }];
    for (const name of ['web-search', 'WEB-SEARCH', 'Web-Search']) {
      assertRefused(await chat(g, { h3_cell: BEIJING, tools: tool(name) }), /\(CN, jurisdiction CN\)/);
    }
    // Width, space and zero-width variants are no OpenAI function names, nor registry ids: refused before gate 5.
    for (const name of [' web-search', 'ｗｅｂ－ｓｅａｒｃｈ', 'web\u200b-search']) {
      for (const body of [{ tools: tool(name) }, { svc: { tools: [name] } }]) {
        const res = await chat(g, { h3_cell: BEIJING, ...body });
        assert.equal(res.status, 400, res.text);
      }
    }
    assert.equal(search.requests.length, 0);
    assert.equal(runtime.chats().length, 0);
  });

  it('judges a cell by every country it touches: a res-2 cell centred in North Korea covers Dandong, China', async () => {
    const g = await start();
    const res = await chat(g, { h3_cell: DANDONG_R2, svc: { tools: ['web-search'] } });
    assertRefused(res, new RegExp(`cell ${DANDONG_R2} \\(CN, jurisdiction CN\\)`));
    const signed = signJob(generateKeyPair(), {
      h3_cell: DANDONG_R2,
      steps: [
        {
          id: 'ask',
          type: 'inference',
          model: 'tinyllama',
          tools: ['web-search'],
          messages: [{ role: 'user', content: 'news?' }],
        },
      ],
      budget_credits: 0.1,
    });
    const compute = await g.post('/v1/compute', signed.body, signed.headers);
    assert.equal(compute.status, 403, compute.text);
    assert.equal((compute.body as { error: string }).error, 'tool_not_permitted');
    assert.equal(search.requests.length, 0);
  });

  it('refuses at take-up: the embedded worker in Beijing runs no search for a Rome chat that passed entry', async () => {
    const g = await start(BEIJING);
    const res = await chat(g, { h3_cell: ROME, svc: { tools: ['web-search'] } });
    assertRefused(res, new RegExp(`cell ${BEIJING} \\(CN, jurisdiction CN\\)`));
    assert.equal(search.requests.length, 0);
    assert.equal(runtime.chats().length, 0);
  });

  it('refuses at take-up a compute step the embedded worker in Beijing was handed: the step fails, nothing searched', async () => {
    const g = await start(BEIJING);
    const signed = signJob(generateKeyPair(), {
      h3_cell: ROME,
      steps: [
        {
          id: 'ask',
          type: 'inference',
          model: 'tinyllama',
          tools: ['web-search'],
          messages: [{ role: 'user', content: 'news?' }],
        },
      ],
      budget_credits: 0.1,
    });
    const res = await g.post('/v1/compute', signed.body, signed.headers);
    const body = res.body as { error?: string; job?: { status: string; steps: { error?: { code: string } }[] } };
    assert.equal(body.job?.status, 'failed', res.text);
    assert.equal(body.job?.steps[0]?.error?.code, 'tool_not_permitted', res.text);
    assert.equal(search.requests.length, 0);
    assert.equal(runtime.chats().length, 0);
  });

  it('refuses at take-up a step that never passed entry, called through the swarm directly', async () => {
    const g = await start();
    const step = {
      job_id: 'job-direct',
      step_id: 'ask',
      model: 'tinyllama',
      messages: [{ role: 'user' as const, content: 'news?' }],
      tools: ['web-search'],
      h3_cell: BEIJING,
    };
    await assert.rejects(g.swarm.runInference(step), (error: unknown) => {
      assert.ok(error instanceof ApplicationFailure, String(error));
      assert.equal(error.type, 'tool_not_permitted');
      assert.equal(error.nonRetryable, true);
      assert.match(error.message, new RegExp(`cell ${BEIJING} \\(CN, jurisdiction CN\\).*cn-no-web-search`));
      return true;
    });
    await assert.rejects(g.swarm.runInference({ ...step, h3_cell: DANDONG_R2 }), /cn-no-web-search/);
    assert.equal(search.requests.length, 0);
    assert.equal(runtime.chats().length, 0);
  });
});
