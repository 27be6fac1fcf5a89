import assert from 'node:assert/strict';
import { cellToCenterChild, cellToChildren, cellToParent, latLngToCell } from 'h3-js';
import {
  certificateHash,
  delegationChainRights,
  issueCertificate,
  verifyDelegationChain,
  verifyDelegationChainStructure,
  type DelegationCertificate,
  type DelegationConstraints,
} from '../../core/delegation-cert.js';
import { checkDelegationChain, verifyJurisdiction } from '../../core/governance-checks.js';
import { generateKeyPair, type KeyPair } from '../../core/identity.js';
import { DEFAULT_ALLOWED_TOOLS } from '../../core/tool-preflight.js';

const ROME_RES5 = '851e8053fffffff';
const ROME_RES6 = '861e8050fffffff'; // inside ROME_RES5
const ROME_RES7 = cellToCenterChild(ROME_RES6, 7);
const ROME_RES4 = cellToParent(ROME_RES5, 4); // coarser than the grant
const MILAN_RES6 = latLngToCell(45.4642, 9.19, 6);

const NOT_BEFORE = '2026-03-01T00:00:00.000Z';
const NOT_AFTER = '2026-03-02T00:00:00.000Z';
const START = Date.parse(NOT_BEFORE);
const END = Date.parse(NOT_AFTER);
const NOON = START + 12 * 3_600_000;

const human = generateKeyPair();
const alice = generateKeyPair();
const bob = generateKeyPair();

interface LinkOptions {
  h3_cells?: string[];
  facets?: string[];
  not_before?: string;
  not_after?: string;
  max_depth?: number;
  constraints?: DelegationConstraints | null;
}

const issue = (principal: KeyPair, agent: KeyPair, options: LinkOptions = {}): DelegationCertificate =>
  issueCertificate(principal.secretKey, {
    agent_pk: agent.publicKey,
    h3_cells: [ROME_RES5],
    facets: ['perception'],
    not_before: NOT_BEFORE,
    not_after: NOT_AFTER,
    max_depth: 0,
    ...options,
  });

/** human → alice (may delegate once more) → bob. */
const twoLinks = (root: LinkOptions = {}, child: LinkOptions = {}): DelegationCertificate[] => [
  issue(human, alice, { max_depth: 1, ...root }),
  issue(alice, bob, child),
];

/** Replaces the hex character at `at` with another lowercase hex character. */
const flipHex = (text: string, at: number): string =>
  text.slice(0, at) + (text[at] === '0' ? '1' : '0') + text.slice(at + 1);

const ask = (chain: DelegationCertificate[], extra: Partial<Parameters<typeof verifyJurisdiction>[0]> = {}) =>
  verifyJurisdiction({ chain, h3Cell: ROME_RES6, facet: 'perception', nowMs: NOON, ...extra });

