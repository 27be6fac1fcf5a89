import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import type {
  AgentEpoch,
  BreadcrumbContent,
  HumanApproval,
  StoredBreadcrumb,
  Violation,
} from '../../core/breadcrumb-types.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { ServiceError } from '../../core/errors.js';
import { sha256Hex } from '../../core/hash.js';
import { generateKeyPair } from '../../core/identity.js';
import type { AuditStore } from '../../store/audit-store.js';

/** Opens a fresh, empty store; `cleanup` runs after each test (close the database, drop it …). */
export type AuditStoreFactory = () => Promise<{ store: AuditStore; cleanup?: () => Promise<void> }>;

export const T0 = Date.UTC(2026, 0, 1, 12);
export const iso = (ms: number): string => new Date(ms).toISOString();
export const newAgent = (): string => generateKeyPair().publicKey;

/**
 * A plausible block: data_to_sign is JCS of real breadcrumb content, block_hash is computed as core/breadcrumb.ts
 * does, and the "signature" is 128 hex that signs nothing (the store never verifies one). `text` replaces the
 * signed text when a test needs particular bytes.
 */
export function makeBlock(
  agentPk: string,
  index: number,
  timestamp: string,
  options: { prevHash?: string; meta?: Record<string, unknown>; text?: string } = {},
): StoredBreadcrumb {
  const content: BreadcrumbContent = {
    index,
    identity: agentPk,
    timestamp,
    loc_cell: '851e8053fffffff',
    loc_res: 5,
    context: { args_hash: sha256Hex(`args ${index}`), result_hash: sha256Hex(`result ${index}`), outcome: 'ok' },
    delegation_cert_hash: sha256Hex('certificate'),
    facet: 'perception',
    meta: options.meta ?? { duration_ms: 12 },
    prev_hash: options.prevHash ?? (index === 0 ? 'genesis' : sha256Hex(`block ${index - 1}`)),
    tool_name: 'weather_at',
  };
  const dataToSign = options.text ?? canonicalJson(content);
  const signature = createHash('sha512').update(dataToSign).digest('hex');
  return {
    agent_pk: agentPk,
    index,
    timestamp,
    data_to_sign: dataToSign,
    signature,
    block_hash: sha256Hex(`${dataToSign}:${signature}`),
  };
}

/** Blocks 0 … n-1 of one agent, one second apart from `start`, each linked to the previous one. */
export function makeChain(agentPk: string, n: number, start = T0, stepMs = 1000): StoredBreadcrumb[] {
  const chain: StoredBreadcrumb[] = [];
  for (let i = 0; i < n; i++) {
    chain.push(makeBlock(agentPk, i, iso(start + i * stepMs), { prevHash: chain[i - 1]?.block_hash ?? 'genesis' }));
  }
  return chain;
}

const epoch = (agentPk: string, epochIndex: number, overrides: Partial<AgentEpoch> = {}): AgentEpoch => ({
  version: 1,
  agent_pk: agentPk,
  epoch_index: epochIndex,
  start_block: epochIndex * 10,
  end_block: epochIndex * 10 + 9,
  block_count: 10,
  merkle_root: sha256Hex(`root ${epochIndex}`),
  prev_epoch_hash: epochIndex === 0 ? '0'.repeat(64) : sha256Hex(`epoch ${epochIndex - 1}`),
  tier_at_close: 'observed',
  rolled_at: iso(T0 + (epochIndex + 1) * 3_600_000),
  epoch_hash: sha256Hex(`epoch ${epochIndex}`),
  signature: 'ab'.repeat(64),
  ...overrides,
});

const violation = (agentPk: string, at: string, overrides: Partial<Violation> = {}): Violation => ({
  version: 1,
  id: randomUUID(),
  agent_pk: agentPk,
  type: 'facet_violation',
  severity: 'warning',
  tool_name: 'imagery_search',
  h3_cell: '851e8053fffffff',
  detail: 'facet imagery is not delegated',
  at,
  block_index: 3,
  ...overrides,
});

const approval = (agentPk: string, blockIndex: number, approvedAt: string): HumanApproval => ({
  version: 1,
  agent_pk: agentPk,
  principal_pk: 'c'.repeat(64),
  block_index: blockIndex,
  approved_at: approvedAt,
  signature: 'cd'.repeat(64),
});

