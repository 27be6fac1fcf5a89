/**
 * Abuse bounds (docs/operations.md), at the gateway and its CLI: the eight small-order Ed25519 points (the torsion
 * subgroup; speccheck case 0 of vectors/ed25519 is one) are refused wherever a public key enters:
 *   gate 1 `requester_pk` on every signed route (compute, worker registration and heartbeat, record and seal
 *   pushes, proof purchase), a delegation certificate's principal or agent (gate 3, signed and public routes),
 *   the writer of a pushed proof record and the sealer of a pushed seal, the account of
 *   `GET /svc/workers/:pk/earnings`, and the record and seal keys `geofabric proof verify` is shown.
 * Each with a clear 4xx JSON error (never a 5xx), and no effect.
 *
 * The signatures are not random: for each key a signature R‖S with S = 0 and R a small-order point such that
 * R + [k]A = 0 is searched for (k = SHA-512(R‖A‖M) mod L), so [S]B = R + [k]A holds and a verifier that does
 * not refuse small-order keys — OpenSSL's, node:crypto's — accepts it for a message nobody signed. The tests
 * assert that first, so a refusal can only come from the key check.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve, join } from 'node:path';
import { promisify } from 'node:util';
import { ed25519 } from '@noble/curves/ed25519.js';
import {
  certificateSigningString,
  issueCertificate,
  type DelegationCertificate,
  type UnsignedCertificate,
} from '../../core/delegation-cert.js';
import { requestSigningMessage, signRequestBody } from '../../core/gates/signature.js';
import { bytesToHex } from '../../core/hex.js';
import { checkPublicKey, generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';
import { leafHashFromHex } from '../../core/merkle/tree.js';
import { recordHash } from '../../core/proof-record.js';
import { GENESIS_PREV_HASH, type ProofRecord, type Seal, type UnsignedProofRecord } from '../../core/proof-types.js';
import { sealHash } from '../../core/seal.js';
import { createPerceptionServer } from '../../mcp/perception/server.js';
import { createSqliteAuditStore } from '../../store/sqlite/audit-store.js';
import { openSqlite } from '../../store/sqlite/open-database.js';
import { createSqliteProofStore } from '../../store/sqlite/proof-store.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { epochAt } from '../../core/epoch.js';
import { forge, SMALL_ORDER } from '../helpers/small-order.js';
import { startGateway, type TestResponse } from '../helpers/gateway.js';
import { certHeader, inferenceJob, signJob } from '../helpers/jobs.js';
import { inferenceEntry, sealThrough } from '../helpers/proofs.js';

const ROOT = resolve(import.meta.dirname, '../..');
const VECTORS = resolve(import.meta.dirname, '../fixtures/vectors/ed25519');
const T0 = Date.UTC(2026, 2, 1, 12);
const HOUR = 3_600_000;
// Two epochs before T0's: past the sync window, so its records go with their seal.
const EPOCH = epochAt(T0) - 2;
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const run = promisify(execFile);
const iso = (ms: number) => new Date(ms).toISOString();

type Gateway = Awaited<ReturnType<typeof startGateway>>;
type Body = Record<string, unknown>;

// ---- forgeries under small-order keys (test/helpers/small-order.ts) ----

/** A body signed "by" a small-order key: requester_pk set, a nonce varied until the forgery exists. */
function forgedRequest(pk: string, body: Body): { body: Body; signature: string } {
  const { value, signature } = forge(
    pk,
    (i) => ({ ...body, requester_pk: pk, nonce: `small-order-${i}` }),
    (b) => requestSigningMessage(b),
  );
  return { body: { ...value, signature }, signature };
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

/**
 * A certificate from a real principal to whatever agent key it names, signed as a principal's own tooling would
 * sign it if it did not refuse the agent key (issueCertificate does): what another implementation may send.
 */
function signedBy(principal: KeyPair, fields: Omit<UnsignedCertificate, 'principal_pk'>): DelegationCertificate {
  const unsigned = { ...fields, principal_pk: principal.publicKey };
  return { ...unsigned, principal_signature: signMessage(principal.secretKey, certificateSigningString(unsigned)) };
}

/** A proof record "written" by a small-order key, and its one-record seal, both forged. */
function forgedRecordAndSeal(pk: string, index: number): { record: ProofRecord; seal: Seal } {
  const { value: unsigned, signature } = forge(
    pk,
    (i): UnsignedProofRecord => ({
      version: 1,
      id: `small-${index}-${i}`,
      address: { h3_cell: '861e8050fffffff', epoch: EPOCH, pk },
      collection_type: 'inference',
      payload_type: 'hive/inference',
      payload: { model: 'tinyllama', text: 'never written by anyone' },
      seq: 1,
      written_at: iso(T0),
    }),
    (r) => recordHash(r),
  );
  const hash = recordHash(unsigned);
  const record: ProofRecord = { ...unsigned, record_hash: hash, signature };
  const { value: unsignedSeal, signature: sealSignature } = forge(
    pk,
    (i) => ({
      version: 1 as const,
      sealer_pk: pk,
      epoch: EPOCH,
      record_count: 1,
      first_seq: 1,
      last_seq: 1,
      merkle_root: bytesToHex(leafHashFromHex(hash)),
      prev_epoch_hash: GENESIS_PREV_HASH,
      sealed_at: iso(T0 + HOUR + i),
    }),
    (s) => sealHash(s),
  );
  return { record, seal: { ...unsignedSeal, seal_hash: sealHash(unsignedSeal), signature: sealSignature } };
}

// -----------------------------------------------------------------------------------------------------------

/** Certificate fields for `agentPk` over the Rome resolution-5 cell, valid around T0. */
const fieldsFor = (agentPk: string, maxDepth = 0): Omit<UnsignedCertificate, 'principal_pk'> => ({
  version: 1,
  agent_pk: agentPk,
  h3_cells: ['851e8053fffffff'],
  facets: ['inference'],
  not_before: iso(T0 - HOUR),
  not_after: iso(T0 + 24 * HOUR),
  max_depth: maxDepth,
  constraints: null,
});

const errorOf = (res: TestResponse) => (res.body as { error?: string } | undefined)?.error;
const detailOf = (res: TestResponse) => String((res.body as { detail?: string } | undefined)?.detail);

describe('small-order public keys are refused everywhere: gateway and CLI', function () {
  this.timeout(20_000);
  let gw: Gateway;
  let now: number;
  let runtime: FakeRuntime;
  const human = generateKeyPair();
  const alice = generateKeyPair();
  const writer = generateKeyPair();
  let records: ProofRecord[];
  let seals: Seal[];

  before(async () => {
    runtime = await startFakeRuntime(WORKER_MODEL, () => ({
      content: 'Villa Borghese.',
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    }));
    const local = createSqliteProofStore(openSqlite(':memory:'));
    records = await local.appendRecords(writer, [inferenceEntry('rec-a', EPOCH)]);
    seals = await sealThrough(local, writer, EPOCH);
  });
  after(() => runtime.close());
  beforeEach(async () => {
    now = T0;
    gw = await startGateway({
      clock: () => now,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
      // Alice relays records as a node would; the writer pushes its own as a node.
      config: { proofSync: { nodeKeys: [alice.publicKey, writer.publicKey] } },
    });
  });
  afterEach(() => gw.close());

  const get = async (path: string) => {
    const res = await gw.get(path);
    assert.equal(res.status, 200, `${path}: ${res.text}`);
    return res.body as Record<string, unknown>;
  };
  const pushAs = async (key: KeyPair, path: '/store/sync' | '/store/epochs', items: unknown[]) => {
    const { body, signature } = signRequestBody(key.secretKey, {
      ...(path === '/store/sync' ? { records: items, seals } : { seals: items }),
      created_at: iso(now),
    });
    const res = await gw.post(path, body, { 'x-idn-signature': signature });
    assert.equal(res.status, 200, res.text);
  };
  /** Everything a refused request could have touched, as the public GET routes show it. */
  const effects = async () => {
    await gw.writer.flush();
    return {
      jobs: (await get('/v1/compute/recent')).count,
      workers: ((await get('/svc/workers')).workers as { pk: string }[]).map((w) => w.pk),
      records: ((await get('/store/query?limit=1000')).records as ProofRecord[]).map((r) => r.id),
      proof: await gw.get('/store/proof/rec-a').then((res) => (res.status === 404 ? 'unknown' : res.text)),
      node: (await get(`/svc/workers/${gw.node.publicKey}/earnings`)).balance_credits,
      chats: runtime.chats().length,
    };
  };
  const refusedKey = (res: TestResponse, code: string, detail: RegExp) => {
    assert.equal(errorOf(res), code, res.text);
    assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}`);
    assert.equal(
      res.status,
      code === 'invalid_public_key' || code === 'invalid_record' || code === 'invalid_seal' ? 400 : 403,
    );
    assert.match(detailOf(res), detail);
  };

  it('the eight keys are the torsion subgroup, include speccheck case 0, and every one is refused by core/identity.ts', () => {
    assert.equal(new Set(SMALL_ORDER).size, 8);
    for (const pk of SMALL_ORDER) assert.ok(ed25519.Point.fromHex(pk).isSmallOrder(), pk);
    const speccheck = JSON.parse(readFileSync(resolve(VECTORS, 'speccheck-cases.json'), 'utf8')) as {
      pub_key: string;
    }[];
    assert.ok(SMALL_ORDER.includes(speccheck[0]!.pub_key), 'speccheck case 0 is a small-order key');
    for (const pk of SMALL_ORDER)
      assert.match(String((checkPublicKey(pk) as { detail?: string }).detail), /small-order/);
  });

  describe('gate 1: requester_pk on every signed route', () => {
    const registration = (): Body => ({
      h3_cell: '861e8050fffffff',
      models: ['tinyllama'],
      tools: ['web-search'],
      hardware: { platform: 'linux-x64', gpu: null, vram_gb: 0, ram_gb: 16, cores: 8 },
      hardware_tier: 1,
      relay: false,
      version: '0.1.0',
      created_at: iso(now),
    });
    const routes: { name: string; path: string; body: () => Body; setup?: () => Promise<void> }[] = [
      { name: 'POST /v1/compute', path: '/v1/compute', body: () => inferenceJob('a park', { created_at: iso(now) }) },
      { name: 'POST /svc/workers/register', path: '/svc/workers/register', body: registration },
      {
        name: 'POST /svc/workers/heartbeat',
        path: '/svc/workers/heartbeat',
        body: () => ({ seq: 1 }),
        setup: async () => {
          const { body, signature } = signRequestBody(alice.secretKey, registration());
          assert.equal((await gw.post('/svc/workers/register', body, { 'x-idn-signature': signature })).status, 201);
        },
      },
      { name: 'POST /store/sync', path: '/store/sync', body: () => ({ records, seals, created_at: iso(now) }) },
      {
        name: 'POST /store/epochs',
        path: '/store/epochs',
        body: () => ({ seals, created_at: iso(now) }),
        setup: () => pushAs(alice, '/store/sync', records),
      },
      {
        name: 'POST /store/proof/:record_id',
        path: '/store/proof/rec-a',
        body: () => ({ record_id: 'rec-a', created_at: iso(now) }),
        setup: async () => {
          await pushAs(writer, '/store/sync', records);
          await pushAs(writer, '/store/epochs', seals);
        },
      },
    ];

    for (const route of routes) {
      it(`${route.name}: 400 invalid_public_key for each of the 8 keys (forged signatures), no effect`, async () => {
        await route.setup?.();
        const before = await effects();
        for (const pk of SMALL_ORDER) {
          const forged = forgedRequest(pk, route.body());
          const res = await gw.post(route.path, forged.body, { 'x-idn-signature': forged.signature });
          refusedKey(res, 'invalid_public_key', /^requester_pk: public key is a small-order point$/);
        }
        assert.deepEqual(await effects(), before);
        // Control: the same request by a real key passes.
        const { body, signature } = signRequestBody(alice.secretKey, route.body());
        const accepted = await gw.post(route.path, body, { 'x-idn-signature': signature });
        assert.ok(accepted.status >= 200 && accepted.status < 300, accepted.text);
      });
    }
  });

  describe("gate 3: a delegation certificate's principal or agent", () => {
    const fields = fieldsFor;
    const compute = (chain: DelegationCertificate[]) => {
      const signed = signJob(alice, inferenceJob('a park'));
      return gw.post('/v1/compute', signed.body, { ...signed.headers, 'x-svc-delegation-cert': certHeader(chain) });
    };

    it('a small-order root principal (the "human"), its signature forged: 403 delegation_invalid, nothing runs', async () => {
      const before = await effects();
      for (const pk of SMALL_ORDER) {
        const chain = [forgedCertificate(pk, fields(alice.publicKey))];
        refusedKey(
          await compute(chain),
          'delegation_invalid',
          /^link 0: principal_pk is invalid: public key is a small-order point$/,
        );
        const open = await gw.get('/v1/tools', { 'x-svc-delegation-cert': certHeader(chain) });
        refusedKey(open, 'delegation_invalid', /link 0: principal_pk is invalid: .*small-order/);
      }
      assert.deepEqual(await effects(), before);
    });

    it('a small-order agent in the middle (human → small → alice, its link forged): 403 delegation_invalid', async () => {
      const before = await effects();
      for (const pk of SMALL_ORDER) {
        const top = signedBy(human, fields(pk, 1));
        const chain = [top, forgedCertificate(pk, fields(alice.publicKey))];
        refusedKey(
          await compute(chain),
          'delegation_invalid',
          /^link 0: agent_pk is invalid: public key is a small-order point$/,
        );
      }
      assert.deepEqual(await effects(), before);
    });

    it('a certificate to a small-order agent on a public route: 403 delegation_invalid', async () => {
      for (const pk of SMALL_ORDER) {
        const chain = [signedBy(human, fields(pk))];
        const res = await gw.get('/v1/tools', { 'x-svc-delegation-cert': certHeader(chain) });
        refusedKey(res, 'delegation_invalid', /^link 0: agent_pk is invalid: public key is a small-order point$/);
      }
    });

    it('issueCertificate and `geofabric cert issue` refuse to delegate to a small-order agent', async function () {
      this.timeout(60_000);
      for (const pk of SMALL_ORDER) {
        assert.throws(
          () => issueCertificate(human.secretKey, fields(pk)),
          (error: Error) =>
            error instanceof TypeError && /agent_pk: public key is a small-order point/.test(error.message),
        );
      }
      const dir = mkdtempSync(join(tmpdir(), 'cert-issue-small-order-'));
      try {
        const keyFile = join(dir, 'human.json');
        writeFileSync(keyFile, JSON.stringify({ public_key: human.publicKey, secret_key: human.secretKey }), {
          mode: 0o600,
        });
        const args = ['cert', 'issue', '--key', keyFile, '--cells', '851e8053fffffff', '--facets', 'inference'];
        const issue = (agentPk: string) =>
          run(process.execPath, ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), ...args, '--agent', agentPk], {
            cwd: ROOT,
          }).then(
            ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
            (error: { code: number; stdout: string; stderr: string }) => error,
          );
        const [refused, control] = await Promise.all([issue(SMALL_ORDER[1]!), issue(alice.publicKey)]);
        assert.equal(refused.code, 2, refused.stderr);
        assert.equal(refused.stdout, '');
        assert.match(refused.stderr, /agent_pk: public key is a small-order point/);
        assert.equal(control.code, 0, control.stderr);
        assert.equal((JSON.parse(control.stdout) as DelegationCertificate).agent_pk, alice.publicKey);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('control: the same chain from a real human to alice passes', async () => {
      const res = await compute([issueCertificate(human.secretKey, fields(alice.publicKey))]);
      assert.equal(res.status, 200, res.text);
    });
  });

  describe('proof records and seals pushed to the store', () => {
    it('a record written by a small-order key (signature forged) is rejected as invalid_record, not stored', async () => {
      const before = await effects();
      for (const [i, pk] of SMALL_ORDER.entries()) {
        const { record } = forgedRecordAndSeal(pk, i);
        const { body, signature } = signRequestBody(alice.secretKey, { records: [record], created_at: iso(now) });
        const res = await gw.post('/store/sync', body, { 'x-idn-signature': signature });
        assert.equal(res.status, 400, res.text);
        const answer = res.body as {
          error: string;
          accepted: string[];
          rejected: { id: string; error: string; detail: string }[];
        };
        assert.equal(answer.error, 'invalid_record');
        assert.deepEqual(answer.accepted, []);
        assert.equal(answer.rejected[0]?.id, record.id);
        assert.match(answer.rejected[0]!.detail, /small-order/);
        assert.equal((await gw.get(`/store/proof/${record.id}`)).status, 404);
      }
      assert.deepEqual(await effects(), before);
    });

    it('a seal by a small-order sealer (signature forged) is rejected as invalid_seal', async () => {
      const before = await effects();
      for (const [i, pk] of SMALL_ORDER.entries()) {
        const { seal } = forgedRecordAndSeal(pk, i);
        const { body, signature } = signRequestBody(alice.secretKey, { seals: [seal], created_at: iso(now) });
        const res = await gw.post('/store/epochs', body, { 'x-idn-signature': signature });
        assert.equal(res.status, 400, res.text);
        const answer = res.body as { error: string; rejected: { error: string; detail: string }[] };
        assert.equal(answer.error, 'invalid_seal');
        assert.match(answer.rejected[0]!.detail, /small-order/);
      }
      assert.deepEqual(await effects(), before);
    });
  });

  describe('GET /svc/workers/:pk/earnings', () => {
    it('400 invalid_public_key for each small-order key (no account can hold one)', async () => {
      for (const pk of SMALL_ORDER) {
        const res = await gw.get(`/svc/workers/${pk}/earnings`);
        refusedKey(res, 'invalid_public_key', /small-order/);
      }
      assert.equal((await gw.get(`/svc/workers/${alice.publicKey}/earnings`)).status, 200);
    });
  });

  describe('GET /dashboard/api/compliance/:agent_pk (proxy to the perception service)', () => {
    it("relays the perception service's 404 agent_not_found for each small-order key (no report)", async () => {
      const db = openSqlite(':memory:');
      const audit = createSqliteAuditStore(db);
      const agent = generateKeyPair();
      const perception = createPerceptionServer({
        store: audit,
        agent,
        chain: [issueCertificate(human.secretKey, { ...fieldsFor(agent.publicKey), facets: ['compliance'] })],
        principalLocal: false,
        clock: () => T0,
        tools: [],
      });
      const { url } = await perception.listen(0, '127.0.0.1');
      const proxy = await startGateway({ config: { perceptionUrl: url } });
      try {
        for (const pk of SMALL_ORDER) {
          const res = await proxy.get(`/dashboard/api/compliance/${pk}`);
          assert.equal(res.status, 404, res.text);
          assert.equal(errorOf(res), 'agent_not_found');
        }
        // Control: the perception agent's own report comes through.
        const own = await proxy.get(`/dashboard/api/compliance/${agent.publicKey}`);
        assert.equal(own.status, 200, own.text);
      } finally {
        await proxy.close();
        await perception.close();
        await audit.close();
        db.close();
      }
    });
  });

  describe('geofabric proof verify (CLI)', () => {
    let server: Server;
    let url: string;
    const bundles = new Map<string, unknown>();

    before(async () => {
      // A store that serves forged proofs: the record, its seal and the one-leaf path, all "verified".
      server = createServer((req, res) => {
        const id = decodeURIComponent(req.url?.replace(/^\/store\/proof\//, '') ?? '');
        const bundle = bundles.get(id);
        res.writeHead(bundle ? 200 : 404, { 'content-type': 'application/json' });
        res.end(JSON.stringify(bundle ?? { error: 'record_not_found' }));
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const [i, pk] of SMALL_ORDER.entries()) {
        const { record, seal } = forgedRecordAndSeal(pk, i);
        bundles.set(record.id, { record, seal, proof: { leaf_index: 0, tree_size: 1, hashes: [] }, verified: true });
      }
    });
    after(async () => {
      server.close();
      await once(server, 'close');
    });

    it('exits 1 for every record and seal signed by a small-order key, naming the key, though the server says verified', async function () {
      this.timeout(60_000);
      const ids = [...bundles.keys()];
      let stdout: string;
      try {
        await run(
          process.execPath,
          ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), 'proof', 'verify', ...ids, '--url', url],
          {
            cwd: ROOT,
          },
        );
        assert.fail('proof verify accepted forged small-order proofs');
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        assert.equal(failed.code, 1, failed.stderr);
        stdout = failed.stdout;
      }
      const report = JSON.parse(stdout) as {
        verified: boolean;
        failures?: { record_id: string; problems: string[] }[];
      };
      assert.equal(report.verified, false);
      const text = JSON.stringify(report);
      for (const id of ids) assert.ok(text.includes(id), `${id} is reported`);
      assert.match(text, /small-order/);

      // One record alone prints its verdict.
      const one = await run(
        process.execPath,
        ['--import', 'tsx', join(ROOT, 'bin', 'geofabric.ts'), 'proof', 'verify', ids[0]!, '--url', url],
        {
          cwd: ROOT,
        },
      ).then(
        () => assert.fail('accepted'),
        (error: { code: number; stdout: string }) => error,
      );
      assert.equal(one.code, 1);
      const verdict = JSON.parse(one.stdout) as {
        verified: boolean;
        problems: string[];
        server_said_verified: boolean;
      };
      assert.equal(verdict.verified, false);
      assert.equal(verdict.server_said_verified, true);
      assert.match(verdict.problems.join('\n'), /small-order/);
    });
  });
});
