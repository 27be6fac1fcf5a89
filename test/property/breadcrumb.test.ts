import assert from 'node:assert/strict';
import fc from 'fast-check';
import { cellToChildren, getResolution, latLngToCell } from 'h3-js';
import {
  breadcrumbContext,
  nextBreadcrumb,
  parseStoredBreadcrumb,
  signBreadcrumb,
  verifyChain,
} from '../../core/breadcrumb.js';
import type { BreadcrumbContent, StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import { bytesToHex } from '../../core/hex.js';
import { keyPairFromSecret } from '../../core/identity.js';
import { CaseTally, fcParams, fuzzRuns } from '../fuzz/fuzz-runs.js';

/** The values an arbitrary generates. */
type ValueOf<A> = A extends fc.Arbitrary<infer T> ? T : never;

const RUNS = fuzzRuns(60);
const tally = new CaseTally('property', 'breadcrumb');

const T0 = Date.parse('2026-02-01T00:00:00.000Z');
const ROME = latLngToCell(41.9, 12.5, 5);
const CELLS = [ROME, ...cellToChildren(ROME, 7).slice(0, 3), latLngToCell(48.86, 2.35, 9)];
const TOOLS = ['perception_weather', 'perception_fetch_tile', 'idn_verify_chain', 'idn_roll_epoch'];
const STORED_TEXT_FIELDS = ['data_to_sign', 'signature', 'block_hash', 'agent_pk', 'timestamp'] as const;

/** One call: what the tool got and gave, and how long after the previous call it came (0: same millisecond). */
const call = fc.record({
  tool: fc.constantFrom(...TOOLS),
  cell: fc.constantFrom(...CELLS),
  args: fc.jsonValue({ maxDepth: 2 }),
  result: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
  outcome: fc.constantFrom('ok' as const, 'error' as const, 'blocked' as const),
  gapMs: fc.oneof(fc.constant(0), fc.nat(86_400_000)),
  meta: fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string({ maxLength: 20 }), fc.integer(), fc.boolean())),
});

const chains = fc.record({
  seed: fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex),
  certHash: fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex),
  calls: fc.array(call, { minLength: 1, maxLength: 12 }),
});

function build({ seed, certHash, calls }: ValueOf<typeof chains>): StoredBreadcrumb[] {
  const agent = keyPairFromSecret(seed);
  const out: StoredBreadcrumb[] = [];
  let tip: StoredBreadcrumb | null = null;
  let at = T0;
  for (const c of calls) {
    at += c.gapMs;
    const fields: Omit<BreadcrumbContent, 'index' | 'prev_hash'> = {
      identity: agent.publicKey,
      timestamp: new Date(at).toISOString(),
      loc_cell: c.cell,
      loc_res: getResolution(c.cell),
      context: breadcrumbContext(c.args, c.result, c.outcome),
      delegation_cert_hash: certHash,
      facet: 'perception',
      meta: c.meta,
      tool_name: c.tool,
    };
    tip = signBreadcrumb(nextBreadcrumb(tip, fields), agent).stored;
    out.push(tip);
  }
  return out;
}

/** `text` with the character at `at` replaced by another one (never the same). */
function replaceChar(text: string, at: number, code: number): string {
  const i = at % text.length;
  let replacement = String.fromCharCode(code);
  if (replacement === text[i]) replacement = String.fromCharCode(code === 0x7e ? 0x20 : code + 1);
  return text.slice(0, i) + replacement + text.slice(i + 1);
}