describe('core/governance-checks', () => {
  describe('verifyJurisdiction', () => {
    it('authorizes a cell inside the grant, for a granted facet, while active', () => {
      const cert = issue(human, alice);
      const result = ask([cert]);
      assert.deepEqual(result, {
        authorized: true,
        signature_valid: true,
        cert_active: true,
        cell_authorized: true,
        facet_authorized: true,
        agent_pk: alice.publicKey,
        principal_pk: human.publicKey,
        valid_until: NOT_AFTER,
        errors: [],
        jurisdiction: {
          h3_cell: ROME_RES6,
          country_code: 'IT',
          country_name: 'Italy',
          frameworks: result.jurisdiction?.frameworks ?? [],
        },
        cert_hash: certificateHash(cert),
        chain_depth: 1,
      });
    });

    it('resolves a Rome cell to Italy with the EU frameworks', () => {
      const { jurisdiction } = ask([issue(human, alice)], { h3Cell: ROME_RES5 });
      assert.equal(jurisdiction?.country_code, 'IT');
      for (const id of ['GDPR', 'EU_AI_ACT', 'EIDAS2']) assert.ok(jurisdiction?.frameworks.includes(id), id);
    });

    it('authorizes a child cell of a delegated cell', () => {
      const result = ask([issue(human, alice)], { h3Cell: ROME_RES7 });
      assert.equal(result.cell_authorized, true);
      assert.equal(result.authorized, true);
    });

    it('refuses a coarser cell that contains the grant, and a cell elsewhere', () => {
      for (const cell of [ROME_RES4, MILAN_RES6]) {
        const result = ask([issue(human, alice)], { h3Cell: cell });
        assert.equal(result.cell_authorized, false, cell);
        assert.equal(result.authorized, false);
        assert.equal(result.signature_valid, true);
        assert.equal(result.cert_active, true);
        assert.equal(result.facet_authorized, true);
        assert.equal(result.errors.length, 1);
        assert.match(result.errors[0] as string, new RegExp(`cell ${cell} is outside the delegated cells`));
        assert.equal(result.jurisdiction?.h3_cell, cell);
      }
    });

    it('refuses an invalid cell with a null jurisdiction', () => {
      for (const cell of ['not-a-cell', '851E8053FFFFFFF', '']) {
        const result = ask([issue(human, alice)], { h3Cell: cell });
        assert.equal(result.cell_authorized, false);
        assert.equal(result.authorized, false);
        assert.equal(result.jurisdiction, null);
        assert.match(result.errors.join(' '), /is not a valid H3 cell/);
      }
    });

    it('refuses a facet the certificate does not grant, and honours the wildcard', () => {
      const refused = ask([issue(human, alice)], { facet: 'tiles' });
      assert.equal(refused.facet_authorized, false);
      assert.equal(refused.authorized, false);
      assert.deepEqual(refused.errors, ['facet "tiles" is not delegated (granted: perception)']);

      const wildcard = ask([issue(human, alice, { facets: ['*'] })], { facet: 'tiles' });
      assert.equal(wildcard.facet_authorized, true);
      assert.equal(wildcard.authorized, true);
    });

    it('is active from not_before to not_after inclusive, without skew', () => {
      const chain = [issue(human, alice)];
      assert.equal(ask(chain, { nowMs: START }).cert_active, true);
      assert.equal(ask(chain, { nowMs: END }).cert_active, true);

      const expired = ask(chain, { nowMs: END + 1 });
      assert.equal(expired.cert_active, false);
      assert.equal(expired.authorized, false);
      assert.equal(expired.signature_valid, true);
      assert.equal(expired.cell_authorized, true);
      assert.deepEqual(expired.errors, [`the delegation chain is not active now: link 0: expired at ${NOT_AFTER}`]);

      const early = ask(chain, { nowMs: START - 1 });
      assert.equal(early.cert_active, false);
      assert.equal(early.authorized, false);
      assert.deepEqual(early.errors, [
        `the delegation chain is not active now: link 0: not valid before ${NOT_BEFORE}`,
      ]);
    });

    it('refuses a certificate whose signature was altered, judging the other aspects anyway', () => {
      const cert = issue(human, alice);
      const forged = { ...cert, principal_signature: flipHex(cert.principal_signature, 10) };
      const result = ask([forged]);
      assert.equal(result.signature_valid, false);
      assert.equal(result.authorized, false);
      assert.equal(result.cert_active, true);
      assert.equal(result.cell_authorized, true);
      assert.equal(result.facet_authorized, true);
      assert.deepEqual(result.errors, [
        'the delegation chain does not verify: link 0: principal_signature does not verify under principal_pk',
      ]);
    });

    it('reports every failed aspect at once', () => {
      const cert = issue(human, alice);
      const forged = { ...cert, principal_signature: flipHex(cert.principal_signature, 0) };
      const result = ask([forged], { h3Cell: MILAN_RES6, facet: 'tiles', nowMs: END + 1 });
      assert.equal(result.authorized, false);
      assert.equal(result.signature_valid, false);
      assert.equal(result.cert_active, false);
      assert.equal(result.cell_authorized, false);
      assert.equal(result.facet_authorized, false);
      assert.equal(result.errors.length, 4);
    });

    it('authorizes through a two-link chain, reporting the human and the last agent', () => {
      const chain = twoLinks(
        { h3_cells: [ROME_RES5], not_after: NOT_AFTER },
        { h3_cells: [ROME_RES6], not_after: '2026-03-01T18:00:00.000Z' },
      );
      const result = ask(chain, { h3Cell: ROME_RES7 });
      assert.equal(result.authorized, true, result.errors.join('; '));
      assert.equal(result.principal_pk, human.publicKey);
      assert.equal(result.agent_pk, bob.publicKey);
      assert.equal(result.chain_depth, 2);
      assert.equal(result.cert_hash, certificateHash(chain[1] as DelegationCertificate));
      assert.equal(result.valid_until, '2026-03-01T18:00:00.000Z');
      // The root still covers ROME_RES5, but the last link granted only ROME_RES6.
      const sibling = cellToChildren(ROME_RES5, 6).find((c) => c !== ROME_RES6) as string;
      assert.equal(ask(chain, { h3Cell: sibling }).cell_authorized, false);
    });

    it('refuses a chain whose second link widens the cells, naming the link', () => {
      const chain = twoLinks({ h3_cells: [ROME_RES6] }, { h3_cells: [MILAN_RES6] });
      const result = ask(chain, { h3Cell: MILAN_RES6 });
      assert.equal(result.signature_valid, false);
      assert.equal(result.authorized, false);
      // Judged on its own: the last link does list the cell.
      assert.equal(result.cell_authorized, true);
      assert.equal(result.errors.length, 1);
      assert.match(result.errors[0] as string, /link 1: cell .* is not inside link 0's cells \(widened cells\)/);
    });

    it('takes valid_until as the earliest not_after over the links, even on a widened window', () => {
      const chain = twoLinks({ not_after: '2026-03-01T20:00:00.000Z' }, { not_after: NOT_AFTER });
      const result = ask(chain);
      assert.equal(result.signature_valid, false);
      assert.match(result.errors.join(' '), /link 1: not_after .* \(widened window\)/);
      assert.equal(result.valid_until, '2026-03-01T20:00:00.000Z');
      assert.equal(ask(chain, { nowMs: Date.parse('2026-03-01T21:00:00.000Z') }).cert_active, false);
    });

    it('answers everything false for an empty or malformed chain', () => {
      const malformed = [{ ...issue(human, alice), h3_cells: ['nope'] }] as DelegationCertificate[];
      for (const chain of [[], malformed, 'garbage' as unknown as DelegationCertificate[]]) {
        const result = ask(chain);
        assert.equal(result.authorized, false);
        assert.equal(result.signature_valid, false);
        assert.equal(result.cert_active, false);
        assert.equal(result.cell_authorized, false);
        assert.equal(result.facet_authorized, false);
        assert.equal(result.agent_pk, '');
        assert.equal(result.principal_pk, '');
        assert.equal(result.valid_until, '');
        assert.equal(result.cert_hash, '');
        assert.equal(result.chain_depth, 0);
        assert.equal(result.errors.length, 1);
        assert.match(result.errors[0] as string, /^the delegation chain is unusable: /);
        // Where the cell lies does not depend on the chain.
        assert.equal(result.jurisdiction?.country_code, 'IT');
      }
    });
  });

  describe('checkDelegationChain', () => {
    const check = (chain: DelegationCertificate[], toolName: string, nowMs = NOON) =>
      checkDelegationChain({ chain, toolName, nowMs });

    it('allows a whitelisted tool when no link restricts tools', () => {
      const cert = issue(human, alice);
      assert.deepEqual(check([cert], 'perception_weather'), {
        authorized: true,
        human_principal_pk: human.publicKey,
        agent_pk: alice.publicKey,
        signature_valid: true,
        tool_allowed: true,
        allowed_tools: [...DEFAULT_ALLOWED_TOOLS],
        denied_tools: [],
        depth: 1,
        cert_hash: certificateHash(cert),
        cert_active: true,
        errors: [],
      });
    });

    it('refuses a tool outside the whitelist, and one outside the chain allowed_tools', () => {
      const open = check([issue(human, alice)], 'shell_exec');
      assert.equal(open.tool_allowed, false);
      assert.equal(open.authorized, false);
      assert.deepEqual(open.errors, ['tool "shell_exec" is not in the default allowed-tools whitelist']);

      const narrowed = [
        issue(human, alice, { constraints: { allowed_tools: ['perception_weather', 'spatial_query'] } }),
      ];
      const outside = check(narrowed, 'perception_fetch_tile');
      assert.equal(outside.tool_allowed, false);
      assert.equal(outside.authorized, false);
      assert.equal(outside.signature_valid, true);
      assert.deepEqual(outside.allowed_tools, ['perception_weather', 'spatial_query']);
      assert.deepEqual(outside.errors, ['tool "perception_fetch_tile" is not in the chain\'s allowed_tools']);
      assert.equal(check(narrowed, 'spatial_query').authorized, true);
    });

    it('refuses a tool denied anywhere in the chain and removes it from allowed_tools', () => {
      const chain = twoLinks(
        { constraints: { denied_tools: ['idn_roll_epoch'] } },
        {
          constraints: { denied_tools: ['idn_roll_epoch', 'perception_embed'] },
        },
      );
      const denied = check(chain, 'idn_roll_epoch');
      assert.equal(denied.signature_valid, true);
      assert.equal(denied.tool_allowed, false);
      assert.equal(denied.authorized, false);
      assert.deepEqual(denied.denied_tools, ['idn_roll_epoch', 'perception_embed']);
      assert.ok(!denied.allowed_tools.includes('idn_roll_epoch'));
      assert.ok(!denied.allowed_tools.includes('perception_embed'));
      assert.equal(denied.allowed_tools.length, DEFAULT_ALLOWED_TOOLS.length - 2);
      assert.deepEqual(denied.errors, ['tool "idn_roll_epoch" is denied by link 0 of the delegation chain']);
    });

    it('authorizes through a chain of two links that narrows the tools', () => {
      const chain = twoLinks(
        { constraints: { allowed_tools: ['perception_weather', 'spatial_query', 'idn_verify_chain'] } },
        { constraints: { allowed_tools: ['perception_weather', 'spatial_query'], denied_tools: ['spatial_query'] } },
      );
      const result = check(chain, 'perception_weather');
      assert.equal(result.authorized, true, result.errors.join('; '));
      assert.equal(result.human_principal_pk, human.publicKey);
      assert.equal(result.agent_pk, bob.publicKey);
      assert.equal(result.depth, 2);
      assert.deepEqual(result.allowed_tools, ['perception_weather']);
      assert.equal(check(chain, 'idn_verify_chain').tool_allowed, false);
    });

    it('judges signature and time on their own', () => {
      const cert = issue(human, alice);
      const forged = { ...cert, principal_signature: flipHex(cert.principal_signature, 127) };
      const bad = check([forged], 'perception_weather');
      assert.equal(bad.signature_valid, false);
      assert.equal(bad.tool_allowed, true);
      assert.equal(bad.cert_active, true);
      assert.equal(bad.authorized, false);

      const expired = check([cert], 'perception_weather', END + 1);
      assert.equal(expired.cert_active, false);
      assert.equal(expired.signature_valid, true);
      assert.equal(expired.authorized, false);
      assert.equal(check([cert], 'perception_weather', START - 1).cert_active, false);
    });

    it('never reports a widened allowed list of an invalid chain as allowed', () => {
      const chain = twoLinks(
        { constraints: { allowed_tools: ['perception_weather'] } },
        { constraints: { allowed_tools: ['perception_weather', 'spatial_query'] } },
      );
      const result = check(chain, 'spatial_query');
      assert.equal(result.signature_valid, false);
      assert.match(
        result.errors[0] as string,
        /link 1: tool "spatial_query" is not allowed by link 0 \(widened tools\)/,
      );
      assert.equal(result.tool_allowed, false);
      assert.deepEqual(result.allowed_tools, ['perception_weather']);
    });

    it('answers everything false for an empty chain', () => {
      const result = check([], 'perception_weather');
      assert.equal(result.authorized, false);
      assert.equal(result.signature_valid, false);
      assert.equal(result.tool_allowed, false);
      assert.equal(result.cert_active, false);
      assert.equal(result.human_principal_pk, '');
      assert.equal(result.agent_pk, '');
      assert.deepEqual(result.allowed_tools, []);
      assert.equal(result.depth, 0);
      assert.deepEqual(result.errors, ['the delegation chain is unusable: delegation chain is empty']);
    });
  });

  describe('delegation-cert helpers', () => {
    it('verifyDelegationChainStructure ignores time but agrees with verifyDelegationChain otherwise', () => {
      const chain = twoLinks({ h3_cells: [ROME_RES5] }, { h3_cells: [ROME_RES6] });
      const structure = verifyDelegationChainStructure(chain);
      const full = verifyDelegationChain(chain, { now: NOON, agentPk: bob.publicKey });
      assert.ok(structure.ok && full.ok);
      assert.deepEqual(structure.value, full.value);
      assert.equal(verifyDelegationChainStructure(chain).ok, true);
      assert.equal(verifyDelegationChain(chain, { now: END + 3_600_000, agentPk: bob.publicKey }).ok, false);

      const widened = twoLinks({ h3_cells: [ROME_RES6] }, { h3_cells: [ROME_RES5] });
      const refused = verifyDelegationChainStructure(widened);
      assert.equal(refused.ok, false);
      if (!refused.ok) assert.match(refused.detail, /^link 1: cell .* \(widened cells\)$/);
    });

    it('delegationChainRights folds constraints without verifying', () => {
      const rights = delegationChainRights([
        { constraints: { allowed_tools: ['a', 'b'], max_ops_per_hour: 10 } },
        { constraints: { allowed_tools: ['b', 'c'], denied_tools: ['x'], require_human_approval: true } },
        { constraints: null },
      ]);
      assert.deepEqual(rights, {
        allowed_tools: ['b'],
        denied_tools: ['x'],
        max_ops_per_hour: 10,
        require_human_approval: true,
      });
      assert.deepEqual(delegationChainRights([]), {
        allowed_tools: null,
        denied_tools: [],
        max_ops_per_hour: null,
        require_human_approval: false,
      });
    });
  });
});
