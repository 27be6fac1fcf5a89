/**
 * Fuzz: every MCP tool of the perception and governance servers, called through the official SDK
 * client with fast-check generated arguments (wrong types, missing and extra fields, huge strings, invalid
 * cells, bad dates, prototype keys, hostile delegation chains), must answer a tool error (`isError`) or a
 * JSON-RPC invalid-params error — never an internal error, a hang or a crash — and both servers keep
 * answering with an intact audit chain. Their HTTP surfaces (/mcp with bodies that are not JSON-RPC, huge
 * bodies, bad sessions, foreign Origins; /approvals, /token, /compliance, /epoch/roll …) answer 4xx JSON.
 * FUZZ_RUNS sets the cases per tool and property (default 25).
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import fc from 'fast-check';
import { cellToChildren } from 'h3-js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { requestSigningMessage } from '../../core/gates/signature.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createClassifyTool } from '../../mcp/perception/tools/classify.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createFetchTileTool } from '../../mcp/perception/tools/fetch-tile.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { startClassifyServer, type ClassifyServer } from '../helpers/classify-server.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';
import { sentinelItem, startStacServer, type StacServer } from '../helpers/stac-server.js';
import { routesOf, type FuzzRoute } from './fuzz-gateway.js';
import { CaseTally, fcParams, fuzzRuns, timeoutFor } from './fuzz-runs.js';
import {
  PROTO_KEYS,
  POLLUTION_MARKER,
  anyJson,
  deepJsonText,
  headerText,
  hostileCell,
  hostileDate,
  hostileNumberText,
  hostilePublicKey,
  invalidJsonText,
  invalidUtf8,
  sample,
  trickyKeysText,
} from './hostile-values.js';
import {
  assertCleanAnswer,
  prototypeSnapshot,
  send,
  type AnswerRules,
  type FuzzRequest,
  type FuzzResponse,
} from './http-client.js';

const RUNS = fuzzRuns(25);
const tally = new CaseTally('fuzz', 'mcp');
const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
/** A cell inside the perception agent's certificate: plausible arguments reach the tools themselves. */
const INSIDE = cellToChildren(DEFAULT_PERCEPTION_CELL, 7).slice(0, 3);
const CALL_DEADLINE_MS = 10_000;
/**
 * The SDK client (1.32) adds an abort listener per call to its transport's one AbortSignal and never removes
 * it; a long run reconnects after this many calls so the client's leak does not flood the log.
 */
const CALLS_PER_CLIENT = 1000;

/** docs/protocol.md §7's body for an epoch roll with nothing to roll: the one 500 a route may answer on purpose. */
const EPOCH_ROLL_EMPTY = /^EPOCH: no blocks to roll since block_index \d+$/;

const base64 = (value: string | Buffer) => Buffer.from(value).toString('base64');

interface Servers {
  perception: PerceptionServer;
  governance: GovernanceServer;
  perceptionUrl: string;
  governanceUrl: string;
  agent: KeyPair;
  human: KeyPair;
  chain: DelegationCertificate[];
}

