/**
 * Abuse bounds (docs/operations.md), at the gateway: a certificate chain deeper than a link's max_depth, longer than the
 * global maximum (8 links), with a loop (A→B→A, A→A, back to the human) or with a link repeated fails gate 3
 * (`x-svc-delegation-cert`) with 403 `delegation_invalid` naming the problem, and nothing runs: no job, no
 * model call, no ledger entry. Checked on a signed compute request (the chain must end at the requester) and on
 * a public route (the chain is still checked, its end agent aside), and through `geofabric cert verify`.
 * core/delegation-cert.ts holds the rules (unit tests in test/core/delegation-cert.test.ts); these are end to end.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import type { KeyPair } from '../../core/identity.js';
import { chainCases, type ChainCase } from '../helpers/abusive-chains.js';
import { startFakeRuntime, type FakeRuntime } from '../helpers/fake-openai-runtime.js';
import { startGateway } from '../helpers/gateway.js';
import { certHeader, inferenceJob, signJob } from '../helpers/jobs.js';

const ROOT = resolve(import.meta.dirname, '../..');
const T0 = Date.UTC(2026, 2, 1, 12);
const HOUR = 3_600_000;
const WORKER_MODEL = 'lfm2.5-1.2b-instruct';
const run = promisify(execFile);

type Gateway = Awaited<ReturnType<typeof startGateway>>;

/** One link `principal → agent` over the Rome resolution-5 cell, valid around T0. */
const link = (principal: KeyPair, agent: KeyPair, maxDepth: number): DelegationCertificate =>
  issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: ['851e8053fffffff'],
    facets: ['inference', 'tile_render', 'image_process'],
    not_before: new Date(T0 - HOUR).toISOString(),
    not_after: new Date(T0 + 24 * HOUR).toISOString(),
    max_depth: maxDepth,
  });

const { controls, abuses } = chainCases(link);
type Case = ChainCase;

