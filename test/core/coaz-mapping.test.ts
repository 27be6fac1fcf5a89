import assert from 'node:assert/strict';
import { cellToChildren, latLngToCell } from 'h3-js';
import {
  checkCoazRequest,
  coazMappingSchema,
  compileCoazMapping,
  evaluateCoazMapping,
  type CoazContext,
  type CoazMapping,
  type MappedRequest,
} from '../../core/coaz-mapping.js';
import { issueCertificate, type DelegationCertificate } from '../../core/delegation-cert.js';
import { DEFAULT_PERCEPTION_CELL } from '../../core/h3-cell.js';
import { generateKeyPair } from '../../core/identity.js';
import type { IdnTokenClaims } from '../../core/idn-token-claims.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const DAY = 86_400_000;
const CELL = DEFAULT_PERCEPTION_CELL;
const INSIDE = cellToChildren(CELL, 7)[3] as string;
const OTHER_INSIDE = cellToChildren(CELL, 7)[5] as string;
const PARIS = latLngToCell(48.8566, 2.3522, 7);

const server = generateKeyPair();
const tokenAgent = generateKeyPair();
const human = generateKeyPair();

function certificate(constraints: DelegationCertificate['constraints'] = null): DelegationCertificate {
  return issueCertificate(human.secretKey, {
    agent_pk: server.publicKey,
    h3_cells: [CELL],
    facets: ['perception'],
    not_before: new Date(NOW - DAY).toISOString(),
    not_after: new Date(NOW + DAY).toISOString(),
    max_depth: 0,
    constraints,
  });
}

const context: CoazContext = {
  agent_identity: server.publicKey,
  jurisdiction: { h3_cell: INSIDE, country_code: 'IT', regulation: ['GDPR', 'EU_AI_ACT'] },
  delegation: { principal_pk: human.publicKey, cert_hash: 'cd'.repeat(32), trust_tier: 'observed' },
  audit: { epoch_index: 3, chain_tip_hash: 'ef'.repeat(32) },
};

const claims: IdnTokenClaims = {
  idn_agent_pk: tokenAgent.publicKey,
  idn_principal_pk: human.publicKey,
  idn_delegation_cert: 'aa'.repeat(32),
  idn_trust_tier: 'trusted',
  idn_epoch: 7,
  idn_chain_tip: 'bb'.repeat(32),
  idn_h3_cells: [INSIDE],
};

const mapping: CoazMapping = {
  subject: 'claims != null ? claims.idn_agent_pk : context.agent_identity',
  action: 'tool',
  resource: 'params.h3_cell',
  context: {
    regulation: 'context.jurisdiction.regulation',
    gdpr: '"GDPR" in context.jurisdiction.regulation',
    next_epoch: 'context.audit.epoch_index + 1',
    token_epoch: 'claims != null ? claims.idn_epoch : -1',
    cloud: 'params.max_cloud_cover * 2.0',
  },
};

const vars = (overrides: Partial<Parameters<typeof evaluateCoazMapping>[1]> = {}) => ({
  params: { h3_cell: INSIDE, max_cloud_cover: 20 },
  claims: null,
  tool: 'perception_fetch_tile',
  context,
  ...overrides,
});