const rejectsWith = (promise: Promise<unknown>, code: string) =>
  assert.rejects(promise, (error: unknown) => error instanceof ServiceError && error.code === code);

const indexes = (blocks: readonly StoredBreadcrumb[]) => blocks.map((b) => b.index);

/** The behaviour every AuditStore adapter must show; the perception and governance servers rely on nothing else. */
export function describeAuditStoreContract(name: string, factory: AuditStoreFactory): void {
  describe(`AuditStore contract: ${name}`, () => {
    let store: AuditStore;
    let cleanup: (() => Promise<void>) | undefined;

    beforeEach(async () => {
      ({ store, cleanup } = await factory());
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    async function append(blocks: readonly StoredBreadcrumb[]): Promise<void> {
      for (const block of blocks) await store.appendBlock(block);
    }

    it('answers empty for an agent it has never seen', async () => {
      const pk = newAgent();
      assert.equal(await store.tip(pk), null);
      assert.deepEqual(await store.blocks(pk), []);
      assert.equal(await store.blockBefore(pk, iso(T0)), null);
      assert.deepEqual(await store.agents(), []);
      assert.deepEqual(await store.epochs(pk), []);
      assert.deepEqual(await store.violations(pk, iso(0), iso(T0 * 2)), []);
      assert.deepEqual(await store.approvals(pk, iso(0), iso(T0 * 2)), []);
    });

    it('keeps a verified-through mark per agent that only moves up', async () => {
      const agent = newAgent();
      const other = newAgent();
      assert.equal(await store.verifiedThrough(agent), null);
      const mark = (index: number) => ({
        index,
        block_hash: sha256Hex(`block ${index}`),
        verifier_pk: other,
        signature: 'ab'.repeat(64),
      });
      await store.markVerified(agent, mark(5));
      assert.deepEqual(await store.verifiedThrough(agent), mark(5));
      await store.markVerified(agent, mark(3));
      await store.markVerified(agent, mark(5));
      assert.deepEqual(await store.verifiedThrough(agent), mark(5), 'a lower or equal mark changes nothing');
      await store.markVerified(agent, mark(9));
      assert.deepEqual(await store.verifiedThrough(agent), mark(9));
      assert.equal(await store.verifiedThrough(other), null);
      await assert.rejects(store.markVerified(agent, { ...mark(10), block_hash: 'nope' }), RangeError);
      await assert.rejects(store.markVerified(agent, { ...mark(-1) }), RangeError);
    });

    it('never moves the mark on an append: only markVerified does', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 4);
      await append(chain.slice(0, 2));
      assert.equal(await store.verifiedThrough(pk), null, 'an append sets no mark');
      const mark = { index: 1, block_hash: chain[1]!.block_hash, verifier_pk: pk, signature: 'cd'.repeat(64) };
      await store.markVerified(pk, mark);
      await append(chain.slice(2));
      assert.deepEqual(await store.verifiedThrough(pk), mark, 'appends above the mark leave it where it is');
    });

    it('appends a chain and gives it back exactly, ascending, with the last block as tip', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 5);
      for (const [i, block] of chain.entries()) {
        await store.appendBlock(block);
        assert.deepEqual(await store.tip(pk), block, `tip after block ${i}`);
      }
      assert.deepEqual(await store.blocks(pk), chain);
    });

    it('keeps the signed text byte for byte: unicode, escapes and key order as written', async () => {
      const pk = newAgent();
      const texts = [
        canonicalJson({ meta: { note: 'Rome — Roma, 東京, Zürich, 🛰️👩🏽‍🔬, e\u0301 vs é, \u2028\u2029' } }),
        // Not canonical: the store must not re-serialise, reorder or normalise anything.
        '{"z":1,"a":{"y":"\\u00e9","b":[3,2,1]},"emoji":"\ud83c\udf0d","nfd":"Cafe\u0301","nfc":"Café"}',
        '{ "spaced" : true,\n\t"trailing": "  " }',
        '{"escapes":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f","big":1e400,"neg0":-0}',
        '"\u0001\u007f\u0085 raw control characters inside the text"',
      ];
      const chain: StoredBreadcrumb[] = [];
      for (const [i, text] of texts.entries()) chain.push(makeBlock(pk, i, iso(T0 + i), { text }));
      await append(chain);
      const stored = await store.blocks(pk);
      assert.equal(stored.length, texts.length);
      for (const [i, block] of stored.entries()) {
        assert.equal(block.data_to_sign, texts[i]);
        assert.ok(Buffer.from(block.data_to_sign, 'utf8').equals(Buffer.from(texts[i] as string, 'utf8')));
        assert.deepEqual(block, chain[i]);
      }
      assert.deepEqual(await store.tip(pk), chain.at(-1));
    });

    it('returns index ranges with inclusive bounds, and at most `limit` blocks from the low end', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 10);
      await append(chain);
      assert.deepEqual(indexes(await store.blocks(pk, { fromIndex: 3, toIndex: 6 })), [3, 4, 5, 6]);
      assert.deepEqual(indexes(await store.blocks(pk, { fromIndex: 7 })), [7, 8, 9]);
      assert.deepEqual(indexes(await store.blocks(pk, { toIndex: 2 })), [0, 1, 2]);
      assert.deepEqual(indexes(await store.blocks(pk, { fromIndex: 4, toIndex: 4 })), [4]);
      assert.deepEqual(indexes(await store.blocks(pk, { fromIndex: -5, toIndex: 1 })), [0, 1]);
      assert.deepEqual(await store.blocks(pk, { fromIndex: 6, toIndex: 5 }), []);
      assert.deepEqual(await store.blocks(pk, { fromIndex: 10 }), []);
      assert.deepEqual(indexes(await store.blocks(pk, {}, 3)), [0, 1, 2]);
      assert.deepEqual(indexes(await store.blocks(pk, { fromIndex: 5 }, 2)), [5, 6]);
      assert.deepEqual(indexes(await store.blocks(pk, undefined, 100)), indexes(chain));
      assert.deepEqual(await store.blocks(pk, {}, 0), []);
      assert.deepEqual(await store.blocks(pk, { fromIndex: 2, toIndex: 3 }), chain.slice(2, 4));
    });

    it('returns time ranges with inclusive bounds compared as instants, whatever the precision or offset', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 10); // T0, T0 + 1 s, … T0 + 9 s
      await append(chain);
      const at = (s: number) => iso(T0 + s * 1000);
      assert.deepEqual(indexes(await store.blocks(pk, { from: at(2), to: at(5) })), [2, 3, 4, 5]);
      assert.deepEqual(indexes(await store.blocks(pk, { from: at(8) })), [8, 9]);
      assert.deepEqual(indexes(await store.blocks(pk, { to: at(1) })), [0, 1]);
      // The same instants, written differently: no fraction, more digits, another offset.
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: '2026-01-01T12:00:02Z', to: '2026-01-01T12:00:05Z' })),
        [2, 3, 4, 5],
      );
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: '2026-01-01T13:00:02.000000+01:00', to: '2026-01-01T07:00:05-05:00' })),
        [2, 3, 4, 5],
      );
      // Bounds between milliseconds round inwards: 12:00:01.9999 excludes 12:00:01, 12:00:05.0001 includes 12:00:05.
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: '2026-01-01T12:00:01.9999Z', to: '2026-01-01T12:00:05.0001Z' })),
        [2, 3, 4, 5],
      );
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: '2026-01-01T12:00:02.0001Z', to: '2026-01-01T12:00:04.9999Z' })),
        [3, 4],
      );
      // A lexical comparison would get this one wrong: "…:03Z" sorts after "…:03.500Z".
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: '2026-01-01T12:00:03Z', to: '2026-01-01T12:00:03.500Z' })),
        [3],
      );
      assert.deepEqual(await store.blocks(pk, { from: at(5), to: at(2) }), []);
      assert.deepEqual(await store.blocks(pk, { from: at(10) }), []);
      // Combined with index bounds and a limit.
      assert.deepEqual(
        indexes(await store.blocks(pk, { from: at(2), to: at(8), fromIndex: 4, toIndex: 9 })),
        [4, 5, 6, 7, 8],
      );
      assert.deepEqual(indexes(await store.blocks(pk, { from: at(2), toIndex: 8 }, 3)), [2, 3, 4]);
      assert.deepEqual(await store.blocks(pk, { from: at(3), to: at(3) }), [chain[3]]);
    });

    it('orders blocks that share a timestamp by index', async () => {
      const pk = newAgent();
      const chain = [0, 1, 2, 3, 4].map((i) => makeBlock(pk, i, iso(T0 + (i < 3 ? 0 : 1000))));
      await append(chain);
      assert.deepEqual(indexes(await store.blocks(pk, { from: iso(T0), to: iso(T0) })), [0, 1, 2]);
      assert.deepEqual(indexes(await store.blocks(pk, { from: iso(T0) }, 4)), [0, 1, 2, 3]);
      assert.deepEqual((await store.blockBefore(pk, iso(T0 + 1000)))?.index, 2);
    });

    it('refuses a taken index with record_conflict and changes nothing', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 3);
      await append(chain);
      const rival = makeBlock(pk, 1, iso(T0 + 1500), { meta: { forged: true } });
      await rejectsWith(store.appendBlock(rival), 'record_conflict');
      const again = makeBlock(pk, 2, (chain[2] as StoredBreadcrumb).timestamp, { meta: { other: 1 } });
      await rejectsWith(store.appendBlock(again), 'record_conflict');
      await rejectsWith(store.appendBlock(chain[0] as StoredBreadcrumb), 'record_conflict'); // the very same block
      assert.deepEqual(await store.blocks(pk), chain);
      assert.deepEqual(await store.tip(pk), chain[2]);
    });

    it('refuses a gap or a timestamp before the previous block with record_conflict, storing nothing', async () => {
      const pk = newAgent();
      await rejectsWith(store.appendBlock(makeBlock(pk, 1, iso(T0))), 'record_conflict'); // no block 0
      assert.equal(await store.tip(pk), null);
      assert.deepEqual(await store.agents(), []);
      const chain = makeChain(pk, 2);
      await append(chain);
      await rejectsWith(store.appendBlock(makeBlock(pk, 3, iso(T0 + 5000))), 'record_conflict');
      await rejectsWith(store.appendBlock(makeBlock(pk, 2, iso(T0 + 999))), 'record_conflict');
      // The same instant as the previous block, written with an offset, is not earlier.
      const same = makeBlock(pk, 2, '2026-01-01T13:00:01.000+01:00');
      await store.appendBlock(same);
      assert.deepEqual(await store.blocks(pk), [...chain, same]);
    });

    it('lets exactly one of concurrent appends of one index win', async () => {
      const pk = newAgent();
      await append(makeChain(pk, 2));
      const rivals = Array.from({ length: 12 }, (_, i) =>
        makeBlock(pk, 2, iso(T0 + 2000 + i), { meta: { writer: i } }),
      );
      const results = await Promise.allSettled(rivals.map((block) => store.appendBlock(block)));
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      assert.equal(won.length, 1, `winners: ${won.join(', ')}`);
      for (const r of results) {
        if (r.status === 'rejected')
          assert.ok(r.reason instanceof ServiceError && r.reason.code === 'record_conflict', String(r.reason));
      }
      const winner = rivals[won[0] as number];
      assert.deepEqual(await store.tip(pk), winner);
      assert.deepEqual((await store.blocks(pk)).length, 3);
      // The chain goes on from the winner.
      await store.appendBlock(makeBlock(pk, 3, iso(T0 + 5000)));
      assert.equal((await store.tip(pk))?.index, 3);
    });

    it('finds the last block strictly before an instant', async () => {
      const pk = newAgent();
      const chain = makeChain(pk, 5); // T0 … T0 + 4 s
      await append(chain);
      assert.equal(await store.blockBefore(pk, iso(T0)), null);
      assert.equal(await store.blockBefore(pk, iso(T0 - 3_600_000)), null);
      assert.deepEqual(await store.blockBefore(pk, iso(T0 + 1)), chain[0]);
      assert.deepEqual(await store.blockBefore(pk, iso(T0 + 3000)), chain[2]);
      assert.deepEqual(await store.blockBefore(pk, '2026-01-01T12:00:03.0001Z'), chain[3]);
      assert.deepEqual(await store.blockBefore(pk, '2026-01-01T13:00:03+01:00'), chain[2]);
      assert.deepEqual(await store.blockBefore(pk, iso(T0 + 86_400_000)), chain[4]);
      assert.equal(await store.blockBefore(newAgent(), iso(T0 + 86_400_000)), null);
    });

    it('keeps agents apart and lists those with blocks, ascending', async () => {
      const [a, b, c] = [newAgent(), newAgent(), newAgent()];
      const chainA = makeChain(a, 3);
      const chainB = makeChain(b, 2, T0 + 500);
      await append(chainB);
      await append(chainA);
      await store.appendEpoch(epoch(c, 0)); // records other than blocks do not make an agent
      await store.addViolation(violation(c, iso(T0)));
      assert.deepEqual(await store.agents(), [a, b].sort());
      assert.deepEqual(await store.blocks(a), chainA);
      assert.deepEqual(await store.blocks(b), chainB);
      assert.deepEqual(await store.tip(b), chainB[1]);
      assert.deepEqual(await store.blocks(c), []);
      assert.deepEqual(await store.blockBefore(a, iso(T0 + 600)), chainA[0]);
      assert.deepEqual(await store.blockBefore(b, iso(T0 + 600)), chainB[0]);
    });

    it('refuses malformed blocks and queries with RangeError, and stores only the declared fields', async () => {
      const pk = newAgent();
      const good = makeBlock(pk, 0, iso(T0));
      const bad: Array<[string, unknown]> = [
        ['upper-case agent key', { ...good, agent_pk: pk.toUpperCase() }],
        ['negative index', { ...good, index: -1 }],
        ['fractional index', { ...good, index: 0.5 }],
        ['timestamp without a zone', { ...good, timestamp: '2026-01-01T12:00:00' }],
        ['timestamp finer than a millisecond', { ...good, timestamp: '2026-01-01T12:00:00.0001Z' }],
        ['empty signed text', { ...good, data_to_sign: '' }],
        ['lone surrogate in the signed text', { ...good, data_to_sign: '{"a":"\ud800"}' }],
        ['NUL in the signed text', { ...good, data_to_sign: '{"a":"\u0000"}' }],
        ['short signature', { ...good, signature: 'ab' }],
        ['block_hash not hex', { ...good, block_hash: 'z'.repeat(64) }],
      ];
      for (const [what, block] of bad) {
        await assert.rejects(store.appendBlock(block as StoredBreadcrumb), RangeError, what);
      }
      assert.equal(await store.tip(pk), null);

      await store.appendBlock({ ...good, identity: pk, extra: 'not stored' } as StoredBreadcrumb);
      assert.deepEqual(await store.tip(pk), good);
      // Sub-millisecond digits that are zero name a whole millisecond.
      const fine = makeBlock(pk, 1, '2026-01-01T12:00:00.001000Z');
      await store.appendBlock(fine);
      assert.deepEqual(await store.tip(pk), fine);

      await assert.rejects(store.blocks(pk, { from: 'yesterday' }), RangeError);
      await assert.rejects(store.blocks(pk, { fromIndex: 1.5 }), RangeError);
      await assert.rejects(store.blocks(pk, {}, -1), RangeError);
      await assert.rejects(store.blocks(pk, {}, 2.5), RangeError);
      await assert.rejects(store.blockBefore(pk, '2026-13-01T00:00:00Z'), RangeError);
      await assert.rejects(store.tip('not a key'), RangeError);
      await assert.rejects(store.violations(pk, iso(T0), 'later'), RangeError);
    });

    it('appends epochs, lists them by epoch_index and refuses a taken one', async () => {
      const [pk, other] = [newAgent(), newAgent()];
      const [e0, e1, e2] = [epoch(pk, 0), epoch(pk, 1), epoch(pk, 2)];
      await store.appendEpoch(e2);
      await store.appendEpoch(e0);
      await store.appendEpoch(e1);
      await store.appendEpoch(epoch(other, 0, { tier_at_close: 'provisioned' }));
      assert.deepEqual(await store.epochs(pk), [e0, e1, e2]);
      await rejectsWith(store.appendEpoch(epoch(pk, 1, { merkle_root: sha256Hex('rival') })), 'record_conflict');
      assert.deepEqual(await store.epochs(pk), [e0, e1, e2]);
      assert.deepEqual(
        (await store.epochs(other)).map((e) => e.tier_at_close),
        ['provisioned'],
      );
      await assert.rejects(
        store.appendEpoch({ ...e0, epoch_index: 3, tier_at_close: 'legendary' } as never),
        RangeError,
      );
      await assert.rejects(store.appendEpoch({ ...e0, epoch_index: 3, version: 2 } as never), RangeError);

      const rivals = Array.from({ length: 8 }, (_, i) => epoch(pk, 3, { epoch_hash: sha256Hex(`rival ${i}`) }));
      const results = await Promise.allSettled(rivals.map((e) => store.appendEpoch(e)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal((await store.epochs(pk)).length, 4);
    });

    it('returns violations in an inclusive period, oldest first, and refuses a taken id', async () => {
      const [pk, other] = [newAgent(), newAgent()];
      const vs = [3, 0, 2, 1].map((s) => violation(pk, iso(T0 + s * 1000), { detail: `second ${s}` }));
      for (const v of vs) await store.addViolation(v);
      await store.addViolation(violation(other, iso(T0 + 1000)));
      const chainBreak = violation(pk, iso(T0 + 4000), {
        type: 'chain_break',
        severity: 'critical',
        h3_cell: null,
        block_index: null,
      });
      await store.addViolation(chainBreak);
      const details = async (from: string, to: string) => (await store.violations(pk, from, to)).map((v) => v.detail);
      assert.deepEqual(await details(iso(T0 + 1000), iso(T0 + 3000)), ['second 1', 'second 2', 'second 3']);
      assert.deepEqual(await details('2026-01-01T12:00:01Z', '2026-01-01T13:00:02+01:00'), ['second 1', 'second 2']);
      assert.deepEqual(await details('2026-01-01T12:00:00.0001Z', '2026-01-01T12:00:00.9999Z'), []);
      assert.deepEqual(await details(iso(T0 + 3000), iso(T0)), []);
      const all = await store.violations(pk, iso(T0), iso(T0 + 4000));
      assert.deepEqual(all.at(-1), chainBreak);
      assert.deepEqual(
        all.slice(0, 4),
        [...vs].sort((a, b) => a.at.localeCompare(b.at)),
      );
      await rejectsWith(store.addViolation({ ...(vs[0] as Violation), detail: 'rewritten' }), 'record_conflict');
      assert.equal((await store.violations(pk, iso(T0), iso(T0 + 3000)))[3]?.detail, 'second 3');
      await assert.rejects(store.addViolation({ ...violation(pk, iso(T0)), type: 'speeding' } as never), RangeError);
      await assert.rejects(store.addViolation({ ...violation(pk, iso(T0)), id: 'not-a-uuid' }), RangeError);
    });

    it('returns approvals in an inclusive period, oldest first, and refuses a second approval of a block', async () => {
      const [pk, other] = [newAgent(), newAgent()];
      const a = [approval(pk, 7, iso(T0 + 2000)), approval(pk, 3, iso(T0)), approval(pk, 5, iso(T0 + 1000))];
      for (const x of a) await store.addApproval(x);
      await store.addApproval(approval(other, 3, iso(T0))); // another agent's block 3
      assert.deepEqual(await store.approvals(pk, iso(T0), iso(T0 + 2000)), [a[1], a[2], a[0]]);
      assert.deepEqual(await store.approvals(pk, iso(T0 + 1000), iso(T0 + 1000)), [a[2]]);
      assert.deepEqual(await store.approvals(pk, '2026-01-01T12:00:00.001Z', '2026-01-01T12:00:01.999Z'), [a[2]]);
      assert.deepEqual(await store.approvals(pk, iso(T0 + 3000), iso(T0 + 9000)), []);
      await rejectsWith(store.addApproval(approval(pk, 5, iso(T0 + 5000))), 'record_conflict');
      assert.deepEqual(await store.approvals(pk, iso(T0), iso(T0 + 9000)), [a[1], a[2], a[0]]);
      assert.deepEqual(await store.approvals(other, iso(T0), iso(T0)), [approval(other, 3, iso(T0))]);

      const rivals = Array.from({ length: 8 }, (_, i) => approval(pk, 9, iso(T0 + 3000 + i)));
      const results = await Promise.allSettled(rivals.map((x) => store.addApproval(x)));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      assert.equal((await store.approvals(pk, iso(T0), iso(T0 + 9000))).length, 4);
      await assert.rejects(store.addApproval({ ...approval(pk, 10, iso(T0)), signature: 'x' }), RangeError);
    });
  });
}