describe('delegation chain abuse at the gateway (gate 3)', function () {
  this.timeout(20_000);
  let gw: Gateway;
  let runtime: FakeRuntime;

  before(async () => {
    runtime = await startFakeRuntime(WORKER_MODEL, () => ({
      content: 'Villa Borghese.',
      usage: { prompt_tokens: 12, completion_tokens: 3 },
    }));
  });
  after(() => runtime.close());
  beforeEach(async () => {
    gw = await startGateway({
      clock: () => T0,
      swarm: { workerRuntimeUrl: runtime.url, workerModels: [WORKER_MODEL] },
    });
  });
  afterEach(() => gw.close());

  const compute = (c: Case) => {
    const signed = signJob(c.requester, inferenceJob('three parks in Rome'));
    return gw.post('/v1/compute', signed.body, { ...signed.headers, 'x-svc-delegation-cert': certHeader(c.chain) });
  };
  /** What the public GETs show: jobs, the requester's and the node's ledger balances, and model calls. */
  const effects = async (c: Case) => ({
    jobs: ((await gw.get('/v1/compute/recent')).body as { count: number }).count,
    requester: ((await gw.get(`/svc/workers/${c.requester.publicKey}/earnings`)).body as { balance_credits: number })
      .balance_credits,
    node: ((await gw.get(`/svc/workers/${gw.node.publicKey}/earnings`)).body as { balance_credits: number })
      .balance_credits,
    chats: runtime.chats().length,
  });

  for (const c of controls) {
    it(`control: ${c.name} passes gate 3 and the job runs`, async () => {
      const before = await effects(c);
      const res = await compute(c);
      assert.equal(res.status, 200, res.text);
      assert.equal((res.body as { status: string }).status, 'complete');
      const after = await effects(c);
      assert.equal(after.jobs, before.jobs + 1);
      assert.ok(after.requester < before.requester, 'the requester was charged');
    });
  }

  for (const c of abuses) {
    it(`${c.name}: signed compute → 403 delegation_invalid, nothing runs or is charged`, async () => {
      const before = await effects(c);
      const res = await compute(c);
      assert.equal(res.status, 403, res.text);
      assert.equal((res.body as { error: string }).error, 'delegation_invalid');
      assert.match((res.body as { detail: string }).detail, c.detail);
      assert.deepEqual(await effects(c), before);
    });
  }

  it('every abuse is refused on a public route too (gate 3 checks any supplied chain), the controls pass', async () => {
    for (const c of controls) {
      const res = await gw.get('/v1/tools', { 'x-svc-delegation-cert': certHeader(c.chain) });
      assert.equal(res.status, 200, `${c.name}: ${res.text}`);
    }
    for (const c of abuses) {
      const res = await gw.get('/v1/tools', { 'x-svc-delegation-cert': certHeader(c.chain) });
      assert.equal(res.status, 403, `${c.name}: ${res.text}`);
      assert.equal((res.body as { error: string }).error, 'delegation_invalid');
      assert.match((res.body as { detail: string }).detail, c.detail, c.name);
    }
  });

  it('a looped chain in url-safe base64 is refused the same way', async () => {
    const loop = abuses.find((c) => c.name.startsWith('loop: human → A → B'))!;
    const urlSafe = Buffer.from(JSON.stringify(loop.chain)).toString('base64url');
    const signed = signJob(loop.requester, inferenceJob('three parks in Rome'));
    const res = await gw.post('/v1/compute', signed.body, { ...signed.headers, 'x-svc-delegation-cert': urlSafe });
    assert.equal(res.status, 403, res.text);
    assert.match((res.body as { detail: string }).detail, loop.detail);
  });

  describe('geofabric cert verify (CLI)', () => {
    let dir: string;
    before(() => {
      dir = mkdtempSync(join(tmpdir(), 'cert-abuse-'));
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    const verify = async (c: Case, index: number, base64: boolean) => {
      const file = join(dir, `chain-${index}-${base64 ? 'b64' : 'json'}`);
      const text = JSON.stringify(c.chain);
      writeFileSync(file, base64 ? Buffer.from(text).toString('base64') : text);
      try {
        const { stdout } = await run(
          process.execPath,
          [
            '--import',
            'tsx',
            join(ROOT, 'bin', 'geofabric.ts'),
            'cert',
            'verify',
            file,
            '--at',
            new Date(T0).toISOString(),
          ],
          { cwd: ROOT },
        );
        return { code: 0, out: JSON.parse(stdout) as { valid: boolean; error?: string; detail?: string } };
      } catch (error) {
        const failed = error as { code: number; stdout: string; stderr: string };
        assert.equal(failed.code, 1, `exit ${failed.code}: ${failed.stderr}`);
        return { code: 1, out: JSON.parse(failed.stdout) as { valid: boolean; error?: string; detail?: string } };
      }
    };

    // One process per chain costs a TypeScript start-up each: one case of each kind, one of them as base64.
    const kinds = ['depth: a link', 'length:', 'loop: human → A → B', 'repeated link: the same'];

    it('exits 1 with valid: false and the reason for a chain too deep, too long, looped or repeated; 0 for a good one', async function () {
      this.timeout(60_000);
      const picked = kinds.map((prefix) => abuses.find((c) => c.name.startsWith(prefix))!);
      const results = await Promise.all([
        verify(controls[0]!, 0, false),
        ...picked.map((c, i) => verify(c, i + 1, i === 2)),
      ]);
      assert.deepEqual([results[0]!.code, results[0]!.out.valid], [0, true]);
      for (const [i, c] of picked.entries()) {
        const result = results[i + 1]!;
        assert.equal(result.code, 1, c.name);
        assert.equal(result.out.valid, false, c.name);
        assert.equal(result.out.error, 'delegation_invalid', c.name);
        assert.match(result.out.detail ?? '', c.detail, c.name);
      }
    });
  });
});
