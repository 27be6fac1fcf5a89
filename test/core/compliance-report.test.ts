import assert from 'node:assert/strict';
import { rollAgentEpoch } from '../../core/agent-epoch.js';
import {
  breadcrumbContext,
  nextBreadcrumb,
  parseStoredBreadcrumb,
  signBreadcrumb,
  verifyChain,
} from '../../core/breadcrumb.js';
import type {
  Breadcrumb,
  BreadcrumbContent,
  HumanApproval,
  StoredBreadcrumb,
  Violation,
} from '../../core/breadcrumb-types.js';
import {
  approvalSigningString,
  buildComplianceReport,
  type ComplianceReportInput,
} from '../../core/compliance-report.js';
import { certificateHash, issueCertificate } from '../../core/delegation-cert.js';
import { keyPairFromSecret, signMessage } from '../../core/identity.js';

const principal = keyPairFromSecret('b'.repeat(64));
const stranger = keyPairFromSecret('c'.repeat(64));
const agent = keyPairFromSecret('d'.repeat(64));
const ROME_5 = '851e8053fffffff';
const ROME_7A = '871e80500ffffff';
const ROME_7B = '871e80501ffffff';
const NEW_YORK_5 = '852a1073fffffff';
const T0 = Date.parse('2026-01-10T00:00:00.000Z');
const NOW = T0 + 73 * 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

const certificate = issueCertificate(principal.secretKey, {
  agent_pk: agent.publicKey,
  h3_cells: [ROME_5],
  facets: ['perception'],
  not_before: '2026-01-01T00:00:00.000Z',
  not_after: '2026-12-31T00:00:00.000Z',
  max_depth: 0,
  constraints: null,
});
const CERT_HASH = certificateHash(certificate);

type Call = [tool: string, cell: string, outcome: BreadcrumbContent['context']['outcome']];
const CALLS: Call[] = [
  ['perception_weather', ROME_7A, 'ok'], // 0
  ['perception_weather', ROME_7B, 'ok'], // 1
  ['perception_fetch_tile', ROME_7A, 'error'], // 2
  ['perception_classify', NEW_YORK_5, 'blocked'], // 3: jurisdiction breach, never ran
  ['perception_weather', ROME_7A, 'ok'], // 4
];

const STORED: StoredBreadcrumb[] = [];
for (const [i, [tool, cell, outcome]] of CALLS.entries()) {
  const content = nextBreadcrumb(STORED[i - 1] ?? null, {
    identity: agent.publicKey,
    timestamp: iso(T0 + i * 60_000),
    loc_cell: cell,
    loc_res: cell === ROME_7A || cell === ROME_7B ? 7 : 5,
    context: breadcrumbContext({ h3_cell: cell }, outcome === 'blocked' ? undefined : { ok: true }, outcome),
    delegation_cert_hash: CERT_HASH,
    facet: 'perception',
    meta: outcome === 'blocked' ? { violation: 'jurisdiction_breach' } : {},
    tool_name: tool,
  });
  STORED.push(signBreadcrumb(content, agent).stored);
}
const BLOCKS: Breadcrumb[] = STORED.map((s) => {
  const parsed = parseStoredBreadcrumb(s);
  assert.ok(parsed.ok);
  return parsed.value;
});

const VIOLATION: Violation = {
  version: 1,
  id: '00000000-0000-4000-8000-000000000001',
  agent_pk: agent.publicKey,
  type: 'jurisdiction_breach',
  severity: 'critical',
  tool_name: 'perception_classify',
  h3_cell: NEW_YORK_5,
  detail: `cell ${NEW_YORK_5} is outside the delegated cells ${ROME_5}`,
  at: iso(T0 + 3 * 60_000),
  block_index: 3,
};

function approval(blockIndex: number, key = principal, agentPk = agent.publicKey): HumanApproval {
  const unsigned = {
    version: 1 as const,
    agent_pk: agentPk,
    principal_pk: key.publicKey,
    block_index: blockIndex,
    approved_at: iso(T0 + 3_600_000),
  };
  return { ...unsigned, signature: signMessage(key.secretKey, approvalSigningString(unsigned)) };
}

const EPOCH_0 = rollAgentEpoch({
  agent,
  blocks: STORED.slice(0, 3),
  previous: null,
  tier: 'provisioned',
  nowMs: T0 + 3_600_000,
});
const EPOCH_1 = rollAgentEpoch({
  agent,
  blocks: STORED.slice(3),
  previous: EPOCH_0,
  tier: 'provisioned',
  nowMs: T0 + 7_200_000,
});

const input = (over: Partial<ComplianceReportInput> = {}): ComplianceReportInput => ({
  agentPk: agent.publicKey,
  agentHandle: 'perception-agent',
  principalPk: principal.publicKey,
  principalLocal: true,
  period: { from: '2020-01-01T00:00:00Z', to: iso(NOW) },
  blocks: BLOCKS,
  verification: verifyChain(STORED, { anchor: null }),
  epochs: [EPOCH_1, EPOCH_0],
  certificate,
  chainDepth: 1,
  violations: [VIOLATION],
  approvals: [],
  firstBlockEverAt: iso(T0),
  nowMs: NOW,
  requiresApproval: () => false,
  ...over,
});

