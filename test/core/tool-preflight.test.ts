import assert from 'node:assert/strict';
import { issueCertificate, type DelegationConstraints } from '../../core/delegation-cert.js';
import { keyPairFromSecret } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS, preflightTool, requiresHumanApproval } from '../../core/tool-preflight.js';

const principal = keyPairFromSecret('9'.repeat(64));
const agent = keyPairFromSecret('a'.repeat(64));
const ROME_5 = '851e8053fffffff';
const ROME_4 = '841e805ffffffff'; // parent of ROME_5: coarser
const ROME_7 = '871e80500ffffff'; // a child of ROME_5
const NEIGHBOUR_5 = '851e8627fffffff'; // adjacent, same resolution
const NEW_YORK_5 = '852a1073fffffff';
const NOT_BEFORE = '2026-01-01T00:00:00.000Z';
const NOT_AFTER = '2026-01-31T00:00:00.000Z';
const NOW = Date.parse('2026-01-15T12:00:00.000Z');

const certWith = (constraints: DelegationConstraints | null = null, facets = ['perception']) =>
  issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [ROME_5],
    facets,
    not_before: NOT_BEFORE,
    not_after: NOT_AFTER,
    max_depth: 0,
    constraints,
  });

type Input = Parameters<typeof preflightTool>[0];
const call = (over: Partial<Input> = {}) =>
  preflightTool({
    certificate: certWith(),
    toolName: 'perception_weather',
    facet: 'perception',
    cell: ROME_5,
    nowMs: NOW,
    opsInLastHour: 0,
    ...over,
  });

function rejected(result: ReturnType<typeof preflightTool>, violation: string, severity: string): string {
  assert.equal(result.ok, false, 'expected the call to be blocked');
  assert.ok(!result.ok);
  assert.equal(result.violation, violation);
  assert.equal(result.severity, severity);
  return result.detail;
}

