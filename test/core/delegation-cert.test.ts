import assert from 'node:assert/strict';
import { cellToCenterChild, cellToParent, latLngToCell } from 'h3-js';
import type { Check } from '../../core/check.js';
import {
  certificateBlake3,
  certificateHash,
  certificateSigningString,
  decodeDelegationHeader,
  issueCertificate,
  parseDelegationChain,
  verifyDelegationChain,
  type DelegationCertificate,
  type DelegationConstraints,
  type DelegationRequest,
} from '../../core/delegation-cert.js';
import { blake3Hex, sha256Hex } from '../../core/hash.js';
import { generateKeyPair, signMessage, type KeyPair } from '../../core/identity.js';

const ROME_RES5 = '851e8053fffffff';
const ROME_RES6 = '861e8050fffffff'; // inside ROME_RES5
const ROME_RES7 = cellToCenterChild(ROME_RES6, 7);
const ROME_RES4 = cellToParent(ROME_RES5, 4); // coarser than the root grant
const MILAN_RES6 = latLngToCell(45.4642, 9.19, 6);

const NOT_BEFORE = '2026-03-01T00:00:00.000Z';
const NOT_AFTER = '2026-03-02T00:00:00.000Z';
const START = Date.parse(NOT_BEFORE);
const END = Date.parse(NOT_AFTER);
const NOON = START + 12 * 3_600_000;
const SKEW = 60_000;

const human = generateKeyPair();
const alice = generateKeyPair();
const bob = generateKeyPair();
const carol = generateKeyPair();
const mallory = generateKeyPair();

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
    facets: ['*'],
    not_before: NOT_BEFORE,
    not_after: NOT_AFTER,
    max_depth: 0,
    ...options,
  });

const asks = (agent: KeyPair, extra: Partial<DelegationRequest> = {}): DelegationRequest => ({
  now: NOON,
  agentPk: agent.publicKey,
  ...extra,
});

/** Asserts a delegation_invalid failure whose detail matches `reason`. */
function rejects(result: Check<unknown>, reason: RegExp): void {
  assert.equal(result.ok, false, 'expected the chain to be rejected');
  if (result.ok) return;
  assert.equal(result.error, 'delegation_invalid');
  assert.match(result.detail, reason);
}

function grant<T>(result: Check<T>): T {
  if (!result.ok) assert.fail(`expected a grant, got ${result.error}: ${result.detail}`);
  return result.value;
}

/** human → alice (may delegate once more) → bob, with the child's options under test. */
const twoLinks = (root: LinkOptions, child: LinkOptions): DelegationCertificate[] => [
  issue(human, alice, { max_depth: 1, ...root }),
  issue(alice, bob, child),
];

const toBase64 = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64');

