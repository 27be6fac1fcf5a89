/**
 * Abuse bounds (docs/operations.md), at the MCP servers and the audit CLI: the eight small-order Ed25519 points are
 * refused wherever a public key enters:
 *   governance POST /token (`agent_pk`, and the principal or an agent of its delegation chain), the governance
 *   tools' `agent_pk` argument and the agent a passed `delegation_chain` ends at, the perception server's
 *   POST /approvals (principal and agent), its compliance reads, its start with IDN_DELEGATION_CERT or
 *   GOVERNANCE_PK, and `geofabric audit verify` (`--server-pk`, a bundle's server key, its chain's principal).
 * HTTP answers are 4xx JSON errors, MCP answers tool errors (or -32602), never -32603, a 5xx or a result.
 *
 * As in test/api/small-order-keys.test.ts, every "signature" under a small-order key is a forgery that OpenSSL
 * (node:crypto) accepts on its own, so only the key check can refuse it.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { auditVerifyCommand } from '../../bin/audit-verify.js';
import { auditBundleSigningString, type AuditBundle } from '../../core/audit-bundle.js';
import { approvalSigningString } from '../../core/compliance-report.js';
import {
  certificateSigningString,
  issueCertificate,
  type DelegationCertificate,
  type UnsignedCertificate,
} from '../../core/delegation-cert.js';
import { requestSigningMessage } from '../../core/gates/signature.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';
import { createGovernanceServer, type GovernanceServer } from '../../mcp/governance/server.js';
import { createPerceptionServer, type PerceptionServer } from '../../mcp/perception/server.js';
import type { AuditStore } from '../../store/audit-store.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite, type SqliteDatabase } from '../../store/sqlite/open-database.js';
import { forge, SMALL_ORDER } from '../helpers/small-order.js';
import { refusal, textOf } from '../helpers/mcp-refusal.js';

const ROOT = resolve(import.meta.dirname, '../..');
const T0 = Date.UTC(2026, 2, 1, 12);
const HOUR = 3_600_000;
const CELL = DEFAULT_PERCEPTION_CELL;
const iso = (ms: number) => new Date(ms).toISOString();
const run = promisify(execFile);

// ---- forgeries under small-order keys (test/helpers/small-order.ts) ----

const certFields = (agentPk: string, nowMs: number, maxDepth = 0): Omit<UnsignedCertificate, 'principal_pk'> => ({
  version: 1,
  agent_pk: agentPk,
  h3_cells: [CELL],
  facets: ['perception', 'compliance'],
  not_before: iso(nowMs - HOUR),
  not_after: iso(nowMs + 24 * HOUR),
  max_depth: maxDepth,
  constraints: { allowed_tools: [...DEFAULT_ALLOWED_TOOLS] },
});

const realCertificate = (principal: KeyPair, fields: Omit<UnsignedCertificate, 'principal_pk'>) =>
  issueCertificate(principal.secretKey, fields);

/**
 * A certificate from a real principal to whatever agent key it names, signed as a principal's own tooling would
 * sign it if it did not refuse the agent key (issueCertificate does): what another implementation may send.
 */
function signedBy(principal: KeyPair, fields: Omit<UnsignedCertificate, 'principal_pk'>): DelegationCertificate {
  const unsigned = { ...fields, principal_pk: principal.publicKey };
  return { ...unsigned, principal_signature: signMessage(principal.secretKey, certificateSigningString(unsigned)) };
}

/** A certificate from a small-order principal, its principal_signature forged (not_after varied). */
function forgedCertificate(
  principalPk: string,
  fields: Omit<UnsignedCertificate, 'principal_pk'>,
): DelegationCertificate {
  const { value, signature } = forge(
    principalPk,
    (i) => ({ ...fields, principal_pk: principalPk, not_after: iso(Date.parse(fields.not_after) - i * 1000) }),
    (cert) => certificateSigningString(cert),
  );
  return { ...value, principal_signature: signature };
}

/** Chains that put a small-order key at the root (the "human") or in the middle, ending at `agent`. */
const smallRootChain = (pk: string, agent: KeyPair, nowMs: number) => [
  forgedCertificate(pk, certFields(agent.publicKey, nowMs)),
];
const smallMiddleChain = (pk: string, human: KeyPair, agent: KeyPair, nowMs: number) => [
  signedBy(human, certFields(pk, nowMs, 1)),
  forgedCertificate(pk, certFields(agent.publicKey, nowMs)),
];

// -----------------------------------------------------------------------------------------------------------

