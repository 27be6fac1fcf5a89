import assert from 'node:assert/strict';
import fc from 'fast-check';
import { cellToChildren, cellToParent, getResolution, latLngToCell } from 'h3-js';
import type { Check } from '../../core/check.js';
import {
  MAX_CHAIN_LENGTH,
  certificateHash,
  decodeDelegationHeader,
  issueCertificate,
  verifyDelegationChain,
  verifyDelegationChainStructure,
  type DelegationCertificate,
  type DelegationConstraints,
  type DelegationRequest,
} from '../../core/delegation-cert.js';
import { cellCoveredBy } from '../../core/h3-cell.js';
import { bytesToHex } from '../../core/hex.js';
import { keyPairFromSecret, type KeyPair } from '../../core/identity.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

const RUNS = fuzzRuns(60);
const tally = new CaseTally('property', 'delegation');

const NOW = Date.parse('2026-03-01T12:00:00Z');
const MINUTE = 60_000;
const DAY = 86_400_000;
/** Root grants come from these resolution 3 cells (Rome, Paris); widening uses cells far from both. */
const ROOT_CELLS = [latLngToCell(41.9, 12.5, 3), latLngToCell(48.86, 2.35, 3)];
const FAR_CELLS = [latLngToCell(40.71, -74.0, 5), latLngToCell(35.68, 139.69, 5)];
const FACETS = ['perception', 'compliance', 'inference', 'tile_render', 'image_process'];
const TOOLS = ['perception_weather', 'perception_fetch_tile', 'perception_classify', 'idn_verify_chain', 'web-search'];
const SIGNED_FIELDS = [
  'version',
  'agent_pk',
  'principal_pk',
  'h3_cells',
  'facets',
  'not_before',
  'not_after',
  'max_depth',
  'constraints',
  'principal_signature',
] as const;

/** The items of `pool` whose bit is set in `mask`; never empty (falls back to the first). */
const subset = <T>(pool: readonly T[], mask: number): T[] => {
  const picked = pool.filter((_, i) => (mask >> i) & 1);
  return picked.length > 0 ? picked : [pool[0] as T];
};
const iso = (ms: number) => new Date(ms).toISOString();

interface LinkPlan {
  cellDepth: number;
  cellChoice: number;
  cellMask: number;
  facetMask: number;
  toolMask: number;
  deniedMask: number;
  opsCut: number;
  constraintsKind: number;
  humanApproval: boolean;
  nbShift: number;
  naShift: number;
  depthSlack: number;
}

interface ChainPlan {
  seeds: string[];
  length: number;
  links: LinkPlan[];
}

const linkPlan: fc.Arbitrary<LinkPlan> = fc.record({
  cellDepth: fc.nat(2),
  cellChoice: fc.nat(),
  cellMask: fc.nat(7),
  facetMask: fc.nat(31),
  toolMask: fc.nat(31),
  deniedMask: fc.nat(31),
  opsCut: fc.nat(50),
  constraintsKind: fc.nat(3),
  humanApproval: fc.boolean(),
  nbShift: fc.nat(1000),
  naShift: fc.nat(1000),
  depthSlack: fc.nat(2),
});

const chainPlan = (minLength: number, maxLength: number): fc.Arbitrary<ChainPlan> =>
  fc.record({
    seeds: fc.uniqueArray(fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex), {
      minLength: maxLength + 1,
      maxLength: maxLength + 1,
    }),
    length: fc.integer({ min: minLength, max: maxLength }),
    links: fc.array(linkPlan, { minLength: maxLength, maxLength }),
  });

/** The rights in force after a link, tracked the way the verifier folds them. */
interface Rights {
  allowed: string[] | null;
  denied: string[];
  maxOps: number | null;
}

interface BuiltChain {
  chain: DelegationCertificate[];
  keys: KeyPair[];
  /** Rights before each link (index i: after links 0..i-1). */
  rightsBefore: Rights[];
  request: DelegationRequest;
}