describe('delegation certificates (GEIANT v1)', () => {
  describe('issue and verify', () => {
    it('issues a certificate signed by the principal and grants it to the agent', () => {
      const cert = issue(human, alice, { facets: ['tiles'], constraints: { allowed_tools: ['render_tile'] } });
      assert.equal(cert.version, 1);
      assert.equal(cert.principal_pk, human.publicKey);
      assert.match(cert.principal_signature, /^[0-9a-f]{128}$/);

      const value = grant(
        verifyDelegationChain([cert], asks(alice, { h3Cell: ROME_RES6, facets: ['tiles'], tools: ['render_tile'] })),
      );
      assert.deepEqual(value, {
        human_principal_pk: human.publicKey,
        agent_pk: alice.publicKey,
        chain_depth: 1,
        cert_hash: certificateHash(cert),
        h3_cells: [ROME_RES5],
        facets: ['tiles'],
        allowed_tools: ['render_tile'],
        denied_tools: [],
        max_ops_per_hour: null,
        require_human_approval: false,
        not_before: NOT_BEFORE,
        not_after: NOT_AFTER,
      });
    });

    it('refuses to issue a certificate with an invalid field', () => {
      assert.throws(() => issue(human, alice, { h3_cells: ['not-a-cell'] }), TypeError);
      assert.throws(() => issue(human, alice, { max_depth: -1 }), TypeError);
      assert.throws(() => issue(human, alice, { not_before: NOT_AFTER, not_after: NOT_BEFORE }), TypeError);
    });
  });

  describe('signing string and hashes', () => {
    it('is JCS of the nine fields, independent of key order and without the signature', () => {
      const cert = issue(human, alice, { constraints: { max_ops_per_hour: 5 } });
      const reordered = Object.fromEntries(Object.entries(cert).reverse()) as unknown as DelegationCertificate;
      assert.equal(certificateSigningString(reordered), certificateSigningString(cert));
      assert.equal(
        certificateSigningString(cert),
        `{"agent_pk":"${alice.publicKey}","constraints":{"max_ops_per_hour":5},"facets":["*"],` +
          `"h3_cells":["${ROME_RES5}"],"max_depth":0,"not_after":"${NOT_AFTER}","not_before":"${NOT_BEFORE}",` +
          `"principal_pk":"${human.publicKey}","version":1}`,
      );
    });

    it('treats absent constraints as null', () => {
      const cert = issue(human, alice);
      assert.equal(cert.constraints, null);
      const { constraints: _dropped, ...withoutConstraints } = cert;
      const absent = withoutConstraints as unknown as DelegationCertificate;
      assert.equal(certificateSigningString(absent), certificateSigningString(cert));
      assert.equal(certificateHash(absent), certificateHash(cert));

      // A certificate on the wire without the field parses to null and still verifies.
      const parsed = grant(parseDelegationChain(absent));
      assert.equal(parsed[0]?.constraints, null);
      grant(verifyDelegationChain(parsed, asks(alice)));
    });

    it('hashes the signing string with SHA-256 (cert_hash) and Blake3 (token claim)', () => {
      const cert = issue(human, alice);
      assert.equal(certificateHash(cert), sha256Hex(certificateSigningString(cert)));
      assert.equal(certificateBlake3(cert), blake3Hex(certificateSigningString(cert)));
      assert.match(certificateBlake3(cert), /^[0-9a-f]{64}$/);
      assert.notEqual(certificateBlake3(cert), certificateHash(cert));
    });
  });

  describe('chains', () => {
    it('verifies a three-link chain that narrows to a finer cell and accumulates constraints', () => {
      const chain = [
        issue(human, alice, {
          max_depth: 2,
          constraints: { allowed_tools: ['render_tile', 'fetch_scene', 'classify'], denied_tools: ['delete'] },
        }),
        issue(alice, bob, {
          h3_cells: [ROME_RES6],
          facets: ['tiles', 'imagery'],
          max_depth: 1,
          constraints: { max_ops_per_hour: 100, require_human_approval: true },
        }),
        issue(bob, carol, {
          h3_cells: [ROME_RES6],
          facets: ['tiles'],
          not_after: '2026-03-01T18:00:00.000Z',
          constraints: { allowed_tools: ['render_tile'], denied_tools: ['delete', 'classify'], max_ops_per_hour: 10 },
        }),
      ];
      const value = grant(
        verifyDelegationChain(chain, asks(carol, { h3Cell: ROME_RES7, facets: ['tiles'], tools: ['render_tile'] })),
      );
      assert.deepEqual(value, {
        human_principal_pk: human.publicKey,
        agent_pk: carol.publicKey,
        chain_depth: 3,
        cert_hash: certificateHash(chain[2] as DelegationCertificate),
        h3_cells: [ROME_RES6],
        facets: ['tiles'],
        allowed_tools: ['render_tile'],
        denied_tools: ['delete', 'classify'],
        max_ops_per_hour: 10,
        require_human_approval: true,
        not_before: NOT_BEFORE,
        not_after: '2026-03-01T18:00:00.000Z',
      });
    });

    it('rejects an empty chain and one longer than eight links', () => {
      rejects(verifyDelegationChain([], asks(alice)), /empty/);
      rejects(parseDelegationChain([]), /empty/);
      const keys = Array.from({ length: 10 }, () => generateKeyPair());
      const long = keys.slice(1).map((agent, i) => issue(keys[i] as KeyPair, agent, { max_depth: 8 - i }));
      rejects(verifyDelegationChain(long, asks(keys[9] as KeyPair)), /9 links; at most 8/);
      rejects(parseDelegationChain(long), /9 links; at most 8/);
    });
  });

  describe('validity window', () => {
    const cert = issue(human, alice);

    it('rejects an expired certificate', () => {
      rejects(verifyDelegationChain([cert], asks(alice, { now: END + SKEW + 1 })), /link 0: expired at/);
    });

    it('rejects a certificate that is not yet valid', () => {
      rejects(verifyDelegationChain([cert], asks(alice, { now: START - SKEW - 1 })), /link 0: not valid before/);
    });

    it('tolerates exactly 60 s of clock skew at both ends', () => {
      grant(verifyDelegationChain([cert], asks(alice, { now: START - SKEW })));
      grant(verifyDelegationChain([cert], asks(alice, { now: END + SKEW })));
      rejects(verifyDelegationChain([cert], asks(alice, { now: START - 1, skewMs: 0 })), /not valid before/);
    });
  });

  describe('rights only narrow', () => {
    it('rejects a child cell outside the parent cells, or coarser than them', () => {
      rejects(verifyDelegationChain(twoLinks({}, { h3_cells: [MILAN_RES6] }), asks(bob)), /link 1: .*widened cells/);
      rejects(verifyDelegationChain(twoLinks({}, { h3_cells: [ROME_RES4] }), asks(bob)), /link 1: .*widened cells/);
    });

    it('rejects a facet the parent did not grant', () => {
      const chain = twoLinks({ facets: ['tiles'] }, { facets: ['tiles', 'imagery'] });
      rejects(verifyDelegationChain(chain, asks(bob)), /link 1: facet "imagery" .*widened facets/);
      const wildcard = twoLinks({ facets: ['tiles'] }, { facets: ['*'] });
      rejects(verifyDelegationChain(wildcard, asks(bob)), /link 1: facet "\*"/);
    });

    it('rejects a tool outside the parent allowed list, including an inherited one', () => {
      const chain = twoLinks(
        { constraints: { allowed_tools: ['render_tile'] } },
        { constraints: { allowed_tools: ['render_tile', 'delete'] } },
      );
      rejects(verifyDelegationChain(chain, asks(bob)), /link 1: tool "delete" is not allowed .*widened tools/);

      const inherited = [
        issue(human, alice, { max_depth: 2, constraints: { allowed_tools: ['render_tile'] } }),
        issue(alice, bob, { max_depth: 1 }),
        issue(bob, carol, { constraints: { allowed_tools: ['delete'] } }),
      ];
      rejects(verifyDelegationChain(inherited, asks(carol)), /link 2: tool "delete" is not allowed/);
    });

    it('rejects a child that lifts a parent denial, and inherits denials when it lists none', () => {
      const lifted = twoLinks({ constraints: { denied_tools: ['delete'] } }, { constraints: { denied_tools: [] } });
      rejects(verifyDelegationChain(lifted, asks(bob)), /link 1: tool "delete" denied by link 0 is not denied/);
      const inherited = twoLinks({ constraints: { denied_tools: ['delete'] } }, {});
      rejects(verifyDelegationChain(inherited, asks(bob, { tools: ['delete'] })), /tool "delete" is denied/);
    });

    it('rejects a window that starts earlier or ends later than the parent', () => {
      const later = twoLinks({}, { not_after: '2026-03-02T00:00:01.000Z' });
      rejects(verifyDelegationChain(later, asks(bob)), /link 1: not_after .*widened window/);
      const earlier = twoLinks({}, { not_before: '2026-02-28T23:59:59.000Z' });
      rejects(verifyDelegationChain(earlier, asks(bob)), /link 1: not_before .*widened window/);
    });

    it('rejects a larger rate limit and keeps the smallest one', () => {
      const larger = twoLinks({ constraints: { max_ops_per_hour: 10 } }, { constraints: { max_ops_per_hour: 11 } });
      rejects(verifyDelegationChain(larger, asks(bob)), /link 1: max_ops_per_hour 11 exceeds link 0's 10/);
      const inherited = twoLinks({ constraints: { max_ops_per_hour: 10 } }, {});
      assert.equal(grant(verifyDelegationChain(inherited, asks(bob))).max_ops_per_hour, 10);
    });

    it('rejects delegation beyond max_depth', () => {
      const exhausted = [issue(human, alice, { max_depth: 0 }), issue(alice, bob)];
      rejects(verifyDelegationChain(exhausted, asks(bob)), /link 0: max_depth 0 does not allow further delegation/);
      const notReduced = twoLinks({ max_depth: 1 }, { max_depth: 1 });
      rejects(verifyDelegationChain(notReduced, asks(bob)), /link 1: max_depth 1 must be at most 0/);
    });
  });

  describe('chain integrity', () => {
    it('rejects a link whose principal is not the previous agent', () => {
      const broken = [issue(human, alice, { max_depth: 1 }), issue(mallory, bob)];
      rejects(verifyDelegationChain(broken, asks(bob)), /link 1: principal_pk is not link 0's agent_pk/);
    });

    it('rejects a chain that does not end at the requester', () => {
      rejects(
        verifyDelegationChain([issue(human, alice)], asks(mallory)),
        /chain ends at [0-9a-f]{64}, not the requester/,
      );
    });

    it('rejects any field changed after signing', () => {
      const cert = issue(human, alice, { h3_cells: [ROME_RES6] });
      const tampered = [
        { ...cert, h3_cells: [ROME_RES5] },
        { ...cert, max_depth: 3 },
        { ...cert, not_after: '2027-01-01T00:00:00.000Z' },
        { ...cert, constraints: { max_ops_per_hour: 1 } },
        { ...cert, agent_pk: mallory.publicKey },
      ];
      for (const link of tampered) {
        rejects(
          verifyDelegationChain([link], asks(link === tampered[4] ? mallory : alice)),
          /link 0: principal_signature does not verify/,
        );
      }
      const second = [issue(human, alice, { max_depth: 1 }), { ...issue(alice, bob), facets: ['tiles', 'x'] }];
      rejects(verifyDelegationChain(second, asks(bob)), /link 1: principal_signature does not verify/);
    });

    it('rejects a small-order principal key with the reason', () => {
      const unsigned = { ...issue(human, alice), principal_pk: '01'.padEnd(64, '0') };
      const forged = { ...unsigned, principal_signature: signMessage(mallory.secretKey, 'x') };
      rejects(verifyDelegationChain([forged], asks(alice)), /link 0: principal_pk is invalid: .*small-order/);
    });
  });

  describe('the request against the grant', () => {
    const cert = issue(human, alice, {
      h3_cells: [ROME_RES6],
      facets: ['tiles', 'imagery'],
      constraints: { allowed_tools: ['render_tile', 'delete'], denied_tools: ['delete'] },
    });

    it('accepts a finer cell inside the delegated one', () => {
      grant(verifyDelegationChain([cert], asks(alice, { h3Cell: ROME_RES7 })));
    });

    it('rejects a cell outside the delegated cells, a coarser one, and a malformed one', () => {
      rejects(verifyDelegationChain([cert], asks(alice, { h3Cell: MILAN_RES6 })), /outside the delegated cells/);
      rejects(verifyDelegationChain([cert], asks(alice, { h3Cell: ROME_RES5 })), /outside the delegated cells/);
      rejects(verifyDelegationChain([cert], asks(alice, { h3Cell: 'rome' })), /not a valid H3 cell/);
    });

    it('rejects a facet that was not delegated', () => {
      rejects(verifyDelegationChain([cert], asks(alice, { facets: ['tiles', 'audit'] })), /facet "audit"/);
    });

    it('rejects a denied tool and a tool outside the allowed list', () => {
      rejects(verifyDelegationChain([cert], asks(alice, { tools: ['delete'] })), /tool "delete" is denied/);
      rejects(
        verifyDelegationChain([cert], asks(alice, { tools: ['classify'] })),
        /tool "classify" is not in the allowed/,
      );
    });
  });

  describe('parsing and the x-svc-delegation-cert header', () => {
    it('parses a single certificate into a one-link chain', () => {
      const cert = issue(human, alice);
      assert.deepEqual(grant(parseDelegationChain(cert)), [cert]);
    });

    it('rejects unknown fields, bad keys, bad cells and bad numbers, naming the link', () => {
      const cert = issue(human, alice);
      rejects(parseDelegationChain({ ...cert, extra: 1 }), /link 0: .*extra/);
      rejects(parseDelegationChain([cert, { ...cert, agent_pk: cert.agent_pk.toUpperCase() }]), /link 1: agent_pk/);
      rejects(parseDelegationChain({ ...cert, h3_cells: ['851e8053ffffffg'] }), /link 0: h3_cells\.0/);
      rejects(parseDelegationChain({ ...cert, max_depth: 1.5 }), /link 0: max_depth/);
      rejects(parseDelegationChain({ ...cert, version: 2 }), /link 0: version/);
      rejects(parseDelegationChain({ ...cert, not_after: 'tomorrow' }), /link 0: not_after/);
      rejects(parseDelegationChain({ ...cert, constraints: { max_ops: 3 } }), /link 0: constraints/);
      rejects(parseDelegationChain('a string'), /link 0/);
    });

    it('round-trips a chain through standard base64', () => {
      const chain = twoLinks({}, { h3_cells: [ROME_RES6] });
      const decoded = grant(decodeDelegationHeader(toBase64(chain)));
      assert.deepEqual(decoded, chain);
      assert.equal(grant(verifyDelegationChain(decoded, asks(bob, { h3Cell: ROME_RES6 }))).chain_depth, 2);
    });

    it('accepts url-safe base64 without padding of a single certificate', () => {
      const cert = issue(human, alice);
      const urlSafe = Buffer.from(JSON.stringify(cert), 'utf8').toString('base64url');
      assert.deepEqual(grant(decodeDelegationHeader(urlSafe)), [cert]);
    });

    it('rejects malformed base64, non-JSON and JSON that is not a certificate', () => {
      rejects(decodeDelegationHeader(''), /empty/);
      rejects(decodeDelegationHeader('!!not base64!!'), /not base64/);
      rejects(decodeDelegationHeader('abcde'), /not base64/);
      rejects(decodeDelegationHeader(Buffer.from('{"version":1,').toString('base64')), /not valid JSON/);
      rejects(decodeDelegationHeader(Buffer.from('{"version":1,"version":1}').toString('base64')), /duplicate key/);
      rejects(decodeDelegationHeader(Buffer.from([0xff, 0xfe, 0x7b]).toString('base64')), /UTF-8 JSON/);
      rejects(decodeDelegationHeader(toBase64({ hello: 'world' })), /link 0/);
    });
  });
});
