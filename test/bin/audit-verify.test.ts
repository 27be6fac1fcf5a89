import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { auditVerifyCommand } from '../../bin/audit-verify.js';
import { rollAgentEpoch } from '../../core/agent-epoch.js';
import { buildAuditBundle, type AuditBundle } from '../../core/audit-bundle.js';
import { breadcrumbContext, nextBreadcrumb, signBreadcrumb } from '../../core/breadcrumb.js';
import type { StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import { certificateHash, issueCertificate } from '../../core/delegation-cert.js';
import { keyPairFromSecret } from '../../core/identity.js';

const agent = keyPairFromSecret('e5'.repeat(32));
const human = keyPairFromSecret('f6'.repeat(32));
const server = keyPairFromSecret('07'.repeat(32));
const T0 = Date.parse('2026-04-01T08:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const cert = issueCertificate(human.secretKey, {
  agent_pk: agent.publicKey,
  h3_cells: ['851e8053fffffff'],
  facets: ['perception'],
  not_before: '2026-04-01T00:00:00.000Z',
  not_after: '2026-04-02T00:00:00.000Z',
  max_depth: 0,
});

function makeBundle(): AuditBundle {
  const blocks: StoredBreadcrumb[] = [];
  let tip: StoredBreadcrumb | null = null;
  for (let i = 0; i < 5; i++) {
    const content = nextBreadcrumb(tip, {
      identity: agent.publicKey,
      timestamp: iso(T0 + i * 1000),
      loc_cell: '861e8050fffffff',
      loc_res: 6,
      context: breadcrumbContext({ i }, { ok: true }, 'ok'),
      delegation_cert_hash: certificateHash(cert),
      facet: 'perception',
      meta: {},
      tool_name: 'perception_weather',
    });
    tip = signBreadcrumb(content, agent).stored;
    blocks.push(tip);
  }
  const sealed = blocks.slice(0, 3);
  const epoch = rollAgentEpoch({ agent, blocks: sealed, previous: null, tier: 'observed', nowMs: T0 + 10_000 });
  return buildAuditBundle(
    {
      generatedAtMs: T0 + 20_000,
      agentPk: agent.publicKey,
      period: { from: iso(T0), to: iso(T0 + 3_600_000) },
      report: { version: 1, agent_pk: agent.publicKey, reporting_period: { from: iso(T0), to: iso(T0 + 3_600_000) } },
      blocks,
      anchor: null,
      epochs: [{ epoch, blockHashes: sealed.map((b) => b.block_hash) }],
      chain: [cert],
      trust: { trust_score: 10, current_tier: 'provisioned' },
      violations: [],
    },
    server,
  );
}

/** Runs the command, capturing what it prints. */
async function run(args: string[]) {
  const log: string[] = [];
  const error: string[] = [];
  const code = await auditVerifyCommand(args, { log: (l) => log.push(l), error: (l) => error.push(l) });
  return { code, log: log.join('\n'), error: error.join('\n') };
}

describe('geofabric audit verify', () => {
  let dir: string;
  let valid: string;
  let tampered: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'geofabric-audit-verify-'));
    const bundle = makeBundle();
    valid = join(dir, 'bundle.json');
    writeFileSync(valid, JSON.stringify(bundle, null, 2));
    // One flipped byte inside block 1's signed data.
    const block = bundle.blocks[1] as StoredBreadcrumb;
    const at = block.data_to_sign.indexOf('"args_hash":"') + 13;
    block.data_to_sign =
      block.data_to_sign.slice(0, at) + (block.data_to_sign[at] === 'a' ? 'b' : 'a') + block.data_to_sign.slice(at + 1);
    tampered = join(dir, 'tampered.json');
    writeFileSync(tampered, JSON.stringify(bundle));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 on a valid bundle, with a line per check and the unsealed warning', async () => {
    const { code, log, error } = await run([valid]);
    assert.equal(code, 0, log);
    assert.equal(error, '');
    assert.match(log, new RegExp(`^  agent   ${agent.publicKey}$`, 'm'));
    assert.match(log, /^ {2}ok {4}server_signature/m);
    assert.match(log, /^ {2}ok {4}block_chain +5 blocks, 0\.\.4$/m);
    assert.match(log, /blocks 3\.\.4 are not sealed in an epoch yet/);
    assert.match(log, /^VALID \(0 errors, 1 warning\)$/m);
    assert.doesNotMatch(log, /FAIL/);
  });

  it('prints the verdict as JSON with --json', async () => {
    const { code, log } = await run(['--json', valid]);
    assert.equal(code, 0);
    const verdict = JSON.parse(log) as { file: string; valid: boolean; checks: { name: string; ok: boolean }[] };
    assert.equal(verdict.file, valid);
    assert.equal(verdict.valid, true);
    assert.ok(verdict.checks.every((c) => c.ok));
  });

  it('exits 1 when one byte of the bundle was flipped, naming the failing checks', async () => {
    const { code, log } = await run([tampered]);
    assert.equal(code, 1);
    assert.match(log, /^ {2}FAIL {2}server_signature/m);
    assert.match(log, /^ {2}FAIL {2}block_chain +block 1: Ed25519 signature does not verify/m);
    assert.match(log, /^INVALID \(\d+ errors, 1 warning\)$/m);

    const json = await run([tampered, '--json']);
    assert.equal(json.code, 1);
    assert.equal((JSON.parse(json.log) as { valid: boolean }).valid, false);
  });

  it('exits 2 with a clear message on a missing or unreadable file, or bad usage', async () => {
    const missing = await run([join(dir, 'nope.json')]);
    assert.equal(missing.code, 2);
    assert.equal(missing.log, '');
    assert.equal(missing.error, `cannot read ${join(dir, 'nope.json')}: no such file`);

    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, 'this is not json');
    const garbage = await run([notJson]);
    assert.equal(garbage.code, 2);
    assert.match(garbage.error, /^cannot read .*not\.json: not JSON \(/);

    assert.equal((await run([dir])).code, 2);
    for (const args of [[], ['--frobnicate', valid], [valid, valid]]) {
      const result = await run(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.error, /^usage: geofabric audit verify BUNDLE\.json \[--json\] \[--server-pk HEX\]/);
      assert.doesNotMatch(result.error, /\n\s+at /);
    }
  });

  it('checks the signing server with --server-pk', async () => {
    assert.equal((await run([valid, '--server-pk', server.publicKey])).code, 0);
    const other = await run([valid, '--server-pk', agent.publicKey]);
    assert.equal(other.code, 1);
    assert.match(other.log, /FAIL {2}server_signature +the bundle is signed by [0-9a-f]{64}, not the expected server/);
    const bad = await run([valid, '--server-pk', 'xyz']);
    assert.equal(bad.code, 2);
    assert.match(bad.error, /--server-pk is 64 lowercase hex/);
  });

  it('exits 1 on JSON that is not a bundle', async () => {
    const other = join(dir, 'other.json');
    writeFileSync(other, '{"hello":"world"}');
    const { code, log } = await run([other]);
    assert.equal(code, 1);
    assert.match(log, /FAIL {2}bundle_shape +the bundle is not a version 1 audit bundle/);
  });
});
