import assert from 'node:assert/strict';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { keyPairFromSecret, signMessage, verifySignature } from '../../core/identity.js';
import {
  GENESIS_PREV_HASH,
  breadcrumbBlockHash,
  breadcrumbContentSchema,
  breadcrumbContext,
  chainVerifier,
  dataToSign,
  nextBreadcrumb,
  parseStoredBreadcrumb,
  signBreadcrumb,
  verifyChain,
  VERIFY_SLICE_BLOCKS,
} from '../../core/breadcrumb.js';
import type { Breadcrumb, BreadcrumbContent, StoredBreadcrumb } from '../../core/breadcrumb-types.js';

const agent = keyPairFromSecret('5'.repeat(64));
const other = keyPairFromSecret('6'.repeat(64));
const ROME = '861e8050fffffff';
const CERT_HASH = 'ab'.repeat(32);
const T0 = Date.parse('2026-02-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

const fieldsAt = (i: number, key = agent): Omit<BreadcrumbContent, 'index' | 'prev_hash'> => ({
  identity: key.publicKey,
  timestamp: iso(T0 + i * 1000),
  loc_cell: ROME,
  loc_res: 6,
  context: breadcrumbContext({ h3_cell: ROME, call: i }, { temperature_c: 20 + i }, 'ok'),
  delegation_cert_hash: CERT_HASH,
  facet: 'perception',
  meta: { duration_ms: i },
  tool_name: 'perception_weather',
});

/** Blocks 0..n-1 of `agent`, one second apart. */
function buildChain(n: number): StoredBreadcrumb[] {
  const out: StoredBreadcrumb[] = [];
  let tip: StoredBreadcrumb | null = null;
  for (let i = 0; i < n; i++) {
    tip = signBreadcrumb(nextBreadcrumb(tip, fieldsAt(i)), agent).stored;
    out.push(tip);
  }
  return out;
}

/** Signs an arbitrary text as the agent would, with a correct block_hash: only content checks can catch it. */
function signText(stored: StoredBreadcrumb, text: string, key = agent): StoredBreadcrumb {
  const signature = signMessage(key.secretKey, text);
  return { ...stored, data_to_sign: text, signature, block_hash: breadcrumbBlockHash(text, signature) };
}

/** Replaces the character at `at` with a different hex-ish character. */
const flipChar = (text: string, at: number): string =>
  text.slice(0, at) + (text[at] === '0' ? '1' : '0') + text.slice(at + 1);

const CHAIN = buildChain(20);

function assertOnlyBlock(result: ReturnType<typeof verifyChain>, index: number): void {
  assert.equal(result.is_valid, false);
  assert.ok(result.issues.length > 0);
  for (const issue of result.issues) assert.match(issue, new RegExp(`^block ${index}: `), issue);
  assert.deepEqual(result.invalid_blocks, [index]);
}

describe('core/breadcrumb', () => {
  describe('dataToSign', () => {
    it('is the JCS of exactly the eleven fields, a fixed text', () => {
      const content: BreadcrumbContent = {
        index: 0,
        identity: agent.publicKey,
        timestamp: '2026-02-01T00:00:00.000Z',
        loc_cell: ROME,
        loc_res: 6,
        context: { args_hash: '11'.repeat(32), result_hash: null, outcome: 'blocked' },
        delegation_cert_hash: CERT_HASH,
        facet: 'perception',
        meta: { violation: 'rate_limit' },
        prev_hash: 'genesis',
        tool_name: 'perception_weather',
      };
      assert.equal(
        dataToSign(content),
        `{"context":{"args_hash":"${'11'.repeat(32)}","outcome":"blocked","result_hash":null},` +
          `"delegation_cert_hash":"${CERT_HASH}","facet":"perception","identity":"${agent.publicKey}","index":0,` +
          `"loc_cell":"${ROME}","loc_res":6,"meta":{"violation":"rate_limit"},"prev_hash":"genesis",` +
          `"timestamp":"2026-02-01T00:00:00.000Z","tool_name":"perception_weather"}`,
      );
      // Extra properties (a signed block's signature and block_hash) are not signed.
      const extra = { ...content, signature: 'ff'.repeat(64), block_hash: 'ee'.repeat(32) };
      assert.equal(dataToSign(extra), dataToSign(content));
      assert.equal(dataToSign(content), canonicalJson(content));
    });

    it('breadcrumbContext hashes the JCS of arguments and result, null result when none', () => {
      const ctx = breadcrumbContext({ b: 1, a: 2 }, undefined, 'blocked');
      assert.equal(ctx.args_hash, sha256Hex('{"a":2,"b":1}'));
      assert.equal(ctx.result_hash, null);
      assert.equal(breadcrumbContext({}, { x: 1 }, 'ok').result_hash, sha256Hex('{"x":1}'));
    });
  });

  describe('signBreadcrumb', () => {
    it('signs data_to_sign and hashes data_to_sign + ":" + signature', () => {
      const content = nextBreadcrumb(null, fieldsAt(0));
      const { block, stored } = signBreadcrumb(content, agent);
      assert.equal(stored.data_to_sign, dataToSign(content));
      assert.ok(verifySignature(agent.publicKey, stored.data_to_sign, stored.signature));
      assert.equal(stored.block_hash, sha256Hex(`${stored.data_to_sign}:${stored.signature}`));
      assert.deepEqual(stored, {
        agent_pk: agent.publicKey,
        index: 0,
        timestamp: content.timestamp,
        data_to_sign: stored.data_to_sign,
        signature: stored.signature,
        block_hash: stored.block_hash,
      });
      assert.deepEqual(block, { ...content, signature: stored.signature, block_hash: stored.block_hash });
    });

    it('refuses content that claims another identity or is malformed', () => {
      assert.throws(() => signBreadcrumb(nextBreadcrumb(null, fieldsAt(0, other)), agent), TypeError);
      const base = nextBreadcrumb(null, fieldsAt(0));
      assert.throws(() => signBreadcrumb({ ...base, loc_cell: 'not-a-cell' }, agent), /loc_cell/);
      assert.throws(() => signBreadcrumb({ ...base, loc_res: 5 }, agent), /loc_res/);
      assert.throws(() => signBreadcrumb({ ...base, index: 3 }, agent), /prev_hash/);
      assert.throws(() => signBreadcrumb({ ...base, prev_hash: 'ab'.repeat(32) }, agent), /prev_hash/);
      assert.throws(() => signBreadcrumb({ ...base, timestamp: 'yesterday' }, agent), /timestamp/);
    });
  });

  describe('nextBreadcrumb', () => {
    it('starts at index 0 with prev_hash "genesis" and continues from the tip', () => {
      const first = nextBreadcrumb(null, fieldsAt(0));
      assert.equal(first.index, 0);
      assert.equal(first.prev_hash, GENESIS_PREV_HASH);
      const tip = CHAIN[4] as StoredBreadcrumb;
      const next = nextBreadcrumb(tip, fieldsAt(5));
      assert.equal(next.index, 5);
      assert.equal(next.prev_hash, tip.block_hash);
      assert.equal(next.timestamp, iso(T0 + 5000));
    });

    it('clamps a timestamp that went back to the tip timestamp', () => {
      const tip = CHAIN[4] as StoredBreadcrumb;
      const next = nextBreadcrumb(tip, { ...fieldsAt(5), timestamp: iso(T0 - 60_000) });
      assert.equal(next.timestamp, tip.timestamp);
      const chain = [...CHAIN.slice(0, 5), signBreadcrumb(next, agent).stored];
      assert.equal(verifyChain(chain, { anchor: null }).is_valid, true);
    });
  });

  describe('parseStoredBreadcrumb', () => {
    it('round-trips a stored block to the signed block', () => {
      const content = nextBreadcrumb(null, fieldsAt(0));
      const { block, stored } = signBreadcrumb(content, agent);
      const parsed = parseStoredBreadcrumb(JSON.parse(JSON.stringify(stored)) as StoredBreadcrumb);
      assert.ok(parsed.ok);
      assert.deepEqual(parsed.value, block);
    });

    it('refuses invalid JSON, non-canonical text, disagreeing stored fields and bad shapes', () => {
      const stored = CHAIN[3] as StoredBreadcrumb;
      const cases: [StoredBreadcrumb, RegExp][] = [
        [{ ...stored, data_to_sign: stored.data_to_sign.slice(1) }, /^block 3: data_to_sign is not valid JSON/],
        [
          { ...stored, data_to_sign: JSON.stringify(JSON.parse(stored.data_to_sign), null, 1) },
          /^block 3: data_to_sign is not the canonical JSON/,
        ],
        [{ ...stored, index: 4 }, /^block 4: stored index 4 differs from the signed index 3/],
        [{ ...stored, agent_pk: other.publicKey }, /stored agent_pk .* differs from the signed identity/],
        [{ ...stored, signature: 'xyz' }, /signature/],
      ];
      for (const [value, pattern] of cases) {
        const parsed = parseStoredBreadcrumb(value);
        assert.equal(parsed.ok, false);
        assert.ok(!parsed.ok && parsed.error === 'invalid_record');
        assert.match(parsed.detail, pattern);
      }
    });
  });

  describe('verifyChain', () => {
    it('judges each signed text as breadcrumbContentSchema does, ordinary or not', () => {
      const base = JSON.parse(CHAIN[1]!.data_to_sign) as Record<string, unknown>;
      const variants: Record<string, unknown>[] = [
        base,
        { ...base, timestamp: '2026-02-01T00:00:01.000001Z' },
        { ...base, timestamp: '2026-02-30T00:00:00.000Z' },
        { ...base, context: { ...(base.context as object), result_hash: null, outcome: 'blocked' } },
        { ...base, context: { ...(base.context as object), outcome: 'maybe' } },
        { ...base, context: { ...(base.context as object), extra: 1 } },
        { ...base, meta: { '10': 1, '9': { deep: [1, 2] } } },
        { ...base, meta: JSON.parse('{"__proto__":{"x":1},"a":2}') as unknown },
        { ...base, meta: [] },
        { ...base, loc_res: 7 },
        { ...base, loc_cell: '861e8050fffffff'.toUpperCase() },
        { ...base, index: 0 },
        { ...base, prev_hash: GENESIS_PREV_HASH },
        { ...base, facet: '' },
        { ...base, tool_name: 7 },
        { ...base, identity: agent.publicKey.toUpperCase() },
        { ...base, delegation_cert_hash: 'zz'.repeat(32) },
        { ...base, extra: true },
      ];
      for (const content of variants) {
        let text: string;
        try {
          text = canonicalJson(content);
        } catch {
          continue;
        }
        const block = signText(CHAIN[1]!, text);
        const judged = parseStoredBreadcrumb(block);
        const expected = breadcrumbContentSchema.safeParse(JSON.parse(text));
        const textOk = expected.success && dataToSign(expected.data) === text;
        assert.equal(
          judged.ok || !/not a breadcrumb|canonical/.test(judged.detail),
          textOk,
          `${text}: ${judged.ok ? 'ok' : judged.detail}`,
        );
      }
    });

    it('accepts an intact chain and reports its span and certificate', () => {
      const result = verifyChain(CHAIN, { anchor: null });
      assert.deepEqual(result, {
        is_valid: true,
        block_count: 20,
        issues: [],
        first_block_at: iso(T0),
        last_block_at: iso(T0 + 19_000),
        delegation_cert_hash: CERT_HASH,
        invalid_blocks: [],
      });
    });

    it('pauses between slices of blocks when run as chainVerifier, with the same verdict', () => {
      const blocks = buildChain(2 * VERIFY_SLICE_BLOCKS + 1);
      const tampered = [...blocks];
      const victim = blocks[VERIFY_SLICE_BLOCKS + 3] as StoredBreadcrumb;
      tampered[VERIFY_SLICE_BLOCKS + 3] = { ...victim, signature: flipChar(victim.signature, 10) };
      const steps = chainVerifier(tampered, { anchor: null });
      let pauses = 0;
      let step = steps.next();
      while (step.done !== true) {
        pauses++;
        step = steps.next();
      }
      assert.equal(pauses, 2);
      assert.deepEqual(step.value, verifyChain(tampered, { anchor: null }));
      assertOnlyBlock(step.value, VERIFY_SLICE_BLOCKS + 3);
    });

    it('hands back the parsed blocks, equal to parseStoredBreadcrumb', () => {
      const parsedBlocks: Breadcrumb[] = [];
      verifyChain(CHAIN, { anchor: null, parsedBlocks });
      assert.deepEqual(
        parsedBlocks,
        CHAIN.map((b) => {
          const parsed = parseStoredBreadcrumb(b);
          assert.ok(parsed.ok);
          return parsed.value;
        }),
      );
    });

    it('accepts the empty chain', () => {
      assert.deepEqual(verifyChain([], { anchor: null }), {
        is_valid: true,
        block_count: 0,
        issues: [],
        first_block_at: null,
        last_block_at: null,
        delegation_cert_hash: null,
        invalid_blocks: [],
      });
    });

    it('survives a JSON round trip of every block (the store keeps the exact text)', () => {
      const copy = JSON.parse(JSON.stringify(CHAIN)) as StoredBreadcrumb[];
      assert.equal(verifyChain(copy, { anchor: null }).is_valid, true);
    });

    it('names the block whose data_to_sign had one character flipped', () => {
      const chain = [...CHAIN];
      const b = chain[7] as StoredBreadcrumb;
      const at = b.data_to_sign.indexOf('"args_hash":"') + 20;
      chain[7] = { ...b, data_to_sign: flipChar(b.data_to_sign, at) };
      const result = verifyChain(chain, { anchor: null });
      assertOnlyBlock(result, 7);
      assert.ok(result.issues.includes('block 7: block_hash does not match its signed data'));
      assert.ok(result.issues.some((i) => i.startsWith('block 7: Ed25519 signature does not verify')));
    });

    it('names the block whose data_to_sign was broken as JSON', () => {
      const chain = [...CHAIN];
      const b = chain[2] as StoredBreadcrumb;
      chain[2] = { ...b, data_to_sign: b.data_to_sign.replace('{', '[') };
      const result = verifyChain(chain, { anchor: null });
      assertOnlyBlock(result, 2);
      assert.ok(result.issues.includes('block 2: data_to_sign is not valid JSON'));
    });

    it('names the block whose signature had one character flipped', () => {
      const chain = [...CHAIN];
      const b = chain[12] as StoredBreadcrumb;
      chain[12] = { ...b, signature: flipChar(b.signature, 10) };
      const result = verifyChain(chain, { anchor: null });
      assertOnlyBlock(result, 12);
      assert.ok(result.issues.some((i) => i.startsWith('block 12: Ed25519 signature does not verify')));
      assert.ok(result.issues.includes('block 12: block_hash does not match its signed data'));
    });

    it('names the block whose block_hash was edited, and the next block that no longer links to it', () => {
      const chain = [...CHAIN];
      const b = chain[5] as StoredBreadcrumb;
      chain[5] = { ...b, block_hash: flipChar(b.block_hash, 0) };
      const result = verifyChain(chain, { anchor: null });
      assert.deepEqual(result.issues, [
        'block 5: block_hash does not match its signed data',
        "block 6: prev_hash does not match block 5's block_hash",
      ]);
      assert.deepEqual(result.invalid_blocks, [5, 6]);
    });

    it('names the blocks of a reordered chain', () => {
      const chain = [...CHAIN];
      [chain[4], chain[5]] = [chain[5] as StoredBreadcrumb, chain[4] as StoredBreadcrumb];
      const result = verifyChain(chain, { anchor: null });
      assert.equal(result.is_valid, false);
      assert.ok(result.issues.includes('block 5: index gap: expected index 4 after block 3'));
      assert.ok(result.issues.includes("block 5: prev_hash does not match block 3's block_hash"));
      assert.ok(result.issues.includes('block 4: index gap: expected index 6 after block 5'));
      assert.ok(result.issues.some((i) => /^block 4: timestamp .* is earlier than block 5's/.test(i)));
      assert.deepEqual(result.invalid_blocks, [5, 4, 6]);
    });

    it('names the block after a gap', () => {
      const chain = CHAIN.filter((b) => b.index !== 10);
      const result = verifyChain(chain, { anchor: null });
      assert.deepEqual(result.issues, [
        'block 11: index gap: expected index 10 after block 9',
        "block 11: prev_hash does not match block 9's block_hash",
      ]);
      assert.deepEqual(result.invalid_blocks, [11]);
    });

    it('names a validly signed block whose timestamp goes back', () => {
      const chain = CHAIN.slice(0, 6);
      const tip = chain[5] as StoredBreadcrumb;
      // The agent itself signs an earlier time (nextBreadcrumb would have clamped it).
      const back = { ...nextBreadcrumb(tip, fieldsAt(6)), timestamp: iso(T0 + 2500) };
      chain.push(signBreadcrumb(back, agent).stored);
      const result = verifyChain(chain, { anchor: null });
      assert.deepEqual(result.issues, [
        `block 6: timestamp ${iso(T0 + 2500)} is earlier than block 5's ${iso(T0 + 5000)}`,
      ]);
      assert.deepEqual(result.invalid_blocks, [6]);
    });

    it('names a block whose data_to_sign was re-serialised with other whitespace', () => {
      const chain = [...CHAIN];
      const b = chain[9] as StoredBreadcrumb;
      chain[9] = { ...b, data_to_sign: JSON.stringify(JSON.parse(b.data_to_sign), null, 2) };
      const result = verifyChain(chain, { anchor: null });
      assertOnlyBlock(result, 9);
      assert.ok(result.issues.includes('block 9: data_to_sign is not the canonical JSON (JCS) of its content'));
    });

    it('refuses a non-canonical text even when it is validly signed and hashed (other key order)', () => {
      const chain = [...CHAIN];
      const b = chain[9] as StoredBreadcrumb;
      const parsed = JSON.parse(b.data_to_sign) as Record<string, unknown>;
      const reordered = JSON.stringify(Object.fromEntries(Object.entries(parsed).reverse()));
      assert.notEqual(reordered, b.data_to_sign);
      chain[9] = signText(b, reordered);
      // Block 10 links to the original block_hash, so re-link it to keep this test about block 9 alone.
      const next = signBreadcrumb({ ...nextBreadcrumb(chain[9] as StoredBreadcrumb, fieldsAt(10)) }, agent).stored;
      const result = verifyChain([...chain.slice(0, 10), next], { anchor: null });
      assert.deepEqual(result.issues, ['block 9: data_to_sign is not the canonical JSON (JCS) of its content']);
      assert.deepEqual(result.invalid_blocks, [9]);
    });

    it('names stored index, timestamp and agent_pk that disagree with the signed ones', () => {
      const chain = [...CHAIN];
      chain[3] = { ...(chain[3] as StoredBreadcrumb), timestamp: iso(T0 + 3500) };
      const result = verifyChain(chain, { anchor: null });
      assert.deepEqual(result.issues, [
        `block 3: stored timestamp ${iso(T0 + 3500)} differs from the signed timestamp ${iso(T0 + 3000)}`,
      ]);
      const moved = [...CHAIN];
      moved[3] = { ...(moved[3] as StoredBreadcrumb), index: 30 };
      const r2 = verifyChain(moved, { anchor: null });
      assert.deepEqual(r2.issues, ['block 30: stored index 30 differs from the signed index 3']);
      assert.deepEqual(r2.invalid_blocks, [30]);
    });

    it('names a block signed by another agent, even though it links correctly', () => {
      const chain = CHAIN.slice(0, 8);
      const intruder = signBreadcrumb(nextBreadcrumb(chain[7] as StoredBreadcrumb, fieldsAt(8, other)), other);
      chain.push(intruder.stored);
      const result = verifyChain(chain, { anchor: null });
      assert.deepEqual(result.issues, [
        `block 8: identity ${other.publicKey} is not the chain's agent ${agent.publicKey}`,
      ]);
      // The caller can name the agent it expects.
      assert.equal(verifyChain(CHAIN, { anchor: null, agentPk: other.publicKey }).is_valid, false);
    });

    it('names block 0 when its prev_hash is not "genesis"', () => {
      const b = CHAIN[0] as StoredBreadcrumb;
      const text = b.data_to_sign.replace('"prev_hash":"genesis"', `"prev_hash":"${'cd'.repeat(32)}"`);
      const result = verifyChain([signText(b, text)], { anchor: null });
      assertOnlyBlock(result, 0);
      assert.match(result.issues[0] ?? '', /^block 0: data_to_sign is not a breadcrumb: prev_hash/);
    });

    it('verifies a period from its anchor, and says when a period cannot be anchored', () => {
      const period = CHAIN.slice(10);
      const anchored = verifyChain(period, { anchor: CHAIN[9] as StoredBreadcrumb });
      assert.equal(anchored.is_valid, true);
      assert.equal(anchored.first_block_at, iso(T0 + 10_000));
      assert.equal(anchored.block_count, 10);

      const loose = verifyChain(period, { anchor: null });
      assert.deepEqual(loose.issues, [
        'block 10: cannot be anchored: the chain starts at index 10 and the block before it was not given',
      ]);

      const wrong = verifyChain(period, { anchor: CHAIN[8] as StoredBreadcrumb });
      assert.deepEqual(wrong.issues, [
        'block 10: index gap: expected index 9 after the anchor block 8',
        "block 10: prev_hash does not match the anchor block 8's block_hash",
      ]);
    });

    it('with a signature cache, verifies each signature once and still catches any edit', () => {
      const cache = new Set<string>();
      assert.equal(verifyChain(CHAIN, { anchor: null, signatureCache: cache }).is_valid, true);
      assert.equal(cache.size, CHAIN.length);
      const chain = [...CHAIN];
      const b = chain[7] as StoredBreadcrumb;
      chain[7] = { ...b, signature: flipChar(b.signature, 3) };
      assertOnlyBlock(verifyChain(chain, { anchor: null, signatureCache: cache }), 7);
      // A bad signature is never cached …
      const forged = signText(CHAIN[0] as StoredBreadcrumb, (CHAIN[0] as StoredBreadcrumb).data_to_sign, other);
      const fresh = new Set<string>();
      assertOnlyBlock(verifyChain([forged], { anchor: null, signatureCache: fresh }), 0);
      assert.equal(fresh.size, 0);
      // … and a cached hash is trusted for the signature alone: the cache is the caller's own record.
      fresh.add(forged.block_hash);
      assert.equal(verifyChain([forged], { anchor: null, signatureCache: fresh }).is_valid, true);
    });

    it('verifies a longer chain (2,000 blocks) and still names a single tampered block in it', () => {
      const long = buildChain(2000);
      assert.equal(verifyChain(long, { anchor: null }).is_valid, true);
      const b = long[1234] as StoredBreadcrumb;
      long[1234] = { ...b, data_to_sign: b.data_to_sign.replace('"duration_ms":1234', '"duration_ms":1') };
      assertOnlyBlock(verifyChain(long, { anchor: null }), 1234);
    });
  });
});