/**
 * A valid chain of `plan.length` links, root first: every link narrows its parent (cells by H3 descent,
 * facets and tools by subset, denied tools by superset, window inside, rate no higher, depth one less).
 * `keyOrder` maps link positions to seeds (a loop reuses one).
 */
function buildChain(plan: ChainPlan, keyOrder?: number[]): BuiltChain {
  const keys = (keyOrder ?? plan.seeds.map((_, i) => i)).map((i) => keyPairFromSecret(plan.seeds[i] as string));
  const chain: DelegationCertificate[] = [];
  const rightsBefore: Rights[] = [];
  let rights: Rights = { allowed: null, denied: [], maxOps: null };
  let cells = ROOT_CELLS;
  let facets = FACETS;
  let window = { nb: NOW - 30 * DAY, na: NOW + 30 * DAY };
  let depth = plan.length - 1 + (plan.links[0]?.depthSlack ?? 0);
  for (let i = 0; i < plan.length; i++) {
    const p = plan.links[i] as LinkPlan;
    rightsBefore.push(rights);
    // Cells: each kept parent cell, or one of its descendants up to two resolutions finer.
    cells = subset(cells, p.cellMask).map((cell) => {
      if (p.cellDepth === 0) return cell;
      const children = cellToChildren(cell, Math.min(15, getResolution(cell) + p.cellDepth));
      return children[p.cellChoice % children.length] as string;
    });
    facets = subset(facets, p.facetMask);
    window = {
      nb: window.nb + Math.floor(((NOW - MINUTE - window.nb) * p.nbShift) / 1000),
      na: window.na - Math.floor(((window.na - NOW - MINUTE) * p.naShift) / 1000),
    };
    let constraints: DelegationConstraints | null = null;
    if (p.constraintsKind > 0) {
      constraints = {};
      if (p.constraintsKind !== 1) constraints.allowed_tools = subset(rights.allowed ?? TOOLS, p.toolMask);
      if (p.constraintsKind !== 2) {
        constraints.denied_tools = [...new Set([...rights.denied, ...subset(TOOLS, p.deniedMask)])];
      }
      constraints.max_ops_per_hour = Math.max(0, (rights.maxOps ?? 1000) - p.opsCut);
      constraints.require_human_approval = p.humanApproval;
    }
    if (i > 0) depth = Math.max(plan.length - 1 - i, depth - 1 - (p.depthSlack % 2));
    chain.push(
      issueCertificate((keys[i] as KeyPair).secretKey, {
        agent_pk: (keys[i + 1] as KeyPair).publicKey,
        h3_cells: cells,
        facets,
        not_before: iso(window.nb),
        not_after: iso(window.na),
        max_depth: depth,
        constraints,
      }),
    );
    rights = {
      allowed: constraints?.allowed_tools ?? rights.allowed,
      denied: constraints?.denied_tools ?? rights.denied,
      maxOps: constraints?.max_ops_per_hour ?? rights.maxOps,
    };
  }
  const last = chain[chain.length - 1] as DelegationCertificate;
  const tool = (rights.allowed ?? []).find((t) => !rights.denied.includes(t));
  const request: DelegationRequest = {
    now: NOW,
    agentPk: last.agent_pk,
    h3Cell: cellToChildren(last.h3_cells[0] as string, Math.min(15, getResolution(last.h3_cells[0] as string) + 1))[0],
    facets: [last.facets[0] as string],
    ...(tool === undefined ? {} : { tools: [tool] }),
  };
  return { chain, keys, rightsBefore, request };
}

/** Re-signs link `i` after an edit, as its principal would: only the chain rules can then catch the edit. */
function resign(built: BuiltChain, i: number, edit: Partial<DelegationCertificate>): DelegationCertificate[] {
  const link = { ...(built.chain[i] as DelegationCertificate), ...edit };
  const chain = [...built.chain];
  chain[i] = issueCertificate((built.keys[i] as KeyPair).secretKey, {
    agent_pk: link.agent_pk,
    h3_cells: link.h3_cells,
    facets: link.facets,
    not_before: link.not_before,
    not_after: link.not_after,
    max_depth: link.max_depth,
    constraints: link.constraints,
  });
  return chain;
}

