/**
 * TRUSTED_PRINCIPALS at the governance server (docs/security.md §3): with trust anchors configured,
 * check_delegation_chain and verify_jurisdiction report a chain from any other root as not verifying
 * ("untrusted principal"), and POST /token issues no token for it (403 delegation_invalid); a chain from a listed
 * root is judged as before. Through the MCP SDK client and plain HTTP against a listening server.
 */
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { requestSigningMessage } from '../../core/gates/signature.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';

const T0 = Date.UTC(2026, 2, 1, 12);
const HOUR = 3_600_000;

const certificate = (principal: KeyPair, agent: KeyPair): DelegationCertificate =>
  issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [DEFAULT_PERCEPTION_CELL],
    facets: ['*'],
    not_before: new Date(T0 - HOUR).toISOString(),
    not_after: new Date(T0 + HOUR).toISOString(),
    max_depth: 0,
  });

describe('TRUSTED_PRINCIPALS at the governance server', () => {
  const trusted = generateKeyPair();
  const agent = generateKeyPair();
  const db = openSqlite(':memory:');
  const store = createSqliteAuditStore(db);
  let server: GovernanceServer;
  let url: string;
  let client: Client;

  before(async () => {
    server = createGovernanceServer({
      store,
      key: generateKeyPair(),
      chain: null,
      complianceUrl: 'http://127.0.0.1:9',
      clock: () => T0,
      trustedPrincipals: new Set([trusted.publicKey]),
    });
    url = (await server.listen(0, '127.0.0.1')).url;
    client = new Client({ name: 'trusted-principals', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  });
  after(async () => {
    await client.close();
    await server.close();
    await store.close();
    db.close();
  });

  const call = async (name: string, args: Record<string, unknown>) => {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    return JSON.parse((result.content[0] as { text: string }).text) as {
      authorized: boolean;
      signature_valid: boolean;
      errors: string[];
    };
  };
  const token = async (chain: DelegationCertificate[]) => {
    const body = { agent_pk: agent.publicKey, delegation_chain: chain, created_at: new Date(T0).toISOString() };
    const res = await fetch(`${url}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-idn-signature': signMessage(agent.secretKey, requestSigningMessage(body)),
      },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { error?: string; detail?: string } };
  };

  it('check_delegation_chain and verify_jurisdiction report an untrusted root', async () => {
    const chain = [certificate(generateKeyPair(), agent)];
    for (const [name, args] of [
      ['check_delegation_chain', { tool_name: 'perception_weather' }],
      ['verify_jurisdiction', { h3_cell: DEFAULT_PERCEPTION_CELL, facet: 'perception' }],
    ] as const) {
      const answer = await call(name, { ...args, delegation_chain: chain });
      assert.equal(answer.authorized, false, name);
      assert.equal(answer.signature_valid, false, name);
      assert.ok(
        answer.errors.some((e) => /untrusted principal/.test(e)),
        `${name}: ${answer.errors.join('; ')}`,
      );
    }
  });

  it('a chain from a trusted root is authorized as before', async () => {
    const answer = await call('check_delegation_chain', {
      tool_name: 'perception_weather',
      delegation_chain: [certificate(trusted, agent)],
    });
    assert.equal(answer.authorized, true, answer.errors.join('; '));
  });

  it('POST /token refuses an untrusted root with 403 delegation_invalid and issues for a trusted one', async () => {
    const refused = await token([certificate(generateKeyPair(), agent)]);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'delegation_invalid');
    assert.match(refused.body.detail ?? '', /untrusted principal/);
    assert.equal((await token([certificate(trusted, agent)])).status, 200);
  });

  it('POST /token refuses a body with a repeated key (400 invalid_json)', async () => {
    const res = await fetch(`${url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-idn-signature': 'ab'.repeat(64) },
      body: `{"agent_pk":"${agent.publicKey}","agent_pk":"${trusted.publicKey}"}`,
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: string }).error, 'invalid_json');
  });

  it('POST /mcp refuses a JSON-RPC body with a repeated key (400 invalid_json)', async () => {
    const res = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{"jsonrpc":"2.0","id":1,"method":"initialize","method":"tools/list","params":{}}',
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: string }).error, 'invalid_json');
  });
});
