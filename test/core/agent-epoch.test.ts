import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  GENESIS_EPOCH_HASH,
  agentEpochHash,
  nextUnrolledIndex,
  noBlocksToRollMessage,
  rollAgentEpoch,
  verifyAgentEpoch,
} from '../../core/agent-epoch.js';
import { breadcrumbBlockHash, breadcrumbContext, nextBreadcrumb, signBreadcrumb } from '../../core/breadcrumb.js';
import type { AgentEpoch, StoredBreadcrumb } from '../../core/breadcrumb-types.js';
import { canonicalJson } from '../../core/canonical-json.js';
import { sha256Hex } from '../../core/hash.js';
import { keyPairFromSecret, signMessage, verifySignature } from '../../core/identity.js';

const agent = keyPairFromSecret('7'.repeat(64));
const other = keyPairFromSecret('8'.repeat(64));
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const ROLLED = Date.parse('2026-03-01T11:00:00.000Z');

function buildChain(n: number, key = agent): StoredBreadcrumb[] {
  const out: StoredBreadcrumb[] = [];
  let tip: StoredBreadcrumb | null = null;
  for (let i = 0; i < n; i++) {
    const content = nextBreadcrumb(tip, {
      identity: key.publicKey,
      timestamp: new Date(T0 + i * 1000).toISOString(),
      loc_cell: '851e8053fffffff',
      loc_res: 5,
      context: breadcrumbContext({ i }, { ok: true }, 'ok'),
      delegation_cert_hash: 'ab'.repeat(32),
      facet: 'perception',
      meta: {},
      tool_name: 'perception_weather',
    });
    tip = signBreadcrumb(content, key).stored;
    out.push(tip);
  }
  return out;
}

