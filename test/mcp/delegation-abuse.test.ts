/**
 * Abuse bounds (docs/operations.md), at the MCP entry points: a certificate chain deeper than a link's max_depth, longer
 * than the global maximum (8 links), with a loop (A→B→A) or with a link repeated fails
 *   - governance `check_delegation_chain` and `verify_jurisdiction`, passed as `delegation_chain` (JSON or the
 *     base64 of the header) or configured as the server's subject: `authorized: false`, `signature_valid: false`
 *     and the reason; a chain over 8 links is not even read (a tool error naming delegation_chain, never -32603);
 *   - governance `POST /token`, signed by the chain's last agent: 403 `delegation_invalid` and no token;
 *   - the perception server started (`geofabric perception`) with IDN_DELEGATION_CERT: it refuses to start,
 *     exit 2 naming the variable and the problem, and nothing listens.
 * Each entry point also accepts a good chain (control). The gateway's gate 3 is test/api/delegation-abuse.test.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { requestSigningMessage } from '../../core/gates/signature.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage } from '../../core/identity.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { chainCases, type ChainCase } from '../helpers/abusive-chains.js';
import { refusal, textOf } from '../helpers/mcp-refusal.js';

const ROOT = resolve(import.meta.dirname, '../..');
const T0 = Date.UTC(2026, 2, 1, 12);
const HOUR = 3_600_000;
const CELL = DEFAULT_PERCEPTION_CELL;

type Case = ChainCase;

/** The good chains and the abuses, valid around `nowMs` (the spawned perception server reads the real clock). */
const casesAt = (nowMs: number) =>
  chainCases((principal, agent, maxDepth) =>
    issueCertificate(principal.secretKey, {
      agent_pk: agent.publicKey,
      h3_cells: [CELL],
      facets: ['perception', 'compliance'],
      not_before: new Date(nowMs - HOUR).toISOString(),
      not_after: new Date(nowMs + 24 * HOUR).toISOString(),
      max_depth: maxDepth,
    }),
  );

const base64 = (chain: unknown) => Buffer.from(JSON.stringify(chain)).toString('base64');

function verdict(result: unknown): Record<string, unknown> {
  const r = result as CallToolResult;
  assert.notEqual(r.isError, true, textOf(r));
  return JSON.parse(textOf(r)) as Record<string, unknown>;
}

