import assert from 'node:assert/strict';
import { rollAgentEpoch } from '../../core/agent-epoch.js';
import {
  AUDIT_REGULATORY_BASIS,
  auditBundleSigningString,
  buildAuditBundle,
  verifyAuditBundle,
  type AuditBundle,
  type AuditBundleInput,
  type AuditBundleVerification,
} from '../../core/audit-bundle.js';
import { breadcrumbBlockHash, breadcrumbContext, nextBreadcrumb, signBreadcrumb } from '../../core/breadcrumb.js';
import type { AgentEpoch, StoredBreadcrumb, Violation } from '../../core/breadcrumb-types.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { certificateHash, issueCertificate } from '../../core/delegation-cert.js';
import { keyPairFromSecret, signMessage, verifySignature } from '../../core/identity.js';

const agent = keyPairFromSecret('a1'.repeat(32));
const human = keyPairFromSecret('b2'.repeat(32));
const server = keyPairFromSecret('c3'.repeat(32));
const stranger = keyPairFromSecret('d4'.repeat(32));

const ROME_RES5 = '851e8053fffffff';
const ROME_RES6 = '861e8050fffffff';
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const MINUTE = 60_000;
const iso = (ms: number) => new Date(ms).toISOString();

const CERT = issueCertificate(human.secretKey, {
  agent_pk: agent.publicKey,
  h3_cells: [ROME_RES5],
  facets: ['perception'],
  not_before: '2026-03-01T00:00:00.000Z',
  not_after: '2026-03-02T00:00:00.000Z',
  max_depth: 0,
});
const CERT_HASH = certificateHash(CERT);

/** Blocks 0..n-1 of `agent`, a minute apart; block 6 is a blocked call (a violation). */
function buildChain(n: number): StoredBreadcrumb[] {
  const out: StoredBreadcrumb[] = [];
  let tip: StoredBreadcrumb | null = null;
  for (let i = 0; i < n; i++) {
    const blocked = i === 6;
    const content = nextBreadcrumb(tip, {
      identity: agent.publicKey,
      timestamp: iso(T0 + i * MINUTE),
      loc_cell: ROME_RES6,
      loc_res: 6,
      context: breadcrumbContext(
        { h3_cell: ROME_RES6, call: i },
        blocked ? undefined : { t: 20 + i },
        blocked ? 'blocked' : 'ok',
      ),
      delegation_cert_hash: CERT_HASH,
      facet: 'perception',
      meta: blocked ? { violation: 'rate_limit' } : { duration_ms: i },
      tool_name: 'perception_weather',
    });
    tip = signBreadcrumb(content, agent).stored;
    out.push(tip);
  }
  return out;
}

const CHAIN = buildChain(12);
const roll = (blocks: StoredBreadcrumb[], previous: AgentEpoch | null, at: number) =>
  rollAgentEpoch({ agent, blocks, previous, tier: 'observed', nowMs: at });
const EPOCH0 = roll(CHAIN.slice(0, 5), null, T0 + 5 * MINUTE);
const EPOCH1 = roll(CHAIN.slice(5, 9), EPOCH0, T0 + 9 * MINUTE);
const EPOCHS = [
  { epoch: EPOCH0, blockHashes: CHAIN.slice(0, 5).map((b) => b.block_hash) },
  { epoch: EPOCH1, blockHashes: CHAIN.slice(5, 9).map((b) => b.block_hash) },
];

const PERIOD = { from: iso(T0 - MINUTE), to: iso(T0 + 60 * MINUTE) };
const VIOLATION: Violation = {
  version: 1,
  id: '00000000-0000-4000-8000-000000000006',
  agent_pk: agent.publicKey,
  type: 'rate_limit',
  severity: 'warning',
  tool_name: 'perception_weather',
  h3_cell: ROME_RES6,
  detail: 'max_ops_per_hour 6 reached',
  at: iso(T0 + 6 * MINUTE),
  block_index: 6,
};
const REPORT = {
  version: 1,
  generated_at: iso(T0 + 61 * MINUTE),
  agent_pk: agent.publicKey,
  agent_handle: 'test-agent',
  principal_pk: human.publicKey,
  reporting_period: PERIOD,
  total_operations: 11,
  trust_score: 12.5,
  current_tier: 'observed',
};

