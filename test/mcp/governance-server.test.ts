import type { ToolPolicy } from '../../core/gates/tool-policy.js';
import { examplePolicy } from '../helpers/tool-policy.js';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToChildren, cellToParent, latLngToCell } from 'h3-js';
import { verifyAuditBundle, type AuditBundle } from '../../core/audit-bundle.js';
import { canonicalJson } from '../../core/canonical-json.js';
import {
  certificateHash,
  issueCertificate,
  type DelegationCertificate,
  type DelegationConstraints,
} from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { auditVerifyCommand } from '../../bin/audit-verify.js';
import { loadGovernanceKey } from '../../mcp/governance/server-key.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { verifyIdnToken } from '../../mcp/governance/token.js';
import { createTokenService } from '../../mcp/governance/token-service.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import { createEmbedTool } from '../../mcp/perception/tools/embed.js';
import { createWeatherTool } from '../../mcp/perception/tools/weather.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { agentToken, tokenVerifierOf } from '../helpers/agent-token.js';
import { startOpenMeteoServer, type OpenMeteoServer } from '../helpers/open-meteo-server.js';

/** The error code of a refusal: `error` of `{error, detail}`, or `error.data.reason` of the JSON-RPC body MCP routes answer. */
function errorCode(body: unknown): string {
  const error = (body as { error?: unknown }).error;
  return typeof error === 'string'
    ? error
    : String((error as { data?: { reason?: unknown } } | undefined)?.data?.reason);
}

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
/** A resolution 7 cell inside the certificate's resolution 5 cell, its resolution 4 parent, and Paris. */
const INSIDE = cellToChildren(CELL, 7)[3] as string;
const COARSER = cellToParent(CELL, 4);
const PARIS = latLngToCell(48.8566, 2.3522, 7);
const TOOL_NAMES = ['verify_jurisdiction', 'generate_audit_proof', 'check_delegation_chain'];
const ISSUER = 'geofabric-governance';
const AUDIENCE = 'geofabric-perception';

interface Json {
  status: number;
  body: Record<string, unknown>;
}

function text(result: unknown): string {
  const content = (result as CallToolResult).content[0];
  assert.equal(content?.type, 'text');
  return (content as { text: string }).text;
}
function ok<T = Record<string, unknown>>(result: unknown): T {
  assert.notEqual((result as CallToolResult).isError, true, text(result));
  return JSON.parse(text(result)) as T;
}
function toolError(result: unknown): string {
  assert.equal((result as CallToolResult).isError, true, `expected a tool error, got ${text(result)}`);
  return text(result);
}

function certificate(
  principal: KeyPair,
  agentPk: string,
  options: {
    cells?: string[];
    facets?: string[];
    notBefore?: number;
    notAfter?: number;
    maxDepth?: number;
    constraints?: DelegationConstraints | null;
  } = {},
): DelegationCertificate {
  return issueCertificate(principal.secretKey, {
    agent_pk: agentPk,
    h3_cells: options.cells ?? [CELL],
    facets: options.facets ?? ['perception', 'compliance'],
    not_before: new Date(options.notBefore ?? NOW - DAY).toISOString(),
    not_after: new Date(options.notAfter ?? NOW + 30 * DAY).toISOString(),
    max_depth: options.maxDepth ?? 0,
    constraints:
      options.constraints === undefined ? { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] } : options.constraints,
  });
}

/** Flips one hex digit of `hex` at `at` (a different digit, still hex). */
const flipHex = (hex: string, at = 10): string =>
  `${hex.slice(0, at)}${hex[at] === '0' ? '1' : '0'}${hex.slice(at + 1)}`;