describe('small-order public keys are refused everywhere: MCP servers and audit CLI', function () {
  this.timeout(20_000);
  let db: SqliteDatabase;
  let store: AuditStore;
  let human: KeyPair;
  let agent: KeyPair;
  let chain: DelegationCertificate[];
  let perception: PerceptionServer;
  let perceptionUrl: string;
  let governance: GovernanceServer;
  let governanceKey: KeyPair;
  let governanceUrl: string;
  const clients: Client[] = [];

  beforeEach(async () => {
    db = openSqlite(':memory:');
    store = createSqliteAuditStore(db);
    human = generateKeyPair();
    agent = generateKeyPair();
    chain = [realCertificate(human, certFields(agent.publicKey, T0))];
    perception = createPerceptionServer({ store, agent, chain, principalLocal: false, clock: () => T0, tools: [] });
    perceptionUrl = (await perception.listen(0, '127.0.0.1')).url;
    governanceKey = generateKeyPair();
    governance = createGovernanceServer({
      store,
      key: governanceKey,
      chain,
      complianceUrl: perceptionUrl,
      complianceTimeoutMs: 2000,
      clock: () => T0,
    });
    governanceUrl = (await governance.listen(0, '127.0.0.1')).url;
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await governance.close();
    await perception.close();
    await store.close();
    db.close();
  });

  async function client(url: string): Promise<Client> {
    const c = new Client({ name: 'small-order', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    clients.push(c);
    return c;
  }
  async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }
  const refusedHttp = (
    res: { status: number; body: Record<string, unknown> },
    status: number,
    code: string,
    detail: RegExp,
  ) => {
    assert.equal(res.body.error, code, JSON.stringify(res.body));
    assert.equal(res.status, status);
    assert.match(String(res.body.detail), detail);
    assert.equal(res.body.token, undefined);
  };

  describe('governance POST /token', () => {
    const tokenBody = (agentPk: string, delegation: DelegationCertificate[]) => ({
      agent_pk: agentPk,
      delegation_chain: delegation,
      created_at: iso(T0),
    });

    it('agent_pk small-order (the request "signed" by it, forged): 400 invalid_public_key', async () => {
      for (const pk of SMALL_ORDER) {
        const delegation = [signedBy(human, certFields(pk, T0))];
        const { value: body, signature } = forge(
          pk,
          (i) => ({ ...tokenBody(pk, delegation), nonce: `n${i}` }),
          (b) => requestSigningMessage(b),
        );
        const res = await post(`${governanceUrl}/token`, body, { 'x-idn-signature': signature });
        refusedHttp(res, 400, 'invalid_public_key', /^agent_pk: public key is a small-order point$/);
      }
    });

    it('a chain whose human principal or middle agent is small-order (links forged): 403 delegation_invalid', async () => {
      for (const pk of SMALL_ORDER) {
        for (const [delegation, detail] of [
          [smallRootChain(pk, agent, T0), /^link 0: principal_pk is invalid: public key is a small-order point$/],
          [smallMiddleChain(pk, human, agent, T0), /^link 0: agent_pk is invalid: public key is a small-order point$/],
        ] as const) {
          const body = tokenBody(agent.publicKey, [...delegation]);
          const res = await post(`${governanceUrl}/token`, body, {
            'x-idn-signature': signMessage(agent.secretKey, requestSigningMessage(body)),
          });
          refusedHttp(res, 403, 'delegation_invalid', detail);
        }
      }
      // Control: the agent's real chain gets a token.
      const body = tokenBody(agent.publicKey, chain);
      const ok = await post(`${governanceUrl}/token`, body, {
        'x-idn-signature': signMessage(agent.secretKey, requestSigningMessage(body)),
      });
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
    });
  });

  describe('governance tools', () => {
    const calls = (args: Record<string, unknown>) => [
      { name: 'verify_jurisdiction', arguments: { h3_cell: CELL, facet: 'perception', ...args } },
      { name: 'check_delegation_chain', arguments: { tool_name: 'perception_weather', ...args } },
      { name: 'generate_audit_proof', arguments: { ...args } },
    ];

    it('agent_pk small-order: every tool refuses it, naming agent_pk and the reason (no verdict, no bundle)', async () => {
      const gov = await client(governanceUrl);
      for (const pk of SMALL_ORDER) {
        for (const call of calls({ agent_pk: pk })) {
          const message = await refusal(gov.callTool(call));
          assert.match(message, /agent_pk/, `${call.name}: ${message}`);
          assert.match(message, /small-order/, `${call.name}: ${message}`);
        }
      }
      // Control: the configured agent is answered by each tool.
      for (const call of calls({ agent_pk: agent.publicKey })) {
        const result = (await gov.callTool(call)) as CallToolResult;
        assert.notEqual(result.isError, true, `${call.name}: ${textOf(result)}`);
      }
    });

    it('a delegation_chain ending at a small-order agent: every tool refuses it (invalid_public_key)', async () => {
      const gov = await client(governanceUrl);
      for (const pk of SMALL_ORDER) {
        const delegation = [signedBy(human, certFields(pk, T0))];
        for (const call of calls({ delegation_chain: delegation })) {
          const message = await refusal(gov.callTool(call));
          assert.match(message, /invalid_public_key/, `${call.name}: ${message}`);
          assert.match(message, /small-order/, `${call.name}: ${message}`);
        }
      }
    });

    it('a delegation_chain with a small-order principal or middle agent (forged): unauthorized, the key named', async () => {
      const gov = await client(governanceUrl);
      for (const pk of SMALL_ORDER) {
        for (const [delegation, detail] of [
          [smallRootChain(pk, agent, T0), /link 0: principal_pk is invalid: public key is a small-order point/],
          [smallMiddleChain(pk, human, agent, T0), /link 0: agent_pk is invalid: public key is a small-order point/],
        ] as const) {
          for (const call of calls({ delegation_chain: [...delegation] }).slice(0, 2)) {
            const result = (await gov.callTool(call)) as CallToolResult;
            assert.notEqual(result.isError, true, textOf(result));
            const answer = JSON.parse(textOf(result)) as {
              authorized: boolean;
              signature_valid: boolean;
              errors: string[];
            };
            assert.equal(answer.authorized, false, call.name);
            assert.equal(answer.signature_valid, false, call.name);
            assert.match(answer.errors.join('\n'), detail, call.name);
          }
        }
      }
    });
  });

  describe('perception server', () => {
    it('POST /approvals with a small-order principal (signature forged) or agent: refused, nothing recorded', async () => {
      for (const pk of SMALL_ORDER) {
        const { value, signature } = forge(
          pk,
          (i) => ({
            version: 1 as const,
            agent_pk: agent.publicKey,
            principal_pk: pk,
            block_index: 0,
            approved_at: iso(T0 + i),
          }),
          (a) => approvalSigningString(a),
        );
        const res = await post(`${perceptionUrl}/approvals`, { ...value, signature });
        refusedHttp(res, 403, 'delegation_invalid', /principal_pk is not the delegation chain's human principal/);

        const byHuman = {
          version: 1 as const,
          agent_pk: pk,
          principal_pk: human.publicKey,
          block_index: 0,
          approved_at: iso(T0),
        };
        const other = await post(`${perceptionUrl}/approvals`, {
          ...byHuman,
          signature: signMessage(human.secretKey, approvalSigningString(byHuman)),
        });
        refusedHttp(other, 404, 'agent_not_found', /approvals are recorded for this server's agent/);
      }
      assert.deepEqual(await store.approvals(agent.publicKey, iso(0), iso(T0 + HOUR)), []);
    });

    it('compliance reads of a small-order agent (GET /compliance/:agent_pk, idn_* tools): 404 agent_not_found', async () => {
      const mcp = await client(perceptionUrl);
      for (const pk of SMALL_ORDER) {
        const res = await fetch(`${perceptionUrl}/compliance/${pk}`);
        assert.equal(res.status, 404);
        assert.equal(((await res.json()) as { error: string }).error, 'agent_not_found');
        for (const name of ['idn_get_compliance_report', 'idn_get_trust_score']) {
          const message = await refusal(mcp.callTool({ name, arguments: { agent_pk: pk } }));
          assert.match(message, /agent_not_found/, `${name}: ${message}`);
        }
      }
    });
  });

  describe('perception start (geofabric perception)', () => {
    let dataDir: string;
    beforeEach(() => {
      dataDir = mkdtempSync(join(tmpdir(), 'perception-small-order-'));
    });
    afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

    async function start(env: Record<string, string>, dir: string) {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), 'perception'], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATA_DIR: dir,
          PERCEPTION_PORT: '0',
          PERCEPTION_HOST: '127.0.0.1',
          MONGODB_URI: '',
          LOG_LEVEL: 'info',
          ...env,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes('geofabric perception listening')) child.kill('SIGTERM');
      });
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, stderr, listened: stdout.includes('geofabric perception listening') };
    }

    it('refuses to start with a small-order key in IDN_DELEGATION_CERT (root or middle) or as GOVERNANCE_PK', async function () {
      this.timeout(60_000);
      const pk = SMALL_ORDER[1]!; // speccheck case 0's key
      const now = Date.now();
      const cases: { env: Record<string, string>; detail: RegExp }[] = [
        {
          env: { IDN_AGENT_SK: agent.secretKey, IDN_DELEGATION_CERT: JSON.stringify(smallRootChain(pk, agent, now)) },
          detail:
            /^geofabric: IDN_DELEGATION_CERT: link 0: principal_pk is invalid: public key is a small-order point$/m,
        },
        {
          env: {
            IDN_AGENT_SK: agent.secretKey,
            IDN_DELEGATION_CERT: JSON.stringify(smallMiddleChain(pk, human, agent, now)),
          },
          detail: /^geofabric: IDN_DELEGATION_CERT: link 0: agent_pk is invalid: public key is a small-order point$/m,
        },
        { env: { GOVERNANCE_PK: pk }, detail: /^geofabric: .*small-order point$/m },
      ];
      const results = await Promise.all(cases.map((c, i) => start(c.env, join(dataDir, String(i)))));
      for (const [i, c] of cases.entries()) {
        const result = results[i]!;
        assert.equal(result.listened, false, `case ${i} started`);
        assert.equal(result.code, 2, `case ${i}: exit ${result.code}: ${result.stderr}`);
        assert.match(result.stderr, c.detail);
      }
    });
  });

  describe('geofabric audit verify', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'audit-small-order-'));
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    async function bundleOf(delegation?: DelegationCertificate[]): Promise<AuditBundle> {
      const gov = await client(governanceUrl);
      const result = (await gov.callTool({
        name: 'generate_audit_proof',
        arguments: { agent_pk: agent.publicKey, ...(delegation ? { delegation_chain: delegation } : {}) },
      })) as CallToolResult;
      assert.notEqual(result.isError, true, textOf(result));
      return JSON.parse(textOf(result)) as AuditBundle;
    }
    async function check(bundle: unknown, ...args: string[]) {
      const file = join(dir, `bundle-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(bundle));
      const log: string[] = [];
      const errors: string[] = [];
      const code = await auditVerifyCommand([file, ...args], { log: (l) => log.push(l), error: (l) => errors.push(l) });
      return { code, out: [...log, ...errors].join('\n'), file };
    }

    it('control: a genuine bundle verifies, also with --server-pk naming its server', async () => {
      const bundle = await bundleOf();
      const res = await check(bundle, '--server-pk', governanceKey.publicKey);
      assert.equal(res.code, 0, res.out);
      assert.match(res.out, /^VALID/m);
    });

    it('--server-pk small-order: the bundle is INVALID (exit 1), never VALID', async () => {
      const bundle = await bundleOf();
      for (const pk of SMALL_ORDER) {
        const res = await check(bundle, '--server-pk', pk);
        assert.equal(res.code, 1, res.out);
        assert.match(res.out, /FAIL {2}server_signature/);
        assert.match(res.out, new RegExp(`not the expected server ${pk}`));
        assert.match(res.out, /^INVALID/m);
      }
    });

    it('a bundle "signed" by a small-order server key (forged), with or without --server-pk naming it: INVALID', async () => {
      const genuine = await bundleOf();
      for (const pk of SMALL_ORDER) {
        const { signature: _dropped, ...unsigned } = genuine;
        const { value, signature } = forge(
          pk,
          (i) => ({ ...unsigned, server_pk: pk, generated_at: iso(T0 + i) }),
          (b) => auditBundleSigningString(b),
        );
        const forged = { ...value, signature };
        for (const args of [[], ['--server-pk', pk]]) {
          const res = await check(forged, ...args);
          assert.equal(res.code, 1, res.out);
          assert.match(res.out, /FAIL {2}server_signature/);
          assert.match(res.out, /^INVALID/m);
        }
      }
    });

    it('a genuine bundle carrying a chain whose human principal is small-order (forged): INVALID, the key named', async () => {
      for (const pk of SMALL_ORDER.slice(0, 2)) {
        const bundle = await bundleOf(smallRootChain(pk, agent, T0));
        const res = await check(bundle, '--server-pk', governanceKey.publicKey);
        assert.equal(res.code, 1, res.out);
        assert.match(res.out, /FAIL {2}delegation_chain .*principal_pk is invalid: public key is a small-order point/);
      }
    });

    it('the CLI itself (child process): --server-pk small-order exits 1 with INVALID', async function () {
      this.timeout(60_000);
      const { file } = await check(await bundleOf());
      const pk = SMALL_ORDER[1]!;
      const outcome = await run(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), 'audit', 'verify', file, '--server-pk', pk],
        {
          cwd: ROOT,
        },
      ).then(
        () => assert.fail('audit verify accepted a bundle for a small-order server key'),
        (error: { code: number; stdout: string }) => error,
      );
      assert.equal(outcome.code, 1);
      assert.match(outcome.stdout, new RegExp(`not the expected server ${pk}`));
      assert.match(outcome.stdout, /^INVALID/m);
    });
  });
});