function rejected(result: Check<unknown>, reason?: RegExp): void {
  assert.equal(result.ok, false, 'expected the chain to be rejected');
  if (result.ok) return;
  assert.equal(result.error, 'delegation_invalid');
  if (reason) assert.match(result.detail, reason);
}

const base64Of = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64');

/** One bit of a field's value flipped: a character's code unit, a number's bit, a boolean. */
function flipValue(value: unknown, choice: number, bit: number): unknown {
  if (typeof value === 'boolean') return !value;
  if (typeof value === 'number') return value ^ (1 << (bit % 31));
  if (typeof value === 'string') {
    const at = choice % value.length;
    return value.slice(0, at) + String.fromCharCode(value.charCodeAt(at) ^ (1 << (bit % 16))) + value.slice(at + 1);
  }
  if (Array.isArray(value)) {
    const at = choice % value.length;
    return value.map((item, i) => (i === at ? flipValue(item, Math.floor(choice / value.length), bit) : item));
  }
  const entries = Object.entries(value as Record<string, unknown>);
  const [key, inner] = entries[choice % entries.length] as [string, unknown];
  return { ...(value as object), [key]: flipValue(inner, Math.floor(choice / entries.length), bit) };
}

describe('property: delegation certificates and chains (core/delegation-cert.ts)', () => {
  after(() => tally.print());

  it('issue → verify: random valid chains of 1–4 narrowing links verify, also through the base64 header', () => {
    fc.assert(
      fc.property(chainPlan(1, 4), (plan) => {
        tally.add(`valid-chain-${plan.length}-links`, 'delegation');
        const { chain, keys, request } = buildChain(plan);
        const grant = verifyDelegationChain(chain, request);
        assert.ok(grant.ok, grant.ok ? '' : grant.detail);
        assert.equal(grant.value.human_principal_pk, keys[0]?.publicKey);
        assert.equal(grant.value.agent_pk, keys[plan.length]?.publicKey);
        assert.equal(grant.value.chain_depth, plan.length);
        assert.equal(grant.value.cert_hash, certificateHash(chain[chain.length - 1] as DelegationCertificate));
        assert.ok(verifyDelegationChainStructure(chain).ok);
        const decoded = decodeDelegationHeader(base64Of(chain));
        assert.ok(decoded.ok);
        assert.deepEqual(decoded.value, chain);
        assert.ok(verifyDelegationChain(decoded.value, request).ok);
      }),
      fcParams(RUNS),
    );
  });

  it('rejects any single-bit flip of any signed field or signature of any link', () => {
    const cases = fc.tuple(chainPlan(1, 4), fc.nat(3), fc.constantFrom(...SIGNED_FIELDS), fc.nat(), fc.nat(30));
    fc.assert(
      fc.property(cases, ([plan, linkChoice, field, choice, bit]) => {
        const built = buildChain(plan);
        const k = linkChoice % plan.length;
        const link = built.chain[k] as DelegationCertificate;
        fc.pre(link[field] !== null);
        tally.add(`bit-flip-${field}`, 'delegation');
        const bent = { ...link, [field]: flipValue(link[field], choice, bit) } as DelegationCertificate;
        const chain = built.chain.map((c, i) => (i === k ? bent : c));
        rejected(verifyDelegationChain(chain, built.request));
        rejected(verifyDelegationChainStructure(chain));
      }),
      fcParams(RUNS * 3),
    );
  });

  it('rejects any single-bit flip anywhere in the header text of a chain', () => {
    const cases = fc.tuple(chainPlan(1, 3), fc.nat(), fc.nat(7));
    fc.assert(
      fc.property(cases, ([plan, at, bit]) => {
        const built = buildChain(plan);
        const bytes = Buffer.from(JSON.stringify(built.chain));
        const i = at % bytes.length;
        bytes[i] = (bytes[i] as number) ^ (1 << bit);
        const decoded = decodeDelegationHeader(bytes.toString('base64'));
        if (!decoded.ok) {
          tally.add('header-bit-flip-unreadable', 'delegation');
          return;
        }
        // A flip that left the same value (none is known) would prove nothing either way.
        fc.pre(JSON.stringify(decoded.value) !== JSON.stringify(built.chain));
        tally.add('header-bit-flip-rejected', 'delegation');
        rejected(verifyDelegationChain(decoded.value, built.request));
      }),
      fcParams(RUNS * 3),
    );
  });

  it('rejects a link that widens its parent (cells, facets, tools, window, rate), even correctly signed', () => {
    const kinds = ['cells', 'facets', 'allowed_tools', 'denied_tools', 'not_before', 'not_after', 'rate'] as const;
    const cases = fc.tuple(chainPlan(2, 4), fc.nat(3), fc.constantFrom(...kinds));
    fc.assert(
      fc.property(cases, ([plan, linkChoice, kind]) => {
        const built = buildChain(plan);
        const k = 1 + (linkChoice % (plan.length - 1));
        const parent = built.chain[k - 1] as DelegationCertificate;
        const link = built.chain[k] as DelegationCertificate;
        const rights = built.rightsBefore[k] as Rights;
        const constraints = link.constraints ?? {};
        let edit: Partial<DelegationCertificate>;
        if (kind === 'cells') {
          const far = FAR_CELLS.find((c) => !cellCoveredBy(parent.h3_cells, c)) as string;
          edit = { h3_cells: [...link.h3_cells, far] };
        } else if (kind === 'facets') {
          edit = { facets: [...link.facets, 'sensor_fusion'] };
        } else if (kind === 'allowed_tools') {
          fc.pre(rights.allowed !== null);
          edit = { constraints: { ...constraints, allowed_tools: [...(rights.allowed ?? []), 'code-execution'] } };
        } else if (kind === 'denied_tools') {
          fc.pre(rights.denied.length > 0);
          edit = { constraints: { ...constraints, denied_tools: rights.denied.slice(1) } };
        } else if (kind === 'not_before') {
          edit = { not_before: iso(Date.parse(parent.not_before) - MINUTE) };
        } else if (kind === 'not_after') {
          edit = { not_after: iso(Date.parse(parent.not_after) + MINUTE) };
        } else {
          fc.pre(rights.maxOps !== null);
          edit = { constraints: { ...constraints, max_ops_per_hour: (rights.maxOps ?? 0) + 1 } };
        }
        tally.add(`widened-${kind}`, 'delegation');
        const chain = resign(built, k, edit);
        rejected(verifyDelegationChain(chain, built.request), new RegExp(`^link ${k}: .*(widened|exceeds)`));
        rejected(verifyDelegationChainStructure(chain), new RegExp(`^link ${k}: `));
      }),
      fcParams(RUNS * 2),
    );
  });

  it('rejects a chain longer than some link’s max_depth allows', () => {
    const cases = fc.tuple(chainPlan(2, 4), fc.nat(2));
    fc.assert(
      fc.property(cases, ([plan, linkChoice]) => {
        tally.add('too-deep', 'delegation');
        const built = buildChain(plan);
        const k = linkChoice % (plan.length - 1);
        // Link k allows one link fewer than follow it; later links narrow from there as well as they can.
        let chain = resign(built, k, { max_depth: plan.length - 2 - k });
        for (let j = k + 1; j < plan.length; j++) {
          const previous = (chain[j - 1] as DelegationCertificate).max_depth;
          chain = resign({ ...built, chain }, j, { max_depth: Math.max(0, previous - 1) });
        }
        rejected(verifyDelegationChain(chain, built.request), /max_depth/);
      }),
      fcParams(RUNS),
    );
  });

  it(`rejects a chain of more than MAX_CHAIN_LENGTH (${MAX_CHAIN_LENGTH}) links`, () => {
    const seeds = Array.from({ length: MAX_CHAIN_LENGTH + 2 }, (_, i) => bytesToHex(new Uint8Array(32).fill(i + 1)));
    const plan: ChainPlan = {
      seeds,
      length: MAX_CHAIN_LENGTH + 1,
      links: Array.from({ length: MAX_CHAIN_LENGTH + 1 }, () => ({
        cellDepth: 0,
        cellChoice: 0,
        cellMask: 1,
        facetMask: 31,
        toolMask: 31,
        deniedMask: 0,
        opsCut: 0,
        constraintsKind: 0,
        humanApproval: false,
        nbShift: 0,
        naShift: 0,
        depthSlack: 0,
      })),
    };
    const built = buildChain(plan);
    tally.add('longer-than-max', 'delegation');
    rejected(verifyDelegationChain(built.chain, built.request), /at most 8/);
    rejected(decodeDelegationHeader(base64Of(built.chain)), /at most 8/);
    // One link fewer is fine: the limit is the only reason.
    assert.ok(
      verifyDelegationChain(built.chain.slice(0, MAX_CHAIN_LENGTH), {
        ...built.request,
        agentPk: built.chain[MAX_CHAIN_LENGTH - 1]?.agent_pk as string,
        h3Cell: ROOT_CELLS[0],
        tools: [],
      }).ok,
    );
  });

  it('rejects a loop: a key that reappears further down its own chain (A→B→A, A→A)', () => {
    // Regression (property): a loop A→B→A of otherwise narrowing links verified before the loop check.
    const cases = chainPlan(1, 4).chain((plan) =>
      fc.tuple(
        fc.constant(plan),
        fc
          .tuple(fc.nat(plan.length), fc.nat(plan.length))
          .filter(([a, b]) => a !== b)
          .map(([a, b]) => [Math.min(a, b), Math.max(a, b)] as const),
      ),
    );
    fc.assert(
      fc.property(cases, ([plan, [first, again]]) => {
        tally.add(again === first + 1 ? 'loop-self' : 'loop', 'delegation');
        const order = plan.seeds.map((_, i) => (i === again ? first : i));
        const built = buildChain(plan, order);
        rejected(verifyDelegationChain(built.chain, built.request), /delegation loop/);
        rejected(verifyDelegationChainStructure(built.chain), /delegation loop/);
      }),
      fcParams(RUNS),
    );
  });

  it('regression: A→B→A and A→A are refused as loops (they verified before)', () => {
    const [a, b] = [keyPairFromSecret('a1'.repeat(32)), keyPairFromSecret('b2'.repeat(32))];
    const link = (principal: KeyPair, agent: KeyPair, maxDepth: number) =>
      issueCertificate(principal.secretKey, {
        agent_pk: agent.publicKey,
        h3_cells: [ROOT_CELLS[0] as string],
        facets: ['perception'],
        not_before: iso(NOW - DAY),
        not_after: iso(NOW + DAY),
        max_depth: maxDepth,
      });
    tally.add('loop-regression', 'delegation');
    const request = { now: NOW, agentPk: a.publicKey };
    rejected(verifyDelegationChain([link(a, b, 1), link(b, a, 0)], request), /^link 1: .*delegation loop/);
    rejected(verifyDelegationChain([link(a, a, 0)], request), /^link 0: .*delegation loop/);
    assert.ok(verifyDelegationChain([link(b, a, 0)], request).ok);
  });

  it('keeps a coarser parent cell out: a child naming its parent’s ancestor widens', () => {
    const cases = fc.tuple(chainPlan(2, 3), fc.nat(2));
    fc.assert(
      fc.property(cases, ([plan, linkChoice]) => {
        const built = buildChain(plan);
        const k = 1 + (linkChoice % (plan.length - 1));
        const parent = built.chain[k - 1] as DelegationCertificate;
        const cell = parent.h3_cells[0] as string;
        fc.pre(getResolution(cell) > 0);
        tally.add('widened-to-ancestor-cell', 'delegation');
        const chain = resign(built, k, { h3_cells: [cellToParent(cell, getResolution(cell) - 1)] });
        rejected(verifyDelegationChain(chain, built.request), /widened cells/);
      }),
      fcParams(RUNS),
    );
  });
});
