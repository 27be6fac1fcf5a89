/**
 * The cost of a certificate is bounded (docs/security.md §9): check_delegation_chain with a self-signed
 * 2-link chain of 6,000 cells per link (which took 27 s, with the gateway's /health silent, when a child's cells
 * were compared with every parent cell) is refused in well under 100 ms, and the gateway of the same process
 * keeps answering /health meanwhile. A chain at the cap (4,096 cells) is judged in bounded time too.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { cellToChildren } from 'h3-js';
import {
  certificateSigningString,
  MAX_CERT_CELLS,
  type DelegationCertificate,
  type UnsignedCertificate,
} from '../../core/delegation-cert.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { startGateway, type TestGateway } from '../helpers/gateway.js';

const ROME_5 = '851e8053fffffff';
const NOW = Date.UTC(2026, 2, 1, 12);

/** Signed without issueCertificate, which refuses more than MAX_CERT_CELLS cells: what an attacker sends. */
function link(principal: KeyPair, agentPk: string, cells: string[], maxDepth: number): DelegationCertificate {
  const unsigned: UnsignedCertificate = {
    version: 1,
    agent_pk: agentPk,
    principal_pk: principal.publicKey,
    h3_cells: cells,
    facets: ['*'],
    not_before: new Date(NOW - 3_600_000).toISOString(),
    not_after: new Date(NOW + 3_600_000).toISOString(),
    max_depth: maxDepth,
    constraints: null,
  };
  return { ...unsigned, principal_signature: signMessage(principal.secretKey, certificateSigningString(unsigned)) };
}

function chainOf(cells: string[]): DelegationCertificate[] {
  const [human, middle, agent] = [generateKeyPair(), generateKeyPair(), generateKeyPair()];
  return [link(human, middle.publicKey, cells, 1), link(middle, agent.publicKey, cells, 0)];
}

describe('delegation chain cost (check_delegation_chain, same process as the gateway)', function () {
  this.timeout(60_000);
  let gw: TestGateway;
  let governance: GovernanceServer;
  let client: Client;
  const db = openSqlite(':memory:');
  const store = createSqliteAuditStore(db);

  before(async () => {
    gw = await startGateway();
    governance = createGovernanceServer({ store, key: generateKeyPair(), chain: null, clock: () => NOW });
    const { url } = await governance.listen(0, '127.0.0.1');
    client = new Client({ name: 'cost-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
  });
  after(async () => {
    await client.close();
    await governance.close();
    await gw.close();
    await store.close();
    db.close();
  });

  const check = async (chain: DelegationCertificate[]) => {
    const t0 = performance.now();
    const result = (await client.callTool({
      name: 'check_delegation_chain',
      arguments: { tool_name: 'perception_weather', delegation_chain: chain },
    })) as CallToolResult;
    return { ms: performance.now() - t0, result };
  };
  const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;

  it('refuses a 6,000-cell chain in under 100 ms while /health keeps answering', async () => {
    const chain = chainOf(cellToChildren(ROME_5, 10).slice(0, 6000));
    await check(chainOf([ROME_5])); // warm up the session and the code paths
    const health: number[] = [];
    let calls = true;
    const poll = (async () => {
      while (calls) {
        const t0 = performance.now();
        assert.equal((await gw.get('/health')).status, 200);
        health.push(performance.now() - t0);
      }
    })();
    // Three calls, judged by the median: one slow call on a loaded 2-core CI machine is no regression; the old
    // quadratic check took 27 s for this chain.
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await check(chain));
    calls = false;
    await poll;
    for (const { result } of runs) assert.match(text(result), /h3_cells has 6000 cells; at most 4096/);
    const median = runs.map((r) => r.ms).sort((a, b) => a - b)[1] as number;
    console.log(
      `    6,000-cell chain: ${runs.map((r) => r.ms.toFixed(1)).join(', ')} ms; /health ${health.length} answers, ` +
        `slowest ${Math.max(...health).toFixed(1)} ms`,
    );
    assert.ok(median < 100, `median ${median.toFixed(1)} ms`);
    assert.ok(health.length >= 1, '/health answered while the chain was checked');
  });

  it(`judges a chain at the cap (${MAX_CERT_CELLS} cells per link) in bounded time`, async () => {
    const { ms, result } = await check(chainOf(cellToChildren(ROME_5, 10).slice(0, MAX_CERT_CELLS)));
    const answer = JSON.parse(text(result)) as { signature_valid: boolean; errors: string[] };
    assert.equal(answer.signature_valid, true, answer.errors.join('; '));
    console.log(`    ${MAX_CERT_CELLS}-cell chain verified in ${ms.toFixed(1)} ms`);
    assert.ok(ms < 2000, `${ms.toFixed(1)} ms`);
  });
});