describe('governance server (MCP)', function () {
  let meteo: OpenMeteoServer;
  let db: SqliteDatabase;
  let store: AuditStore;
  let now: number;
  let human: KeyPair;
  let agent: KeyPair;
  let chain: DelegationCertificate[];
  let perception: PerceptionServer;
  let perceptionUrl: string;
  let tmp: string;
  const servers: GovernanceServer[] = [];
  const clients: Client[] = [];
  /** Issues the perception agent's own tokens: only calls under a token count, and only they may roll. */
  const tokenIssuer = generateKeyPair();
  const agentAuth = async () => ({
    authorization: `Bearer ${await agentToken({ issuer: tokenIssuer, chain, nowMs: now })}`,
  });

  before(async () => {
    meteo = await startOpenMeteoServer();
  });
  after(() => meteo.close());

  beforeEach(async () => {
    now = NOW;
    tmp = mkdtempSync(join(tmpdir(), 'governance-test-'));
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    human = generateKeyPair();
    agent = generateKeyPair();
    chain = [certificate(human, agent.publicKey)];
    const clock = () => now;
    perception = createPerceptionServer({
      store,
      agent,
      chain,
      principalLocal: false,
      clock,
      tokenVerifier: tokenVerifierOf(tokenIssuer),
      tools: [
        createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock }),
        createEmbedTool(),
      ],
    });
    perceptionUrl = (await perception.listen(0, '127.0.0.1')).url;
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
    await perception.close();
    await store.close();
    db.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  interface Governance {
    url: string;
    server: GovernanceServer;
    key: KeyPair;
    client(): Promise<Client>;
    call<T = Record<string, unknown>>(name: string, args: Record<string, unknown>): Promise<T>;
    callError(name: string, args: Record<string, unknown>): Promise<string>;
    get(path: string, headers?: Record<string, string>): Promise<Json>;
    post(path: string, body: unknown, headers?: Record<string, string>): Promise<Json>;
  }

  async function governance(
    options: {
      chain?: DelegationCertificate[] | null;
      knownChains?: DelegationCertificate[][];
      complianceUrl?: string;
      allowedOrigins?: string[];
      tokenTtlSeconds?: number;
      maxBundleBlocks?: number;
      toolPolicy?: ToolPolicy;
    } = {},
  ): Promise<Governance> {
    const key = generateKeyPair();
    const server = createGovernanceServer({
      store,
      key,
      chain: options.chain === undefined ? chain : options.chain,
      knownChains: options.knownChains ?? [],
      complianceUrl: options.complianceUrl ?? perceptionUrl,
      complianceTimeoutMs: 2000,
      clock: () => now,
      allowedOrigins: options.allowedOrigins ?? [],
      ...(options.tokenTtlSeconds === undefined ? {} : { tokenTtlSeconds: options.tokenTtlSeconds }),
      ...(options.maxBundleBlocks === undefined ? {} : { maxBundleBlocks: options.maxBundleBlocks }),
      toolPolicy: options.toolPolicy,
    });
    servers.push(server);
    const { url } = await server.listen(0, '127.0.0.1');
    let shared: Client | undefined;
    const connect = async () => {
      const client = new Client({ name: 'governance-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
      clients.push(client);
      return client;
    };
    const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const gov: Governance = {
      url,
      server,
      key,
      client: connect,
      async call(name, args) {
        shared ??= await connect();
        return ok(await shared.callTool({ name, arguments: args }));
      },
      async callError(name, args) {
        shared ??= await connect();
        return toolError(await shared.callTool({ name, arguments: args }));
      },
      get: (path, headers) => request('GET', path, undefined, headers),
      post: (path, body, headers) => request('POST', path, body, headers),
    };
    return gov;
  }

  /** Perception calls through the official client: real breadcrumbs, epochs and violations in the store. */
  async function perceptionCalls(cells: string[]): Promise<void> {
    const client = new Client({ name: 'perception-test', version: '1.0.0' });
    const requestInit = { headers: await agentAuth() };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${perceptionUrl}/mcp`), { requestInit }));
    clients.push(client);
    for (const cell of cells) {
      await client.callTool({ name: 'perception_weather', arguments: { h3_cell: cell } });
      now += 60_000;
    }
  }
  async function rollEpoch(): Promise<void> {
    const res = await fetch(`${perceptionUrl}/epoch/roll`, { method: 'POST', headers: await agentAuth() });
    assert.equal(res.status, 200, await res.text());
  }

  describe('transport and health', () => {
    it('lists the three tools with their input schemas', async () => {
      const gov = await governance();
      const { tools } = await (await gov.client()).listTools();
      assert.deepEqual(
        tools.map((t) => t.name),
        TOOL_NAMES,
      );
      const byName = new Map(tools.map((t) => [t.name, t]));
      const jurisdiction = byName.get('verify_jurisdiction')!;
      assert.deepEqual(jurisdiction.inputSchema.required, ['h3_cell', 'facet']);
      assert.deepEqual(Object.keys(jurisdiction.inputSchema.properties ?? {}).sort(), [
        'agent_pk',
        'delegation_chain',
        'facet',
        'h3_cell',
      ]);
      const delegation = byName.get('check_delegation_chain')!;
      assert.deepEqual(delegation.inputSchema.required, ['tool_name']);
      assert.deepEqual(Object.keys(byName.get('generate_audit_proof')!.inputSchema.properties ?? {}).sort(), [
        'agent_pk',
        'delegation_chain',
        'from',
        'to',
      ]);
    });

    it('answers /health with status, service, version 0.1.0, tools, cert_loaded and server_pk', async () => {
      const gov = await governance();
      const health = await gov.get('/health');
      assert.equal(health.status, 200);
      assert.deepEqual(health.body, {
        status: 'ok',
        service: 'geofabric-governance',
        version: '0.1.0',
        tools: TOOL_NAMES,
        cert_loaded: true,
        server_pk: gov.key.publicKey,
        agent_pk: agent.publicKey,
      });
      const bare = await governance({ chain: null });
      const health2 = await bare.get('/health');
      assert.equal(health2.body.cert_loaded, false);
      assert.equal(health2.body.agent_pk, null);
    });

    it('accepts an initialize with protocol version 2024-11-05 on the raw stream', async () => {
      const gov = await governance();
      const res = await fetch(`${gov.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 'old', version: '1' } },
        }),
      });
      assert.equal(res.status, 200);
      assert.ok(res.headers.get('mcp-session-id'));
      const body = await res.text();
      const data = body
        .split('\n')
        .find((line) => line.startsWith('data: '))
        ?.slice('data: '.length);
      const message = JSON.parse(data ?? body) as {
        result: { protocolVersion: string; serverInfo: { name: string; version: string } };
      };
      assert.equal(message.result.protocolVersion, '2024-11-05');
      assert.deepEqual(message.result.serverInfo, { name: 'geofabric-governance', version: '0.1.0' });
    });

    it('refuses a foreign Origin on every route with 403, and admits loopback and configured ones', async () => {
      const gov = await governance({ allowedOrigins: ['https://console.example.org'] });
      const init = (origin?: string) =>
        fetch(`${gov.url}/mcp`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(origin ? { origin } : {}),
          },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
          }),
        });
      const foreign = await init('https://evil.example.com');
      assert.equal(foreign.status, 403);
      // An MCP route refuses in JSON-RPC, so an SDK surfaces the reason.
      assert.deepEqual(await foreign.json(), {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32000,
          message: 'origin https://evil.example.com may not use /mcp',
          data: { reason: 'origin_not_allowed', detail: 'origin https://evil.example.com may not use /mcp' },
        },
      });
      assert.equal((await init('null')).status, 403);
      const token = await gov.post('/token', {}, { origin: 'https://evil.example.com' });
      assert.equal(token.status, 403);
      assert.equal(token.body.error, 'origin_not_allowed');
      // Every route, not only /mcp and /token.
      const health = await gov.get('/health', { origin: 'https://evil.example.com' });
      assert.equal(health.status, 403);
      assert.equal(health.body.error, 'origin_not_allowed');
      for (const origin of [undefined, 'http://localhost:6274', 'https://console.example.org']) {
        const res = await init(origin);
        assert.equal(res.status, 200, String(origin));
        await res.body?.cancel();
      }
    });

    it('answers unknown routes and session-less GET /mcp with JSON errors, never a stack trace', async () => {
      const gov = await governance();
      assert.deepEqual((await gov.get('/nope')).body, { error: 'not_found', detail: 'no route for GET /nope' });
      const get = await gov.get('/mcp');
      assert.equal(get.status, 400);
      assert.equal(get.body.error, 'invalid_request');
      const stale = await gov.get('/mcp', { 'mcp-session-id': 'gone' });
      assert.equal(stale.status, 404);
    });
  });

  describe('verify_jurisdiction', () => {
    it('authorizes the configured agent in its cell and resolves the jurisdiction', async () => {
      const gov = await governance();
      const answer = await gov.call('verify_jurisdiction', { h3_cell: CELL, facet: 'perception' });
      assert.equal(answer.authorized, true);
      assert.equal(answer.signature_valid, true);
      assert.equal(answer.cert_active, true);
      assert.equal(answer.cell_authorized, true);
      assert.equal(answer.facet_authorized, true);
      assert.equal(answer.agent_pk, agent.publicKey);
      assert.equal(answer.principal_pk, human.publicKey);
      assert.equal(answer.valid_until, new Date(NOW + 30 * DAY).toISOString());
      assert.deepEqual(answer.errors, []);
      const jurisdiction = answer.jurisdiction as { country_code: string; frameworks: string[] };
      assert.equal(jurisdiction.country_code, 'IT');
      assert.ok(jurisdiction.frameworks.includes('EU_AI_ACT'), jurisdiction.frameworks.join());
      assert.equal(answer.cert_hash, certificateHash(chain[0]!));
    });

    it('allows a child cell by H3 containment and refuses a coarser one and a cell elsewhere', async () => {
      const gov = await governance();
      const child = await gov.call('verify_jurisdiction', { h3_cell: INSIDE, facet: 'perception' });
      assert.equal(child.authorized, true);
      assert.equal(child.cell_authorized, true);
      for (const cell of [COARSER, PARIS]) {
        const answer = await gov.call('verify_jurisdiction', { h3_cell: cell, facet: 'perception' });
        assert.equal(answer.authorized, false, cell);
        assert.equal(answer.cell_authorized, false, cell);
        assert.equal(answer.signature_valid, true);
        assert.equal(answer.cert_active, true);
        assert.match((answer.errors as string[]).join(), /outside the delegated cells/);
      }
      const paris = await gov.call('verify_jurisdiction', { h3_cell: PARIS, facet: 'perception' });
      assert.equal((paris.jurisdiction as { country_code: string }).country_code, 'FR');
    });

    it('refuses a facet the certificate does not grant', async () => {
      const gov = await governance();
      const answer = await gov.call('verify_jurisdiction', { h3_cell: CELL, facet: 'actuation' });
      assert.equal(answer.authorized, false);
      assert.equal(answer.facet_authorized, false);
      assert.equal(answer.cell_authorized, true);
    });

    it('says cert_active false once the certificate has expired, and before it starts', async () => {
      const gov = await governance();
      now = NOW + 31 * DAY;
      const expired = await gov.call('verify_jurisdiction', { h3_cell: CELL, facet: 'perception' });
      assert.equal(expired.authorized, false);
      assert.equal(expired.cert_active, false);
      assert.equal(expired.signature_valid, true);
      assert.match((expired.errors as string[]).join(), /expired/);
      now = NOW - 2 * DAY;
      const early = await gov.call('verify_jurisdiction', { h3_cell: CELL, facet: 'perception' });
      assert.equal(early.cert_active, false);
    });

    it('says signature_valid false for a certificate whose signature was altered', async () => {
      const gov = await governance();
      const forged = { ...chain[0]!, principal_signature: flipHex(chain[0]!.principal_signature) };
      const answer = await gov.call('verify_jurisdiction', {
        h3_cell: CELL,
        facet: 'perception',
        delegation_chain: forged,
      });
      assert.equal(answer.authorized, false);
      assert.equal(answer.signature_valid, false);
      assert.equal(answer.cell_authorized, true);
      assert.equal(answer.agent_pk, agent.publicKey);
      // Widening the cells after signing is caught the same way.
      const edited = { ...chain[0]!, h3_cells: [CELL, PARIS] };
      const widened = await gov.call('verify_jurisdiction', {
        h3_cell: PARIS,
        facet: 'perception',
        delegation_chain: JSON.stringify(edited),
      });
      assert.equal(widened.authorized, false);
      assert.equal(widened.signature_valid, false);
    });

    it('authorizes a narrowing two-link chain and refuses one with a widened link', async () => {
      const gov = await governance();
      const sub = generateKeyPair();
      const root = certificate(human, agent.publicKey, { maxDepth: 1 });
      const narrow = certificate(agent, sub.publicKey, { cells: [INSIDE], facets: ['perception'] });
      const good = await gov.call('verify_jurisdiction', {
        h3_cell: INSIDE,
        facet: 'perception',
        delegation_chain: [root, narrow],
      });
      assert.equal(good.authorized, true, JSON.stringify(good.errors));
      assert.equal(good.agent_pk, sub.publicKey);
      assert.equal(good.principal_pk, human.publicKey);
      assert.equal(good.chain_depth, 2);
      // The second link hands out Paris, which the human never delegated.
      const wide = certificate(agent, sub.publicKey, { cells: [PARIS], facets: ['perception'] });
      const bad = await gov.call('verify_jurisdiction', {
        h3_cell: PARIS,
        facet: 'perception',
        delegation_chain: Buffer.from(JSON.stringify([root, wide])).toString('base64'),
      });
      assert.equal(bad.authorized, false);
      assert.equal(bad.signature_valid, false);
      assert.match((bad.errors as string[]).join(), /widened/);
    });

    it('names the field of a bad argument and refuses an unknown agent without a chain', async () => {
      const gov = await governance();
      assert.match(await gov.callError('verify_jurisdiction', { h3_cell: 'rome', facet: 'perception' }), /h3_cell/);
      assert.match(
        await gov.callError('verify_jurisdiction', { h3_cell: CELL, facet: 'perception', agent_pk: 'XYZ' }),
        /agent_pk/,
      );
      assert.match(
        await gov.callError('verify_jurisdiction', {
          h3_cell: CELL,
          facet: 'perception',
          delegation_chain: 'not base64!',
        }),
        /delegation_chain/,
      );
      const stranger = generateKeyPair().publicKey;
      assert.match(
        await gov.callError('verify_jurisdiction', { h3_cell: CELL, facet: 'perception', agent_pk: stranger }),
        new RegExp(`no delegation certificate is known for agent ${stranger}`),
      );
      // A chain for another agent than agent_pk is inconsistent input.
      assert.match(
        await gov.callError('verify_jurisdiction', {
          h3_cell: CELL,
          facet: 'perception',
          agent_pk: stranger,
          delegation_chain: chain,
        }),
        /delegation_chain delegates to agent/,
      );
      const bare = await governance({ chain: null });
      assert.match(
        await bare.callError('verify_jurisdiction', { h3_cell: CELL, facet: 'perception' }),
        /no delegation certificate is configured/,
      );
    });

    it('answers for another agent by agent_pk + delegation_chain, or by a chain it was given', async () => {
      const otherHuman = generateKeyPair();
      const other = generateKeyPair();
      const otherChain = [certificate(otherHuman, other.publicKey, { cells: [cellToParent(PARIS, 5)] })];
      const third = generateKeyPair();
      const thirdChain = [certificate(otherHuman, third.publicKey)];
      const gov = await governance({ knownChains: [thirdChain] });
      const passed = await gov.call('verify_jurisdiction', {
        h3_cell: PARIS,
        facet: 'perception',
        agent_pk: other.publicKey,
        delegation_chain: otherChain,
      });
      assert.equal(passed.authorized, true, JSON.stringify(passed.errors));
      assert.equal(passed.agent_pk, other.publicKey);
      assert.equal(passed.principal_pk, otherHuman.publicKey);
      const known = await gov.call('verify_jurisdiction', {
        h3_cell: CELL,
        facet: 'perception',
        agent_pk: third.publicKey,
      });
      assert.equal(known.authorized, true);
      assert.equal(known.agent_pk, third.publicKey);
    });
  });

  describe('check_delegation_chain', () => {
    it('reports whether the tool policy allows the tool in the certificate cells, or in h3_cell (gate 5)', async () => {
      const plain = await (await governance()).call('check_delegation_chain', { tool_name: 'perception_classify' });
      assert.equal(plain.authorized, true);
      assert.deepEqual(plain.tool_policy, {
        allowed: true,
        cells: chain.at(-1)!.h3_cells,
        agent_tier: 'provisioned',
        rule: null,
        jurisdiction: null,
        detail: null,
      });
      const gov = await governance({ toolPolicy: examplePolicy() });
      const refused = await gov.call('check_delegation_chain', { tool_name: 'perception_classify' });
      assert.equal(refused.tool_allowed, true, 'the chain allows it');
      assert.equal(refused.authorized, false, 'the policy does not');
      const policy = refused.tool_policy as { allowed: boolean; rule: string; jurisdiction: string; detail: string };
      assert.equal(policy.allowed, false);
      assert.equal(policy.rule, 'eu-classify-observed');
      assert.equal(policy.jurisdiction, 'IT');
      assert.match(policy.detail, /needs agent trust tier observed; the caller is provisioned/);
      assert.ok((refused.errors as string[]).includes(policy.detail));
      const elsewhere = await gov.call('check_delegation_chain', {
        tool_name: 'perception_classify',
        h3_cell: '862a1072fffffff',
      });
      assert.equal((elsewhere.tool_policy as { allowed: boolean }).allowed, true);
      assert.equal(elsewhere.authorized, true);
    });

    it('allows a whitelisted tool and reports the principal, the list, depth and cert_hash', async () => {
      const gov = await governance();
      const answer = await gov.call('check_delegation_chain', { tool_name: 'perception_weather' });
      assert.equal(answer.authorized, true);
      assert.equal(answer.tool_allowed, true);
      assert.equal(answer.signature_valid, true);
      assert.equal(answer.human_principal_pk, human.publicKey);
      assert.equal(answer.agent_pk, agent.publicKey);
      assert.deepEqual(answer.allowed_tools, [...DEFAULT_ALLOWED_TOOLS]);
      assert.equal(answer.depth, 1);
      assert.equal(answer.cert_hash, certificateHash(chain[0]!));
    });

    it('refuses a tool outside allowed_tools, and the docs/protocol.md §4.3 whitelist is the default universe', async () => {
      const gov = await governance();
      const outside = await gov.call('check_delegation_chain', { tool_name: 'web-search' });
      assert.equal(outside.authorized, false);
      assert.equal(outside.tool_allowed, false);
      assert.equal(outside.signature_valid, true);
      // No allowed_tools at all: the whitelist applies.
      const open = [certificate(human, agent.publicKey, { constraints: null })];
      const defaults = await gov.call('check_delegation_chain', {
        tool_name: 'browser-automation',
        delegation_chain: open,
      });
      assert.equal(defaults.tool_allowed, false);
      assert.deepEqual(defaults.allowed_tools, [...DEFAULT_ALLOWED_TOOLS]);
      const narrow = [certificate(human, agent.publicKey, { constraints: { allowed_tools: ['perception_weather'] } })];
      const answer = await gov.call('check_delegation_chain', {
        tool_name: 'perception_fetch_tile',
        delegation_chain: narrow,
      });
      assert.equal(answer.tool_allowed, false);
      assert.deepEqual(answer.allowed_tools, ['perception_weather']);
    });

    it('refuses a denied tool, also when a chain link above denies it', async () => {
      const gov = await governance();
      const denying = [
        certificate(human, agent.publicKey, {
          constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS], denied_tools: ['perception_classify'] },
        }),
      ];
      const denied = await gov.call('check_delegation_chain', {
        tool_name: 'perception_classify',
        delegation_chain: denying,
      });
      assert.equal(denied.authorized, false);
      assert.equal(denied.tool_allowed, false);
      assert.ok(!(denied.allowed_tools as string[]).includes('perception_classify'));
      assert.match((denied.errors as string[]).join(), /denied/);
      const sub = generateKeyPair();
      const inherited = [
        certificate(human, agent.publicKey, { maxDepth: 1, constraints: { denied_tools: ['idn_roll_epoch'] } }),
        certificate(agent, sub.publicKey, { constraints: { denied_tools: ['idn_roll_epoch'] } }),
      ];
      const answer = await gov.call('check_delegation_chain', {
        tool_name: 'idn_roll_epoch',
        delegation_chain: inherited,
      });
      assert.equal(answer.tool_allowed, false);
      assert.equal(answer.depth, 2);
    });

    it('refuses an expired chain, a forged one and one with a widened tool list', async () => {
      const gov = await governance();
      now = NOW + 31 * DAY;
      const expired = await gov.call('check_delegation_chain', { tool_name: 'perception_weather' });
      assert.equal(expired.authorized, false);
      assert.equal(expired.cert_active, false);
      now = NOW;
      const forged = await gov.call('check_delegation_chain', {
        tool_name: 'perception_weather',
        delegation_chain: [{ ...chain[0]!, principal_signature: flipHex(chain[0]!.principal_signature, 3) }],
      });
      assert.equal(forged.authorized, false);
      assert.equal(forged.signature_valid, false);
      const sub = generateKeyPair();
      const widened = [
        certificate(human, agent.publicKey, { maxDepth: 1, constraints: { allowed_tools: ['perception_weather'] } }),
        certificate(agent, sub.publicKey, { constraints: { allowed_tools: ['perception_weather', 'idn_roll_epoch'] } }),
      ];
      const answer = await gov.call('check_delegation_chain', {
        tool_name: 'idn_roll_epoch',
        delegation_chain: widened,
      });
      assert.equal(answer.authorized, false);
      assert.equal(answer.signature_valid, false);
      assert.equal(answer.tool_allowed, false);
    });
  });

  describe('generate_audit_proof', () => {
    /** Three calls, a roll, a blocked call (Paris) and one more: 5 blocks, 1 epoch, 1 violation. */
    async function history(): Promise<{ from: string; to: string }> {
      const from = new Date(now - 1000).toISOString();
      await perceptionCalls([CELL, INSIDE, CELL]);
      await rollEpoch();
      await perceptionCalls([PARIS, INSIDE]);
      return { from, to: new Date(now).toISOString() };
    }

    it('bundles blocks, epoch seals with inclusion proofs, chain, report and violations, verifiable offline', async () => {
      const gov = await governance();
      const period = await history();
      const bundle = await gov.call<AuditBundle>('generate_audit_proof', { agent_pk: agent.publicKey, ...period });
      assert.equal(bundle.agent_pk, agent.publicKey);
      assert.deepEqual(
        bundle.blocks.map((b) => b.index),
        [0, 1, 2, 3, 4],
      );
      assert.equal(bundle.epochs.length, 1);
      assert.deepEqual(
        bundle.inclusion_proofs.map((p) => p.block_index),
        [0, 1, 2],
      );
      assert.deepEqual(bundle.unsealed_blocks, [3, 4]);
      assert.deepEqual(bundle.delegation_chain, chain);
      assert.equal(bundle.violations.length, 1);
      assert.equal(bundle.violations[0]?.type, 'jurisdiction_breach');
      assert.equal(bundle.report_error, null);
      const report = bundle.report as { agent_pk: string; total_operations: number; trust_score: number };
      assert.equal(report.agent_pk, agent.publicKey);
      assert.equal(report.total_operations, 4);
      assert.equal(bundle.trust?.trust_score, report.trust_score);
      assert.equal(bundle.server_pk, gov.key.publicKey);
      assert.ok(bundle.regulatory_basis.some((b) => /12/.test(b.article)));
      assert.ok(bundle.regulatory_basis.some((b) => /14/.test(b.article)));

      const verified = verifyAuditBundle(bundle, { nowMs: now });
      assert.equal(verified.valid, true, verified.errors.join('\n'));

      // The CLI checks the same file offline.
      const file = join(tmp, 'bundle.json');
      writeFileSync(file, JSON.stringify(bundle, null, 2));
      const lines: string[] = [];
      const out = { log: (line: string) => lines.push(line), error: (line: string) => lines.push(line) };
      assert.equal(await auditVerifyCommand([file], out), 0, lines.join('\n'));
      lines.length = 0;
      assert.equal(await auditVerifyCommand([file, '--json'], out), 0, lines.join('\n'));
      assert.equal((JSON.parse(lines.join('\n')) as { valid: boolean }).valid, true);
    });

    it('a single flipped byte anywhere in the evidence makes the bundle fail, offline and in the CLI', async () => {
      const gov = await governance();
      const period = await history();
      const bundle = await gov.call<AuditBundle>('generate_audit_proof', { agent_pk: agent.publicKey, ...period });
      const original = JSON.stringify(bundle);
      const block = bundle.blocks[1]!;
      const targets = [
        block.signature,
        block.block_hash,
        bundle.epochs[0]!.merkle_root,
        bundle.inclusion_proofs[0]!.proof[0]!,
        bundle.delegation_chain![0]!.principal_signature,
        bundle.violations[0]!.id,
        bundle.signature,
      ];
      const out = { log: () => undefined, error: () => undefined };
      for (const [i, target] of targets.entries()) {
        const at = original.indexOf(target);
        assert.ok(at >= 0, `target ${i} not found`);
        const flipped = `${original.slice(0, at + 5)}${original[at + 5] === 'a' ? 'b' : 'a'}${original.slice(at + 6)}`;
        assert.equal(flipped.length, original.length);
        const result = verifyAuditBundle(JSON.parse(flipped), { nowMs: now });
        assert.equal(result.valid, false, `flip in target ${i} went unnoticed`);
        const file = join(tmp, `flipped-${i}.json`);
        writeFileSync(file, flipped);
        assert.equal(await auditVerifyCommand([file], out), 1, `CLI accepted flip in target ${i}`);
      }
      // One flipped byte inside the report (its total_operations) is caught by the server signature.
      const reportEdit = original.replace('"total_operations":4', '"total_operations":5');
      assert.notEqual(reportEdit, original);
      assert.equal(verifyAuditBundle(JSON.parse(reportEdit), { nowMs: now }).valid, false);
    });

    it('a period after genesis carries the anchor block and still verifies', async () => {
      const gov = await governance();
      await perceptionCalls([CELL, CELL]);
      const from = new Date(now).toISOString();
      await perceptionCalls([INSIDE, CELL]);
      const bundle = await gov.call<AuditBundle>('generate_audit_proof', {
        agent_pk: agent.publicKey,
        from,
        to: new Date(now).toISOString(),
      });
      assert.deepEqual(
        bundle.blocks.map((b) => b.index),
        [2, 3],
      );
      assert.equal(bundle.anchor?.index, 1);
      const verified = verifyAuditBundle(bundle, { nowMs: now });
      assert.equal(verified.valid, true, verified.errors.join('\n'));
    });

    it('records an unreachable compliance service as report_error and still signs the evidence', async () => {
      const closed = createGovernanceServer({ store, key: generateKeyPair(), chain: null });
      const { url: deadUrl } = await closed.listen(0, '127.0.0.1');
      await closed.close();
      const gov = await governance({ complianceUrl: deadUrl });
      const period = await history();
      const bundle = await gov.call<AuditBundle>('generate_audit_proof', { ...period });
      assert.equal(bundle.agent_pk, agent.publicKey);
      assert.equal(bundle.report, null);
      assert.match(String(bundle.report_error), /unreachable/);
      assert.equal(bundle.trust, null);
      assert.equal(bundle.blocks.length, 5);
      const verified = verifyAuditBundle(bundle, { nowMs: now });
      assert.equal(verified.valid, true, verified.errors.join('\n'));
      assert.ok(verified.warnings.length > 0);
    });

    it('bundles an agent without a known certificate with delegation_chain null, and refuses a bad period', async () => {
      const gov = await governance();
      const stranger = generateKeyPair().publicKey;
      const bundle = await gov.call<AuditBundle>('generate_audit_proof', { agent_pk: stranger });
      assert.equal(bundle.delegation_chain, null);
      assert.deepEqual(bundle.blocks, []);
      assert.match(String(bundle.report_error), /agent_not_found/);
      assert.equal(verifyAuditBundle(bundle, { nowMs: now }).valid, true);
      assert.match(
        await gov.callError('generate_audit_proof', { from: '2026-03-02T00:00:00Z', to: '2026-03-01T00:00:00Z' }),
        /invalid_date/,
      );
      assert.match(await gov.callError('generate_audit_proof', { from: 'yesterday' }), /from/);
      // A period holding more blocks than one bundle carries is refused, not truncated.
      await perceptionCalls([CELL, CELL, CELL]);
      const small = await governance({ maxBundleBlocks: 2 });
      assert.match(await small.callError('generate_audit_proof', {}), /more than 2 blocks.*shorter period/);
    });
  });

  describe('POST /token', () => {
    const signedRequest = (signer: KeyPair, body: Record<string, unknown>) => ({
      body,
      signature: signMessage(signer.secretKey, canonicalJson(body)),
    });
    const tokenBody = (extra: Record<string, unknown> = {}) => ({
      agent_pk: agent.publicKey,
      delegation_chain: chain,
      created_at: new Date(now).toISOString(),
      ...extra,
    });

    it('takes the chain in the encodings the governance tools take: JSON array or object, its text, or base64', async () => {
      const gov = await governance();
      const json = JSON.stringify(chain);
      const encodings = [chain, chain[chain.length - 1], json, Buffer.from(json).toString('base64')];
      for (const [i, delegation_chain] of encodings.entries()) {
        const { body, signature } = signedRequest(agent, tokenBody({ delegation_chain }));
        const res = await gov.post('/token', body, { 'x-idn-signature': signature });
        assert.equal(res.status, 200, `encoding ${i}: ${JSON.stringify(res.body)}`);
        assert.equal((res.body.claims as Record<string, unknown>).idn_agent_pk, agent.publicKey);
      }
      const { body, signature } = signedRequest(agent, tokenBody({ delegation_chain: 'not base64 of a chain' }));
      const bad = await gov.post('/token', body, { 'x-idn-signature': signature });
      assert.equal(bad.status, 403);
      assert.equal(bad.body.error, 'delegation_invalid');
    });

    it('issues a short-lived EdDSA JWT with the idn_* claims for a signed request', async () => {
      const gov = await governance({ tokenTtlSeconds: 600 });
      await perceptionCalls([CELL, INSIDE]);
      await rollEpoch();
      await perceptionCalls([CELL]);
      const { body, signature } = signedRequest(agent, tokenBody());
      const res = await gov.post('/token', body, { 'x-idn-signature': signature });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.token_type, 'Bearer');
      assert.equal(res.body.expires_at, new Date(Math.floor(now / 1000) * 1000 + 600_000).toISOString());
      const tip = await store.tip(agent.publicKey);
      const claims = res.body.claims as Record<string, unknown>;
      assert.equal(claims.idn_agent_pk, agent.publicKey);
      assert.equal(claims.idn_principal_pk, human.publicKey);
      assert.equal(claims.idn_chain_tip, tip?.block_hash);
      assert.equal(claims.idn_epoch, 1);
      assert.deepEqual(claims.idn_h3_cells, [CELL]);
      const verified = await verifyIdnToken(res.body.token as string, {
        issuerPk: gov.key.publicKey,
        nowMs: now,
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      assert.ok(verified.ok, JSON.stringify(verified));
      assert.equal(verified.value.sub, agent.publicKey);
      // A shorter lifetime may be asked for; a longer one is capped.
      const short = signedRequest(agent, tokenBody({ ttl_seconds: 60 }));
      const shortRes = await gov.post('/token', short.body, { 'x-idn-signature': short.signature });
      assert.equal(shortRes.body.expires_at, new Date(Math.floor(now / 1000) * 1000 + 60_000).toISOString());
      const long = signedRequest(agent, tokenBody({ ttl_seconds: 3600 }));
      const longRes = await gov.post('/token', long.body, { 'x-idn-signature': long.signature });
      assert.equal(longRes.body.expires_at, res.body.expires_at);
      // Not valid under another issuer key, nor after it expires.
      const other = await verifyIdnToken(res.body.token as string, {
        issuerPk: generateKeyPair().publicKey,
        nowMs: now,
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      assert.equal(other.ok, false);
      const late = await verifyIdnToken(res.body.token as string, {
        issuerPk: gov.key.publicKey,
        nowMs: now + 601_000,
        issuer: ISSUER,
        audience: AUDIENCE,
      });
      assert.equal(late.ok, false);
    });

    it('answers a replay of one signed request with the same token, never a second one', async () => {
      const gov = await governance();
      const { body, signature } = signedRequest(agent, tokenBody());
      const first = await gov.post('/token', body, { 'x-idn-signature': signature });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      now += 120_000; // still inside the request's 5 minutes
      const replays = await Promise.all(
        [1, 2, 3].map(() => gov.post('/token', body, { 'x-idn-signature': signature })),
      );
      for (const replay of replays) {
        assert.equal(replay.status, 200);
        assert.equal(replay.body.token, first.body.token);
        assert.equal(replay.body.jti, first.body.jti);
      }
      // A new signed request (another created_at) is another token.
      const fresh = signedRequest(agent, tokenBody());
      const second = await gov.post('/token', fresh.body, { 'x-idn-signature': fresh.signature });
      assert.equal(second.status, 200);
      assert.notEqual(second.body.jti, first.body.jti);
      // Past the window the first request is stale, not a new token.
      now += 200_000;
      const late = await gov.post('/token', body, { 'x-idn-signature': signature });
      assert.equal(late.status, 401);
      assert.equal(late.body.error, 'stale_request');
    });

    it('keeps a bounded number of answers: full of live requests it refuses (429) rather than forget one', async () => {
      const tokens = createTokenService({
        store,
        key: generateKeyPair(),
        clock: () => now,
        maxTtlSeconds: 900,
        issuer: ISSUER,
        audience: AUDIENCE,
        maxRemembered: 2,
      });
      const request = (extra: Record<string, unknown>) => signedRequest(agent, tokenBody(extra));
      const a = request({ ttl_seconds: 60 });
      const first = await tokens.issue(a.body, a.signature);
      const b = request({ ttl_seconds: 61 });
      await tokens.issue(b.body, b.signature);
      const c = request({ ttl_seconds: 62 });
      await assert.rejects(tokens.issue(c.body, c.signature), { code: 'rate_limit' });
      assert.equal((await tokens.issue(a.body, a.signature)).jti, first.jti);
      // Once the first two requests' windows closed, their room is free again.
      now += 301_000;
      const d = request({ ttl_seconds: 63 });
      assert.equal((await tokens.issue(d.body, d.signature)).token_type, 'Bearer');
    });

    it('a perception server that trusts this issuer accepts the token, and refuses calls without one', async () => {
      const gov = await governance();
      const operator = generateKeyPair();
      const guarded = createPerceptionServer({
        store,
        agent: operator,
        chain: [certificate(generateKeyPair(), operator.publicKey)],
        principalLocal: false,
        clock: () => now,
        tools: [
          createWeatherTool({ weatherUrl: meteo.url, timeoutMs: 2000, userAgent: 'geofabric-test', clock: () => now }),
        ],
        tokenVerifier: { issuerPk: gov.key.publicKey, issuer: ISSUER, audience: AUDIENCE },
        requireToken: true,
      });
      try {
        const { url } = await guarded.listen(0, '127.0.0.1');
        const { body, signature } = signedRequest(agent, tokenBody());
        const issued = await gov.post('/token', body, { 'x-idn-signature': signature });
        assert.equal(issued.status, 200, JSON.stringify(issued.body));
        const client = new Client({ name: 'token-test', version: '1.0.0' });
        await client.connect(
          new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
            requestInit: { headers: { authorization: `Bearer ${issued.body.token as string}` } },
          }),
        );
        clients.push(client);
        ok(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: INSIDE } }));
        const [block] = await store.blocks(operator.publicKey);
        const meta = (JSON.parse(block!.data_to_sign) as { meta: Record<string, unknown> }).meta;
        assert.equal(meta.on_behalf_of, agent.publicKey);
        // Outside the token's cells the call is blocked.
        toolError(await client.callTool({ name: 'perception_weather', arguments: { h3_cell: PARIS } }));

        const init = (headers: Record<string, string>) =>
          fetch(`${url}/mcp`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
            body: JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'initialize',
              params: { protocolVersion: '2024-11-05', capabilities: {}, clientInfo: { name: 't', version: '1' } },
            }),
          });
        const none = await init({});
        assert.equal(none.status, 401);
        assert.equal(errorCode(await none.json()), 'token_invalid');
        // A token from another issuer (another governance key) is refused.
        const rogue = await governance();
        const again = signedRequest(agent, tokenBody({ nonce: 'rogue' }));
        const foreign = await rogue.post('/token', again.body, { 'x-idn-signature': again.signature });
        const refused = await init({ authorization: `Bearer ${foreign.body.token as string}` });
        assert.equal(refused.status, 401);
      } finally {
        await guarded.close();
      }
    });

    it('refuses a request without a signature (401), with a bad one (401), bad JSON (400), an expired chain (403)', async () => {
      const gov = await governance();
      const { body, signature } = signedRequest(agent, tokenBody());
      const unsigned = await gov.post('/token', body);
      assert.equal(unsigned.status, 401);
      assert.equal(unsigned.body.error, 'signature_required');
      const other = signedRequest(generateKeyPair(), tokenBody());
      const wrongKey = await gov.post('/token', body, { 'x-idn-signature': other.signature });
      assert.equal(wrongKey.status, 401);
      assert.equal(wrongKey.body.error, 'invalid_signature');
      const tampered = await gov.post('/token', { ...body, ttl_seconds: 60 }, { 'x-idn-signature': signature });
      assert.equal(tampered.status, 401);
      assert.equal(tampered.body.error, 'invalid_signature');
      const badJson = await gov.post('/token', '{"agent_pk":', { 'x-idn-signature': signature });
      assert.equal(badJson.status, 400);
      assert.equal(badJson.body.error, 'invalid_json');
      const notObject = await gov.post('/token', '[1]', { 'x-idn-signature': signature });
      assert.equal(notObject.status, 400);
      const lapsed = [certificate(human, agent.publicKey, { notBefore: NOW - 10 * DAY, notAfter: NOW - DAY })];
      const expired = signedRequest(agent, tokenBody({ delegation_chain: lapsed }));
      const res = await gov.post('/token', expired.body, { 'x-idn-signature': expired.signature });
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'delegation_invalid');
      assert.ok(!JSON.stringify(res.body).includes('    at '));
    });
  });

  describe('server key', () => {
    it('is generated once under DATA_DIR/governance (mode 0600) and reused, or read from GOVERNANCE_SK', () => {
      const first = loadGovernanceKey({ dataDir: tmp });
      assert.match(first.source, /\(new\)$/);
      const path = join(tmp, 'governance', 'server-key.json');
      assert.equal(statSync(path).mode & 0o777, 0o600);
      const again = loadGovernanceKey({ dataDir: tmp });
      assert.deepEqual(again.key, first.key);
      assert.equal(again.source, path);
      assert.equal((JSON.parse(readFileSync(path, 'utf8')) as { public_key: string }).public_key, first.key.publicKey);
      const configured = generateKeyPair();
      assert.deepEqual(loadGovernanceKey({ dataDir: tmp, secretKey: configured.secretKey }).key, configured);
      assert.throws(() => loadGovernanceKey({ dataDir: tmp, secretKey: 'nothex' }), /GOVERNANCE_SK/);
    });
  });
});