describe('core/tool-preflight', () => {
  it('exports the docs/protocol.md §4.3 whitelist of eleven tools', () => {
    assert.deepEqual([...DEFAULT_ALLOWED_TOOLS].sort(), [
      'compliance_report',
      'idn_get_compliance_report',
      'idn_get_trust_score',
      'idn_roll_epoch',
      'idn_verify_chain',
      'perception_classify',
      'perception_embed',
      'perception_fetch_tile',
      'perception_weather',
      'spatial_query',
      'trajectory_audit',
    ]);
  });

  it('passes a call in the certificate cell or a finer cell inside it', () => {
    assert.deepEqual(call(), { ok: true });
    assert.deepEqual(call({ cell: ROME_7 }), { ok: true });
  });

  describe('certificate validity (cert_expired, critical)', () => {
    it('is inclusive at both ends of the window', () => {
      assert.deepEqual(call({ nowMs: Date.parse(NOT_BEFORE) }), { ok: true });
      assert.deepEqual(call({ nowMs: Date.parse(NOT_AFTER) }), { ok: true });
    });

    it('blocks before not_before and after not_after', () => {
      assert.match(
        rejected(call({ nowMs: Date.parse(NOT_BEFORE) - 1 }), 'cert_expired', 'critical'),
        /not valid before/,
      );
      assert.equal(
        rejected(call({ nowMs: Date.parse(NOT_AFTER) + 1 }), 'cert_expired', 'critical'),
        `delegation certificate expired at ${NOT_AFTER}`,
      );
    });
  });

  describe('jurisdiction (jurisdiction_breach, critical)', () => {
    it('blocks a coarser cell that contains the certificate cell', () => {
      assert.match(rejected(call({ cell: ROME_4 }), 'jurisdiction_breach', 'critical'), /841e805ffffffff is outside/);
    });

    it('blocks a neighbouring cell, a cell elsewhere, and a malformed cell', () => {
      rejected(call({ cell: NEIGHBOUR_5 }), 'jurisdiction_breach', 'critical');
      rejected(call({ cell: NEW_YORK_5 }), 'jurisdiction_breach', 'critical');
      assert.match(rejected(call({ cell: 'rome' }), 'jurisdiction_breach', 'critical'), /not a valid H3 cell/);
      rejected(call({ cell: ROME_5.toUpperCase() }), 'jurisdiction_breach', 'critical');
    });
  });

  describe('facet (facet_violation, critical)', () => {
    it('blocks an undelegated facet; a wildcard facet grants any', () => {
      assert.equal(
        rejected(call({ facet: 'actuation' }), 'facet_violation', 'critical'),
        'facet "actuation" is not delegated',
      );
      assert.deepEqual(call({ facet: 'actuation', certificate: certWith(null, ['*']) }), { ok: true });
    });
  });

  describe('tools (facet_violation, critical)', () => {
    it('without allowed_tools, allows the docs/protocol.md §4.3 whitelist only', () => {
      for (const tool of DEFAULT_ALLOWED_TOOLS) assert.deepEqual(call({ toolName: tool }), { ok: true }, tool);
      assert.equal(
        rejected(call({ toolName: 'web-search' }), 'facet_violation', 'critical'),
        'tool "web-search" is not allowed by the delegation certificate',
      );
    });

    it('with allowed_tools, allows exactly those', () => {
      const certificate = certWith({ allowed_tools: ['perception_weather'] });
      assert.deepEqual(call({ certificate }), { ok: true });
      assert.match(
        rejected(call({ certificate, toolName: 'perception_fetch_tile' }), 'facet_violation', 'critical'),
        /not allowed/,
      );
    });

    it('blocks a denied tool, from the certificate or from the chain grant', () => {
      const certificate = certWith({ denied_tools: ['perception_classify'] });
      assert.equal(
        rejected(call({ certificate, toolName: 'perception_classify' }), 'facet_violation', 'critical'),
        'tool "perception_classify" is denied by the delegation certificate',
      );
      const grant = {
        allowed_tools: null,
        denied_tools: ['perception_weather'],
        max_ops_per_hour: null,
        require_human_approval: false,
      };
      assert.match(rejected(call({ grant }), 'facet_violation', 'critical'), /is denied/);
      assert.match(
        rejected(
          call({ grant: { ...grant, denied_tools: [], allowed_tools: ['idn_verify_chain'] } }),
          'facet_violation',
          'critical',
        ),
        /not allowed/,
      );
    });
  });

  describe('rate (rate_limit, warning)', () => {
    it('blocks once operations in the last hour reach max_ops_per_hour', () => {
      const certificate = certWith({ max_ops_per_hour: 10 });
      assert.deepEqual(call({ certificate, opsInLastHour: 9 }), { ok: true });
      assert.equal(
        rejected(call({ certificate, opsInLastHour: 10 }), 'rate_limit', 'warning'),
        'max_ops_per_hour 10 reached: 10 operations in the last hour',
      );
      assert.deepEqual(call({ opsInLastHour: 1_000_000 }), { ok: true }); // no limit set
      const grant = { allowed_tools: null, denied_tools: [], max_ops_per_hour: 5, require_human_approval: false };
      rejected(call({ certificate, opsInLastHour: 5, grant }), 'rate_limit', 'warning');
    });

    it('a zero limit blocks every call', () => {
      rejected(call({ certificate: certWith({ max_ops_per_hour: 0 }) }), 'rate_limit', 'warning');
    });
  });

  it('checks in order: validity, jurisdiction, facet, tool, rate', () => {
    const certificate = certWith({ max_ops_per_hour: 1, denied_tools: ['perception_weather'] });
    const everything: Partial<Input> = {
      certificate,
      nowMs: Date.parse(NOT_AFTER) + 1,
      cell: NEW_YORK_5,
      facet: 'actuation',
      opsInLastHour: 5,
    };
    rejected(call(everything), 'cert_expired', 'critical');
    rejected(call({ ...everything, nowMs: NOW }), 'jurisdiction_breach', 'critical');
    rejected(call({ ...everything, nowMs: NOW, cell: ROME_7 }), 'facet_violation', 'critical');
    assert.match(
      rejected(call({ ...everything, nowMs: NOW, cell: ROME_7, facet: 'perception' }), 'facet_violation', 'critical'),
      /tool "perception_weather" is denied/,
    );
    rejected(
      call({ ...everything, nowMs: NOW, cell: ROME_7, facet: 'perception', toolName: 'perception_fetch_tile' }),
      'rate_limit',
      'warning',
    );
  });

  describe('requiresHumanApproval', () => {
    it('follows the certificate boolean (and a chain grant), for every tool', () => {
      assert.equal(requiresHumanApproval(certWith(), 'perception_weather'), false);
      assert.equal(requiresHumanApproval(certWith({ require_human_approval: false }), 'perception_weather'), false);
      assert.equal(requiresHumanApproval(certWith({ require_human_approval: true }), 'perception_weather'), true);
      assert.equal(requiresHumanApproval(certWith({ require_human_approval: true }), 'idn_roll_epoch'), true);
      const grant = { allowed_tools: null, denied_tools: [], max_ops_per_hour: null, require_human_approval: true };
      assert.equal(requiresHumanApproval(certWith(), 'perception_weather', grant), true);
    });
  });
});