const input = (extra: Partial<AuditBundleInput> = {}): AuditBundleInput => ({
  generatedAtMs: T0 + 61 * MINUTE,
  agentPk: agent.publicKey,
  period: PERIOD,
  report: REPORT,
  blocks: CHAIN,
  anchor: null,
  epochs: EPOCHS,
  chain: [CERT],
  trust: { trust_score: 12.5, current_tier: 'observed' },
  violations: [VIOLATION],
  ...extra,
});

const BUNDLE = buildAuditBundle(input(), server);

/** A deep copy to tamper with. */
const copy = (bundle: AuditBundle = BUNDLE): AuditBundle => JSON.parse(JSON.stringify(bundle)) as AuditBundle;

/** What a dishonest server would do after editing: sign the bundle again. */
function resign(bundle: AuditBundle): AuditBundle {
  bundle.signature = signMessage(server.secretKey, auditBundleSigningString(bundle));
  return bundle;
}

/** Replaces the hex character at `at` with another lowercase hex character. */
const flipHex = (text: string, at: number): string =>
  text.slice(0, at) + (text[at] === '0' ? '1' : '0') + text.slice(at + 1);

const failed = (result: AuditBundleVerification): string[] => result.checks.filter((c) => !c.ok).map((c) => c.name);

function assertInvalid(result: AuditBundleVerification, checks: string[], error: RegExp): void {
  assert.equal(result.valid, false);
  assert.deepEqual(failed(result).sort(), [...checks].sort(), result.errors.join('\n'));
  assert.ok(
    result.errors.some((e) => error.test(e)),
    `no error matches ${error}:\n${result.errors.join('\n')}`,
  );
}

const SIGNATURE_BROKEN = /^the server signature does not verify under server_pk/;