/** A plausible (often valid) value per argument name, so a call with one bad argument reaches the rest. */
function plausible(name: string, s: Servers): fc.Arbitrary<unknown> {
  const chainText = JSON.stringify(s.chain);
  switch (name) {
    case 'h3_cell':
      return fc.oneof(fc.constantFrom(...INSIDE, DEFAULT_PERCEPTION_CELL), hostileCell);
    case 'timestamp':
    case 'from':
    case 'to':
      return fc.oneof(fc.constantFrom('2026-03-01T10:00:00Z', '2026-02-01', '2026-03-01T12:00:00+01:00'), hostileDate);
    case 'write_to_spatial_memory':
      return fc.boolean();
    case 'max_cloud_cover':
      return fc.constantFrom(0, 20, 100, -1, 100.5, 1e308, -0);
    case 'bands':
      return fc.array(fc.constantFrom('B02', 'B03', 'B04', 'B08', 'B8A', 'B11', 'B12', 'SCL', 'B99', '', 'b02'), {
        maxLength: 14,
      });
    case 'model':
      return fc.constantFrom('prithvi-flood', 'other-model', '', '../x', 'a'.repeat(200));
    case 'task':
      return fc.constantFrom('flood_detection', 'segmentation', '');
    case 'agent_pk':
      return fc.oneof(fc.constant(s.agent.publicKey), hostilePublicKey);
    case 'facet':
      return fc.constantFrom('perception', 'compliance', '*', '', 'x'.repeat(300));
    case 'tool_name':
      return fc.constantFrom(...DEFAULT_ALLOWED_TOOLS, 'rm-rf', '', 'x'.repeat(300), ...PROTO_KEYS);
    case 'delegation_chain':
      return fc.oneof(
        fc.constantFrom(chainText, base64(chainText), s.chain, s.chain[0], '[]', '{}', 'not json', base64('x')),
        fc.constant(Array.from({ length: 9 }, () => s.chain[0])),
        fc.constant(JSON.parse(chainText.replace(/"max_depth":0/, '"max_depth":7')) as unknown),
        fc.constant([{ ...s.chain[0], h3_cells: ['8f2830828052d25'] }]),
        fc.constant('x'.repeat(70_000)),
        anyJson,
      );
    default:
      return anyJson;
  }
}

/** A value of any argument: wrong types, huge, deep, prototype-keyed. */
const hostileArgument: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: anyJson },
  fc.constantFrom(null, true, 0, -1, 1e308, '', 'NaN', [], {}),
  fc.integer({ min: 10_000, max: 500_000 }).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 100, max: 50_000 }).map((n) => Array.from({ length: n }, () => 'B02')),
  // The client serialises arguments with JSON.stringify, which overflows past a few thousand levels: deeper
  // nesting reaches the servers through the raw HTTP property below.
  deepJsonText.filter((t) => t.length < 12_000).map((t) => JSON.parse(t) as unknown),
  fc.constant({ [POLLUTION_MARKER]: 1 }),
  hostileCell,
  hostileDate,
);

/** Arguments for `tool` from its input schema: each property absent, plausible or hostile; extra keys too. */
function argumentsFor(tool: Tool, s: Servers): fc.Arbitrary<unknown> {
  const names = Object.keys(tool.inputSchema.properties ?? {});
  const fields = names.map((name) =>
    fc.oneof(
      fc.constant(undefined),
      { weight: 3, arbitrary: plausible(name, s).map((v) => [name, v] as const) },
      hostileArgument.map((v) => [name, v] as const),
    ),
  );
  const extra = fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    fc.tuple(fc.oneof(fc.constantFrom(...PROTO_KEYS), fc.string({ maxLength: 12 })), hostileArgument),
  );
  const object = fc.tuple(fc.tuple(...fields), extra).map(([present, more]) => {
    const out: Record<string, unknown> = {};
    for (const entry of [...present, more]) {
      if (entry === undefined) continue;
      Object.defineProperty(out, entry[0], { value: entry[1], enumerable: true, writable: true, configurable: true });
    }
    return out;
  });
  // Now and then arguments that are not an object at all.
  return fc.oneof({ weight: 9, arbitrary: object }, fc.constantFrom(null, [], 'args', 42, [{ h3_cell: INSIDE[0] }]));
}

/** Text of a tool result. */
const resultText = (result: CallToolResult): string =>
  result.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');

