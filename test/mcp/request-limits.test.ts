import assert from 'node:assert/strict';
import type { HttpLimits } from '../../api/http-limits.js';
import { generateKeyPair } from '../../core/identity.js';
import { issueCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { assertSlowClientCut } from '../helpers/raw-http.js';

const LIMITS: HttpLimits = {
  ipPerMinute: 0,
  principalPerMinute: 0,
  burstSeconds: 5,
  trustProxy: false,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 20_000,
};

type ErrorBody = { error: string; detail?: string };

/** The shared MCP HTTP shell (mcp/shared/mcp-http-app.ts) under the governance server, with these limits. */
async function governanceWith(limits: Partial<HttpLimits>): Promise<{ url: string; server: GovernanceServer }> {
  const server = createGovernanceServer({
    store: createSqliteAuditStore(openSqlite(':memory:')),
    key: generateKeyPair(),
    chain: null,
    limits: { ...LIMITS, ...limits },
  });
  const { url } = await server.listen(0, '127.0.0.1');
  return { url, server };
}

describe('MCP servers: request limits (abuse)', () => {
  it('limits each client address on every route, /mcp included, with 429 rate_limit and retry-after', async () => {
    const { url, server } = await governanceWith({ ipPerMinute: 36 }); // bucket of 3
    try {
      for (let i = 0; i < 3; i++) assert.equal((await fetch(`${url}/health`)).status, 200);
      const refused = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: '{}',
      });
      assert.equal(refused.status, 429);
      assert.equal(((await refused.json()) as ErrorBody).error, 'rate_limit');
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    } finally {
      await server.close();
    }
  });

  it('limits each bearer token on its own', async () => {
    const { url, server } = await governanceWith({ principalPerMinute: 24 }); // bucket of 2
    const health = (token: string) => fetch(`${url}/health`, { headers: { authorization: `Bearer ${token}` } });
    try {
      assert.equal((await health('one')).status, 200);
      assert.equal((await health('one')).status, 200);
      const refused = await health('one');
      assert.equal(refused.status, 429);
      assert.match(((await refused.json()) as ErrorBody).detail ?? '', /this principal/);
      assert.equal((await health('two')).status, 200);
      assert.equal((await fetch(`${url}/health`)).status, 200);
    } finally {
      await server.close();
    }
  });

  it('answers an oversized query with 414 and a slow POST /token body with 408', async () => {
    const { url, server } = await governanceWith({ requestTimeoutMs: 1000, headersTimeoutMs: 1000 });
    try {
      const long = await fetch(`${url}/health?pad=${'a'.repeat(5000)}`);
      assert.equal(long.status, 414);
      assert.equal(((await long.json()) as ErrorBody).error, 'query_too_large');
      await assertSlowClientCut(
        url,
        'POST /token HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{',
        ' ',
      );
      // /mcp, whose body the MCP SDK reads itself: the server's request timeout bounds it just the same.
      await assertSlowClientCut(
        url,
        'POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 500\r\n\r\n{',
        ' ',
      );
    } finally {
      await server.close();
    }
  });

  describe('behind a trusted proxy (TRUST_PROXY)', () => {
    /** The perception server with no tools but the idn_* ones: enough for its HTTP shell. */
    async function perceptionWith(limits: Partial<HttpLimits>) {
      const agent = generateKeyPair();
      const now = Date.now();
      const cert = issueCertificate(generateKeyPair().secretKey, {
        agent_pk: agent.publicKey,
        h3_cells: [DEFAULT_PERCEPTION_CELL],
        facets: ['perception'],
        not_before: new Date(now - 86_400_000).toISOString(),
        not_after: new Date(now + 86_400_000).toISOString(),
        max_depth: 0,
      });
      const server = createPerceptionServer({
        store: createSqliteAuditStore(openSqlite(':memory:')),
        agent,
        chain: [cert],
        principalLocal: false,
        tools: [],
        limits: { ...LIMITS, ...limits },
      });
      const { url } = await server.listen(0, '127.0.0.1');
      return { url, server };
    }

    const servers = { governance: governanceWith, perception: perceptionWith };
    for (const [name, start] of Object.entries(servers)) {
      it(`${name}: limits a client by the address the proxy saw, whatever it writes to the left of it`, async () => {
        const { url, server } = await start({ ipPerMinute: 60, trustProxy: true }); // bucket of 5
        const health = (headers: Record<string, string>) => fetch(`${url}/health`, { headers });
        try {
          const seen: number[] = [];
          for (let i = 0; i < 25; i++) {
            seen.push((await health({ 'x-forwarded-for': `10.0.1.${i}, 203.0.113.7` })).status);
          }
          assert.equal(seen.filter((s) => s === 200).length, 5, String(seen));
          assert.equal((await health({ 'x-forwarded-for': '10.0.1.1, 203.0.113.8' })).status, 200);
        } finally {
          await server.close();
        }
      });

      it(`${name}: reads RFC 7239 Forwarded the same way when told to`, async () => {
        const { url, server } = await start({ ipPerMinute: 60, trustProxy: true, trustProxyHeader: 'forwarded' });
        const health = (headers: Record<string, string>) => fetch(`${url}/health`, { headers });
        try {
          const seen: number[] = [];
          for (let i = 0; i < 25; i++) {
            seen.push((await health({ forwarded: `for=10.0.1.${i}, for="203.0.113.7:4711";proto=https` })).status);
          }
          assert.equal(seen.filter((s) => s === 200).length, 5, String(seen));
          assert.equal((await health({ forwarded: 'for=203.0.113.8', 'x-forwarded-for': '203.0.113.7' })).status, 200);
        } finally {
          await server.close();
        }
      });
    }
  });
});