describe('core/audit-bundle', () => {
  describe('buildAuditBundle', () => {
    it('assembles every documented field, signed by the server over JCS without the signature', () => {
      assert.deepEqual(Object.keys(BUNDLE).sort(), [
        'agent_pk',
        'anchor',
        'blocks',
        'bundle_version',
        'delegation_chain',
        'epochs',
        'generated_at',
        'inclusion_proofs',
        'period',
        'regulatory_basis',
        'report',
        'report_error',
        'server_pk',
        'signature',
        'trust',
        'unsealed_blocks',
        'violations',
      ]);
      assert.equal(BUNDLE.bundle_version, 1);
      assert.equal(BUNDLE.generated_at, iso(T0 + 61 * MINUTE));
      assert.deepEqual(BUNDLE.blocks, CHAIN);
      assert.deepEqual(BUNDLE.epochs, [EPOCH0, EPOCH1]);
      assert.deepEqual(
        BUNDLE.inclusion_proofs.map((p) => [p.block_index, p.epoch_index, p.leaf_index, p.tree_size]),
        [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => (i < 5 ? [i, 0, i, 5] : [i, 1, i - 5, 4])),
      );
      assert.deepEqual(BUNDLE.unsealed_blocks, [9, 10, 11]);
      assert.deepEqual(BUNDLE.delegation_chain, [CERT]);
      assert.equal(BUNDLE.report_error, null);
      assert.deepEqual(
        BUNDLE.regulatory_basis.map((r) => [r.framework, r.article, r.title]),
        [
          ['EU AI Act', 'Art. 12', 'Record-keeping'],
          ['EU AI Act', 'Art. 14', 'Human oversight'],
        ],
      );
      assert.deepEqual(BUNDLE.regulatory_basis, AUDIT_REGULATORY_BASIS);
      assert.equal(BUNDLE.server_pk, server.publicKey);
      const { signature, ...unsigned } = BUNDLE;
      assert.ok(verifySignature(server.publicKey, canonicalJson(unsigned), signature));
    });

    it('drops store-only fields of blocks and epochs and records why a report is missing', () => {
      const withExtras = CHAIN.map((b) => ({ ...b, _id: 'x' }));
      const bundle = buildAuditBundle(
        input({
          blocks: withExtras,
          epochs: EPOCHS.map((e) => ({ ...e, epoch: { ...e.epoch, _id: 'y' } as AgentEpoch })),
          report: null,
          report_error: 'perception service answered 503',
        }),
        server,
      );
      assert.deepEqual(bundle.blocks, CHAIN);
      assert.equal(bundle.report, null);
      assert.equal(bundle.report_error, 'perception service answered 503');
      const result = verifyAuditBundle(bundle);
      assert.equal(result.valid, true, result.errors.join('\n'));
      assert.ok(result.warnings.some((w) => /no compliance report: perception service answered 503/.test(w)));
    });

    it('refuses epoch block hashes that cannot make a proof', () => {
      const short = [{ epoch: EPOCH0, blockHashes: CHAIN.slice(0, 4).map((b) => b.block_hash) }];
      assert.throws(() => buildAuditBundle(input({ epochs: short }), server), /epoch 0 has 5 blocks, 4 hashes given/);
      const bad = [{ epoch: EPOCH0, blockHashes: ['zz', ...CHAIN.slice(1, 5).map((b) => b.block_hash)] }];
      assert.throws(() => buildAuditBundle(input({ epochs: bad }), server), TypeError);
    });
  });

  describe('verifyAuditBundle', () => {
    it('verifies a built bundle, warning about the unsealed blocks', () => {
      const result = verifyAuditBundle(BUNDLE);
      assert.equal(result.valid, true, result.errors.join('\n'));
      assert.deepEqual(result.errors, []);
      assert.deepEqual(
        result.checks.map((c) => c.name),
        [
          'bundle_shape',
          'server_signature',
          'block_chain',
          'period',
          'epochs',
          'inclusion_proofs',
          'sealing',
          'delegation_chain',
          'delegation_cert_hash',
          'delegation_scope',
          'report',
          'violations',
        ],
      );
      assert.ok(result.checks.every((c) => c.ok));
      assert.deepEqual(result.warnings, [
        "blocks 9..11 are not sealed in an epoch yet: they rest on the agent's signatures and hash links only",
      ]);
    });

    it('still verifies after a JSON round trip', () => {
      const travelled: unknown = JSON.parse(JSON.stringify(BUNDLE, null, 2));
      const result = verifyAuditBundle(travelled);
      assert.equal(result.valid, true, result.errors.join('\n'));
    });

    it('verifies a period that starts mid-chain, joined by its anchor', () => {
      const blocks = CHAIN.slice(3);
      const period = { from: CHAIN[3]?.timestamp as string, to: PERIOD.to };
      const bundle = buildAuditBundle(
        input({
          blocks,
          anchor: CHAIN[2] as StoredBreadcrumb,
          period,
          report: { ...REPORT, reporting_period: period },
        }),
        server,
      );
      assert.deepEqual(
        bundle.inclusion_proofs.map((p) => p.block_index),
        [3, 4, 5, 6, 7, 8],
      );
      const result = verifyAuditBundle(bundle);
      assert.equal(result.valid, true, result.errors.join('\n'));

      // Without its anchor, the first block cannot be joined to anything.
      const unanchored = resign({ ...copy(bundle), anchor: null });
      assertInvalid(verifyAuditBundle(unanchored), ['block_chain'], /^block 3: cannot be anchored/);

      // An anchor that is not the block before fails the link.
      const wrongAnchor = resign({ ...copy(bundle), anchor: CHAIN[1] as StoredBreadcrumb });
      assertInvalid(verifyAuditBundle(wrongAnchor), ['block_chain'], /^block 3: index gap/);
    });

    it('fails on one flipped byte of a block data_to_sign', () => {
      const bundle = copy();
      const block = bundle.blocks[4] as StoredBreadcrumb;
      const at = block.data_to_sign.indexOf('"args_hash":"') + 20;
      block.data_to_sign = flipHex(block.data_to_sign, at);
      const result = verifyAuditBundle(bundle);
      // Epoch 0's blocks all travel in the bundle, so its coverage check sees the broken block_hash too.
      assertInvalid(
        result,
        ['server_signature', 'block_chain', 'epochs'],
        /^block 4: Ed25519 signature does not verify/,
      );
      assert.ok(result.errors.includes('block 4: block_hash does not match its signed data'));
      assert.ok(result.errors.some((e) => SIGNATURE_BROKEN.test(e)));
    });

    it('fails on one flipped byte of a proof node', () => {
      const bundle = copy();
      const proof = bundle.inclusion_proofs[2] as AuditBundle['inclusion_proofs'][number];
      proof.proof[0] = flipHex(proof.proof[0] as string, 5);
      assertInvalid(
        verifyAuditBundle(bundle),
        ['server_signature', 'inclusion_proofs'],
        /^inclusion proof of block 2 in epoch 0: root mismatch/,
      );
    });

    it('fails on one flipped byte of an epoch root', () => {
      const bundle = copy();
      const epoch = bundle.epochs[1] as AgentEpoch;
      epoch.merkle_root = flipHex(epoch.merkle_root, 63);
      const result = verifyAuditBundle(bundle);
      assertInvalid(
        result,
        ['server_signature', 'epochs', 'inclusion_proofs'],
        /^epoch 1: epoch_hash does not match the epoch$/,
      );
      assert.ok(result.errors.some((e) => /^inclusion proof of block 5 in epoch 1: root mismatch/.test(e)));
    });

    it('fails on one flipped byte of the server signature, and only there', () => {
      const bundle = copy();
      bundle.signature = flipHex(bundle.signature, 3);
      const result = verifyAuditBundle(bundle);
      assertInvalid(result, ['server_signature'], SIGNATURE_BROKEN);
      assert.equal(result.errors.length, 1);
    });

    it('checks the signing server against the expected key when one is given', () => {
      assert.equal(verifyAuditBundle(BUNDLE, { serverPk: server.publicKey }).valid, true);
      // Anyone can re-sign a bundle with their own key; only the expected key tells them apart.
      const impostor = copy();
      impostor.server_pk = stranger.publicKey;
      impostor.signature = signMessage(stranger.secretKey, auditBundleSigningString(impostor));
      assert.equal(verifyAuditBundle(impostor).valid, true);
      assertInvalid(
        verifyAuditBundle(impostor, { serverPk: server.publicKey }),
        ['server_signature'],
        /^the bundle is signed by [0-9a-f]{64}, not the expected server/,
      );
    });

    it('normalises the period to ISO 8601 UTC and refuses one that is not a time', () => {
      const bundle = buildAuditBundle(
        input({ period: { from: '2026-03-01', to: '2026-03-01T12:00:00+01:00' } }),
        server,
      );
      assert.deepEqual(bundle.period, { from: '2026-03-01T00:00:00.000Z', to: '2026-03-01T11:00:00.000Z' });
      assert.throws(
        () => buildAuditBundle(input({ period: { from: 'yesterday', to: PERIOD.to } }), server),
        /period\.from is not a time/,
      );
    });

    it('fails on a changed report, and on a report about another agent even when re-signed', () => {
      const edited = copy();
      (edited.report as { total_operations: number }).total_operations = 12;
      assertInvalid(verifyAuditBundle(edited), ['server_signature'], SIGNATURE_BROKEN);

      const foreign = copy();
      (foreign.report as { agent_pk: string }).agent_pk = stranger.publicKey;
      assertInvalid(verifyAuditBundle(resign(foreign)), ['report'], /^the report is about agent "[0-9a-f]{64}", not/);
    });

    it('fails on blocks the server edited and re-signed', () => {
      // Edited content, same (now wrong) signature and block_hash.
      const edited = copy();
      const block = edited.blocks[7] as StoredBreadcrumb;
      block.data_to_sign = block.data_to_sign.replace(
        '"tool_name":"perception_weather"',
        '"tool_name":"spatial_query"',
      );
      const result = verifyAuditBundle(resign(edited));
      assert.equal(failed(result).includes('server_signature'), false);
      assertInvalid(result, ['block_chain', 'epochs'], /^block 7: Ed25519 signature does not verify/);

      // The same edit with block_hash recomputed: the agent's signature and the hash links still catch it.
      const rehashed = copy(edited);
      const b7 = rehashed.blocks[7] as StoredBreadcrumb;
      b7.block_hash = breadcrumbBlockHash(b7.data_to_sign, b7.signature);
      const again = verifyAuditBundle(resign(rehashed));
      assert.equal(again.valid, false);
      assert.ok(
        again.errors.includes("block 8: prev_hash does not match block 7's block_hash"),
        again.errors.join('\n'),
      );
      assert.ok(again.errors.some((e) => /^inclusion proof of block 7 in epoch 1: root mismatch/.test(e)));

      // A block dropped from the middle leaves a gap.
      const dropped = copy();
      dropped.blocks.splice(10, 1);
      dropped.unsealed_blocks = [9, 11];
      assertInvalid(verifyAuditBundle(resign(dropped)), ['block_chain'], /^block 11: index gap/);

      // A block re-signed by another key is not the agent's.
      const foreign = copy();
      const f = foreign.blocks[10] as StoredBreadcrumb;
      f.signature = signMessage(stranger.secretKey, f.data_to_sign);
      f.block_hash = breadcrumbBlockHash(f.data_to_sign, f.signature);
      assert.equal(verifyAuditBundle(resign(foreign)).valid, false);
    });

    it('fails when a sealed block loses its proof or is passed off as unsealed', () => {
      const unproven = copy();
      unproven.inclusion_proofs = unproven.inclusion_proofs.filter((p) => p.block_index !== 3);
      assertInvalid(
        verifyAuditBundle(resign(unproven)),
        ['sealing'],
        /^block 3 has neither an inclusion proof nor an unsealed listing$/,
      );

      const passedOff = copy(unproven);
      passedOff.unsealed_blocks = [3, 9, 10, 11];
      assertInvalid(
        verifyAuditBundle(resign(passedOff)),
        ['sealing'],
        /^block 3 is listed unsealed, but the bundle's epochs reach block 8$/,
      );
    });

    it('fails when the delegation chain does not match the blocks or does not verify', () => {
      const other = issueCertificate(human.secretKey, {
        agent_pk: agent.publicKey,
        h3_cells: [ROME_RES5],
        facets: ['*'],
        not_before: CERT.not_before,
        not_after: CERT.not_after,
        max_depth: 0,
      });
      const swapped = buildAuditBundle(input({ chain: [other] }), server);
      assertInvalid(
        verifyAuditBundle(swapped),
        ['delegation_cert_hash'],
        /^blocks 0\.\.11 name another delegation certificate/,
      );

      const forged = copy();
      const cert = forged.delegation_chain?.[0] as typeof CERT;
      cert.principal_signature = flipHex(cert.principal_signature, 9);
      assertInvalid(
        verifyAuditBundle(resign(forged)),
        ['delegation_chain'],
        /^the delegation chain does not verify: link 0: principal_signature does not verify/,
      );

      const strangers = buildAuditBundle(
        input({ chain: [issueCertificate(human.secretKey, { ...CERT, agent_pk: stranger.publicKey })] }),
        server,
      );
      assertInvalid(
        verifyAuditBundle(strangers),
        ['delegation_chain', 'delegation_cert_hash'],
        /^the delegation chain ends at [0-9a-f]{64}, not the bundle's agent/,
      );
    });

    it('judges an old bundle at its blocks time: an expired chain is only a warning', () => {
      const later = Date.parse('2027-01-01T00:00:00.000Z');
      const result = verifyAuditBundle(BUNDLE, { nowMs: later });
      assert.equal(result.valid, true, result.errors.join('\n'));
      assert.ok(
        result.warnings.some((w) =>
          /^the delegation chain is not active at 2027-01-01T00:00:00.000Z: link 0: expired at/.test(w),
        ),
      );
    });

    it('warns without a delegation chain, and about calls that ran outside the delegation', () => {
      const none = verifyAuditBundle(buildAuditBundle(input({ chain: null }), server));
      assert.equal(none.valid, true, none.errors.join('\n'));
      assert.ok(none.warnings.some((w) => /carries no delegation chain/.test(w)));

      // A chain whose window closed at 10:04:30: the calls after it ran outside the delegation. (The blocks
      // name CERT, so the cert-hash check fails too; the scope findings are what is under test.)
      const narrow = issueCertificate(human.secretKey, { ...CERT, not_after: iso(T0 + 4 * MINUTE + 30_000) });
      const result = verifyAuditBundle(buildAuditBundle(input({ chain: [narrow] }), server));
      assert.deepEqual(failed(result), ['delegation_cert_hash']);
      assert.ok(result.warnings.some((w) => /^block 5 ran at .*, outside the delegation window$/.test(w)));
      // Block 6 was a blocked call: not a finding.
      assert.ok(!result.warnings.some((w) => /^block 6 /.test(w)));
    });

    it('refuses what is not a bundle, naming the field', () => {
      for (const value of [null, 'bundle', [], {}, { ...copy(), bundle_version: 2 }]) {
        const result = verifyAuditBundle(value);
        assert.equal(result.valid, false);
        assert.deepEqual(failed(result), ['bundle_shape']);
        assert.match(result.errors[0] as string, /^the bundle is not a version 1 audit bundle: /);
      }
      const noBlockHash = copy();
      delete (noBlockHash.blocks[0] as Partial<StoredBreadcrumb>).block_hash;
      assert.match(verifyAuditBundle(noBlockHash).errors[0] as string, /blocks\.0\.block_hash/);
    });
  });
});