describe('delegation chain abuse at the MCP servers', function () {
  this.timeout(20_000);
  const { controls, abuses } = casesAt(T0);

  describe('governance server', () => {
    let db: SqliteDatabase;
    let store: AuditStore;
    const servers: GovernanceServer[] = [];
    const clients: Client[] = [];

    beforeEach(() => {
      db = openSqlite(':memory:');
      store = createSqliteAuditStore(db);
    });
    afterEach(async () => {
      await Promise.all(clients.splice(0).map((c) => c.close()));
      await Promise.all(servers.splice(0).map((s) => s.close()));
      await store.close();
      db.close();
    });

    async function governance(chain: DelegationCertificate[] | null = null) {
      const server = createGovernanceServer({
        store,
        key: generateKeyPair(),
        chain,
        complianceUrl: 'http://127.0.0.1:9',
        clock: () => T0,
      });
      servers.push(server);
      const { url } = await server.listen(0, '127.0.0.1');
      const client = new Client({ name: 'delegation-abuse', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
      clients.push(client);
      const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args });
      const token = async (c: Case) => {
        const body = {
          agent_pk: c.requester.publicKey,
          delegation_chain: c.chain,
          created_at: new Date(T0).toISOString(),
        };
        const res = await fetch(`${url}/token`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-idn-signature': signMessage(c.requester.secretKey, requestSigningMessage(body)),
          },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      return { url, call, token };
    }

    const judged = (name: string, args: Record<string, unknown>) =>
      name === 'verify_jurisdiction'
        ? { name, args: { h3_cell: CELL, facet: 'perception', ...args } }
        : { name, args: { tool_name: 'perception_weather', ...args } };
    const TOOLS = ['check_delegation_chain', 'verify_jurisdiction'];

    it('controls: both tools authorize a good chain (JSON and base64) and POST /token issues a token', async () => {
      const gov = await governance();
      for (const c of controls) {
        for (const tool of TOOLS) {
          for (const chain of [c.chain, base64(c.chain)]) {
            const { name, args } = judged(tool, { delegation_chain: chain });
            const answer = verdict(await gov.call(name, args));
            assert.equal(answer.authorized, true, `${c.name} / ${tool}: ${JSON.stringify(answer.errors)}`);
            assert.equal(answer.signature_valid, true);
          }
        }
        const issued = await gov.token(c);
        assert.equal(issued.status, 200, `${c.name}: ${JSON.stringify(issued.body)}`);
      }
    });

    for (const c of abuses) {
      it(`${c.name}: both tools refuse it (passed as JSON and as base64), POST /token answers 403`, async () => {
        const gov = await governance();
        for (const tool of TOOLS) {
          for (const chain of [c.chain, base64(c.chain), JSON.stringify(c.chain)]) {
            const { name, args } = judged(tool, { delegation_chain: chain });
            if (c.overLong) {
              const message = await refusal(gov.call(name, args));
              assert.match(message, /delegation_chain/, `${tool}: ${message}`);
              if (typeof chain === 'string') assert.match(message, c.detail, `${tool}: ${message}`);
              continue;
            }
            const answer = verdict(await gov.call(name, args));
            assert.equal(answer.authorized, false, `${tool}`);
            assert.equal(answer.signature_valid, false, `${tool}`);
            assert.match((answer.errors as string[]).join('\n'), c.detail, tool);
          }
        }
        const issued = await gov.token(c);
        assert.equal(issued.status, 403, JSON.stringify(issued.body));
        assert.equal(issued.body.error, 'delegation_invalid');
        assert.match(String(issued.body.detail), c.detail);
        assert.equal(issued.body.token, undefined);
      });
    }

    it("a bad chain configured as the server's subject (IDN_DELEGATION_CERT) is judged unauthorized, never trusted", async () => {
      for (const c of abuses.filter((x) => !x.overLong)) {
        const gov = await governance(c.chain);
        for (const tool of TOOLS) {
          const { name, args } = judged(tool, {});
          const answer = verdict(await gov.call(name, args));
          assert.equal(answer.authorized, false, `${c.name} / ${tool}`);
          assert.match((answer.errors as string[]).join('\n'), c.detail, `${c.name} / ${tool}`);
        }
      }
    });
  });

  describe('perception server start (geofabric perception) with IDN_DELEGATION_CERT', () => {
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'perception-abuse-'));
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    /** Starts `geofabric perception`; resolves when it exits, or once it listens (then stops it with SIGTERM). */
    async function start(c: Case, dir: string) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), 'perception'], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATA_DIR: dir,
          PERCEPTION_PORT: '0',
          PERCEPTION_HOST: '127.0.0.1',
          MONGODB_URI: '',
          LOG_LEVEL: 'info',
          IDN_AGENT_SK: c.requester.secretKey,
          IDN_DELEGATION_CERT: JSON.stringify(c.chain),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let listened = false;
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (!listened && stdout.includes('geofabric perception listening')) {
          listened = true;
          child.kill('SIGTERM');
        }
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stdout, stderr, listened };
    }

    it('refuses to start, naming IDN_DELEGATION_CERT and the problem, for a chain too deep, too long, looped or repeated; starts with a good one', async function () {
      this.timeout(60_000);
      const now = casesAt(Date.now());
      const kinds = ['depth: a link', 'length:', 'loop: human → A → B', 'repeated link: the same'];
      const picked = kinds.map((prefix) => now.abuses.find((c) => c.name.startsWith(prefix))!);
      const dirs = [now.controls[0]!, ...picked].map((_, i) => join(dataDir, String(i)));
      const [good, ...refused] = await Promise.all([now.controls[0]!, ...picked].map((c, i) => start(c, dirs[i]!)));
      assert.equal(good!.listened, true, `the control did not start: ${good!.stderr}`);
      assert.equal(good!.code, 0, good!.stderr);
      for (const [i, c] of picked.entries()) {
        const result = refused[i]!;
        assert.equal(result.listened, false, `${c.name}: it listened`);
        assert.equal(result.code, 2, `${c.name}: exit ${result.code}: ${result.stderr}`);
        assert.match(result.stderr, /^geofabric: IDN_DELEGATION_CERT: /m, c.name);
        assert.match(result.stderr, c.detail, c.name);
      }
    });
  });
});