describe('fuzz: MCP tools and the MCP servers’ HTTP surfaces', function () {
  let meteo: OpenMeteoServer;
  let classify: ClassifyServer;
  let stac: StacServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  let s: Servers;
  let perceptionClient: Client;
  let governanceClient: Client;
  let baseline: string;

  before(async function () {
    this.timeout(60_000);
    [meteo, classify, stac] = await Promise.all([startOpenMeteoServer(), startClassifyServer(), startStacServer()]);
    stac.items = [
      sentinelItem('S2A_0220', '2026-02-20T10:00:00Z', {
        properties: { 'eo:cloud_cover': 4 },
        assets: { blue: stac.fileUrl('B02.tif'), red: stac.fileUrl('B04.tif'), nir: stac.fileUrl('B08.tif') },
      }),
    ];
    const agent = generateKeyPair();
    const human = generateKeyPair();
    const chain = [
      issueCertificate(human.secretKey, {
        agent_pk: agent.publicKey,
        h3_cells: [DEFAULT_PERCEPTION_CELL],
        facets: ['perception', 'compliance'],
        not_before: new Date(NOW - DAY).toISOString(),
        not_after: new Date(NOW + 30 * DAY).toISOString(),
        max_depth: 0,
        constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
      }),
    ];
    await startServers(agent, human, chain);
    baseline = prototypeSnapshot();
  });

  after(async () => {
    tally.print();
    await stopServers();
    await Promise.all([meteo?.close(), classify?.close(), stac?.close()]);
  });

  /** Both servers on one fresh audit store, with a connected client each. */
  async function startServers(agent: KeyPair, human: KeyPair, chain: DelegationCertificate[]): Promise<void> {
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    const clock = () => NOW;
    const perception = createPerceptionServer({
      store,
      agent,
      chain,
      principalLocal: false,
      clock,
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 3000, userAgent: 'geofabric-fuzz', clock }),
        createFetchTileTool({
          stac: { stacUrl: stac.url, collection: 'sentinel-2-l2a', timeoutMs: 3000, userAgent: 'geofabric-fuzz' },
        }),
        createClassifyTool({ classifyUrl: classify.url, timeoutMs: 3000 }),
        createEmbedTool(),
      ],
    });
    const perceptionUrl = (await perception.listen(0, '127.0.0.1')).url;
    const governance = createGovernanceServer({
      store,
      key: generateKeyPair(),
      chain,
      complianceUrl: perceptionUrl,
      complianceTimeoutMs: 3000,
      clock,
    });
    const governanceUrl = (await governance.listen(0, '127.0.0.1')).url;
    s = { perception, governance, perceptionUrl, governanceUrl, agent, human, chain };
    perceptionClient = await connect(perceptionUrl);
    governanceClient = await connect(governanceUrl);
  }

  async function stopServers(): Promise<void> {
    await Promise.all([perceptionClient?.close(), governanceClient?.close()]);
    await Promise.all([s?.perception.close(), s?.governance.close()]);
    await store?.close();
    db?.close();
  }

  /**
   * A fresh store per tool: the compliance tools read the whole audit chain on every call, so one chain grown
   * by every tool of a long run would make it quadratic. The chain each tool leaves is still checked.
   */
  async function freshServers(): Promise<void> {
    const verdict = await chainVerdict();
    assert.deepEqual(verdict.issues, []);
    await stopServers();
    await startServers(s.agent, s.human, s.chain);
  }

  async function chainVerdict(): Promise<{ is_valid: boolean; issues: string[] }> {
    const result = (await perceptionClient.callTool({ name: 'idn_verify_chain', arguments: {} })) as CallToolResult;
    return JSON.parse(resultText(result)) as { is_valid: boolean; issues: string[] };
  }

  const noPollution = (what: string) => {
    assert.equal(prototypeSnapshot(), baseline, `${what}: a prototype gained or lost a property`);
    assert.equal(({} as Record<string, unknown>)[POLLUTION_MARKER], undefined, `${what}: Object.prototype polluted`);
  };

  /** Both servers answer /health and their MCP sessions still list tools. */
  async function alive(): Promise<void> {
    for (const url of [s.perceptionUrl, s.governanceUrl]) {
      const res = await send(url, { method: 'GET', path: '/health' });
      assert.equal(res.status, 200, `${url} stopped answering /health: ${res.status} ${res.text}`);
    }
    assert.ok((await perceptionClient.listTools()).tools.length >= 8);
    assert.equal((await governanceClient.listTools()).tools.length, 3);
  }

  async function connect(url: string): Promise<Client> {
    const client = new Client({ name: 'fuzz', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    return client;
  }

  const calls = { perception: 0, governance: 0 };
  /** The server's client, replaced by a fresh one every CALLS_PER_CLIENT calls. */
  async function clientOf(server: 'perception' | 'governance'): Promise<Client> {
    if (++calls[server] % CALLS_PER_CLIENT === 0) {
      if (server === 'perception') {
        await perceptionClient.close();
        perceptionClient = await connect(s.perceptionUrl);
      } else {
        await governanceClient.close();
        governanceClient = await connect(s.governanceUrl);
      }
    }
    return server === 'perception' ? perceptionClient : governanceClient;
  }

  /** One tool call: a result (an error result must not be internal) or a JSON-RPC error that is not internal. */
  async function call(server: 'perception' | 'governance', name: string, args: unknown, label = `tool ${name}`) {
    const client = await clientOf(server);
    let outcome: string;
    try {
      const result = (await client.callTool({ name, arguments: args as Record<string, unknown> }, undefined, {
        timeout: CALL_DEADLINE_MS,
      })) as CallToolResult;
      const text = resultText(result);
      assert.doesNotMatch(text, /internal_error|internal error/i, `${name} answered an internal error: ${text}`);
      assert.doesNotMatch(text, /chain_break/, `${name} broke the audit chain: ${text}`);
      outcome = result.isError === true ? 'tool-error' : 'ok';
    } catch (error) {
      // Arguments nesting past 64 levels (with the JSON-RPC envelope) are refused by the strict body parser
      // (core/strict-json.ts) as HTTP 400 invalid_json, before the SDK sees them: a refusal, not a failure.
      if (!(error instanceof McpError) && /"error":"invalid_json".*nests deeper than 64/.test(String(error))) {
        tally.add(label, server);
        tally.add('outcome http-400-invalid_json', server);
        return;
      }
      if (!(error instanceof McpError)) throw error;
      assert.notEqual(error.code, ErrorCode.InternalError, `${name}: JSON-RPC internal error: ${error.message}`);
      assert.notEqual(error.code, ErrorCode.RequestTimeout, `${name}: no answer within ${CALL_DEADLINE_MS} ms`);
      assert.notEqual(error.code, ErrorCode.ConnectionClosed, `${name}: connection closed: ${error.message}`);
      outcome = `rpc-${error.code}`;
    }
    tally.add(label, server);
    tally.add(`outcome ${outcome}`, server);
    noPollution(name);
  }

  for (const server of ['perception', 'governance'] as const) {
    it(`${server}: every tool answers generated malformed arguments with a tool or invalid-params error`, async function () {
      const { tools } = await (await clientOf(server)).listTools();
      this.timeout(timeoutFor(tools.length * RUNS * 2, 60));
      for (const tool of tools) {
        await freshServers();
        await fc.assert(
          fc.asyncProperty(argumentsFor(tool, s), (args) => call(server, tool.name, args)),
          fcParams(RUNS * 2),
        );
        await alive();
      }
    });
  }

  it('unknown tool names and non-object arguments are JSON-RPC errors, not internal ones', async function () {
    this.timeout(timeoutFor(RUNS * 2, 40));
    const names = fc.oneof(
      fc.constantFrom('', ' ', ...PROTO_KEYS, 'toString', 'perception_weather ', 'x'.repeat(5000)),
      fc.string(),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        names,
        argumentsFor({ name: 'x', inputSchema: { type: 'object' } } as Tool, s),
        (p, name, args) => call(p ? 'perception' : 'governance', name, args, 'tool (unknown name)'),
      ),
      fcParams(RUNS * 2),
    );
    await alive();
  });

  it('regression: tools/call with arguments that are not an object is -32602 invalid params, not -32603 (mcp/shared/mcp-transports.ts)', async () => {
    for (const [client, name] of [
      [perceptionClient, 'perception_weather'],
      [governanceClient, 'verify_jurisdiction'],
    ] as const) {
      for (const args of [null, [], 'x', 7]) {
        await assert.rejects(
          client.callTool({ name, arguments: args as unknown as Record<string, unknown> }),
          (error: unknown) =>
            error instanceof McpError && error.code === ErrorCode.InvalidParams && /arguments/.test(error.message),
        );
      }
    }
    await alive();
  });

  it('the perception audit chain stays valid through every fuzzed call', async () => {
    const verdict = await chainVerdict();
    assert.deepEqual(verdict.issues, []);
    assert.equal(verdict.is_valid, true);
    tally.add('audit chain blocks checked', 'perception', undefined);
  });

  /** Rules for answers of the MCP transport: JSON-RPC error bodies are its protocol, never an internal one. */
  const mcpRules: AnswerRules = {
    otherErrorBody: (body) => {
      const rpc = body as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } } | null;
      if (rpc?.jsonrpc !== '2.0' || typeof rpc.error?.code !== 'number') return false;
      assert.notEqual(rpc.error.code, ErrorCode.InternalError, `JSON-RPC internal error: ${JSON.stringify(rpc)}`);
      return true;
    },
  };

  async function hit(
    property: string,
    family: string,
    url: string,
    req: FuzzRequest,
    rules: AnswerRules = {},
  ): Promise<FuzzResponse> {
    let res: FuzzResponse;
    try {
      res = await send(url, req);
    } catch (error) {
      throw new Error(`${property} ${req.method} ${req.path.slice(0, 200)}: ${(error as Error).message}`, {
        cause: error,
      });
    }
    tally.add(property, family, res.status, rules.allow5xx?.(res) === true);
    assertCleanAnswer(res, `${property} ${req.method} ${req.path.slice(0, 200)}`, rules);
    // A JSON-RPC answer inside a 200 (JSON or SSE) must not be an internal error either.
    assert.doesNotMatch(res.text, /"code":\s*-32603/, `internal JSON-RPC error: ${res.text.slice(0, 300)}`);
    noPollution(property);
    return res;
  }

  /** Opens a session on `url` by hand and returns its id. */
  async function session(url: string): Promise<string> {
    const res = await send(url, {
      method: 'POST',
      path: '/mcp',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } },
      }),
    });
    const id = res.headers['mcp-session-id'];
    assert.equal(typeof id, 'string', `no session: ${res.status} ${res.text}`);
    return id as string;
  }

  it('/mcp over raw HTTP: non-JSON-RPC, huge, deep and invalid UTF-8 bodies, bad sessions, foreign Origins → 4xx JSON', async function () {
    this.timeout(timeoutFor(RUNS * 20, 60));
    const rpc = fc.oneof(
      anyJson.map((v) => sample(JSON.stringify(v) ?? 'null')),
      invalidJsonText.map(sample),
      invalidUtf8.map(sample),
      deepJsonText.map(sample),
      trickyKeysText.map(sample),
      fc
        .record(
          {
            jsonrpc: fc.constantFrom('2.0', '1.0', 2, null),
            id: fc.oneof(fc.integer(), fc.string({ maxLength: 5 }), fc.constant(null), anyJson),
            method: fc.oneof(
              fc.constantFrom(
                'initialize',
                'tools/call',
                'tools/list',
                'ping',
                'resources/read',
                'notifications/initialized',
              ),
              fc.string({ maxLength: 10 }),
              anyJson,
            ),
            params: fc.oneof(anyJson, fc.record({ name: fc.string({ maxLength: 20 }), arguments: anyJson })),
          },
          { requiredKeys: [] },
        )
        .map((m) => sample(JSON.stringify(m))),
      fc
        .array(fc.constant({ jsonrpc: '2.0', id: 1, method: 'ping' }), { maxLength: 3 })
        .map((b) => sample(JSON.stringify(b))),
      fc
        .constantFrom(4 * 1024 * 1024 + 10, 5_000_000)
        .map((n) => sample(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"${'x'.repeat(n)}"}}`)),
      // A tool call whose arguments nest far deeper than any client would serialise.
      fc
        .tuple(
          fc.constantFrom('perception_weather', 'idn_verify_chain', 'verify_jurisdiction', 'generate_audit_proof'),
          deepJsonText,
        )
        .map(([name, deep]) =>
          sample(
            `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"${name}","arguments":{"h3_cell":"${INSIDE[0]}","facet":"perception","x":${deep}}}}`,
          ),
        ),
      fc
        .tuple(fc.constantFrom('perception_weather', 'check_delegation_chain'), deepJsonText)
        .map(([name, deep]) =>
          sample(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"${name}","arguments":${deep}}}`),
        ),
    );
    // Mostly what a client sends, so bodies reach the MCP layer; the rest is judged by the transport.
    const usually = <T>(plain: T, ...odd: T[]) =>
      fc.oneof({ weight: 4, arbitrary: fc.constant(plain) }, { weight: 1, arbitrary: fc.constantFrom(...odd) });
    const accept = usually('application/json, text/event-stream', 'application/json', 'text/html', '*/*', '');
    const contentType = usually('application/json', 'text/plain', 'application/json; charset=utf-8', '');
    const sessionKind = fc.constantFrom(
      'none',
      'none',
      'live',
      'live',
      'live',
      'live',
      'unknown',
      'uuid',
      'huge',
      'garbage',
    );
    const origin = usually<string | undefined>(undefined, 'https://evil.example', 'null', 'http://localhost:5173');
    const method = usually('POST', 'GET', 'DELETE', 'PUT', 'OPTIONS');
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        method,
        rpc,
        accept,
        contentType,
        sessionKind,
        origin,
        fc.constantFrom(undefined, '2024-11-05', '1999-01-01', 'x'),
        async (toPerception, verb, body, acc, type, kind, org, version) => {
          const url = toPerception ? s.perceptionUrl : s.governanceUrl;
          // A GET with a live session is an SSE stream that stays open by design: not a case here.
          const live = kind === 'live' && verb !== 'GET' ? await session(url) : undefined;
          const sessionId =
            live ??
            {
              none: undefined,
              live: undefined,
              unknown: 'gone',
              uuid: '00000000-0000-4000-8000-000000000000',
              huge: 's'.repeat(8000),
              garbage: 'a b\tc',
            }[kind];
          const res = await hit(
            `mcp-${verb}`,
            toPerception ? 'perception' : 'governance',
            url,
            {
              method: verb,
              path: '/mcp',
              headers: {
                ...(acc === '' ? {} : { accept: acc }),
                ...(type === '' ? {} : { 'content-type': type }),
                ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
                ...(org === undefined ? {} : { origin: org }),
                ...(version === undefined ? {} : { 'mcp-protocol-version': version }),
              },
              ...(verb === 'POST' || verb === 'PUT' ? { body: body.bytes } : {}),
            },
            mcpRules,
          );
          if ((org === 'https://evil.example' || org === 'null') && verb !== 'PUT') {
            assert.equal(res.status, 403, `a foreign Origin was served: ${res.status} ${res.text.slice(0, 200)}`);
          }
          // Sessions are a bounded resource (MAX_SESSIONS, then 429): a client ends the ones it opened.
          if (live !== undefined) {
            await send(url, { method: 'DELETE', path: '/mcp', headers: { 'mcp-session-id': live } });
          }
        },
      ),
      fcParams(RUNS * 20),
    );
    await alive();
  });

  it('the other HTTP routes of both servers (/approvals, /token, /compliance, /epoch/roll, /message …) → 4xx JSON', async function () {
    const servers = [
      { name: 'perception', url: s.perceptionUrl, routes: routesOf(s.perception.app) },
      { name: 'governance', url: s.governanceUrl, routes: routesOf(s.governance.app) },
    ];
    // /mcp has its own property; GET /sse is an open stream by design (fuzzed with a foreign Origin only).
    const routes = servers.flatMap((srv) =>
      srv.routes.filter((r) => r.path !== '/mcp' && r.method !== 'OPTIONS').map((r) => ({ ...srv, route: r })),
    );
    this.timeout(timeoutFor(routes.length * RUNS * 4, 60));
    const approval = fc.record(
      {
        version: fc.constantFrom(1, 2, '1'),
        agent_pk: fc.oneof(fc.constant(s.agent.publicKey), hostilePublicKey),
        principal_pk: fc.oneof(fc.constant(s.human.publicKey), hostilePublicKey),
        block_index: fc.constantFrom(0, 1, -1, 1.5, 2 ** 53, 1e308),
        approved_at: hostileDate,
        signature: fc.oneof(fc.stringMatching(/^[0-9a-f]{128}$/), fc.string({ maxLength: 10 })),
      },
      { requiredKeys: [] },
    );
    const tokenRequest = fc.record(
      {
        agent_pk: fc.oneof(fc.constant(s.agent.publicKey), hostilePublicKey),
        delegation_chain: plausible('delegation_chain', s),
        created_at: fc.oneof(fc.constant(new Date(NOW).toISOString()), hostileDate),
        ttl_seconds: fc.constantFrom(1, 900, 0, -1, 1e9, '60'),
        h3_cells: fc.array(hostileCell, { maxLength: 3 }),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      approval.map((v) => ({ json: v as unknown, sign: false })),
      tokenRequest.map((v) => ({ json: v as unknown, sign: true })),
      anyJson.map((v) => ({ json: v, sign: false })),
      fc.tuple(invalidJsonText, fc.constant(false)).map(([t, sign]) => ({ raw: t, sign })),
      deepJsonText.map((t) => ({ raw: t, sign: false })),
      trickyKeysText.map((t) => ({ raw: t, sign: false })),
    );
    const query = fc
      .array(
        fc.tuple(
          fc.constantFrom('from', 'to', 'sessionId', 'limit', ...PROTO_KEYS),
          fc.oneof(hostileDate, hostileNumberText, fc.string({ maxLength: 10 })),
        ),
        { maxLength: 4 },
      )
      .map((pairs) =>
        pairs.length === 0 ? '' : `?${pairs.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&')}`,
      );
    const param = fc.oneof(hostilePublicKey, fc.constant(s.agent.publicKey), fc.string({ maxLength: 20 }));
    for (const { name, url, route } of routes) {
      await fc.assert(
        fc.asyncProperty(
          query,
          fc.tuple(...(route.params.length === 0 ? [fc.constant('')] : route.params.map(() => param))),
          body,
          fc.constantFrom(undefined, 'https://evil.example'),
          headerText,
          async (q, params, b, org, junk) => {
            if (route.path === '/sse' && org === undefined) return; // an open SSE stream, by design
            const path = fillPath(route, params) + q;
            let payload: string | undefined;
            const headers: Record<string, string> = { 'x-fuzz': junk };
            if (route.method === 'POST') {
              headers['content-type'] = 'application/json';
              if ('raw' in b) payload = b.raw;
              else if (b.sign && typeof b.json === 'object' && b.json !== null && !Array.isArray(b.json)) {
                // Signed as the agent signs a token request: JCS of the body without `signature`.
                const signed = b.json as Record<string, unknown>;
                const signature = signMessage(s.agent.secretKey, requestSigningMessage(signed));
                payload = JSON.stringify(signed);
                headers['x-idn-signature'] = signature;
              } else payload = JSON.stringify(b.json) ?? 'null';
            }
            if (org !== undefined) headers.origin = org;
            await hit(
              `http ${route.method} ${route.path}`,
              name,
              url,
              { method: route.method, path, headers, ...(payload === undefined ? {} : { body: payload }) },
              {
                allow5xx: (res) =>
                  route.path === '/epoch/roll' && res.status === 500 && EPOCH_ROLL_EMPTY.test(String(errorOf(res))),
              },
            );
          },
        ),
        fcParams(RUNS * 4),
      );
    }
    await alive();
  });
});

function errorOf(res: FuzzResponse): unknown {
  try {
    return (JSON.parse(res.text) as { error?: unknown }).error;
  } catch {
    return undefined;
  }
}

function fillPath(route: FuzzRoute, values: readonly string[]): string {
  let i = 0;
  return route.path.replace(/[:*]([A-Za-z_][A-Za-z0-9_]*)/g, () => encodeURIComponent(values[i++] ?? 'x'));
}