describe('authorization mappings (CEL, docs/protocol.md §2.9)', () => {
  describe('evaluateCoazMapping', () => {
    it('maps subject, action and resource, and merges the mapping context into the base context', () => {
      const mapped = evaluateCoazMapping(mapping, vars());
      assert.ok(mapped.ok, mapped.ok ? '' : mapped.detail);
      assert.equal(mapped.value.subject, server.publicKey);
      assert.equal(mapped.value.action, 'perception_fetch_tile');
      assert.equal(mapped.value.resource, INSIDE);
      assert.deepEqual(mapped.value.context, {
        ...context,
        regulation: ['GDPR', 'EU_AI_ACT'],
        gdpr: true,
        next_epoch: 4,
        token_epoch: -1,
        cloud: 40,
      });
    });

    it('reads the token claims when there are some (integers as CEL ints)', () => {
      const mapped = evaluateCoazMapping(mapping, vars({ claims }));
      assert.ok(mapped.ok, mapped.ok ? '' : mapped.detail);
      assert.equal(mapped.value.subject, tokenAgent.publicKey);
      assert.equal(mapped.value.context.token_epoch, 7);
    });

    it('names the expression and the CEL message of a parse error', () => {
      const broken = { ...mapping, resource: 'params.h3_cell +' };
      const mapped = evaluateCoazMapping(broken, vars());
      assert.equal(mapped.ok, false);
      if (mapped.ok) return;
      assert.equal(mapped.error, 'coaz_error');
      assert.match(mapped.detail, /expression resource \("params\.h3_cell \+"\)/);
      assert.match(mapped.detail, /Unexpected token/);
      assert.doesNotMatch(mapped.detail, /\n/);
      assert.equal(compileCoazMapping(broken).ok, false);
    });

    it('names the expression of an evaluation error: a missing field, an unknown variable', () => {
      const missing = evaluateCoazMapping({ ...mapping, subject: 'claims.idn_agent_pk' }, vars());
      assert.equal(missing.ok, false);
      assert.match(
        missing.ok ? '' : missing.detail,
        /expression subject .*claims\.idn_agent_pk.*failed: No such key: idn_agent_pk/,
      );

      const param = evaluateCoazMapping({ ...mapping, context: { size: 'params.area_km2' } }, vars());
      assert.match(param.ok ? '' : param.detail, /expression context\.size .*No such key: area_km2/);

      const unknown = evaluateCoazMapping({ ...mapping, action: 'tool_name' }, vars());
      assert.match(unknown.ok ? '' : unknown.detail, /expression action .*Unknown variable: tool_name/);
    });

    it('requires subject, action and resource to be non-empty strings', () => {
      const typed = evaluateCoazMapping({ ...mapping, action: '1 + 2' }, vars());
      assert.match(typed.ok ? '' : typed.detail, /expression action .*must evaluate to a string, not int/);
      const dynamic = evaluateCoazMapping({ ...mapping, resource: 'params.max_cloud_cover' }, vars());
      assert.match(dynamic.ok ? '' : dynamic.detail, /expression resource .*non-empty string, got number/);
      const empty = evaluateCoazMapping({ ...mapping, subject: '""' }, vars());
      assert.match(empty.ok ? '' : empty.detail, /expression subject .*got an empty string/);
    });

    it('refuses context values that are not JSON', () => {
      const bytes = evaluateCoazMapping({ ...mapping, context: { raw: 'b"ab"' } }, vars());
      assert.match(bytes.ok ? '' : bytes.detail, /expression context\.raw .*bytes are not a JSON value/);
      const time = evaluateCoazMapping({ ...mapping, context: { at: 'timestamp("2026-01-01T00:00:00Z")' } }, vars());
      assert.ok(time.ok);
      assert.equal(time.value.context.at, '2026-01-01T00:00:00.000Z');
    });

    it('the schema keeps mappings from replacing the attested context, and bounds them', () => {
      assert.ok(coazMappingSchema.safeParse(mapping).success);
      const rewrite = { ...mapping, context: { audit: '{"epoch_index": 99}' } };
      assert.equal(coazMappingSchema.safeParse(rewrite).success, false);
      const mapped = evaluateCoazMapping(rewrite, vars());
      assert.equal(mapped.ok, false);
      assert.match(mapped.ok ? '' : mapped.detail, /x-coaz-mapping context: may not replace/);
      assert.equal(coazMappingSchema.safeParse({ ...mapping, resource: 'x'.repeat(5000) }).success, false);
      assert.equal(coazMappingSchema.safeParse({ ...mapping, extra: 'true' }).success, false);
    });

    it('evaluates the same mapping repeatedly from its cache, with each call its own variables', () => {
      for (const cell of [INSIDE, OTHER_INSIDE, INSIDE]) {
        const mapped = evaluateCoazMapping(mapping, vars({ params: { h3_cell: cell, max_cloud_cover: 1.5 } }));
        assert.ok(mapped.ok);
        assert.equal(mapped.value.resource, cell);
        assert.equal(mapped.value.context.cloud, 3);
      }
    });
  });

  describe('checkCoazRequest', () => {
    const request = (overrides: Partial<MappedRequest> = {}): MappedRequest => ({
      subject: server.publicKey,
      action: 'perception_weather',
      resource: INSIDE,
      context: {},
      ...overrides,
    });

    it('passes the server agent acting with an allowed tool inside its cells', () => {
      assert.deepEqual(checkCoazRequest(request(), { certificate: certificate(), nowMs: NOW }), {
        ok: true,
        value: undefined,
      });
    });

    it('requires the subject to be the acting agent: the token agent on behalf of a token', () => {
      const cert = certificate();
      const asOther = checkCoazRequest(request({ subject: tokenAgent.publicKey }), { certificate: cert, nowMs: NOW });
      assert.equal(asOther.ok, false);
      assert.equal(asOther.ok ? '' : asOther.violation, 'facet_violation');
      assert.equal(asOther.ok ? '' : asOther.error, 'coaz_denied');

      // With a token, the server's own identity is not an acceptable subject.
      const laundered = checkCoazRequest(request(), { certificate: cert, nowMs: NOW, claims });
      assert.match(laundered.ok ? '' : laundered.detail, /bearer token agent/);
      assert.ok(
        checkCoazRequest(request({ subject: tokenAgent.publicKey }), { certificate: cert, nowMs: NOW, claims }).ok,
      );
    });

    it('requires the action to be an allowed, not denied tool (certificate and chain)', () => {
      const listed = certificate({ allowed_tools: ['perception_weather'] });
      assert.ok(checkCoazRequest(request(), { certificate: listed, nowMs: NOW }).ok);
      const notListed = checkCoazRequest(request({ action: 'perception_classify' }), {
        certificate: listed,
        nowMs: NOW,
      });
      assert.match(notListed.ok ? '' : notListed.detail, /action "perception_classify" is not allowed/);
      const whitelist = checkCoazRequest(request({ action: 'rm_rf' }), { certificate: certificate(), nowMs: NOW });
      assert.equal(whitelist.ok ? '' : whitelist.violation, 'facet_violation');
      const denied = checkCoazRequest(request(), {
        certificate: certificate(),
        nowMs: NOW,
        grant: {
          allowed_tools: null,
          denied_tools: ['perception_weather'],
          max_ops_per_hour: null,
          require_human_approval: false,
        },
      });
      assert.match(denied.ok ? '' : denied.detail, /denied/);
    });

    it('requires the resource to be a cell inside the certificate, and inside the token on behalf of one', () => {
      const cert = certificate();
      const paris = checkCoazRequest(request({ resource: PARIS }), { certificate: cert, nowMs: NOW });
      assert.equal(paris.ok ? '' : paris.violation, 'jurisdiction_breach');
      const notCell = checkCoazRequest(request({ resource: 'rome' }), { certificate: cert, nowMs: NOW });
      assert.match(notCell.ok ? '' : notCell.detail, /not a valid H3 cell/);
      const outsideToken = checkCoazRequest(request({ subject: tokenAgent.publicKey, resource: OTHER_INSIDE }), {
        certificate: cert,
        nowMs: NOW,
        claims,
      });
      assert.equal(outsideToken.ok ? '' : outsideToken.violation, 'jurisdiction_breach');
      assert.match(outsideToken.ok ? '' : outsideToken.detail, /bearer token's cells/);
    });

    it('refuses under a certificate that is not active', () => {
      const expired = checkCoazRequest(request(), { certificate: certificate(), nowMs: NOW + 2 * DAY });
      assert.equal(expired.ok ? '' : expired.violation, 'cert_expired');
    });
  });
});