/** RFC 9162 root written out independently of core/merkle: leaf = H(0x00‖h), node = H(0x01‖l‖r). */
function referenceRoot(hashes: string[]): string {
  const h = (...parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest();
  const mth = (leaves: Buffer[]): Buffer => {
    if (leaves.length === 1) return h(Buffer.from([0]), leaves[0] as Buffer);
    let k = 1;
    while (k * 2 < leaves.length) k *= 2;
    return h(Buffer.from([1]), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
  };
  return mth(hashes.map((x) => Buffer.from(x, 'hex'))).toString('hex');
}

const CHAIN = buildChain(13);
const FIRST = CHAIN.slice(0, 10);
const SECOND = CHAIN.slice(10);
const roll = (blocks: readonly StoredBreadcrumb[], previous: AgentEpoch | null = null, key = agent) =>
  rollAgentEpoch({ agent: key, blocks, previous, tier: 'observed', nowMs: ROLLED });

function failure(result: { ok: boolean; error?: string; detail?: string }, error: string): string {
  assert.equal(result.ok, false, 'expected a failure');
  assert.equal(result.error, error);
  return result.detail ?? '';
}

describe('core/agent-epoch', () => {
  describe('rollAgentEpoch', () => {
    it('rolls the first epoch over the blocks, hashes and signs it', () => {
      const epoch = roll(FIRST);
      assert.equal(epoch.version, 1);
      assert.equal(epoch.agent_pk, agent.publicKey);
      assert.equal(epoch.epoch_index, 0);
      assert.equal(epoch.start_block, 0);
      assert.equal(epoch.end_block, 9);
      assert.equal(epoch.block_count, 10);
      assert.equal(epoch.prev_epoch_hash, GENESIS_EPOCH_HASH);
      assert.equal(epoch.tier_at_close, 'observed');
      assert.equal(epoch.rolled_at, '2026-03-01T11:00:00.000Z');
      assert.equal(epoch.merkle_root, referenceRoot(FIRST.map((b) => b.block_hash)));
      const { epoch_hash: _h, signature: _s, ...unsigned } = epoch;
      assert.equal(epoch.epoch_hash, sha256Hex(canonicalJson(unsigned)));
      assert.equal(agentEpochHash(epoch), epoch.epoch_hash);
      assert.ok(verifySignature(agent.publicKey, epoch.epoch_hash, epoch.signature));
    });

    it('a one-block epoch has the leaf hash as its root', () => {
      const epoch = roll(CHAIN.slice(0, 1));
      const leaf = createHash('sha256')
        .update(Buffer.concat([Buffer.from([0]), Buffer.from((CHAIN[0] as StoredBreadcrumb).block_hash, 'hex')]))
        .digest('hex');
      assert.equal(epoch.merkle_root, leaf);
    });

    it('chains the next epoch to the previous one', () => {
      const first = roll(FIRST);
      const second = roll(SECOND, first);
      assert.equal(second.epoch_index, 1);
      assert.equal(second.start_block, 10);
      assert.equal(second.end_block, 12);
      assert.equal(second.block_count, 3);
      assert.equal(second.prev_epoch_hash, first.epoch_hash);
      assert.equal(second.merkle_root, referenceRoot(SECOND.map((b) => b.block_hash)));
    });

    it('throws RangeError with the docs/protocol.md §7 message when there is nothing to roll', () => {
      assert.throws(() => roll([]), { name: 'RangeError', message: 'EPOCH: no blocks to roll since block_index 0' });
      assert.throws(() => roll([], roll(FIRST)), {
        name: 'RangeError',
        message: 'EPOCH: no blocks to roll since block_index 10',
      });
    });

    it('refuses blocks that skip, overlap, or belong to another agent', () => {
      const first = roll(FIRST);
      assert.throws(() => roll(CHAIN.slice(11), first), /start at index 11, the epoch must start at 10/);
      assert.throws(() => roll(CHAIN.slice(9), first), /start at index 9/);
      assert.throws(() => roll([CHAIN[0], CHAIN[2]] as StoredBreadcrumb[]), /expected block 1, got block 2/);
      assert.throws(() => roll(buildChain(2, other)), /block 0 belongs to/);
      assert.throws(() => roll(SECOND, roll(buildChain(10, other), null, other)), /previous epoch belongs to/);
    });
  });

  describe('noBlocksToRollMessage and nextUnrolledIndex', () => {
    it('formats the docs/protocol.md §7 message with the next unrolled index', () => {
      assert.equal(noBlocksToRollMessage(0), 'EPOCH: no blocks to roll since block_index 0');
      assert.equal(nextUnrolledIndex(null), 0);
      assert.equal(nextUnrolledIndex(roll(FIRST)), 10);
      assert.equal(
        noBlocksToRollMessage(nextUnrolledIndex(roll(FIRST))),
        'EPOCH: no blocks to roll since block_index 10',
      );
    });
  });

  describe('verifyAgentEpoch', () => {
    it('round-trips: a rolled epoch verifies over its blocks, alone and linked to the previous epoch', () => {
      const first = roll(FIRST);
      const second = roll(SECOND, first);
      const copy = JSON.parse(JSON.stringify(first)) as AgentEpoch;
      assert.deepEqual(verifyAgentEpoch(copy, FIRST), { ok: true, value: first });
      assert.equal(verifyAgentEpoch(first, FIRST, null).ok, true);
      assert.equal(verifyAgentEpoch(second, SECOND, first).ok, true);
    });

    it('detects a mutated block (its data_to_sign edited, block_hash left)', () => {
      const epoch = roll(FIRST);
      const blocks = [...FIRST];
      const b = blocks[4] as StoredBreadcrumb;
      blocks[4] = { ...b, data_to_sign: b.data_to_sign.replace('"meta":{}', '"meta":{"x":1}') };
      assert.notEqual(blocks[4].data_to_sign, b.data_to_sign);
      assert.equal(
        failure(verifyAgentEpoch(epoch, blocks), 'seal_mismatch'),
        'epoch 0: block 4: block_hash does not match its signed data',
      );
    });

    it('detects a block replaced by another consistent block (root mismatch)', () => {
      const epoch = roll(FIRST);
      const blocks = [...FIRST];
      const b = blocks[4] as StoredBreadcrumb;
      const text = b.data_to_sign.replace('"meta":{}', '"meta":{"x":1}');
      const signature = signMessage(agent.secretKey, text);
      blocks[4] = { ...b, data_to_sign: text, signature, block_hash: breadcrumbBlockHash(text, signature) };
      assert.equal(
        failure(verifyAgentEpoch(epoch, blocks), 'seal_mismatch'),
        'epoch 0: merkle root over the blocks does not match the epoch',
      );
    });

    it('detects missing, reordered and foreign blocks', () => {
      const epoch = roll(FIRST);
      assert.match(
        failure(verifyAgentEpoch(epoch, FIRST.slice(1)), 'seal_mismatch'),
        /covers 10 blocks \(0\.\.9\), 9 given/,
      );
      const swapped = [...FIRST];
      [swapped[2], swapped[3]] = [swapped[3] as StoredBreadcrumb, swapped[2] as StoredBreadcrumb];
      assert.equal(
        failure(verifyAgentEpoch(epoch, swapped), 'seal_mismatch'),
        'epoch 0: expected block 2, got block 3',
      );
      const foreign = [...FIRST];
      foreign[0] = { ...(foreign[0] as StoredBreadcrumb), agent_pk: other.publicKey };
      assert.match(failure(verifyAgentEpoch(epoch, foreign), 'seal_mismatch'), /block 0 belongs to/);
    });

    it('detects an edited epoch, a re-hashed but unsigned one, and one signed by another key', () => {
      const epoch = roll(FIRST);
      const edited = { ...epoch, tier_at_close: 'sovereign' as const };
      assert.equal(
        failure(verifyAgentEpoch(edited, FIRST), 'invalid_seal'),
        'epoch 0: epoch_hash does not match the epoch',
      );
      const rehashed = { ...edited, epoch_hash: agentEpochHash(edited) };
      assert.equal(failure(verifyAgentEpoch(rehashed, FIRST), 'invalid_seal'), 'epoch 0: signature does not verify');
      const resigned = { ...rehashed, signature: signMessage(other.secretKey, rehashed.epoch_hash) };
      assert.equal(failure(verifyAgentEpoch(resigned, FIRST), 'invalid_seal'), 'epoch 0: signature does not verify');
      assert.match(
        failure(verifyAgentEpoch({ ...epoch, block_count: 9 }, FIRST), 'invalid_seal'),
        /block_count: is not end_block - start_block \+ 1/,
      );
    });

    it('with the previous epoch, detects a broken epoch chain', () => {
      const first = roll(FIRST);
      const second = roll(SECOND, first);
      // The same blocks rolled an hour later: a valid epoch 0, but not the one epoch 1 chains to.
      const fakePrev = rollAgentEpoch({
        agent,
        blocks: FIRST,
        previous: null,
        tier: 'observed',
        nowMs: ROLLED + 3_600_000,
      });
      assert.equal(verifyAgentEpoch(fakePrev, FIRST, null).ok, true);
      assert.equal(
        failure(verifyAgentEpoch(second, SECOND, fakePrev), 'invalid_seal'),
        'epoch 1: prev_epoch_hash does not match the previous epoch',
      );
      assert.equal(failure(verifyAgentEpoch(second, SECOND, null), 'invalid_seal'), 'epoch 1: expected epoch 0');
      assert.equal(failure(verifyAgentEpoch(first, FIRST, first), 'invalid_seal'), 'epoch 0: expected epoch 1');
    });
  });
});