describe('property: breadcrumb chains (core/breadcrumb.ts verifyChain)', () => {
  after(() => tally.print());

  it('random chains verify: every block is parsed back and the verdict is clean', () => {
    fc.assert(
      fc.property(chains, (input) => {
        tally.add('valid-chain', 'verifyChain');
        const blocks = build(input);
        const stored = JSON.parse(JSON.stringify(blocks)) as StoredBreadcrumb[];
        const result = verifyChain(stored, { anchor: null });
        assert.deepEqual(result.issues, []);
        assert.equal(result.is_valid, true);
        assert.equal(result.block_count, input.calls.length);
        assert.equal(result.delegation_cert_hash, input.certHash);
        for (const block of stored) assert.equal(parseStoredBreadcrumb(block).ok, true);
        // A period that starts after genesis verifies from its anchor.
        if (stored.length > 1) assert.equal(verifyChain(stored.slice(1), { anchor: stored[0] ?? null }).is_valid, true);
      }),
      fcParams(RUNS),
    );
  });

  it('detects any single-character change of a stored block and names that block', () => {
    const cases = fc.tuple(
      chains,
      fc.nat(),
      fc.constantFrom(...STORED_TEXT_FIELDS),
      fc.nat(),
      fc.integer({ min: 0x20, max: 0x7e }),
    );
    fc.assert(
      fc.property(cases, ([input, blockChoice, field, at, code]) => {
        tally.add(`char-change-${field}`, 'verifyChain');
        const blocks = build(input);
        const k = blockChoice % blocks.length;
        const target = blocks[k] as StoredBreadcrumb;
        const bent = blocks.map((b, i) => (i === k ? { ...b, [field]: replaceChar(b[field], at, code) } : b));
        const result = verifyChain(bent, { anchor: null, agentPk: target.agent_pk });
        assert.equal(result.is_valid, false);
        assert.ok(result.invalid_blocks.includes(target.index), `block ${k} is not named: ${result.issues.join('; ')}`);
        assert.ok(result.issues.some((issue) => issue.startsWith(`block ${target.index}: `)));
      }),
      fcParams(RUNS * 3),
    );
  });

  it('regression: a digit changed into an exponent (1e400 reads as Infinity) is reported, not thrown', () => {
    // Found by the long run: verifyChain threw CanonicalJsonError on such a block instead of naming it.
    const [block] = build({
      seed: '0'.repeat(64),
      certHash: '0'.repeat(64),
      calls: [
        {
          tool: 'perception_weather',
          cell: ROME,
          args: {},
          result: undefined,
          outcome: 'ok',
          gapMs: 0,
          meta: { n: 100000308 },
        },
      ],
    });
    const bent = {
      ...(block as StoredBreadcrumb),
      data_to_sign: block!.data_to_sign.replace('100000308', '10000e308'),
    };
    tally.add('regression-non-finite', 'verifyChain');
    const result = verifyChain([bent], { anchor: null });
    assert.equal(result.is_valid, false);
    assert.match(result.issues[0] ?? '', /^block 0: data_to_sign is not canonical JSON: .*non-finite number/);
    assert.equal(parseStoredBreadcrumb(bent).ok, false);
  });

  it('detects a changed stored index, a dropped block and a swapped pair', () => {
    const cases = fc.tuple(
      chains.filter((c) => c.calls.length >= 2),
      fc.nat(),
      fc.constantFrom('index', 'drop', 'swap'),
      fc.integer({ min: 1, max: 5 }),
    );
    fc.assert(
      fc.property(cases, ([input, blockChoice, kind, delta]) => {
        tally.add(`reorder-${kind}`, 'verifyChain');
        const blocks = build(input);
        const k = blockChoice % (blocks.length - 1);
        let bent: StoredBreadcrumb[];
        if (kind === 'index') bent = blocks.map((b, i) => (i === k ? { ...b, index: b.index + delta } : b));
        else if (kind === 'drop') bent = blocks.filter((_, i) => i !== k);
        else bent = blocks.map((b, i) => (i === k ? blocks[k + 1] : i === k + 1 ? blocks[k] : b) as StoredBreadcrumb);
        const result = verifyChain(bent, { anchor: null });
        assert.equal(result.is_valid, false);
        assert.ok(result.invalid_blocks.length > 0);
      }),
      fcParams(RUNS),
    );
  });
});