describe('core/compliance-report', () => {
  it('has exactly the docs/protocol.md §2.8 fields, version 1', () => {
    const report = buildComplianceReport(input());
    assert.deepEqual(Object.keys(report).sort(), [
      'agent_handle',
      'agent_pk',
      'chain_verification',
      'current_tier',
      'delegation_certificate',
      'delegation_chain_depth',
      'epochs',
      'generated_at',
      'human_approvals_received',
      'human_approvals_required',
      'jurisdiction_cells',
      'operations_by_tool',
      'principal_pk',
      'reporting_period',
      'total_operations',
      'trust_score',
      'version',
      'violations',
    ]);
    assert.equal(report.version, 1);
    assert.equal(report.generated_at, iso(NOW));
    assert.equal(report.agent_pk, agent.publicKey);
    assert.equal(report.agent_handle, 'perception-agent');
    assert.equal(report.principal_pk, principal.publicKey);
    assert.deepEqual(report.reporting_period, { from: '2020-01-01T00:00:00Z', to: iso(NOW) });
    assert.equal(report.delegation_chain_depth, 1);
    assert.deepEqual(report.delegation_certificate, { ...certificate, principal_local: true });
    assert.equal(buildComplianceReport(input({ principalLocal: false })).delegation_certificate.principal_local, false);
  });

  it('counts operations that did their work (ok), not failed or blocked calls; cells of operations only, unique and sorted', () => {
    const report = buildComplianceReport(input());
    assert.equal(report.total_operations, 3);
    assert.deepEqual(report.operations_by_tool, { perception_weather: 3 });
    assert.deepEqual(report.jurisdiction_cells, [ROME_7A, ROME_7B]);
    assert.deepEqual(report.violations, [VIOLATION]);
  });

  it('carries the chain verification and the epoch summaries in epoch order', () => {
    const report = buildComplianceReport(input());
    assert.deepEqual(report.chain_verification, {
      is_valid: true,
      block_count: 5,
      issues: [],
      first_block_at: iso(T0),
      last_block_at: iso(T0 + 4 * 60_000),
      delegation_cert_hash: CERT_HASH,
      invalid_blocks: [],
    });
    assert.deepEqual(
      report.epochs.map((e) => [e.epoch_index, e.start_block, e.end_block, e.block_count]),
      [
        [0, 0, 2, 3],
        [1, 3, 4, 2],
      ],
    );
    assert.deepEqual(Object.keys(report.epochs[0] ?? {}).sort(), [
      'block_count',
      'end_block',
      'epoch_hash',
      'epoch_index',
      'merkle_root',
      'rolled_at',
      'start_block',
      'tier_at_close',
    ]);
    assert.equal(report.epochs[0]?.merkle_root, EPOCH_0.merkle_root);
  });

  it('scores by the docs/protocol.md §2.8 table, and loses the chain part when the chain is broken', () => {
    // 3 operations → 0.02, 2 cells → 3, 73 days → 4, valid chain → 10.
    const report = buildComplianceReport(input());
    assert.equal(report.trust_score, 17.02);
    assert.equal(report.current_tier, 'provisioned');

    const tampered = [...STORED];
    const b = tampered[1] as StoredBreadcrumb;
    tampered[1] = { ...b, data_to_sign: b.data_to_sign.replace('"meta":{}', '"meta":{"x":1}') };
    const broken = buildComplianceReport(input({ verification: verifyChain(tampered, { anchor: null }) }));
    assert.equal(broken.chain_verification.is_valid, false);
    assert.deepEqual(broken.chain_verification.invalid_blocks, [1]);
    assert.ok(broken.chain_verification.issues.every((i) => i.startsWith('block 1: ')));
    assert.equal(broken.trust_score, 7.02);
  });

  it('counts approvals required by operations, and only valid approvals by the principal as received', () => {
    const report = buildComplianceReport(
      input({
        requiresApproval: (tool) => tool === 'perception_weather' || tool === 'perception_classify',
        approvals: [
          approval(0),
          approval(0), // the same call twice counts once
          { ...approval(1), signature: approval(4).signature }, // forged signature
          approval(4, stranger), // not the report's principal
          approval(4, principal, stranger.publicKey), // another agent's
          approval(3), // a blocked call never needed approval
          approval(2), // perception_fetch_tile does not require approval
        ],
      }),
    );
    assert.equal(report.human_approvals_required, 3); // blocks 0, 1, 4
    assert.equal(report.human_approvals_received, 1);
    const all = buildComplianceReport(
      input({ requiresApproval: () => true, approvals: [approval(0), approval(1), approval(2), approval(4)] }),
    );
    // The failed call (block 2) did nothing that needed approving.
    assert.equal(all.human_approvals_required, 3);
    assert.equal(all.human_approvals_received, 3);
  });

  it('reports an empty period', () => {
    const report = buildComplianceReport(
      input({
        blocks: [],
        verification: verifyChain([], { anchor: null }),
        epochs: [],
        violations: [],
        firstBlockEverAt: null,
      }),
    );
    assert.equal(report.total_operations, 0);
    assert.deepEqual(report.operations_by_tool, {});
    assert.deepEqual(report.jurisdiction_cells, []);
    assert.equal(report.trust_score, 10);
    assert.equal(report.current_tier, 'provisioned');
    assert.deepEqual(report.epochs, []);
  });
});
